"""The ``logs`` phase: ``console_messages`` / ``network_requests`` returning
1,000 entries each, beside a no-op MCP tool returning as many entries of the same shape.

One gateway, with the call log on: the rows are its end-to-end times and the call log's
duration_ms of the same calls (writing the log line, after duration_ms is taken, adds a
little to the former; see README).
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
from mcp import Client

from benchmarks.bench import LIVE_BLOCK, Bench
from benchmarks.clients import call, mcp_client, noop_params
from benchmarks.page_server import page_server
from benchmarks.results import RowMaker

__all__ = ["ROW_KEYS", "define_rows", "run"]

TARGET_LIST_MS = 20.0          # gateway time to list 1,000 console / network entries
LOG_ENTRIES = 1000             # = the default console_buffer / network_buffer
LOGS_BUDGET_S = 25.0           # set-up included; the rounds stop early (after 2) beyond it
# Fills a tab (on the page server's origin) with LOG_ENTRIES console messages and as
# many fetches of a 43-byte GIF, 50 at a time; the value is how many fetches got a 200.
FILL_LOGS = f"""await (async () => {{
  for (let i = 1; i <= {LOG_ENTRIES}; i++) console.log("bench message %d of {LOG_ENTRIES}", i);
  let ok = 0;
  for (let i = 0; i < {LOG_ENTRIES}; i += 50) {{
    const batch = [];
    for (let j = i; j < Math.min(i + 50, {LOG_ENTRIES}); j++) {{
      batch.push(fetch(`/s.gif?n=${{j + 1}}`, {{cache: "no-store"}})
        .then(r => r.arrayBuffer().then(() => r.status === 200)));
    }}
    ok += (await Promise.all(batch)).filter(Boolean).length;
  }}
  return ok;
}})()"""
ROW_KEYS = ("mcp_list", "gw_console", "gw_network", "in_console", "in_network")


def define_rows(row: RowMaker) -> None:
    row("mcp_list", f"MCP stdio round trip, no-op tool returning {LOG_ENTRIES:,} "
        "console-message-shaped entries", target="floor: the SDK's cost for such a result")
    row("gw_console", f"gateway `console_messages` limit={LOG_ENTRIES}, tab holding "
        f"{LOG_ENTRIES:,} messages, end to end")
    row("gw_network", f"gateway `network_requests` limit={LOG_ENTRIES}, tab holding "
        f"{LOG_ENTRIES:,} requests, end to end")
    row("in_console", "↳ inside the gateway: `console_messages` tool time (call log "
        "`duration_ms`)", target=f"≤ {TARGET_LIST_MS:.0f} ms")
    row("in_network", "↳ inside the gateway: `network_requests` tool time (call log "
        "`duration_ms`)", target=f"≤ {TARGET_LIST_MS:.0f} ms")


async def run(bench: Bench) -> None:
    r = bench.r
    deadline = time.perf_counter() + LOGS_BUDGET_S
    host = bench.topo.host("h1")
    workdir = Path(tempfile.mkdtemp(prefix="csgw-bench-"))
    call_log = workdir / "calls.jsonl"
    env = {**bench.env(host.name), "MCP_DEBUG_LOG": str(call_log)}
    tabs: list[tuple[Client, int]] = []
    sizes: dict[str, int] = {}
    try:
        async with page_server(host) as base, mcp_client(noop_params()) as noop, \
                bench.gateway(env) as gw:
            try:
                # The server's directory listing: a page without subresources.
                tab = await bench.live_tab(gw, base, tabs)
                await _fill_logs(gw, tab)
                offset = call_log.stat().st_size  # the measured calls' records follow

                def lister(client: Client, tool: str, key: str,
                           tab: int) -> Callable[[], Awaitable[None]]:
                    async def one() -> None:
                        content = await call(client, tool, {"tab": tab, "limit": LOG_ENTRIES})
                        assert len(content[key]) == LOG_ENTRIES, len(content[key])
                        if tool not in sizes:
                            sizes[tool] = len(json.dumps(content))
                    return one

                n = max(10, bench.opts.calls // 100)
                await bench.interleaved({
                    "mcp_list": (lister(noop, "noop_list", "messages", 1), n),
                    "gw_console": (lister(gw, "console_messages", "messages", tab), n),
                    "gw_network": (lister(gw, "network_requests", "requests", tab), n),
                }, "logs", deadline, LOGS_BUDGET_S, bench.live_warmup(), LIVE_BLOCK)
            finally:
                await bench.close_tabs(tabs)
        _list_times(bench, call_log, offset)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    r.meta["list_structured_json_chars"] = sizes
    for key in ("in_console", "in_network"):
        row = r.rows[key]
        row.ok = row.median is not None and row.median <= TARGET_LIST_MS
    kb = sizes.get("noop_list", 0) / 1024
    r.rows["mcp_list"].label = (f"MCP stdio round trip, no-op tool returning {LOG_ENTRIES:,} "
                                f"console-message-shaped entries ({kb:.0f} KB of JSON)")


async def _fill_logs(gw: Client, tab: int) -> None:
    """LOG_ENTRIES console messages and fetches, then wait until the gateway holds
    them all (network events may trail the evaluate's reply)."""
    content = await call(gw, "evaluate", {"expression": FILL_LOGS, "tab": tab,
                                          "timeout_s": 60})
    if content.get("value") != LOG_ENTRIES:
        raise RuntimeError(f"filling tab {tab}: {content.get('value')!r} of {LOG_ENTRIES} "
                           "fetches returned 200")
    args = {"tab": tab, "limit": LOG_ENTRIES}
    with anyio.fail_after(30):
        while True:
            messages = (await call(gw, "console_messages", args))["messages"]
            requests = (await call(gw, "network_requests", {**args, "filter": "/s.gif"})
                        )["requests"]
            finished = [q for q in requests
                        if q["status"] == 200 and q["duration_ms"] is not None]
            if len(messages) == len(finished) == LOG_ENTRIES:
                return
            await anyio.sleep(0.05)


def _list_times(bench: Bench, call_log: Path, offset: int) -> None:
    """duration_ms of the logged gateway's measured list calls (warm-up skipped)."""
    keys = {"console_messages": "in_console", "network_requests": "in_network"}
    seen: dict[str, int] = {}
    result_bytes: dict[str, int] = {}
    with call_log.open("rb") as f:
        f.seek(offset)
        lines = f.read().decode().splitlines()
    for line in lines:
        record = json.loads(line)
        key = keys.get(record.get("tool") or "")
        if key is None or record.get("outcome") != "ok":
            continue
        seen[key] = seen.get(key, 0) + 1
        if seen[key] > bench.live_warmup():
            bench.r.rows[key].samples.append(float(record["duration_ms"]))
            result_bytes[record["tool"]] = int(record.get("result_bytes", 0))
    bench.r.meta["list_result_bytes"] = result_bytes
