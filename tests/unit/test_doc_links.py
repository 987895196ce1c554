"""Every relative link and ``#anchor`` in the Markdown documentation resolves: a page
moved, or a heading renamed, breaks the links to it here first. And the parts of the
docs that restate the code (the error tree) are the code's."""

from __future__ import annotations

import re
import textwrap
import unicodedata
from pathlib import Path

import pytest

import gateway.errors
from tests.doc_commands import fenced_blocks

ROOT = Path(__file__).parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
         ROOT / "benchmarks" / "README.md", *sorted((ROOT / ".claude").glob("skills/*/SKILL.md"))]

_LINK = re.compile(r"\]\((?P<target>[^)\s]+)\)")
_EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)  # https:, mailto:, cursor:, vscode:


def _prose(text: str) -> str:
    """``text`` without its fenced blocks (a ``#`` line in a shell block is no heading)."""
    for block in fenced_blocks(text):
        text = text.replace(block.text, "")
    return text


def anchors(text: str) -> set[str]:
    """The anchors GitHub makes of a page's headings: code and emphasis marks and
    punctuation but ``-`` and ``_`` dropped, lower-cased, spaces made ``-``; a repeated
    one gets ``-1``, ``-2``, …"""
    seen: dict[str, int] = {}
    found = set()
    for heading in re.findall(r"^#{1,6} +(.+?) *#*$", _prose(text), re.M):
        plain = re.sub(r"[`*]", "", heading)
        plain = re.sub(r"\[([^]]*)\]\([^)]*\)", r"\1", plain).lower()
        slug = "".join(c for c in plain if c in " -_" or unicodedata.category(c)[0] in "LN")
        slug = slug.replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def test_anchors_are_githubs() -> None:
    text = ("# A `share` page\n\n## Environment (one target)\n\n```sh\n# not one\n```\n\n"
            "## x\n\n## x\n")
    assert anchors(text) == {"a-share-page", "environment-one-target", "x", "x-1"}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    for match in _LINK.finditer(_prose(page.read_text())):
        target = match["target"]
        if _EXTERNAL.match(target):
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif anchor and (linked.suffix != ".md" or anchor not in anchors(linked.read_text())):
            broken.append(f"{target}: no heading makes #{anchor}")
    assert not broken, broken


def test_the_architecture_page_draws_the_error_tree_of_errors_py() -> None:
    tree = textwrap.dedent((gateway.errors.__doc__ or "").split("::\n", 1)[1]).strip("\n")
    assert tree in (ROOT / "docs" / "architecture.md").read_text(), (
        "docs/architecture.md's error tree differs from gateway/errors.py's docstring")
