"""The issue 30 performance rows' arithmetic: each row against its floor from the same
run, and the ✅/❌ the table shows. No topology: figures are given as a run would make
them."""

from __future__ import annotations

import pytest

from benchmarks import startup_phase
from benchmarks.bench import Bench
from benchmarks.options import parse_args
from benchmarks.peers_phase import view_verdict
from benchmarks.results import Results, Row, at_least, at_most, differences, view_limit_ms
from benchmarks.run import PHASES, define_rows
from benchmarks.targets_phase import cpu_rows


def _results(*phases: str) -> Results:
    """The benchmark's rows, as a run of ``phases`` defines them."""
    bench = Bench(parse_args([], tuple(PHASES), "test"))
    define_rows(bench)
    bench.r.phases_run.update(phases)
    return bench.r


def test_differences_pair_the_rounds_not_the_medians() -> None:
    # A load spike in round 2 slows both sides: its difference stays small, while the
    # medians' difference would mix rounds (1500 - 1100 = 400).
    ours, floor = [1200.0, 2500.0, 1500.0], [1100.0, 2450.0, 1420.0]
    assert differences(ours, floor) == [100.0, 50.0, 80.0]
    assert differences(ours, floor[:2]) == [100.0, 50.0]  # a round cut short


def test_verdicts_need_a_median_and_a_limit() -> None:
    row = Row("k", "label", "ms", samples=[1.0, 2.0, 3.0])
    at_most(row, 2.0)
    assert row.ok is True
    at_most(row, 1.9)
    assert row.ok is False
    at_least(row, 2.0)
    assert row.ok is True
    at_least(row, 2.1)
    assert row.ok is False
    at_most(row, None)
    assert row.ok is None
    empty = Row("e", "label", "ms")
    at_least(empty, 1.0)
    assert empty.ok is None


def test_start_target_is_the_median_difference_within_100_ms() -> None:
    r = _results("startup")
    row = r.rows["start_over_noop"]
    row.samples = differences([1300.0, 1290.0, 1400.0], [1180.0, 1200.0, 1310.0])
    at_most(row, startup_phase.TARGET_START_OVER_NOOP_MS)
    assert row.median == 90.0 and row.ok is True
    assert "≤ 100 ms ✅" in r.markdown()
    row.samples = [120.0, 101.0, 90.0]
    at_most(row, startup_phase.TARGET_START_OVER_NOOP_MS)
    assert "≤ 100 ms ❌" in r.markdown()
    assert "≤ 800 ms" not in r.markdown() and "≤ 80 ms" not in r.markdown()  # old targets


def test_throughput_rows_from_cpu_by_part() -> None:
    r = _results("targets")
    r.rows["tp_mcp"].samples, r.rows["tp_gw"].samples = [600.0, 620.0], [300.0, 310.0]
    r.rows["tp_ratio"].samples = [50.0, 50.0]
    # 1,000 calls each; CPU seconds by part: the gateway's process 1.2 ms a call against
    # the no-op server's 0.8 ms.
    spent = {"tp_mcp": {"client": 0.8, "server": 0.8},
             "tp_gw": {"client": 0.8, "server": 1.2, "sshd": 0.4, "chrome": 0.8}}
    cpu_rows(r, spent, {"tp_mcp": 1000, "tp_gw": 1000})
    rows = r.rows
    assert rows["tp_own_noop"].median == pytest.approx(0.8)
    assert rows["tp_own_gw"].median == pytest.approx(1.2)
    assert rows["tp_own_gw"].ok is False  # 1.2 > 0.8 + 0.3
    assert rows["tp_cpu_mcp"].median == pytest.approx(1.6)
    assert rows["tp_cpu_gw"].median == pytest.approx(3.2)
    # Were the gateway's process the no-op server's: 0.8 + 0.8 + 0.4 + 0.8 = 2.8 ms a call,
    # so the ratio could reach 1.6 / 2.8 = 57 %; 50 % is 87.5 % of that.
    assert rows["tp_ceiling"].median == pytest.approx(1.6 / 2.8 * 100)
    assert rows["tp_of_ceiling"].median == pytest.approx(50 / (1.6 / 2.8 * 100) * 100)
    assert rows["tp_of_ceiling"].ok is False
    spent["tp_gw"]["server"] = 1.05
    cpu_rows(r, spent, {"tp_mcp": 1000, "tp_gw": 1000})
    assert rows["tp_own_gw"].ok is True  # 1.05 ≤ 0.8 + 0.3
    r.rows["tp_ratio"].samples = [52.0]
    cpu_rows(r, spent, {"tp_mcp": 1000, "tp_gw": 1000})
    assert rows["tp_of_ceiling"].ok is True  # 52 / 57.1 = 91 %
    table = r.markdown()
    assert "≥ 90 % ✅" in table and "≤ floor + 0.3 ms ✅" in table
    assert "≥ 50 %" not in table  # the old target


def test_view_within_its_floor_plus_ten_percent() -> None:
    assert view_limit_ms(80.0) == pytest.approx(88.0)
    assert view_limit_ms(None) is None
    r = _results("view")
    r.rows["raw_ax"].samples = [80.0, 82.0, 84.0]
    r.rows["gw_view"].samples = [88.0, 90.0, 93.0]
    at_most(r.rows["gw_view"], view_limit_ms(r.rows["raw_ax"].median))
    assert r.rows["gw_view"].ok is True  # 90 ≤ 82 * 1.1 = 90.2
    assert "≤ floor + 10 % ✅" in r.markdown()
    r.rows["gw_view"].samples = [91.0]
    at_most(r.rows["gw_view"], view_limit_ms(r.rows["raw_ax"].median))
    assert r.rows["gw_view"].ok is False


def test_view_ahead_of_both_peers() -> None:
    assert view_verdict({"floor": 84.0, "us": 90.0, "cdm": 103.0, "pw": 118.0}) == (
        True, "≤ floor + 10 % ✅; ahead of both peers ✅")
    assert view_verdict({"floor": 84.0, "us": 90.0, "cdm": 89.0, "pw": 118.0}) == (
        False, "≤ floor + 10 % ✅; ahead of both peers ❌")
    assert view_verdict({"floor": 80.0, "us": 90.0, "cdm": 103.0, "pw": 118.0}) == (
        False, "≤ floor + 10 % ❌; ahead of both peers ✅")
    assert view_verdict({"floor": 84.0, "us": 90.0, "cdm": None, "pw": None}) == (
        True, "≤ floor + 10 % ✅; peers not measured")
    assert view_verdict({"floor": None, "us": 90.0, "cdm": 1.0, "pw": 1.0})[0] is None
