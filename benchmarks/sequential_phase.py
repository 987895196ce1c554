"""The ``sequential`` phase: one call at a time, the gateway beside its floors.

Raw CDP ``Runtime.evaluate 1+1`` over the same asyncssh Unix-socket forward the gateway
uses (with plain parameters, and with the ones the ``evaluate`` tool sends), a no-op MCP
tool over stdio (the SDK's floor), and the gateway's ``cdp_command`` and ``evaluate`` on
a tab, interleaved in rotating blocks. A second gateway with the call log on gives the
time spent inside the tool. The overhead rows are gateway - (raw + MCP floor).

``profile`` (``--profile PATH``) runs the same gateway calls again under cProfile.
"""

from __future__ import annotations

import contextlib
import json
import pstats
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
from mcp import Client

from benchmarks.bench import BLOCK_TIMEOUT_S, Bench
from benchmarks.clients import call, gateway_params, mcp_client, noop_params
from benchmarks.raw_cdp import EVALUATE_TOOL_PARAMS, RAW_PARAMS, RawCdp
from benchmarks.results import RowMaker, progress

__all__ = ["ROW_KEYS", "define_rows", "profile", "run"]

TARGET_OVERHEAD_MS = 0.5       # the gateway's own share of a call, beyond both floors
ROW_KEYS = ("raw", "raw_eval", "mcp", "gw_cdp", "gw_eval", "gw_cdp_log", "gw_eval_log",
            "in_cdp", "in_eval", "ovh_cdp", "ovh_eval", "ssh_connect")


def define_rows(row: RowMaker) -> None:
    row("raw", "raw CDP `Runtime.evaluate 1+1`, asyncssh Unix-socket forward to h1",
        target="floor")
    row("raw_eval", "raw CDP, same call with the `evaluate` tool's params",
        target="floor for `evaluate`")
    row("mcp", "MCP stdio round trip, no-op tool (`benchmarks/noop_server.py`)",
        target="floor: the SDK's own")
    row("gw_cdp", "gateway `cdp_command` Runtime.evaluate 1+1 on a tab")
    row("gw_eval", "gateway `evaluate` \"1+1\" on a tab")
    row("gw_cdp_log", "gateway `cdp_command`, call log on (end to end)", hidden=True)
    row("gw_eval_log", "gateway `evaluate`, call log on (end to end)", hidden=True)
    row("in_cdp", "↳ inside the gateway: `cdp_command` tool time (call log `duration_ms`)",
        target="vs raw CDP row")
    row("in_eval", "↳ inside the gateway: `evaluate` tool time (call log `duration_ms`)",
        target="vs raw CDP (evaluate params) row")
    row("ovh_cdp", "gateway overhead, `cdp_command` (= gateway - raw - MCP floor)",
        target=f"≤ {TARGET_OVERHEAD_MS} ms", show_p90=False)
    row("ovh_eval", "gateway overhead, `evaluate` (= gateway - raw(evaluate params) - "
        "MCP floor)", target=f"≤ {TARGET_OVERHEAD_MS} ms", show_p90=False)
    row("ssh_connect", "asyncssh connect + auth to h1",
        target="floor: an SSH start's")


async def run(bench: Bench) -> None:
    opts, r = bench.opts, bench.r
    deadline = time.perf_counter() + opts.sequential_budget_s
    env = bench.env("h1")

    # asyncssh connect+auth, the floor under every SSH start-up (a few, cheap).
    probe = bench.raw("h1")
    for _ in range(max(3, opts.starts)):
        t0 = time.perf_counter()
        conn = await probe.ssh_connect()
        r.rows["ssh_connect"].samples.append((time.perf_counter() - t0) * 1000)
        conn.close()
        await conn.wait_closed()

    raw = bench.raw("h1")
    workdir = Path(tempfile.mkdtemp(prefix="csgw-bench-"))
    call_log = workdir / "calls.jsonl"
    logged_env = {**env, "MCP_DEBUG_LOG": str(call_log)}
    try:
        await raw.open()
        r.meta["browser"] = raw.browser
        async with mcp_client(noop_params()) as noop, bench.gateway(env) as gw, \
                bench.gateway(logged_env) as gw_logged:
            tabs: list[tuple[Client, int]] = []
            try:
                for client in (gw, gw_logged):
                    tabs.append((client, int((await call(client, "new_tab", {}))["tab"])))
                await _calls(bench, raw, noop, tabs[0], tabs[1], deadline)
            finally:
                await bench.close_tabs(tabs)
        _overheads(bench)
        _in_tool_times(bench, call_log)
    finally:
        await raw.aclose()
        shutil.rmtree(workdir, ignore_errors=True)


