"""Applying a change set (``gateway.page.view.changes``) to the view a model holds, as
a model reads it: the tests' check that "the last view + its changes" is exactly the
fresh view. The gateway never applies one itself, so this lives with the tests."""

from __future__ import annotations

import re

__all__ = ["apply_changes"]

HUNK = re.compile(r"@@ -(\d+),(\d+) \+(\d+),(\d+) @@")


def apply_changes(old: str, changes: str) -> str:
    """``old`` with each zero-context hunk of ``changes`` applied; AssertionError when a
    hunk's ``-`` lines are not what ``old`` has there."""
    before = old.split("\n")
    after: list[str] = []
    at = 0  # lines of ``before`` used so far
    lines = changes.split("\n") if changes else []
    i = 0
    while i < len(lines):
        head = HUNK.match(lines[i])
        assert head, f"not a hunk header: {lines[i]!r}"
        start, count = int(head[1]), int(head[2])
        added = int(head[4])
        first = start - 1 if count else start  # 0-based: the first line replaced
        after.extend(before[at:first])
        removed = lines[i + 1:i + 1 + count]
        assert removed == ["-" + line for line in before[first:first + count]], (
            f"hunk {lines[i]!r} removes {removed!r}, the view has "
            f"{before[first:first + count]!r}")
        new = lines[i + 1 + count:i + 1 + count + added]
        assert all(line.startswith("+") for line in new), new
        after.extend(line[1:] for line in new)
        at = first + count
        i += 1 + count + added
    after.extend(before[at:])
    return "\n".join(after)
