"""The ``startup`` phase: a gateway's start beside the SDK's import and start.

Each round, in a fresh interpreter each time, like a real start: ``python -c pass``,
``import mcp.server.mcpserver`` (the SDK's import), what serving imports (ours + SDK),
split by ``-X importtime`` self time per top-level package; then the no-op MCP server
spawn → first tool result, and the gateway spawn → first non-empty ``list_tabs`` over
SSH, back to back. Rounds interleave the rows (fair under changing load) and stop early,
after at least two, once STARTUP_BUDGET_S is used up.

The target is relative: a gateway's start may take at most
TARGET_START_OVER_NOOP_MS longer than the no-op server's start, the median of the
rounds' differences. Beside it, the CPU each process had spent by its first result:
on a shared machine the wall times of both sides grow with the load, the CPU far less.
"""

from __future__ import annotations

import sys
import time

import anyio

from benchmarks.bench import Bench
from benchmarks.clients import REPO, child_cpu_ms, noop_start, until_tabs
from benchmarks.results import RowMaker, at_most, differences, fmt, progress

__all__ = ["ROW_KEYS", "define_rows", "run"]

TARGET_START_OVER_NOOP_MS = 100.0   # what a start may add to the no-op server's
STARTUP_BUDGET_S = 50.0        # the rounds stop early (after 2) beyond this
SNIPPETS = {
    "py_bare": "pass",
    "py_mcp": "import mcp.server.mcpserver",
    "py_gateway": "import gateway.cli, gateway.mcp.app, gateway.tools",
}
ROW_KEYS = ("py_bare", "py_mcp", "py_gateway", "imp_own", "imp_mcp", "imp_deps", "imp_rest",
            "noop_start", "gw_init", "gw_start", "imp_over_sdk", "start_over_noop",
            "noop_cpu", "gw_cpu", "cpu_over_noop")


def define_rows(row: RowMaker) -> None:
    row("py_bare", "`python -c pass`", target="floor: interpreter start")
    row("py_mcp", "`python -c \"import mcp.server.mcpserver\"`",
        target="floor: the SDK's import")
    row("py_gateway", "`python -c \"import gateway.cli, gateway.mcp.app, "
        "gateway.tools\"`", target="ours + SDK: what serving imports")
    row("imp_own", "↳ of which gateway's own modules (`-X importtime`, self time)",
        target="ours")
    row("imp_mcp", "↳ of which mcp + mcp_types (`-X importtime`, self time)", target="SDK")
    row("imp_deps", "↳ of which asyncssh + websockets + structlog (self time)",
        target="our other deps")
    row("imp_rest", "↳ of which everything else: stdlib, pydantic, anyio, ... (self time)")
    row("noop_start", "no-op MCP server: spawn → first tool result",
        target="floor: SDK start + handshake")
    row("gw_init", "gateway: spawn → MCP initialized")
    row("gw_start", "gateway: spawn → first non-empty `list_tabs` over SSH")
    row("imp_over_sdk", "gateway import - SDK import (medians above)", show_p90=False)
    row("start_over_noop", "gateway start - no-op server start, each round's (back to back)",
        target=f"≤ {TARGET_START_OVER_NOOP_MS:.0f} ms")
    row("noop_cpu", "no-op MCP server process: CPU by its first result",
        target="floor")
    row("gw_cpu", "gateway process: CPU by its first non-empty `list_tabs` (the empty "
        "ones before it answered)")
    row("cpu_over_noop", "↳ gateway CPU - no-op server CPU, each round's",
        target="what a start adds in this process")


async def run(bench: Bench) -> None:
    opts, r = bench.opts, bench.r
    deadline = time.perf_counter() + STARTUP_BUDGET_S
    env = bench.env("h1")
    polls: list[int] = []  # list_tabs calls until one listed a tab, per start
    for i in range(opts.starts):
        if i >= 2 and time.perf_counter() > deadline:
            r.warnings.append(f"start-up budget of {STARTUP_BUDGET_S:.0f} s used up after "
                              f"{i} of {opts.starts} rounds")
            break
        for key, code in SNIPPETS.items():
            if key == "py_gateway" and i >= 3:  # the slowest; 3 samples are plenty
                continue
            t0 = time.perf_counter()
            await anyio.run_process([sys.executable, "-c", code], cwd=str(REPO), check=True)
            r.rows[key].samples.append((time.perf_counter() - t0) * 1000)
        if i < 3:
            await _import_breakdown(bench, SNIPPETS["py_gateway"])
        noop_ms, noop_cpu_ms = await noop_start()
        t0 = time.perf_counter()
        with anyio.fail_after(60):
            async with bench.gateway(env) as gw:
                r.rows["gw_init"].samples.append((time.perf_counter() - t0) * 1000)
                polls.append(await until_tabs(gw))
                r.rows["gw_start"].samples.append((time.perf_counter() - t0) * 1000)
                r.rows["gw_cpu"].samples.append(child_cpu_ms("gateway serve"))
        r.rows["noop_start"].samples.append(noop_ms)
        r.rows["noop_cpu"].samples.append(noop_cpu_ms)
    r.meta["startup_list_tabs_calls"] = polls
    rows = r.rows
    medians = [rows[k].median for k in ("py_gateway", "py_mcp")]
    if None not in medians:  # different round counts: the medians' difference
        rows["imp_over_sdk"].samples = [medians[0] - medians[1]]  # type: ignore[operator]
    rows["start_over_noop"].samples = differences(rows["gw_start"].samples,
                                                  rows["noop_start"].samples)
    at_most(rows["start_over_noop"], TARGET_START_OVER_NOOP_MS)
    rows["cpu_over_noop"].samples = differences(rows["gw_cpu"].samples,
                                                rows["noop_cpu"].samples)
    progress(f"start-up: gateway {fmt(rows['gw_start'].median, 'ms')} "
             f"({fmt(rows['gw_cpu'].median, 'ms')} CPU), no-op server "
             f"{fmt(rows['noop_start'].median, 'ms')} ({fmt(rows['noop_cpu'].median, 'ms')} "
             f"CPU), import mcp {fmt(rows['py_mcp'].median, 'ms')}; list_tabs calls until "
             f"a tab: {polls}")


async def _import_breakdown(bench: Bench, code: str) -> None:
    """Who the import time belongs to: each module's self time, summed by top-level
    package (an exact partition of the total)."""
    groups = {"gateway": "imp_own", "mcp": "imp_mcp", "mcp_types": "imp_mcp",
              "asyncssh": "imp_deps", "websockets": "imp_deps", "structlog": "imp_deps"}
    proc = await anyio.run_process([sys.executable, "-X", "importtime", "-c", code],
                                   cwd=str(REPO), check=True)
    totals = dict.fromkeys(("imp_own", "imp_mcp", "imp_deps", "imp_rest"), 0.0)
    for line in proc.stderr.decode().splitlines():
        parts = line.removeprefix("import time:").split("|")
        if len(parts) != 3 or not parts[0].strip().isdigit():
            continue
        package = parts[2].strip().split(".")[0]
        totals[groups.get(package, "imp_rest")] += int(parts[0]) / 1000
    for key, value in totals.items():
        bench.r.rows[key].samples.append(value)