async def _calls(bench: Bench, raw: RawCdp, noop: Client, plain: tuple[Client, int],
                 logged: tuple[Client, int], deadline: float) -> None:
    async def raw_plain() -> None:
        result = await raw.send("Runtime.evaluate", RAW_PARAMS)
        assert result["result"]["value"] == 2, result

    async def raw_eval() -> None:
        result = await raw.send("Runtime.evaluate", EVALUATE_TOOL_PARAMS)
        assert result["result"]["value"] == 2, result

    async def mcp_noop() -> None:
        content = await call(noop, "noop", {"expression": "1+1", "tab": 1})
        assert content["value"] == 2, content

    def gw_cdp(gw: Client, tab: int) -> Callable[[], Awaitable[None]]:
        async def one() -> None:
            content = await call(gw, "cdp_command", {
                "method": "Runtime.evaluate", "params": RAW_PARAMS, "tab": tab})
            assert content["result"]["result"]["value"] == 2, content
        return one

    def gw_eval(gw: Client, tab: int) -> Callable[[], Awaitable[None]]:
        async def one() -> None:
            content = await call(gw, "evaluate", {"expression": "1+1", "tab": tab})
            assert content["value"] == 2, content
        return one

    opts = bench.opts
    n, quarter = opts.calls, max(1, opts.calls // 4)
    await bench.interleaved({
        "raw": (raw_plain, n), "raw_eval": (raw_eval, n), "mcp": (mcp_noop, n),
        "gw_cdp": (gw_cdp(*plain), n), "gw_eval": (gw_eval(*plain), n),
        # The same calls through a second gateway with the call log on: its duration_ms
        # is the time spent inside the tool (not the MCP transport).
        "gw_cdp_log": (gw_cdp(*logged), quarter), "gw_eval_log": (gw_eval(*logged), quarter),
    }, "sequential", deadline, opts.sequential_budget_s, opts.warmup)


def _in_tool_times(bench: Bench, call_log: Path) -> None:
    """duration_ms of the logged gateway's measured calls (warm-up calls skipped)."""
    seen: dict[str, int] = {}
    for line in call_log.read_text().splitlines():
        record = json.loads(line)
        key = {"evaluate": "in_eval", "cdp_command": "in_cdp"}.get(record.get("tool") or "")
        if key is None or record.get("outcome") != "ok":
            continue
        seen[key] = seen.get(key, 0) + 1
        if seen[key] > bench.opts.warmup:
            bench.r.rows[key].samples.append(float(record["duration_ms"]))


def _overheads(bench: Bench) -> None:
    rows = bench.r.rows
    for ovh, gw, raw in (("ovh_cdp", "gw_cdp", "raw"), ("ovh_eval", "gw_eval", "raw_eval")):
        g, f, m = rows[gw].median, rows[raw].median, rows["mcp"].median
        if g is None or f is None or m is None:
            continue
        value = g - (f + m)
        rows[ovh].samples = [value]
        rows[ovh].ok = value <= TARGET_OVERHEAD_MS


async def profile(bench: Bench) -> None:
    """Run the sequential gateway calls again under cProfile and print the hot spots."""
    assert bench.opts.profile is not None
    out, n = bench.opts.profile, bench.opts.calls
    out.unlink(missing_ok=True)
    async with mcp_client(gateway_params(bench.env("h1"), profile_to=out)) as gw:
        tab = int((await call(gw, "new_tab", {}))["tab"])
        try:
            with anyio.fail_after(BLOCK_TIMEOUT_S * 2):
                for _ in range(n):
                    await call(gw, "evaluate", {"expression": "1+1", "tab": tab})
                for _ in range(n):
                    await call(gw, "cdp_command", {"method": "Runtime.evaluate",
                                                   "params": RAW_PARAMS, "tab": tab})
        finally:
            with contextlib.suppress(Exception):
                await call(gw, "close_tab", {"tab": tab})
    # The gateway exits on stdin EOF, and cProfile writes the file as it does.
    for _ in range(100):
        if out.exists():
            break
        await anyio.sleep(0.05)
    if not out.exists():
        raise RuntimeError(f"{out} was not written (the gateway did not exit cleanly?)")
    stats = pstats.Stats(str(out), stream=sys.stderr)
    progress(f"profile written to {out} ({2 * n} calls); top functions by own time:")
    stats.sort_stats("tottime").print_stats(25)
