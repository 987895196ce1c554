"""What changed between two views of one document, as the model is handed it after an act.

A model that acted on a page has the view it read before; most actions change a few
lines of it (a status line, a checked box, an opened menu). Handing back the whole view
again costs the whole view in tokens, every step. A change set is those lines only, in
the unified-diff form models already read (``@@ -a,b +c,d @@`` hunks, no context lines,
``-`` lines gone, ``+`` lines new): applied to the view the model has, it gives exactly
the view a fresh ``browse_view`` would, refs included — the renderer keeps an element's
number across views of a document (``Controls.keep``), so unchanged lines stay unchanged.
Each hunk header ends with the line it follows, cut short, so a model can place it
without counting lines.

Pure: tested on captured trees and random texts (``tests/unit/test_view_changes.py``).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from gateway.page.view.text import cut

__all__ = ["Changes", "changes_between"]

CONTEXT_MAX = 60
"""How much of the line a hunk follows its header shows."""


@dataclass(frozen=True)
class Changes:
    """The hunks (``text``) and what they add up to."""

    text: str
    added: int
    removed: int
    lines: int  # of the new view

    def summary(self, left_out_changed: bool = False) -> str:
        """The header's words: a change set, how big, and where the whole view is; and
        when rows the view leaves out (``compact``) changed, which no hunk can show."""
        hidden = "; rows left out of it changed: browse_view find shows them" if (
            left_out_changed) else ""
        if not self.text:
            return f"no change since the last view of {self.lines} lines{hidden}"
        return (f"changes since the last view: +{self.added} -{self.removed} of "
                f"{self.lines} lines{hidden}; browse_view for the whole")


def changes_between(old: str, new: str) -> Changes:
    """The hunks that turn ``old`` into ``new``, line by line."""
    before, after = old.split("\n"), new.split("\n")
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    hunks: list[str] = []
    added = removed = 0
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            continue
        follows = f" {cut(before[i1 - 1].strip(), CONTEXT_MAX)}" if i1 > 0 else ""
        hunks.append(f"@@ -{_span(i1, i2)} +{_span(j1, j2)} @@{follows}")
        hunks.extend("-" + line for line in before[i1:i2])
        hunks.extend("+" + line for line in after[j1:j2])
        removed += i2 - i1
        added += j2 - j1
    return Changes("\n".join(hunks), added, removed, len(after))


def _span(start: int, end: int) -> str:
    """A hunk's side as unified diff writes it: ``first,count`` (1-based), and for no
    lines the line before them, with count 0."""
    count = end - start
    return f"{start + 1},{count}" if count else f"{start},0"
