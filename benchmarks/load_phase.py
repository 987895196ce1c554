"""The ``load`` phase: the load test's mix (tests/e2e/load_mix.py) as a measurement.

32 callers (4 per target, 8 targets sharing the hosts' browsers), each on a tab of its
own, every reply checked against its call. A warm-up of 5 calls per caller, then two
halves of --calls/40 calls per caller; VmRSS after the warm-up and after each half; the
growth row is the second half's, per call.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

import anyio

from benchmarks.bench import Bench
from benchmarks.clients import child_pid_with
from benchmarks.results import RowMaker, percentile, progress
from tests.e2e.helpers import proc_status_kb, write_targets
from tests.e2e.load_mix import TOOL_OF, Caller, open_callers, run_callers, shared_browser_targets

__all__ = ["ROW_KEYS", "define_rows", "run"]

LOAD_CALLERS_PER_TARGET = 4
LOAD_BUDGET_S = 300.0          # the phase, set-up included (a bound, not a target)
ROW_KEYS = ("load_rate", "load_lat", "load_p95", "load_eval", "load_view", "load_rss0",
            "load_rss1", "load_growth")


def define_rows(row: RowMaker) -> None:
    row("load_rate", "mixed load: 32 callers on 8 targets (4 each), `evaluate` / "
        "`cdp_command` / `list_tabs` / `browse_view`, every reply checked",
        unit="calls/s", show_p90=False)
    row("load_lat", "↳ latency of one call under that load, all kinds")
    row("load_p95", "↳ p95 of the same", show_p90=False)
    row("load_eval", "↳ `evaluate` under that load")
    row("load_view", "↳ `browse_view` under that load")
    row("load_rss0", "↳ gateway VmRSS after the warm-up", unit="MB", show_p90=False)
    row("load_rss1", "↳ gateway VmRSS at the end", unit="MB", show_p90=False)
    row("load_growth", "↳ VmRSS growth per call, second half of the run",
        unit="B/call", show_p90=False, target="flat: no growth per call")


async def run(bench: Bench) -> None:
    r = bench.r
    per_half = max(10, bench.opts.calls // 40)
    workdir = Path(tempfile.mkdtemp(prefix="csgw-bench-"))
    targets = shared_browser_targets([h.name for h in bench.hosts()])
    config = write_targets(workdir / "load-targets.toml", targets)
    callers: list[Caller] = []
    latencies: dict[str, list[float]] = {}

    def answered(kind: str, seconds: float) -> None:
        latencies.setdefault(TOOL_OF[kind], []).append(seconds * 1000)

    try:
        async with bench.gateway(bench.topo.client_env(), ["--config", str(config)]) as gw:
            pid = child_pid_with(str(config))
            if pid is None:
                raise RuntimeError("could not find the gateway process")
            try:
                with anyio.fail_after(LOAD_BUDGET_S):
                    await bench.all_up(gw)
                    await open_callers(gw, list(targets), LOAD_CALLERS_PER_TARGET, callers)
                    await run_callers(gw, callers, 5, 0, lambda _k, _s: None)
                    rss = [proc_status_kb(pid, "VmRSS")]
                    t0 = time.perf_counter()
                    for half in range(2):
                        await run_callers(gw, callers, per_half, 5 + half * per_half,
                                          answered)
                        rss.append(proc_status_kb(pid, "VmRSS"))
                    wall = time.perf_counter() - t0
            finally:
                await bench.close_tabs([(gw, c.tab) for c in callers])
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    every = [ms for values in latencies.values() for ms in values]
    r.rows["load_rate"].samples.append(len(every) / wall)
    r.rows["load_lat"].samples = every
    r.rows["load_p95"].samples = [percentile(every, 0.95)]
    r.rows["load_eval"].samples = latencies.get("evaluate", [])
    r.rows["load_view"].samples = latencies.get("browse_view", [])
    r.rows["load_rss0"].samples = [rss[0] / 1024]
    r.rows["load_rss1"].samples = [rss[-1] / 1024]
    r.rows["load_growth"].samples = [(rss[2] - rss[1]) * 1024 / (per_half * len(callers))]
    r.meta["load"] = {"calls": len(every), "callers": len(callers), "vmrss_kb": rss,
                      "per_tool": {k: len(v) for k, v in latencies.items()}}
    progress(f"mixed load: {len(every)} calls, {len(every) / wall:.0f} calls/s, VmRSS "
             f"{rss} KB")
