"""The ``startup`` phase (issue 12): a gateway's start beside the SDK's import and start.

Each round, in a fresh interpreter each time, like a real start: ``python -c pass``,
``import mcp.server.mcpserver`` (the SDK's import), what serving imports (ours + SDK),
split by ``-X importtime`` self time per top-level package; then the no-op MCP server
spawn → first tool result, and the gateway spawn → first non-empty ``list_tabs`` over
SSH. Rounds interleave the rows (fair under changing load) and stop early, after at
least two, once STARTUP_BUDGET_S is used up.
"""

from __future__ import annotations

import sys
import time

import anyio

from benchmarks.bench import Bench
from benchmarks.clients import REPO, noop_start_ms, until_tabs
from benchmarks.results import RowMaker, fmt, progress

__all__ = ["ROW_KEYS", "define_rows", "run"]

TARGET_STARTUP_MS = 800.0      # issue 2, "Speed"
TARGET_IMPORT_OVER_SDK_MS = 80.0
TARGET_START_OVER_NOOP_MS = 150.0
STARTUP_BUDGET_S = 50.0        # the rounds stop early (after 2) beyond this
SNIPPETS = {
    "py_bare": "pass",
    "py_mcp": "import mcp.server.mcpserver",
    "py_gateway": "import gateway.cli, gateway.server.app, gateway.tools",
}
ROW_KEYS = ("py_bare", "py_mcp", "py_gateway", "imp_own", "imp_mcp", "imp_deps", "imp_rest",
            "noop_start", "gw_init", "gw_start", "imp_over_sdk", "start_over_noop")


def define_rows(row: RowMaker) -> None:
    row("py_bare", "`python -c pass`", target="floor: interpreter start")
    row("py_mcp", "`python -c \"import mcp.server.mcpserver\"`",
        target="floor: the SDK's import")
    row("py_gateway", "`python -c \"import gateway.cli, gateway.server.app, "
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
    row("gw_start", "gateway: spawn → first non-empty `list_tabs` over SSH",
        target=f"≤ {TARGET_STARTUP_MS:.0f} ms")
    row("imp_over_sdk", "gateway import - SDK import (medians above)", show_p90=False,
        target=f"≤ {TARGET_IMPORT_OVER_SDK_MS:.0f} ms")
    row("start_over_noop", "gateway start - no-op server start (medians above)",
        show_p90=False, target=f"≤ {TARGET_START_OVER_NOOP_MS:.0f} ms")


async def run(bench: Bench) -> None:
    opts, r = bench.opts, bench.r
    deadline = time.perf_counter() + STARTUP_BUDGET_S
    env = bench.env("h1")
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
        r.rows["noop_start"].samples.append(await noop_start_ms())
        t0 = time.perf_counter()
        with anyio.fail_after(60):
            async with bench.gateway(env) as gw:
                r.rows["gw_init"].samples.append((time.perf_counter() - t0) * 1000)
                await until_tabs(gw)
                r.rows["gw_start"].samples.append((time.perf_counter() - t0) * 1000)
    row = r.rows["gw_start"]
    row.ok = row.median is not None and row.median <= TARGET_STARTUP_MS
    for key, (ours, floor, target) in {
            "imp_over_sdk": ("py_gateway", "py_mcp", TARGET_IMPORT_OVER_SDK_MS),
            "start_over_noop": ("gw_start", "noop_start", TARGET_START_OVER_NOOP_MS)}.items():
        ours_ms, floor_ms = r.rows[ours].median, r.rows[floor].median
        if ours_ms is not None and floor_ms is not None:
            r.rows[key].samples = [ours_ms - floor_ms]
            r.rows[key].ok = ours_ms - floor_ms <= target
    progress(f"start-up: gateway {fmt(row.median, 'ms')}, no-op server "
             f"{fmt(r.rows['noop_start'].median, 'ms')}, import mcp "
             f"{fmt(r.rows['py_mcp'].median, 'ms')}")


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

