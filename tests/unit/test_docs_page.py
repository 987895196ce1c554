"""benchmarks.docs_page: a run rewrites its phases' sections of docs/performance.md and
leaves the introduction and the other phases' sections as they were."""

from __future__ import annotations

import re
from pathlib import Path

from benchmarks.docs_page import rewrite, section, write
from benchmarks.results import Results

ORDER = ("sequential", "startup", "view", "peers")

PAGE = """# Performance

Intro: how to read the tables.

## sequential

Measured 2026-11-01: old machine.

| measurement | median | p90 | target/floor |
|---|---:|---:|---|
| raw | 1.0 ms | — | floor |

## view

Measured 2026-11-02: old machine.

| measurement | median | p90 | target/floor |
|---|---:|---:|---|
| browse_view | 40 ms | — |  |
"""


def test_a_phase_section_is_replaced_and_the_rest_kept() -> None:
    new = section("sequential", "2026-12-03: this machine.", ["| t |\n|---|\n| 2.0 ms |"])
    page = rewrite(PAGE, "sequential", new, ORDER)
    assert "1.0 ms" not in page and "2026-11-01" not in page
    assert ("## sequential\n\nMeasured 2026-12-03: this machine.\n\n| t |\n|---|\n"
            "| 2.0 ms |\n\n## view") in page
    assert page.startswith("# Performance\n\nIntro: how to read the tables.\n\n## sequential")
    assert page.endswith(PAGE[PAGE.index("## view"):])


def test_the_last_section_is_replaced_to_the_end() -> None:
    page = rewrite(PAGE, "view", section("view", "2026-12-03: here.", ["| v |"]), ORDER)
    assert page == PAGE[:PAGE.index("## view")] + "## view\n\nMeasured 2026-12-03: here.\n\n| v |\n"


def test_a_new_phase_goes_in_run_order() -> None:
    page = rewrite(PAGE, "startup", section("startup", "2026-12-03: here.", ["| s |"]), ORDER)
    assert page.index("## sequential") < page.index("## startup") < page.index("## view")
    assert page.replace("## startup\n\nMeasured 2026-12-03: here.\n\n| s |\n\n", "") == PAGE
    last = rewrite(PAGE, "peers", section("peers", "2026-12-03: here.", ["| p |"]), ORDER)
    assert last == PAGE + "\n## peers\n\nMeasured 2026-12-03: here.\n\n| p |\n"


def test_a_section_ends_at_any_heading_and_new_ones_skip_prose() -> None:
    page = PAGE.replace("## view", "## How to read it\n\nprose\n\n## view")
    replaced = rewrite(page, "sequential", section("sequential", "x.", ["| n |"]), ORDER)
    assert "## How to read it\n\nprose\n\n## view" in replaced and "1.0 ms" not in replaced
    added = rewrite(page, "startup", section("startup", "x.", ["| s |"]), ORDER)
    assert added.index("## How to read it") < added.index("## startup") < added.index("## view")


def test_write_creates_the_page_and_rewrites_each_phase(tmp_path: Path) -> None:
    path = tmp_path / "performance.md"
    results = Results()
    results.phases_run = {"view"}
    results.row("v", "browse_view", samples=[40.0, 42.0, 44.0]).phase = "view"
    write(path, {"view": section("view", "2026-12-03: here.", [results.markdown({"view"})])},
          ORDER)
    text = path.read_text()
    assert text.startswith("# Performance\n\n## view\n\nMeasured 2026-12-03: here.\n\n")
    assert "| browse_view | 42.0 ms | 44.0 ms |  |" in text


def test_docs_performance_md_is_one_dated_section_per_phase() -> None:
    """The page the benchmark writes holds only sections it can rewrite: each a phase's,
    once, dated, with a table."""
    from benchmarks.run import PHASES

    text = (Path(__file__).parents[2] / "docs" / "performance.md").read_text()
    sections = text.split("\n## ")[1:]
    names = [s.split("\n", 1)[0] for s in sections]
    assert names and set(names) <= set(PHASES) and len(names) == len(set(names)), names
    for body in sections:
        lines = body.split("\n\n")
        dated = r"Measured \d{4}-\d{2}-\d{2}(?: to \d{4}-\d{2}-\d{2})?: .+"
        assert re.fullmatch(dated, lines[1]), lines[1]
        assert lines[2].startswith("| "), body[:80]
