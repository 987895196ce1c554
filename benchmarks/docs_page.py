"""docs/performance.md, written by the benchmark: one section per phase, the newest run's.

The page has an introduction and then one ``## PHASE`` section per benchmark phase:
a ``Measured DATE: …`` line (the run's date, machine and load) and that phase's
table. ``python -m benchmarks.run --phases view --write-docs docs/performance.md``
rewrites the ``view`` section with this run's figures and leaves every other phase's
section as it was, so the page holds one current table per phase and no history.

Pure but for ``write``: ``rewrite`` takes the page's text and returns the new text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

__all__ = ["rewrite", "section", "write"]


def section(phase: str, measured: str, tables: Sequence[str]) -> str:
    """A phase's section: its heading, the ``Measured …`` line, its tables."""
    return "\n\n".join([f"## {phase}", f"Measured {measured}", *tables]) + "\n"


def rewrite(page: str, phase: str, text: str, order: Sequence[str]) -> str:
    """``page`` with the section of ``phase`` replaced by ``text`` (a ``section``), or,
    when it has none, ``text`` put among the phases' sections in ``order`` (the
    benchmark's run order). A section ends at the next ``## `` heading; the introduction
    and the other sections are kept byte for byte."""
    headings = [(m.start(), m["name"]) for m in re.finditer(r"^## (?P<name>.+?)[ \t]*$", page,
                                                            re.M)]
    for index, (start, name) in enumerate(headings):
        if name == phase:
            end = headings[index + 1][0] if index + 1 < len(headings) else len(page)
            return page[:start] + text + ("\n" if end < len(page) else "") + page[end:]
    later = [start for start, name in headings
             if name in order and order.index(name) > order.index(phase)]
    if later:
        return page[:later[0]] + text + "\n" + page[later[0]:]
    return page.rstrip("\n") + "\n\n" + text


def write(path: Path, sections: dict[str, str], order: Sequence[str]) -> None:
    """Rewrite ``path`` (created with a heading if missing) with ``sections`` (phase →
    ``section`` text)."""
    page = path.read_text(encoding="utf-8") if path.exists() else "# Performance\n"
    for phase, text in sections.items():
        page = rewrite(page, phase, text, order)
    path.write_text(page, encoding="utf-8")
