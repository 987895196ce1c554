"""The benchmark runner's phases: every ``benchmarks/*_phase.py`` is reachable by name
from ``python -m benchmarks.run --phases``, defines exactly the rows it says it fills
(none shared with another phase), and the command line still takes every documented
option. No topology and no measurement here: only the wiring."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.bench import Bench
from benchmarks.options import parse_args
from benchmarks.run import PHASES, define_rows

BENCHMARKS = Path(__file__).parents[2] / "benchmarks"


def test_every_phase_module_is_a_phase() -> None:
    modules = {p.stem for p in BENCHMARKS.glob("*_phase.py")}
    registered = {module.__name__.rpartition(".")[2] for module in PHASES.values()}
    assert modules == registered
    for module in PHASES.values():
        assert callable(module.run) and callable(module.define_rows) and module.ROW_KEYS


def test_each_phase_defines_its_own_rows() -> None:
    bench = Bench(parse_args([], tuple(PHASES), "test"))
    define_rows(bench)  # asserts each phase defined exactly its ROW_KEYS, none twice
    by_phase: dict[str, set[str]] = {}
    for key, row in bench.r.rows.items():
        by_phase.setdefault(row.phase, set()).add(key)
    assert by_phase == {name: set(module.ROW_KEYS) for name, module in PHASES.items()}


def test_the_documented_command_lines_parse() -> None:
    default = parse_args([], tuple(PHASES), "test")
    assert default.phases == tuple(PHASES) and default.calls == 2000
    quick = parse_args(["--calls", "200", "--starts", "2", "--json", "out.json",
                        "--phases", "peers,view"], tuple(PHASES), "test")
    assert (quick.calls, quick.starts, quick.phases) == (200, 2, ("peers", "view"))
    assert quick.json_path == Path("out.json")
    with pytest.raises(SystemExit):
        parse_args(["--phases", "nonesuch"], tuple(PHASES), "test")


def test_no_reference_to_a_design_document_the_repo_lacks() -> None:
    if (BENCHMARKS.parent / "DESIGN.md").exists():
        pytest.skip("the repository has a DESIGN.md")
    citing = [p.name for p in [*BENCHMARKS.glob("*.py"), *BENCHMARKS.glob("*.md")]
              if "DESIGN" in p.read_text()]
    assert not citing, f"cite a file in the repository instead: {citing}"
