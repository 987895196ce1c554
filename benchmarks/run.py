"""Benchmark chrome-ssh-gateway against its floors, in one run, on the test topology.

    .venv/bin/python -m benchmarks.run [--hosts 2] [--calls 2000] [--json out.json]

Brings the test topology up with ``tests.topology.up(n)`` (a healthy running one
with at least ``n`` hosts is reused; it is never torn down here) and prints ONE
Markdown table of medians and p90s, every row measured in this run:

* floors: raw CDP ``Runtime.evaluate 1+1`` over the same asyncssh Unix-socket
  forward the gateway uses, and a no-op MCP tool over stdio (the SDK's floor);
* the gateway over stdio (``cdp_command`` and ``evaluate``) and its own
  overhead = gateway - (raw CDP + MCP floor);
* start-up to the first ``list_tabs`` result over SSH, beside the import floors;
* resident memory with 8 targets connected;
* concurrency (32 overlapping 50 ms evaluates) and throughput (32 callers)
  against the no-op tool's throughput;
* issue 4: a 1280x720 viewport ``screenshot`` beside raw ``Page.captureScreenshot``,
  and ``console_messages`` / ``network_requests`` on a tab holding 1,000 entries each
  (end to end, and the time inside the gateway from its call log);
* issue 3: a live ``browse_view`` of the news page beside raw
  ``Accessibility.getFullAXTree``, with the view's size.

The live pages come from ``fixtures/pages`` served by ``python -m http.server`` on the
loopback of h1's network namespace (where its Chromium runs), started for the phase
and stopped after it.

The sequential measurements are interleaved in blocks (raw, floor, gateway, …,
rotating the order every round) so that load from other processes on the
machine hits every row alike instead of whichever happened to run last.

Every loop is bounded by a count and by time; the script stops by itself and
closes every tab it opened.  See benchmarks/README.md for what each row means.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import importlib.metadata
import json
import math
import os
import platform
import pstats
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process
from mcp import Client, StdioServerParameters

from benchmarks import shell
from benchmarks.launch import TARGET_SLACK_MS, cold_launch, until_tabs
from benchmarks.model_phase import ROW_KEYS as MODEL_ROWS
from benchmarks.model_phase import define_rows as define_model_rows
from benchmarks.model_phase import model_phase
from benchmarks.profiling_phase import CAPTURE_TIMEOUT_S as PROFILING_CALL_TIMEOUT_S
from benchmarks.profiling_phase import ROW_KEYS as PROFILING_ROWS
from benchmarks.profiling_phase import define_rows as define_profiling_rows
from benchmarks.profiling_phase import profiling_phase
from benchmarks.raw_cdp import RawCdp
from benchmarks.scan_phase import ROW_KEYS as SCAN_ROWS
from benchmarks.scan_phase import define_rows as define_scan_rows
from benchmarks.scan_phase import scan_phase
from benchmarks.share_phase import ROW_KEYS as SHARE_ROWS
from benchmarks.share_phase import define_rows as define_share_rows
from benchmarks.share_phase import share_phase
from benchmarks.upload_phase import ROW_KEYS as UPLOAD_ROWS
from benchmarks.upload_phase import define_rows as define_upload_rows
from benchmarks.upload_phase import upload_phase
from benchmarks.webdriver_phase import ROW_KEYS as WEBDRIVER_ROWS
from benchmarks.webdriver_phase import TARGET_SLACK_MS as TARGET_WD_SLACK_MS
from benchmarks.webdriver_phase import define_rows as define_webdriver_rows
from benchmarks.webdriver_phase import webdriver_phase
from tests.e2e.helpers import data_url, proc_status_kb, write_targets
from tests.e2e.load_mix import (
    TOOL_OF,
    Caller,
    flood_js,
    open_callers,
    run_callers,
    shared_browser_targets,
)
from tests.topology import RemoteHost, Topology, load, up

REPO = Path(__file__).resolve().parent.parent
NOOP_SERVER = Path(__file__).resolve().parent / "noop_server.py"
PAGES = REPO / "fixtures" / "pages"
# A loopback address of our own (the namespace's lo is 127.0.0.1/8): a site of its own, so
# Chromium gives our pages a renderer process of their own, not the one running the
# 127.0.0.1 pages of tests on the same browser (a test's busy page would stall ours).
PAGE_HOST = "127.0.0.73"
PHASES = ("sequential", "startup", "targets", "load", "flood", "screenshot", "logs", "view",
          "context", "launch", "scan", "share", "shell", "upload",
          "profiling", "webdriver", "model")

# Targets (from issue 2, "Speed").
TARGET_OVERHEAD_MS = 0.5
TARGET_STARTUP_MS = 800.0
TARGET_RSS_MB = 100.0
TARGET_CONCURRENT_MS = 200.0
TARGET_THROUGHPUT_RATIO = 0.5
# Issue 4, "Speed".
TARGET_SCREENSHOT_MS = 150.0
TARGET_LIST_MS = 20.0          # gateway time to list 1,000 console / network entries
LOG_ENTRIES = 1000             # = the default console_buffer / network_buffer
# Issue 3, "Speed and size".
TARGET_VIEW_MS = 40.0
TARGET_VIEW_CHARS = 12_000
# Issue 12, "Context economy".
PLAYWRIGHT_TOOLS_LIST_CHARS = 21_432   # Playwright MCP 0.0.83's tools/list (DESIGN §7)
TARGET_TOOLS_ALL_CHARS = 14_000
TARGET_TOOLS_CORE_CHARS = 4_000
TARGET_VIEW_TEXT_EXTRA = 200           # text content ≤ the view + this many characters
TARGET_IMPORT_OVER_SDK_MS = 80.0
TARGET_START_OVER_NOOP_MS = 150.0
TOOL_SETS = {"tools_all": "all", "tools_core": "core", "tools_read_only": "all"}
# Issue 5, "Load".
LOAD_CALLERS_PER_TARGET = 4
LOAD_BUDGET_S = 300.0          # the mixed-load phase, set-up included (a bound, not a target)
FLOOD_S = 3.0                  # one flood (and one quiet window)
FLOOD_RATE = 10_000            # console messages a second
FLOOD_ROUNDS = 3
VIEWPORT = {"width": 1280, "height": 720, "deviceScaleFactor": 1, "mobile": False}

CALL_TIMEOUT_S = 60.0          # one MCP request (the SDK enforces it)
STARTUP_BUDGET_S = 50.0        # the start-up rounds stop early (after 2) beyond this
THROUGHPUT_BUDGET_S = 40.0     # the throughput rounds stop early (after 1 pair) beyond this
# The live-page phases (set-up included); their rounds stop early (after 2) beyond this.
SCREENSHOT_BUDGET_S = 25.0
LOGS_BUDGET_S = 25.0
VIEW_BUDGET_S = 25.0
LIVE_BLOCK = 5                 # their blocks are short: calls take 0.1-0.3 s each
RAW_LIVE_TIMEOUT_S = 20.0      # one raw screenshot / AX tree (a gateway call: CALL_TIMEOUT_S)
BLOCK_TIMEOUT_S = 120.0        # one block of sequential calls
# Top-level await: the gateway evaluates in replMode, where a promise that is the value of
# the expression is returned pending instead of awaited (see check_promise_awaited).
PROMISE_50MS = "await new Promise(r => setTimeout(r, 50))"
BARE_PROMISE_50MS = "new Promise(r => setTimeout(r, 50))"
RAW_PARAMS = {"expression": "1+1"}
# What the gateway's evaluate tool sends for the same expression (gateway/tools/runtime.py).
EVALUATE_TOOL_PARAMS = {"expression": "1+1", "awaitPromise": True, "replMode": True,
                        "userGesture": True, "returnByValue": False}
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


def progress(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------- statistics


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..1) of a non-empty sequence."""
    ordered = sorted(values)
    rank = max(1, math.ceil(q * len(ordered)))
    return ordered[rank - 1]


@dataclass
class Row:
    """One line of the table; ``samples`` are in the row's unit."""

    key: str
    label: str
    unit: str                       # "ms", "MB", "calls/s", "%"
    samples: list[float] = field(default_factory=list)
    target: str = ""                # the target/floor column
    ok: bool | None = None          # None: a floor or information, no target
    show_p90: bool = True
    phase: str = ""
    hidden: bool = False            # JSON only
    note: str = ""

    @property
    def median(self) -> float | None:
        return percentile(self.samples, 0.5) if self.samples else None

    @property
    def p90(self) -> float | None:
        return percentile(self.samples, 0.9) if self.samples and self.show_p90 else None

    def as_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "label": self.label, "unit": self.unit, "n": len(self.samples),
            "median": self.median, "p90": self.p90, "target": self.target, "ok": self.ok,
        }
        if self.samples:
            data["mean"] = sum(self.samples) / len(self.samples)
            data["min"] = min(self.samples)
            data["max"] = max(self.samples)
        if self.note:
            data["note"] = self.note
        return data


def fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "—"
    if unit == "ms":
        if abs(value) < 10:
            return f"{value:.3f} ms"
        return f"{value:.1f} ms" if abs(value) < 100 else f"{value:.0f} ms"
    if unit == "MB":
        return f"{value:.1f} MB"
    if unit == "calls/s":
        return f"{value:.0f} calls/s"
    if unit == "%":
        return f"{value:.0f} %"
    if unit == "x":
        return f"{value:.1f}x"
    if unit in ("msg/s", "B/call"):
        return f"{value:,.0f} {unit}"
    if unit in ("chars", "refs"):
        return f"{value:,.0f} {unit}"
    return f"{value:g} {unit}"


class Results:
    def __init__(self) -> None:
        self.rows: dict[str, Row] = {}
        self.meta: dict[str, Any] = {}
        self.errors: list[str] = []
        self.warnings: list[str] = []
        self.phases_run: set[str] = set()

    def row(self, key: str, label: str, unit: str = "ms", **kwargs: Any) -> Row:
        if key not in self.rows:
            self.rows[key] = Row(key, label, unit, **kwargs)
        return self.rows[key]

    def markdown(self) -> str:
        lines = ["| measurement | median | p90 | target/floor |", "|---|---:|---:|---|"]
        for row in self.rows.values():
            if row.hidden or row.phase not in self.phases_run:
                continue
            target = row.target
            if row.ok is not None and row.samples:
                target = f"{target} {'✅' if row.ok else '❌'}".strip()
            if not row.samples:
                target = f"{target} (not measured)".strip()
            lines.append(f"| {row.label} | {fmt(row.median, row.unit)} | "
                         f"{fmt(row.p90, row.unit)} | {target} |")
        return "\n".join(lines)


# ------------------------------------------------------------------------------ MCP helpers


def gateway_params(env: dict[str, str], args: Sequence[str] = (),
                   profile_to: Path | None = None) -> StdioServerParameters:
    argv = ["-m", "gateway", "serve", "--log-level", "WARNING", *args]
    if profile_to is not None:
        argv = ["-m", "cProfile", "-o", str(profile_to), *argv]
    return StdioServerParameters(command=sys.executable, args=argv, env=env, cwd=str(REPO))


def noop_params() -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=[str(NOOP_SERVER)],
                                 cwd=str(REPO))


@asynccontextmanager
async def mcp_client(params: StdioServerParameters,
                     read_timeout_s: float = CALL_TIMEOUT_S) -> AsyncIterator[Client]:
    async with Client(params, read_timeout_seconds=read_timeout_s) as client:
        yield client


async def call(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """One tool call that must succeed; its structured content."""
    return (await call_with_text(client, tool, args))[0]


async def call_with_text(client: Client, tool: str,
                         args: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """One tool call that must succeed; its structured content and its text content."""
    result = await client.call_tool(tool, args)
    if result.is_error:
        text = " ".join(getattr(block, "text", "") for block in result.content)
        raise RuntimeError(f"{tool}({args}) failed: {text}")
    content = result.structured_content
    if not isinstance(content, dict):
        raise RuntimeError(f"{tool} returned no structured content: {content!r}")
    return content, "".join(getattr(block, "text", "") for block in result.content)


def child_pid_with(marker: str) -> int | None:
    """Our own child process whose command line contains ``marker``."""
    me = os.getpid()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_text()
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        ppid = int(stat.rpartition(")")[2].split()[1])
        if ppid == me and marker in cmdline:
            return int(name)
    return None


def describe(exc: BaseException) -> str:
    """The leaf exceptions of a (possibly nested) exception group, one line."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(describe(inner) for inner in exc.exceptions)
    return f"{type(exc).__name__}: {exc}"


def wait_healthy(n_hosts: int, timeout_s: float) -> None:
    """Wait (bounded) while a running topology with enough hosts reports problems.

    Never repairs anything: that is up()'s decision, made afterwards.
    """
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        current = load()
        if current is None or len(current.hosts) < n_hosts or not current.problems():
            return
        time.sleep(0.5)


# --------------------------------------------------------------------------------- raw CDP


def _first_ref(view: str) -> int | None:
    found = re.search(r"#(\d+)", view)
    return int(found.group(1)) if found else None


class PageServer:
    """``fixtures/pages`` over HTTP on the loopback of a host's network namespace.

    That is the loopback the host's Chromium sees, so its tabs load the pages from
    ``http://127.0.0.73:<port>/`` (PAGE_HOST) while nothing listens outside the
    namespace.  The server (``python -m http.server`` on port 0, run with
    ``ip netns exec``) is our own child; ``aclose`` ends it by its PID.
    """

    def __init__(self, host: RemoteHost, directory: Path = PAGES) -> None:
        self.host = host
        self.directory = directory
        self.proc: Process | None = None
        self.base = ""

    async def start(self) -> str:
        argv = self.host.netns_exec(sys.executable, "-u", "-m", "http.server", "0",
                                    "--bind", PAGE_HOST, "--directory", str(self.directory))
        self.proc = await anyio.open_process(argv, stdin=subprocess.DEVNULL,
                                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        assert self.proc.stdout is not None
        banner = b""
        with anyio.fail_after(20):  # "Serving HTTP on 127.0.0.73 port 41234 (http://…) ..."
            while b"\n" not in banner and len(banner) < 4096:
                banner += await self.proc.stdout.receive()
        found = re.search(rb"port (\d+)", banner)
        if found is None:
            raise RuntimeError(f"http.server in {self.host.netns} said {banner!r}")
        self.base = f"http://{PAGE_HOST}:{int(found.group(1))}/"
        return self.base

    async def aclose(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        with anyio.CancelScope(shield=True):
            if proc.returncode is None:
                proc.terminate()
                with anyio.move_on_after(5):
                    await proc.wait()
            if proc.returncode is None:
                proc.kill()
                with anyio.move_on_after(5):
                    await proc.wait()
            with contextlib.suppress(Exception):
                await proc.aclose()


@asynccontextmanager
async def page_server(host: RemoteHost, directory: Path = PAGES) -> AsyncIterator[str]:
    """The base URL of a running PageServer on ``host``, stopped on exit."""
    server = PageServer(host, directory)
    try:
        yield await server.start()
    finally:
        await server.aclose()


# -------------------------------------------------------------------------- the run itself


@dataclass
class Options:
    hosts: int
    calls: int
    warmup: int
    starts: int
    concurrency: int
    retries: int
    phases: tuple[str, ...]
    sequential_budget_s: float
    profile: Path | None
    json_path: Path | None


class Bench:
    def __init__(self, opts: Options) -> None:
        self.opts = opts
        self.r = Results()
        self.topo: Topology | None = None
        self._sequential_deadline = 0.0
        self._define_rows()

    # Rows in table order, so the table reads top to bottom even if a phase fails.
    def _define_rows(self) -> None:
        r, n = self.r, self.opts.concurrency
        r.row("raw", "raw CDP `Runtime.evaluate 1+1`, asyncssh Unix-socket forward to h1",
              target="floor (DESIGN §6: ≈0.5-0.65 ms)")
        r.row("raw_eval", "raw CDP, same call with the `evaluate` tool's params",
              target="floor for `evaluate`")
        r.row("mcp", "MCP stdio round trip, no-op tool (`benchmarks/noop_server.py`)",
              target="floor (issue 2: ≈0.7-1.0 ms)")
        r.row("gw_cdp", "gateway `cdp_command` Runtime.evaluate 1+1 on a tab")
        r.row("gw_eval", "gateway `evaluate` \"1+1\" on a tab")
        r.row("gw_cdp_log", "gateway `cdp_command`, call log on (end to end)", hidden=True)
        r.row("gw_eval_log", "gateway `evaluate`, call log on (end to end)", hidden=True)
        r.row("in_cdp", "↳ inside the gateway: `cdp_command` tool time (call log `duration_ms`)",
              target="vs raw CDP row")
        r.row("in_eval", "↳ inside the gateway: `evaluate` tool time (call log `duration_ms`)",
              target="vs raw CDP (evaluate params) row")
        r.row("ovh_cdp", "gateway overhead, `cdp_command` (= gateway - raw - MCP floor)",
              target=f"≤ {TARGET_OVERHEAD_MS} ms", show_p90=False)
        r.row("ovh_eval", "gateway overhead, `evaluate` (= gateway - raw(evaluate params) - "
              "MCP floor)", target=f"≤ {TARGET_OVERHEAD_MS} ms", show_p90=False)
        r.row("py_bare", "`python -c pass`", target="floor: interpreter start")
        r.row("py_mcp", "`python -c \"import mcp.server.mcpserver\"`",
              target="floor: the SDK's import")
        r.row("py_gateway", "`python -c \"import gateway.cli, gateway.server.app, "
              "gateway.tools\"`", target="ours + SDK: what serving imports")
        r.row("imp_own", "↳ of which gateway's own modules (`-X importtime`, self time)",
              target="ours")
        r.row("imp_mcp", "↳ of which mcp + mcp_types (`-X importtime`, self time)",
              target="SDK")
        r.row("imp_deps", "↳ of which asyncssh + websockets + structlog (self time)",
              target="our other deps")
        r.row("imp_rest", "↳ of which everything else: stdlib, pydantic, anyio, ... (self time)")
        r.row("noop_start", "no-op MCP server: spawn → first tool result",
              target="floor: SDK start + handshake")
        r.row("ssh_connect", "asyncssh connect + auth to h1", target="floor (DESIGN §6: 29 ms)")
        r.row("launch_floor", "Chromium started by hand on h1: spawn → DevToolsActivePort",
              target="floor")
        r.row("launch_ssh", "asyncssh connect + auth to h1 (launch phase)", target="floor")
        r.row("launch_cold", "gateway, no browser on h1 (`launch = true`): spawn → first "
              "non-empty `list_tabs` (cold launch over SSH)")
        r.row("launch_warm", "↳ the same, its browser already running (reattach)")
        r.row("launch_cost", "↳ cold - warm: what launching costs",
              target=f"≤ Chromium by hand + {TARGET_SLACK_MS:.0f} ms")
        r.row("gw_init", "gateway: spawn → MCP initialized")
        r.row("gw_start", "gateway: spawn → first non-empty `list_tabs` over SSH",
              target=f"≤ {TARGET_STARTUP_MS:.0f} ms")
        r.row("imp_over_sdk", "gateway import - SDK import (medians above)", show_p90=False,
              target=f"≤ {TARGET_IMPORT_OVER_SDK_MS:.0f} ms")
        r.row("start_over_noop", "gateway start - no-op server start (medians above)",
              show_p90=False, target=f"≤ {TARGET_START_OVER_NOOP_MS:.0f} ms")
        r.row("rss", "gateway VmRSS, 8 targets up (+1 list_tabs)", unit="MB",
              target=f"≤ {TARGET_RSS_MB:.0f} MB", show_p90=False)
        r.row("conc", f"{n} concurrent `evaluate` awaiting a 50 ms timer, {n} tabs / 8 targets, "
              "wall time",
              target=f"≤ {TARGET_CONCURRENT_MS:.0f} ms (a global lock: {n * 0.05:g} s)")
        r.row("conc_bg", "↳ same, tabs left in the background (no focus emulation)",
              target="Chrome's 1 s timer throttling")
        r.row("conc_nowait", f"↳ same {n} calls with `1+1` (no wait), wall time",
              target="full overlap: row above ≈ this + 50 ms")
        r.row("conc_floor", f"{n} concurrent no-op tool calls (no wait), wall time",
              target=f"floor: SDK + client CPU for {n} calls")
        r.row("tp_mcp", f"throughput, no-op tool, {n} concurrent callers", unit="calls/s",
              target="floor")
        r.row("tp_gw", f"throughput, gateway `evaluate` 1+1, {n} callers on {n} tabs",
              unit="calls/s")
        r.row("tp_ratio", "throughput ratio gateway / no-op", unit="%",
              target=f"≥ {TARGET_THROUGHPUT_RATIO:.0%}".replace("%", " %"))
        # Issue 5: many agents at once, and a console flood.
        r.row("load_rate", "mixed load: 32 callers on 8 targets (4 each), `evaluate` / "
              "`cdp_command` / `list_tabs` / `browse_view`, every reply checked",
              unit="calls/s", show_p90=False)
        r.row("load_lat", "↳ latency of one call under that load, all kinds")
        r.row("load_p95", "↳ p95 of the same", show_p90=False)
        r.row("load_eval", "↳ `evaluate` under that load")
        r.row("load_view", "↳ `browse_view` under that load")
        r.row("load_rss0", "↳ gateway VmRSS after the warm-up", unit="MB", show_p90=False)
        r.row("load_rss1", "↳ gateway VmRSS at the end", unit="MB", show_p90=False)
        r.row("load_growth", "↳ VmRSS growth per call, second half of the run",
              unit="B/call", show_p90=False, target="flat: no growth per call")
        r.row("flood_raw_quiet", "raw CDP `Runtime.evaluate 1+1` on a tab of h1's browser, "
              "quiet", target="floor")
        r.row("flood_raw", "↳ same, while another tab of that browser logs 10,000 console "
              "messages/s", target="floor under the flood")
        r.row("flood_quiet", "gateway `evaluate 1+1` on another tab of the same browser, quiet")
        r.row("flood_same", "↳ same, during the flood (same websocket and SSH connection)")
        r.row("flood_other", "↳ `evaluate` on another host's browser during the flood")
        r.row("flood_other_quiet", "gateway `evaluate` on another host's browser, quiet",
              hidden=True)
        r.row("flood_ratio", "↳ flood / quiet, same browser (median)", unit="x",
              show_p90=False)
        r.row("flood_rate", "↳ console messages the page logged per second", unit="msg/s",
              show_p90=False, target=f"{FLOOD_RATE:,} planned")
        # Issue 4: screenshots, and long console / network lists (live pages on h1).
        r.row("raw_shot", "raw CDP `Page.captureScreenshot` PNG, 1280x720 viewport of the news "
              "page, same forward", target="floor")
        r.row("gw_shot", "gateway `screenshot` viewport PNG 1280x720, news page, over SSH",
              target=f"≤ {TARGET_SCREENSHOT_MS:.0f} ms")
        r.row("ovh_shot", "↳ gateway - raw (MCP stdio with the base64 image, the tool's code)",
              show_p90=False)
        r.row("mcp_list", f"MCP stdio round trip, no-op tool returning {LOG_ENTRIES:,} "
              "console-message-shaped entries", target="floor: the SDK's cost for such a result")
        r.row("gw_console", f"gateway `console_messages` limit={LOG_ENTRIES}, tab holding "
              f"{LOG_ENTRIES:,} messages, end to end")
        r.row("gw_network", f"gateway `network_requests` limit={LOG_ENTRIES}, tab holding "
              f"{LOG_ENTRIES:,} requests, end to end")
        r.row("in_console", "↳ inside the gateway: `console_messages` tool time (call log "
              "`duration_ms`)", target=f"≤ {TARGET_LIST_MS:.0f} ms")
        r.row("in_network", "↳ inside the gateway: `network_requests` tool time (call log "
              "`duration_ms`)", target=f"≤ {TARGET_LIST_MS:.0f} ms")
        # Issue 3: the live page view.
        r.row("raw_ax", "raw CDP `Accessibility.getFullAXTree` of the news page, same forward",
              target="floor: the view's largest CDP call")
        r.row("gw_view", "gateway `browse_view` of the news page over SSH (live tab)",
              target=f"≤ {TARGET_VIEW_MS:.0f} ms")
        r.row("view_chars", "↳ that view's size", unit="chars", show_p90=False,
              target=f"≤ {TARGET_VIEW_CHARS:,} chars")
        r.row("view_refs", "↳ refs in that view (links and controls)", unit="refs",
              show_p90=False, target="every link and control")
        r.row("view_text", "↳ that view's MCP text content (header + view)", unit="chars",
              show_p90=False, target=f"≤ view + {TARGET_VIEW_TEXT_EXTRA} chars")
        # Issue 12: what the tool definitions cost in the agent's context.
        r.row("tools_all", "`tools/list` JSON, `--tools all` (16 tools)", unit="chars",
              show_p90=False, target=f"≤ {TARGET_TOOLS_ALL_CHARS:,} (Playwright MCP "
              f"{PLAYWRIGHT_TOOLS_LIST_CHARS:,})")
        r.row("tools_core", "`tools/list` JSON, `--tools core`", unit="chars", show_p90=False,
              target=f"≤ {TARGET_TOOLS_CORE_CHARS:,}")
        r.row("tools_read_only", "`tools/list` JSON, `--read-only`", unit="chars",
              show_p90=False, target="≤ all")
        r.row("tools_instructions", "↳ the server's instructions (`initialize`): shared "
              "arguments and the result convention, said once", unit="chars", show_p90=False)
        # Issue 10: scanning a host for every browser.
        define_scan_rows(r.row)
        # Issue 18: a browser nobody can dial, shared to h2, beside an SSH target there.
        define_share_rows(r.row)
        define_profiling_rows(r.row)
        # Issue 15: a cold webdriver target beside chromedriver's own session creation.
        define_webdriver_rows(r.row)
        # Issue 13: `call` from a shell (warm daemon), and MCP over HTTP vs stdio.
        shell.define_rows(r.row)
        # Issue 14: a 10 MB upload over SSH beside scp.
        define_upload_rows(r.row)
        # Issue 19: what reaches the model, per tool and kind of client, beside peers.
        define_model_rows(r.row)

    # ------------------------------------------------------------------ top level

    async def run(self) -> Results:
        opts = self.opts
        started = time.perf_counter()
        self.r.meta.update(self._environment())
        self.r.meta["loadavg_start"] = os.getloadavg()
        progress(f"bringing up the topology (tests.topology.up({opts.hosts}))")
        try:
            # Other sessions on this machine inject faults into the shared topology and
            # reset() them; up() would tear an unhealthy topology down and rebuild it under
            # their feet, so give a running one a moment to recover first.
            await anyio.to_thread.run_sync(wait_healthy, opts.hosts, 30.0)
            self.topo = await anyio.to_thread.run_sync(up, opts.hosts)
        except Exception as exc:
            self.r.errors.append(f"topology: {describe(exc)}")
            self.r.meta["loadavg_end"] = os.getloadavg()
            self.r.meta["wall_s"] = round(time.perf_counter() - started, 1)
            return self.r
        self.r.meta["hosts"] = [h.name for h in self._hosts()]
        phases: list[tuple[str, Callable[[], Awaitable[None]], tuple[str, ...]]] = [
            ("sequential", self.sequential,
             ("raw", "raw_eval", "mcp", "gw_cdp", "gw_eval", "gw_cdp_log", "gw_eval_log",
              "in_cdp", "in_eval", "ovh_cdp", "ovh_eval", "ssh_connect")),
            ("startup", self.startup,
             ("py_bare", "py_mcp", "py_gateway", "imp_own", "imp_mcp", "imp_deps", "imp_rest",
              "noop_start", "gw_init", "gw_start", "imp_over_sdk", "start_over_noop")),
            ("targets", self.many_targets,
             ("rss", "conc", "conc_bg", "conc_nowait", "conc_floor",
              "tp_mcp", "tp_gw", "tp_ratio")),
            ("load", self.mixed_load,
             ("load_rate", "load_lat", "load_p95", "load_eval", "load_view", "load_rss0",
              "load_rss1", "load_growth")),
            ("flood", self.flood,
             ("flood_raw_quiet", "flood_raw", "flood_quiet", "flood_same", "flood_other",
              "flood_other_quiet", "flood_ratio", "flood_rate")),
            ("screenshot", self.screenshots, ("raw_shot", "gw_shot", "ovh_shot")),
            ("logs", self.long_lists,
             ("mcp_list", "gw_console", "gw_network", "in_console", "in_network")),
            ("view", self.live_view,
             ("raw_ax", "gw_view", "view_chars", "view_refs", "view_text")),
            ("context", self.context, (*TOOL_SETS, "tools_instructions")),
            ("launch", self.cold_launch,
             ("launch_floor", "launch_ssh", "launch_cold", "launch_warm", "launch_cost")),
            ("scan", self.host_scan, SCAN_ROWS),
            ("share", self.share, SHARE_ROWS),
            ("shell", self.shell, shell.ROWS),
            ("upload", self.upload, UPLOAD_ROWS),
            ("profiling", self.profiling, PROFILING_ROWS),
            ("webdriver", self.webdriver, WEBDRIVER_ROWS),
            ("model", self.model, MODEL_ROWS),
        ]
        if opts.profile is not None:
            phases.append(("profile", self.profile, ()))
        for name, _phase, keys in phases:
            for key in keys:
                self.r.rows[key].phase = name
        unassigned = [key for key, row in self.r.rows.items() if not row.phase]
        assert not unassigned, f"rows without a phase: {unassigned}"
        for name, phase, keys in phases:
            if name not in opts.phases and name != "profile":
                continue
            self.r.phases_run.add(name)
            for attempt in range(opts.retries + 1):
                progress(f"phase: {name}" + (f" (retry {attempt})" if attempt else ""))
                try:
                    await phase()
                    break
                except Exception as exc:  # report, retry once, keep going with the others
                    message = f"{name}: {describe(exc)}"
                    progress(f"FAILED {message}")
                    for key in keys:  # a retry starts the phase's rows afresh
                        self.r.rows[key].samples.clear()
                        self.r.rows[key].ok = None
                    if attempt == opts.retries:
                        self.r.errors.append(message)
                    else:
                        self.r.meta.setdefault("retried", []).append(message)
                        await anyio.to_thread.run_sync(wait_healthy, opts.hosts, 30.0)
        self.r.meta["loadavg_end"] = os.getloadavg()
        self.r.meta["wall_s"] = round(time.perf_counter() - started, 1)
        return self.r

    def _environment(self) -> dict[str, Any]:
        def version(dist: str) -> str:
            try:
                return importlib.metadata.version(dist)
            except importlib.metadata.PackageNotFoundError:
                return "?"

        return {
            "python": platform.python_version(),
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
            "mcp": version("mcp"), "asyncssh": version("asyncssh"),
            "websockets": version("websockets"), "anyio": version("anyio"),
            "calls": self.opts.calls, "warmup": self.opts.warmup,
        }

    def _hosts(self) -> list[RemoteHost]:
        assert self.topo is not None
        return self.topo.hosts[:self.opts.hosts] or self.topo.hosts

    # ------------------------------------------------------ 1-4: sequential round trips

    async def sequential(self) -> None:
        assert self.topo is not None
        topo, opts, r = self.topo, self.opts, self.r
        self._sequential_deadline = time.perf_counter() + opts.sequential_budget_s
        host = topo.host("h1")
        env = {**topo.client_env(), "SSH_PROXY_TO": host.name}

        # asyncssh connect+auth, the floor under every SSH start-up (a few, cheap).
        ssh_row = r.rows["ssh_connect"]
        probe = RawCdp(topo, host)
        for _ in range(max(3, opts.starts)):
            t0 = time.perf_counter()
            conn = await probe.ssh_connect()
            ssh_row.samples.append((time.perf_counter() - t0) * 1000)
            conn.close()
            await conn.wait_closed()

        raw = RawCdp(topo, host)
        workdir = Path(tempfile.mkdtemp(prefix="csgw-bench-"))
        call_log = workdir / "calls.jsonl"
        logged_env = {**env, "MCP_DEBUG_LOG": str(call_log)}
        try:
            await raw.open()
            r.meta["browser"] = raw.browser
            async with mcp_client(noop_params()) as noop, \
                    mcp_client(gateway_params(env)) as gw, \
                    mcp_client(gateway_params(logged_env)) as gw_logged:
                tabs: list[tuple[Client, int]] = []
                try:
                    for client in (gw, gw_logged):
                        tabs.append((client, int((await call(client, "new_tab", {}))["tab"])))
                    await self._sequential_calls(raw, noop, tabs[0], tabs[1])
                finally:
                    with anyio.CancelScope(shield=True), anyio.move_on_after(10), \
                            contextlib.suppress(Exception):
                        for client, tab in tabs:
                            await call(client, "close_tab", {"tab": tab})
            self._overheads()
            self._in_tool_times(call_log)
        finally:
            await raw.aclose()
            shutil.rmtree(workdir, ignore_errors=True)

    async def _sequential_calls(self, raw: RawCdp, noop: Client, plain: tuple[Client, int],
                                logged: tuple[Client, int]) -> None:
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

        n, quarter = self.opts.calls, max(1, self.opts.calls // 4)
        kinds: dict[str, tuple[Callable[[], Awaitable[None]], int]] = {
            "raw": (raw_plain, n), "raw_eval": (raw_eval, n), "mcp": (mcp_noop, n),
            "gw_cdp": (gw_cdp(*plain), n), "gw_eval": (gw_eval(*plain), n),
            # The same calls through a second gateway with the call log on: its duration_ms
            # is the time spent inside the tool (not the MCP transport).
            "gw_cdp_log": (gw_cdp(*logged), quarter), "gw_eval_log": (gw_eval(*logged), quarter),
        }
        await self._interleaved(kinds, "sequential", self._sequential_deadline,
                                self.opts.sequential_budget_s, self.opts.warmup)

    async def _interleaved(
        self, kinds: dict[str, tuple[Callable[[], Awaitable[None]], int]], phase: str,
        deadline: float, budget_s: float, warmup: int, block: int | None = None,
    ) -> None:
        """Warm up each kind, then run its count of calls in rotating blocks.

        After two rounds, stop once ``deadline`` (the phase's budget, which covers its
        start-up and warm-up too) has passed.  ``block``: calls per block (default: a
        twentieth of the largest count, 10 to 200).
        """
        r = self.r
        for fn, _count in kinds.values():
            with anyio.fail_after(BLOCK_TIMEOUT_S):
                for _ in range(warmup):
                    await fn()
        most = max(count for _fn, count in kinds.values())
        block = block or max(10, min(200, most // 20))
        rounds = math.ceil(most / block)
        order = list(kinds)
        perf = time.perf_counter
        for round_no in range(rounds):
            if round_no >= 2 and perf() > deadline:  # at least 2 rounds
                message = (f"{phase} budget of {budget_s:.0f} s used up after "
                           f"{round_no} of {rounds} rounds: the {phase} rows have fewer "
                           "samples than planned (see n in --json)")
                progress(message)
                r.warnings.append(message)
                break
            shift = round_no % len(order)
            for key in order[shift:] + order[:shift]:
                (fn, count), samples = kinds[key], r.rows[key].samples
                share = math.ceil(count * (round_no + 1) / rounds)  # spread evenly over rounds
                with anyio.fail_after(BLOCK_TIMEOUT_S):
                    for _ in range(share - len(samples)):
                        t0 = perf()
                        await fn()
                        samples.append((perf() - t0) * 1000)
        progress(f"{phase}: " + ", ".join(
            f"{k} {fmt(r.rows[k].median, 'ms')}" for k in kinds))

    def _in_tool_times(self, call_log: Path) -> None:
        """duration_ms of the logged gateway's measured calls (warm-up calls skipped)."""
        seen: dict[str, int] = {}
        for line in call_log.read_text().splitlines():
            record = json.loads(line)
            tool = record.get("tool")
            key = {"evaluate": "in_eval", "cdp_command": "in_cdp"}.get(tool or "")
            if key is None or record.get("outcome") != "ok":
                continue
            seen[key] = seen.get(key, 0) + 1
            if seen[key] > self.opts.warmup:
                self.r.rows[key].samples.append(float(record["duration_ms"]))

    def _overheads(self) -> None:
        rows = self.r.rows
        for ovh, gw, raw in (("ovh_cdp", "gw_cdp", "raw"), ("ovh_eval", "gw_eval", "raw_eval")):
            g, f, m = rows[gw].median, rows[raw].median, rows["mcp"].median
            if g is None or f is None or m is None:
                continue
            value = g - (f + m)
            rows[ovh].samples = [value]
            rows[ovh].ok = value <= TARGET_OVERHEAD_MS

    # --------------------------------------------------------------------- 5: start-up

    async def startup(self) -> None:
        """Each round: the import floors, the no-op server's start, the gateway's start.

        Rounds interleave the rows (fair under changing load) and stop early, after at
        least two, once STARTUP_BUDGET_S is used up.
        """
        assert self.topo is not None
        opts, r = self.opts, self.r
        deadline = time.perf_counter() + STARTUP_BUDGET_S
        env = {**self.topo.client_env(), "SSH_PROXY_TO": "h1"}
        # Import floors: a fresh interpreter each time, like a real start.
        snippets = {
            "py_bare": "pass",
            "py_mcp": "import mcp.server.mcpserver",
            "py_gateway": "import gateway.cli, gateway.server.app, gateway.tools",
        }
        for i in range(opts.starts):
            if i >= 2 and time.perf_counter() > deadline:
                r.warnings.append(f"start-up budget of {STARTUP_BUDGET_S:.0f} s used up after "
                                  f"{i} of {opts.starts} rounds")
                break
            for key, code in snippets.items():
                if key == "py_gateway" and i >= 3:  # the slowest; 3 samples are plenty
                    continue
                t0 = time.perf_counter()
                await anyio.run_process([sys.executable, "-c", code], cwd=str(REPO),
                                        check=True)
                r.rows[key].samples.append((time.perf_counter() - t0) * 1000)
            if i < 3:
                await self._import_breakdown(snippets["py_gateway"])
            await self._noop_start()
            await self._gateway_start(env)
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

    async def _import_breakdown(self, code: str) -> None:
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
            self.r.rows[key].samples.append(value)

    async def _noop_start(self) -> None:
        """The SDK's own start: spawn the no-op server, handshake, one call."""
        t0 = time.perf_counter()
        with anyio.fail_after(60):
            async with mcp_client(noop_params()) as noop:
                await call(noop, "noop", {"expression": "1+1", "tab": 1})
                self.r.rows["noop_start"].samples.append((time.perf_counter() - t0) * 1000)

    async def _gateway_start(self, env: dict[str, str]) -> None:
        r = self.r
        t0 = time.perf_counter()
        with anyio.fail_after(60):
            async with mcp_client(gateway_params(env)) as gw:
                r.rows["gw_init"].samples.append((time.perf_counter() - t0) * 1000)
                await until_tabs(gw, call)
                r.rows["gw_start"].samples.append((time.perf_counter() - t0) * 1000)

    async def cold_launch(self) -> None:
        """Issue 11: a cold launch over SSH (see benchmarks/launch.py), median of --starts."""
        assert self.topo is not None
        topo, r = self.topo, self.r
        env = topo.client_env()
        with tempfile.TemporaryDirectory(prefix="csgw-bench-") as scratch:
            await cold_launch(r.rows, topo, self.opts.starts, Path(scratch),
                              lambda config: mcp_client(gateway_params(
                                  env, ["--config", str(config)])),
                              call, RawCdp(topo, topo.host("h1")).ssh_connect)
        row, floor = r.rows["launch_cost"], r.rows["launch_floor"]
        if row.median is not None and floor.median is not None:
            bound = floor.median + TARGET_SLACK_MS
            row.ok = row.median <= bound
            row.target = f"≤ {bound:.0f} ms (Chromium by hand + {TARGET_SLACK_MS:.0f} ms)"
        progress(f"launch: cold {fmt(r.rows['launch_cold'].median, 'ms')}, warm "
                 f"{fmt(r.rows['launch_warm'].median, 'ms')}, Chromium by hand "
                 f"{fmt(floor.median, 'ms')}")

    # ------------------------------------------- 6-7: 8 targets, memory and concurrency

    def _targets_file(self, directory: Path) -> tuple[Path, list[str]]:
        hosts = self._hosts()
        per_host = math.ceil(8 / len(hosts))
        names: list[str] = []
        blocks: list[str] = []
        for host in hosts:
            for j in range(per_host):
                if len(names) == 8:
                    break
                name = f"{host.name}-{j + 1}"
                names.append(name)
                blocks.append(f'[targets.{name}]\nssh = "{host.name}"\n')
        path = directory / "bench-targets.toml"
        path.write_text("\n".join(blocks))
        return path, names

    async def many_targets(self) -> None:
        assert self.topo is not None
        r = self.r
        workdir = Path(tempfile.mkdtemp(prefix="csgw-bench-"))
        try:
            config, names = self._targets_file(workdir)
            r.meta["targets"] = names
            env = self.topo.client_env()
            tabs: list[tuple[str, int]] = []
            async with mcp_client(gateway_params(env, ["--config", str(config)])) as gw, \
                    mcp_client(noop_params()) as noop:
                pid = child_pid_with(str(config))
                if pid is None:
                    raise RuntimeError("could not find the gateway process")
                # 6. memory with every target up.
                with anyio.fail_after(60):
                    await self._all_up(gw)
                await call(gw, "list_tabs", {})
                rss_mb = proc_status_kb(pid, "VmRSS") / 1024
                r.rows["rss"].samples.append(rss_mb)
                r.rows["rss"].ok = rss_mb <= TARGET_RSS_MB
                r.meta["rss_hwm_mb_after_up"] = round(proc_status_kb(pid, "VmHWM") / 1024, 1)
                progress(f"memory: {rss_mb:.1f} MB with {len(names)} targets up")
                try:
                    tabs = await self._open_tabs(gw, names)
                    await self._check_promise_awaited(gw, tabs[0][1])
                    await self._concurrency(gw, noop, tabs)
                    await self._throughput(gw, noop, tabs)
                    r.meta["rss_mb_after_load"] = round(proc_status_kb(pid, "VmRSS") / 1024, 1)
                finally:
                    with anyio.CancelScope(shield=True), anyio.move_on_after(30):
                        for _target, tab in tabs:
                            with contextlib.suppress(Exception):
                                await call(gw, "close_tab", {"tab": tab})
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    async def _open_tabs(self, gw: Client, names: list[str]) -> list[tuple[str, int]]:
        per_target = math.ceil(self.opts.concurrency / len(names))
        tabs: list[tuple[str, int]] = []
        for name in names:
            for _ in range(per_target):
                if len(tabs) == self.opts.concurrency:
                    break
                created = await call(gw, "new_tab", {"target": name})
                tabs.append((name, int(created["tab"])))
        # Attach every tab (first use) and warm up, concurrently.
        async with anyio.create_task_group() as tg:
            for _name, tab in tabs:
                tg.start_soon(self._warm_tab, gw, tab)
        return tabs

    async def _check_promise_awaited(self, gw: Client, tab: int) -> None:
        """Does `evaluate` (await_promise defaults to true) wait for a returned promise?"""
        t0 = time.perf_counter()
        content = await call(gw, "evaluate", {"expression": BARE_PROMISE_50MS, "tab": tab})
        elapsed_ms = (time.perf_counter() - t0) * 1000
        awaited = content["type"] != "object/promise" and elapsed_ms >= 50
        self.r.meta["evaluate_awaits_returned_promise"] = awaited
        if not awaited:
            self.r.warnings.append(
                f"gateway bug: `evaluate` of `{BARE_PROMISE_50MS}` (await_promise=true) returned "
                f"type {content['type']!r} after {elapsed_ms:.1f} ms, i.e. the promise was not "
                "awaited (replMode); the concurrency row uses `await new Promise(...)`")

    async def _warm_tab(self, gw: Client, tab: int) -> None:
        for _ in range(5):
            await call(gw, "evaluate", {"expression": "1+1", "tab": tab})

    async def _concurrency(self, gw: Client, noop: Client, tabs: list[tuple[str, int]]) -> None:
        row, nowait, floor, background = (
            self.r.rows[k] for k in ("conc", "conc_nowait", "conc_floor", "conc_bg"))
        reps = max(5, min(15, self.opts.calls // 200))

        async def one(tab: int) -> None:
            content = await call(gw, "evaluate", {"expression": PROMISE_50MS, "tab": tab})
            assert content["type"] == "undefined", content

        async def one_now(tab: int) -> None:
            content = await call(gw, "evaluate", {"expression": "1+1", "tab": tab})
            assert content["value"] == 2, content

        async def one_noop(tab: int) -> None:
            await call(noop, "noop", {"expression": "1+1", "tab": tab})

        async def focus(tab: int) -> None:
            await call(gw, "cdp_command", {"method": "Emulation.setFocusEmulationEnabled",
                                           "params": {"enabled": True}, "tab": tab})

        async def together(
            fn: Callable[[int], Coroutine[Any, Any, None]], samples: list[float]
        ) -> None:
            t0 = time.perf_counter()
            with anyio.fail_after(60):
                async with anyio.create_task_group() as tg:
                    for _name, tab in tabs:
                        tg.start_soon(fn, tab)
            samples.append((time.perf_counter() - t0) * 1000)
            await anyio.sleep(0.02)

        # Tabs from new_tab are background tabs of one window per browser: Chrome aligns
        # their timers to 1 s, which would swamp what the gateway does.  Shown once, for
        # the record; then every tab is made visible (focus emulation) for the real row.
        for _ in range(2):
            await together(one, background.samples)
        await together(focus, [])
        for _ in range(reps):
            await together(one, row.samples)
            await together(one_now, nowait.samples)
            await together(one_noop, floor.samples)
        row.ok = row.median is not None and row.median <= TARGET_CONCURRENT_MS
        if min(row.samples) < 50:
            self.r.warnings.append("concurrent evaluates finished in under 50 ms: the promises "
                                   "were not awaited, so the concurrency row is meaningless")
        progress(f"concurrency: {len(tabs)} x 50 ms promise in {fmt(row.median, 'ms')} "
                 f"({fmt(background.median, 'ms')} with background tabs)")

    async def _throughput(self, gw: Client, noop: Client, tabs: list[tuple[str, int]]) -> None:
        r, opts = self.r, self.opts
        callers = len(tabs)
        per_caller = max(10, opts.calls // (4 * callers))
        rounds = 3

        async def measure(fn: Callable[[int], Awaitable[None]]) -> float:
            deadline = time.perf_counter() + 10.0  # a round on a loaded machine stops early
            done = 0

            async def caller(index: int) -> None:
                nonlocal done
                for _ in range(per_caller):
                    if time.perf_counter() > deadline:
                        return
                    await fn(index)
                    done += 1

            t0 = time.perf_counter()
            with anyio.fail_after(90):
                async with anyio.create_task_group() as tg:
                    for i in range(callers):
                        tg.start_soon(caller, i)
            return done / (time.perf_counter() - t0)

        async def gw_call(i: int) -> None:
            content = await call(gw, "evaluate", {"expression": "1+1", "tab": tabs[i][1]})
            assert content["value"] == 2, content

        async def noop_call(i: int) -> None:
            content = await call(noop, "noop", {"expression": "1+1", "tab": i + 1})
            assert content["value"] == 2, content

        with anyio.fail_after(60):  # warm-up: a few concurrent calls each (the gateway is warm)
            for _ in range(3):
                async with anyio.create_task_group() as tg:
                    for i in range(callers):
                        tg.start_soon(noop_call, i)
        deadline = time.perf_counter() + THROUGHPUT_BUDGET_S
        for round_no in range(rounds):
            if round_no and time.perf_counter() > deadline:
                r.warnings.append(f"throughput budget of {THROUGHPUT_BUDGET_S:.0f} s used up "
                                  f"after {round_no} of {rounds} round pairs")
                break
            pair = [("tp_mcp", noop_call), ("tp_gw", gw_call)]
            if round_no % 2:
                pair.reverse()
            for key, fn in pair:
                r.rows[key].samples.append(await measure(fn))
        for key in ("tp_mcp", "tp_gw"):
            r.rows[key].show_p90 = False
        ratios = [g / m * 100 for g, m in zip(r.rows["tp_gw"].samples, r.rows["tp_mcp"].samples,
                                              strict=True)]
        ratio = r.rows["tp_ratio"]
        ratio.samples = ratios
        ratio.show_p90 = False
        ratio.ok = ratio.median is not None and ratio.median >= TARGET_THROUGHPUT_RATIO * 100
        r.meta["throughput_calls_per_round"] = callers * per_caller
        progress(f"throughput: gateway {fmt(r.rows['tp_gw'].median, 'calls/s')}, no-op "
                 f"{fmt(r.rows['tp_mcp'].median, 'calls/s')}")

    # ------------------------------------------------ issue 5: many agents, a flood

    async def mixed_load(self) -> None:
        """The load test's mix (tests/e2e/load_mix.py) as a measurement.

        32 callers (4 per target, 8 targets sharing the hosts' browsers), each on a tab of
        its own, every reply checked against its call. A warm-up of 5 calls per caller,
        then two halves of --calls/40 calls per caller; VmRSS after the warm-up and after
        each half; the growth row is the second half's, per call.
        """
        assert self.topo is not None
        r = self.r
        per_half = max(10, self.opts.calls // 40)
        workdir = Path(tempfile.mkdtemp(prefix="csgw-bench-"))
        targets = shared_browser_targets([h.name for h in self._hosts()])
        config = write_targets(workdir / "load-targets.toml", targets)
        callers: list[Caller] = []
        latencies: dict[str, list[float]] = {}

        def answered(kind: str, seconds: float) -> None:
            latencies.setdefault(TOOL_OF[kind], []).append(seconds * 1000)

        try:
            async with mcp_client(gateway_params(self.topo.client_env(),
                                                 ["--config", str(config)])) as gw:
                pid = child_pid_with(str(config))
                if pid is None:
                    raise RuntimeError("could not find the gateway process")
                try:
                    with anyio.fail_after(LOAD_BUDGET_S):
                        await self._all_up(gw)
                        await open_callers(gw, list(targets), LOAD_CALLERS_PER_TARGET,
                                           callers)
                        await run_callers(gw, callers, 5, 0, lambda _k, _s: None)
                        rss = [proc_status_kb(pid, "VmRSS")]
                        t0 = time.perf_counter()
                        for half in range(2):
                            await run_callers(gw, callers, per_half, 5 + half * per_half,
                                              answered)
                            rss.append(proc_status_kb(pid, "VmRSS"))
                        wall = time.perf_counter() - t0
                finally:
                    await self._close_tabs([(gw, c.tab) for c in callers])
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
        growth = (rss[2] - rss[1]) * 1024 / (per_half * len(callers))
        r.rows["load_growth"].samples = [growth]
        r.meta["load"] = {"calls": len(every), "callers": len(callers), "vmrss_kb": rss,
                          "per_tool": {k: len(v) for k, v in latencies.items()}}
        progress(f"mixed load: {len(every)} calls, {len(every) / wall:.0f} calls/s, VmRSS "
                 f"{rss} KB")

    @staticmethod
    async def _all_up(gw: Client) -> None:
        """Until list_targets shows every target up (callers bound it in time)."""
        while True:
            listed = await call(gw, "list_targets", {})
            if all(t["state"] == "up" for t in listed["targets"]):
                return
            await anyio.sleep(0.05)

    async def flood(self) -> None:
        """Latency of `evaluate` on other tabs while one tab logs FLOOD_RATE messages/s.

        One gateway with a target per host (h1 and the last host). Probes: a second tab
        of h1's browser (its events and replies share the flooded tab's websocket and SSH
        connection), a tab of the other host's browser, and a raw CDP client with a tab
        of its own in h1's browser over the same kind of forward (Chrome's own share).
        Rounds alternate a quiet window and a flood of FLOOD_S seconds each; each probe
        calls one after the other, all probes at once.
        """
        assert self.topo is not None
        r = self.r
        hosts = self._hosts()
        near, far = hosts[0], hosts[-1]
        workdir = Path(tempfile.mkdtemp(prefix="csgw-bench-"))
        config = write_targets(workdir / "flood-targets.toml",
                               {h.name: {"ssh": h.name} for h in (near, far)})
        raw = RawCdp(self.topo, near)
        tabs: list[tuple[Client, int]] = []
        rates: list[float] = []
        try:
            await raw.open()
            async with mcp_client(gateway_params(self.topo.client_env(),
                                                 ["--config", str(config)])) as gw:
                try:
                    with anyio.fail_after(60):
                        await self._all_up(gw)

                    async def page(target: str, title: str) -> int:
                        nav = await call(gw, "navigate", {"url": data_url(title),
                                                          "target": target})
                        tabs.append((gw, int(nav["tab"])))
                        return int(nav["tab"])

                    flooded = await page(near.name, "flooded")
                    same, other = await page(near.name, "quiet"), await page(far.name, "other")
                    for _ in range(FLOOD_ROUNDS):
                        await self._probe_window(gw, raw, same, other, flooded=None)
                        rates.append(await self._probe_window(gw, raw, same, other, flooded))
                finally:
                    await self._close_tabs(tabs)
        finally:
            await raw.aclose()
            shutil.rmtree(workdir, ignore_errors=True)
        rows = r.rows
        rows["flood_rate"].samples = rates
        quiet, flooded_row = rows["flood_quiet"].median, rows["flood_same"].median
        if quiet and flooded_row is not None:
            rows["flood_ratio"].samples = [flooded_row / quiet]
        progress(f"flood: {fmt(rows['flood_rate'].median, 'msg/s')}; evaluate same browser "
                 f"{fmt(quiet, 'ms')} quiet, {fmt(flooded_row, 'ms')} flooded; other host "
                 f"{fmt(rows['flood_other'].median, 'ms')}; raw "
                 f"{fmt(rows['flood_raw_quiet'].median, 'ms')} → "
                 f"{fmt(rows['flood_raw'].median, 'ms')}")

    async def _probe_window(self, gw: Client, raw: RawCdp, same: int, other: int,
                            flooded: int | None) -> float:
        """FLOOD_S seconds of probe calls, with a flood on tab ``flooded`` if given; then
        wait for the flood to end and the gateway to hold all of it. The flood's
        messages per second (0 for a quiet window)."""
        rows = self.r.rows
        keys = ("flood_same", "flood_other", "flood_raw") if flooded else (
            "flood_quiet", "flood_other_quiet", "flood_raw_quiet")
        if flooded is not None:
            started = await call(gw, "evaluate", {"tab": flooded,
                                                  "expression": flood_js(FLOOD_S, FLOOD_RATE)})
            assert started["value"] == "started", started
        end = time.perf_counter() + FLOOD_S

        async def gw_probe(tab: int, samples: list[float]) -> None:
            while time.perf_counter() < end:
                t0 = time.perf_counter()
                content = await call(gw, "evaluate", {"expression": "1+1", "tab": tab})
                samples.append((time.perf_counter() - t0) * 1000)
                assert content["value"] == 2, content

        async def raw_probe(samples: list[float]) -> None:
            while time.perf_counter() < end:
                t0 = time.perf_counter()
                result = await raw.send("Runtime.evaluate", RAW_PARAMS)
                samples.append((time.perf_counter() - t0) * 1000)
                assert result["result"]["value"] == 2, result

        with anyio.fail_after(FLOOD_S + CALL_TIMEOUT_S):
            async with anyio.create_task_group() as tg:
                tg.start_soon(gw_probe, same, rows[keys[0]].samples)
                tg.start_soon(gw_probe, other, rows[keys[1]].samples)
                tg.start_soon(raw_probe, rows[keys[2]].samples)
        if flooded is None:
            return 0.0
        with anyio.fail_after(60):
            while True:
                state = await call(gw, "evaluate", {
                    "tab": flooded, "expression": "[window.floodDone, window.floodLogged]"})
                done, logged = state["value"]
                if done:
                    listing = await call(gw, "console_messages", {"tab": flooded, "limit": 1})
                    if listing["last_id"] >= logged:
                        return float(logged) / FLOOD_S
                await anyio.sleep(0.1)

    # ------------------------------------- 8-10: live pages on h1 (issues 3 and 4)

    def _live_warmup(self) -> int:
        return min(self.opts.warmup, 3)

    async def _attach_raw(self, raw: RawCdp, gw: Client, tab: int) -> None:
        """Attach the raw floor to the gateway's own tab.

        One tab for both: the same page, viewport and renderer, and no question of
        which tab is in front (a second tab of our own made Chrome stall
        Page.captureScreenshot on it for seconds, now and then, in trial runs).
        """
        info = await call(gw, "cdp_command", {"method": "Target.getTargetInfo", "tab": tab})
        await raw.open(attach_to=info["result"]["targetInfo"]["targetId"])
        self.r.meta.setdefault("browser", raw.browser)
        await raw.send("Page.enable")  # as the gateway's session has

    @staticmethod
    async def _live_tab(gw: Client, url: str, tabs: list[tuple[Client, int]]) -> int:
        """A new tab of ``gw`` with ``url`` loaded; recorded in ``tabs`` to be closed."""
        tab = int((await call(gw, "new_tab", {}))["tab"])
        tabs.append((gw, tab))
        await call(gw, "navigate", {"url": url, "tab": tab})
        return tab

    @staticmethod
    async def _close_tabs(tabs: list[tuple[Client, int]]) -> None:
        with anyio.CancelScope(shield=True), anyio.move_on_after(10):
            for client, tab in tabs:
                with contextlib.suppress(Exception):
                    await call(client, "close_tab", {"tab": tab})

    async def screenshots(self) -> None:
        """Issue 4: a 1280x720 viewport PNG through the gateway, and raw over the forward."""
        assert self.topo is not None
        topo, r = self.topo, self.r
        deadline = time.perf_counter() + SCREENSHOT_BUDGET_S
        host = topo.host("h1")
        env = {**topo.client_env(), "SSH_PROXY_TO": host.name}
        raw = RawCdp(topo, host)
        tabs: list[tuple[Client, int]] = []
        png_bytes: dict[str, int] = {}
        try:
            async with page_server(host) as base, mcp_client(gateway_params(env)) as gw:
                try:
                    tab = await self._live_tab(gw, base + "news.html", tabs)
                    await call(gw, "cdp_command", {
                        "method": "Emulation.setDeviceMetricsOverride", "params": VIEWPORT,
                        "tab": tab})
                    await self._attach_raw(raw, gw, tab)

                    async def raw_shot() -> None:
                        with anyio.fail_after(RAW_LIVE_TIMEOUT_S):
                            shot = await raw.send("Page.captureScreenshot", {"format": "png"})
                        data = shot["data"]
                        png_bytes["raw"] = len(data) * 3 // 4
                        head = base64.b64decode(data[:32])  # PNG signature + IHDR
                        size = (int.from_bytes(head[16:20]), int.from_bytes(head[20:24]))
                        assert size == (1280, 720), size

                    async def gw_shot() -> None:
                        info = await call(gw, "screenshot", {"tab": tab})
                        got = (info["format"], info["width"], info["height"])
                        assert got == ("png", 1280, 720), info
                        png_bytes["gateway"] = info["bytes"]

                    n = max(10, self.opts.calls // 40)
                    await self._interleaved(
                        {"raw_shot": (raw_shot, n), "gw_shot": (gw_shot, n)}, "screenshot",
                        deadline, SCREENSHOT_BUDGET_S, self._live_warmup(), LIVE_BLOCK)
                finally:
                    await self._close_tabs(tabs)
        finally:
            await raw.aclose()
        gw_row, raw_row = r.rows["gw_shot"], r.rows["raw_shot"]
        gw_row.ok = gw_row.median is not None and gw_row.median <= TARGET_SCREENSHOT_MS
        if gw_row.median is not None and raw_row.median is not None:
            r.rows["ovh_shot"].samples = [gw_row.median - raw_row.median]
        r.meta["screenshot_png_bytes"] = png_bytes
        kb = png_bytes.get("gateway", 0) / 1024
        gw_row.label = (f"gateway `screenshot` viewport PNG 1280x720 ({kb:.0f} KB), news page, "
                        "over SSH")

    async def long_lists(self) -> None:
        """Issue 4: console_messages / network_requests returning 1,000 entries each.

        One gateway, with the call log on: the rows are its end-to-end times and the
        call log's duration_ms of the same calls (writing the log line, after
        duration_ms is taken, adds a little to the former; see README).
        """
        assert self.topo is not None
        topo, r = self.topo, self.r
        deadline = time.perf_counter() + LOGS_BUDGET_S
        host = topo.host("h1")
        workdir = Path(tempfile.mkdtemp(prefix="csgw-bench-"))
        call_log = workdir / "calls.jsonl"
        env = {**topo.client_env(), "SSH_PROXY_TO": host.name, "MCP_DEBUG_LOG": str(call_log)}
        tabs: list[tuple[Client, int]] = []
        sizes: dict[str, int] = {}
        try:
            async with page_server(host) as base, mcp_client(noop_params()) as noop, \
                    mcp_client(gateway_params(env)) as gw:
                try:
                    # The server's directory listing: a page without subresources.
                    tab = await self._live_tab(gw, base, tabs)
                    await self._fill_logs(gw, tab)
                    offset = call_log.stat().st_size  # the measured calls' records follow

                    def lister(client: Client, tool: str, key: str,
                               tab: int) -> Callable[[], Awaitable[None]]:
                        async def one() -> None:
                            content = await call(client, tool, {"tab": tab,
                                                                "limit": LOG_ENTRIES})
                            assert len(content[key]) == LOG_ENTRIES, len(content[key])
                            if tool not in sizes:
                                sizes[tool] = len(json.dumps(content))
                        return one

                    n = max(10, self.opts.calls // 100)
                    await self._interleaved({
                        "mcp_list": (lister(noop, "noop_list", "messages", 1), n),
                        "gw_console": (lister(gw, "console_messages", "messages", tab), n),
                        "gw_network": (lister(gw, "network_requests", "requests", tab), n),
                    }, "logs", deadline, LOGS_BUDGET_S, self._live_warmup(), LIVE_BLOCK)
                finally:
                    await self._close_tabs(tabs)
            self._list_times(call_log, offset)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        r.meta["list_structured_json_chars"] = sizes
        for key in ("in_console", "in_network"):
            row = r.rows[key]
            row.ok = row.median is not None and row.median <= TARGET_LIST_MS
        kb = sizes.get("noop_list", 0) / 1024
        r.rows["mcp_list"].label = (f"MCP stdio round trip, no-op tool returning {LOG_ENTRIES:,} "
                                    f"console-message-shaped entries ({kb:.0f} KB of JSON)")

    async def _fill_logs(self, gw: Client, tab: int) -> None:
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

    def _list_times(self, call_log: Path, offset: int) -> None:
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
            if seen[key] > self._live_warmup():
                self.r.rows[key].samples.append(float(record["duration_ms"]))
                result_bytes[record["tool"]] = int(record.get("result_bytes", 0))
        self.r.meta["list_result_bytes"] = result_bytes

    async def shell(self) -> None:
        """Issue 13: warm `call` against its floors; HTTP against stdio (benchmarks/shell.py)."""
        assert self.topo is not None
        env = {**self.topo.client_env(), "SSH_PROXY_TO": "h1"}
        with anyio.fail_after(240):
            async with mcp_client(gateway_params(env)) as stdio:
                await shell.measure(self.r.rows, env, stdio, call, self.opts.calls,
                                    self.opts.starts, SCREENSHOT_BUDGET_S)
        progress(f"shell: warm call {fmt(self.r.rows['sh_call'].median, 'ms')}, python -c pass "
                 f"{fmt(self.r.rows['sh_pass'].median, 'ms')}, HTTP - stdio "
                 f"{fmt(self.r.rows['ovh_http'].median, 'ms')}")

    async def live_view(self) -> None:
        """Issue 3: browse_view of the live news page, beside the raw AX-tree fetch."""
        assert self.topo is not None
        topo, r = self.topo, self.r
        deadline = time.perf_counter() + VIEW_BUDGET_S
        host = topo.host("h1")
        env = {**topo.client_env(), "SSH_PROXY_TO": host.name}
        raw = RawCdp(topo, host)
        tabs: list[tuple[Client, int]] = []
        seen: dict[str, Any] = {}
        try:
            async with page_server(host) as base, mcp_client(gateway_params(env)) as gw:
                try:
                    tab = await self._live_tab(gw, base + "news.html", tabs)
                    await self._attach_raw(raw, gw, tab)

                    async def raw_ax() -> None:
                        with anyio.fail_after(RAW_LIVE_TIMEOUT_S):
                            tree = await raw.send("Accessibility.getFullAXTree")
                        seen["ax_nodes"] = len(tree["nodes"])
                        assert seen["ax_nodes"] > 1000, seen

                    async def gw_view() -> None:
                        # Text only, as a model's client asks: the header line says the refs.
                        result = await gw.call_tool("browse_view", {"tab": tab})
                        text = "".join(getattr(block, "text", "") for block in result.content)
                        header, _, body = text.partition("\n")
                        refs = re.search(r"\((\d+) refs\)", header)
                        assert not result.is_error and refs, text[:300]
                        view = {"view": body, "refs": int(refs[1]),
                                "truncated": "view truncated" in header}
                        # Ref numbers count on across views of a tab, so later views
                        # are longer: the size row is the first view's.
                        seen.setdefault("first", view)
                        seen.setdefault("first_text", text)
                        seen["last"] = view
                        assert view["refs"] > 200 and not view["truncated"], view["refs"]

                    n = max(10, self.opts.calls // 40)
                    await self._interleaved(
                        {"raw_ax": (raw_ax, n), "gw_view": (gw_view, n)}, "view",
                        deadline, VIEW_BUDGET_S, self._live_warmup(), LIVE_BLOCK)
                finally:
                    await self._close_tabs(tabs)
        finally:
            await raw.aclose()
        row = r.rows["gw_view"]
        row.ok = row.median is not None and row.median <= TARGET_VIEW_MS
        first, last = seen["first"], seen["last"]
        chars = len(first["view"])
        r.rows["view_chars"].samples = [float(chars)]
        r.rows["view_chars"].ok = chars <= TARGET_VIEW_CHARS
        r.rows["view_refs"].samples = [float(first["refs"])]
        text_chars = len(seen["first_text"])
        r.rows["view_text"].samples = [float(text_chars)]
        r.rows["view_text"].ok = text_chars <= chars + TARGET_VIEW_TEXT_EXTRA
        r.meta["view"] = {"ax_nodes": seen.get("ax_nodes"), "first_view_chars": chars,
                          "refs": first["refs"], "views": len(r.rows["gw_view"].samples),
                          "last_view_chars": len(last["view"]),
                          "last_view_first_ref": _first_ref(last["view"])}
        r.rows["raw_ax"].label = (f"raw CDP `Accessibility.getFullAXTree` of the news page "
                                  f"({seen.get('ax_nodes')} nodes), same forward")

    # ----------------------------------------------------------- issue 12: context

    async def context(self) -> None:
        """The ``tools/list`` a client gets per tool set, from a real gateway over stdio,
        measured as issue 12 measured it (``json.dumps`` of the tools, camelCase keys)."""
        assert self.topo is not None
        env = {**self.topo.client_env(), "SSH_PROXY_TO": "h1"}
        for key, spec in TOOL_SETS.items():
            args = ["--tools", spec] + (["--read-only"] if key == "tools_read_only" else [])
            with anyio.fail_after(CALL_TIMEOUT_S):
                async with mcp_client(gateway_params(env, args)) as gw:
                    listed = await gw.list_tools()
                    instructions = gw.instructions or ""
            tools = [t.model_dump(mode="json", by_alias=True, exclude_none=True)
                     for t in listed.tools]
            row = self.r.rows[key]
            row.samples = [float(len(json.dumps(tools)))]
            row.label = row.label.replace("(16 tools)", f"({len(tools)} tools)")
            self.r.meta.setdefault("tools_list", {})[key] = {
                "tools": len(tools), "chars": len(json.dumps(tools))}
            if key == "tools_all":
                self.r.rows["tools_instructions"].samples = [float(len(instructions))]
        rows = self.r.rows
        rows["tools_all"].ok = rows["tools_all"].samples[0] <= TARGET_TOOLS_ALL_CHARS
        rows["tools_core"].ok = rows["tools_core"].samples[0] <= TARGET_TOOLS_CORE_CHARS
        rows["tools_read_only"].ok = (rows["tools_read_only"].samples[0]
                                      <= rows["tools_all"].samples[0])
    async def host_scan(self) -> None:
        """Issue 10: one scan with 0/5/20 browsers; a new browser's start → up."""
        assert self.topo is not None
        with tempfile.TemporaryDirectory(prefix="csgw-bench-scan-") as workdir:
            await scan_phase(self.topo, self.r.rows,
                             lambda env, args: mcp_client(gateway_params(env, args)), call,
                             Path(workdir))

    async def share(self) -> None:
        """Issue 18: a shared browser beside an SSH target; share → target usable."""
        assert self.topo is not None
        topo, opts = self.topo, self.opts
        with tempfile.TemporaryDirectory(prefix="csgw-bench-share-") as workdir:
            seen = await share_phase(
                topo, self.r.rows,
                gateway=lambda env, args: mcp_client(gateway_params(env, args)), call=call,
                interleaved=self._interleaved,
                calls=opts.calls, warmup=opts.warmup, rounds=opts.starts,
                budget_s=opts.sequential_budget_s, workdir=Path(workdir))
        self.r.meta["share"] = seen
        self.r.meta.setdefault("browser", seen["browsers"].get("share_raw_ssh"))
        rows = self.r.rows
        progress(f"share: gateway share {fmt(rows['share_gw'].median, 'ms')} vs SSH target "
                 f"{fmt(rows['share_gw_ssh'].median, 'ms')}; raw "
                 f"{fmt(rows['share_raw'].median, 'ms')} vs "
                 f"{fmt(rows['share_raw_ssh'].median, 'ms')}; share → usable "
                 f"{fmt(rows['share_up'].median, 'ms')}")

    async def upload(self) -> None:
        """Issue 14: a 10 MB upload into a page on h1 beside scp and SFTP of the same file."""
        assert self.topo is not None
        with tempfile.TemporaryDirectory(prefix="csgw-bench-upload-") as workdir:
            await upload_phase(self.topo, self.r.rows,
                               lambda env, args: mcp_client(gateway_params(env, args)), call,
                               Path(workdir), RawCdp(self.topo, self.topo.host("h1")).ssh_connect)
    async def profiling(self) -> None:
        """Issue 14: a page-load trace and a ~50 MB heap snapshot, beside raw CDP."""
        assert self.topo is not None
        topo = self.topo
        with tempfile.TemporaryDirectory(prefix="csgw-bench-profiling-") as workdir:
            await profiling_phase(
                topo, self.r.rows,
                gateway=lambda env, args: mcp_client(gateway_params(env, args),
                                                     PROFILING_CALL_TIMEOUT_S),
                call=call, raw=lambda: RawCdp(topo, topo.host("h1")), serve=page_server,
                pid_of=child_pid_with, workdir=Path(workdir))

    async def webdriver(self) -> None:
        """Issue 15: first call on a cold webdriver target (benchmarks/webdriver_phase.py)."""
        assert self.topo is not None
        topo, env = self.topo, self.topo.client_env()
        with tempfile.TemporaryDirectory(prefix="csgw-bench-wd-") as workdir:
            await webdriver_phase(topo, self.r.rows, self.opts.starts, Path(workdir),
                                  lambda config: mcp_client(gateway_params(
                                      env, ["--config", str(config)])),
                                  call, RawCdp(topo, topo.host("h1")).ssh_connect)
        row = self.r.rows["wd_added"]
        if row.median is not None:
            row.ok = row.median <= TARGET_WD_SLACK_MS
        progress(f"webdriver: cold target {fmt(self.r.rows['wd_cold'].median, 'ms')}, "
                 f"chromedriver's own session {fmt(self.r.rows['wd_session'].median, 'ms')}")

    async def model(self) -> None:
        """Issue 19: what reaches the model per tool, beside peers (benchmarks/model_phase.py)."""
        assert self.topo is not None
        topo = self.topo
        with tempfile.TemporaryDirectory(prefix="csgw-bench-model-") as workdir:
            self.r.meta["model"] = await model_phase(
                topo, self.r.rows,
                gateway=lambda env, args: mcp_client(gateway_params(env, args)),
                serve=page_server, connect=RawCdp(topo, topo.host("h1")).ssh_connect,
                progress=progress, workdir=Path(workdir))
        if self.r.meta["model"].get("browser"):
            self.r.meta.setdefault("browser", self.r.meta["model"]["browser"])

    # ------------------------------------------------------------------- --profile

    async def profile(self) -> None:
        """Run the sequential gateway calls again under cProfile and print the hot spots."""
        assert self.topo is not None and self.opts.profile is not None
        out = self.opts.profile
        env = {**self.topo.client_env(), "SSH_PROXY_TO": "h1"}
        n = self.opts.calls
        out.unlink(missing_ok=True)
        async with mcp_client(gateway_params(env, profile_to=out)) as gw:
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


# ----------------------------------------------------------------------------------- main


def parse_args(argv: Sequence[str] | None) -> Options:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--hosts", type=int, default=2,
                        help="topology hosts to use (default 2; a running topology with more "
                             "is reused)")
    parser.add_argument("--calls", type=int, default=2000,
                        help="sequential calls per measurement (default 2000); also sizes "
                             "the throughput rounds")
    parser.add_argument("--warmup", type=int, default=50,
                        help="unmeasured calls before each sequential measurement (default 50)")
    parser.add_argument("--starts", type=int, default=5,
                        help="process starts per start-up measurement (default 5)")
    parser.add_argument("--concurrency", type=int, default=32,
                        help="tabs / concurrent callers over the 8 targets (default 32)")
    parser.add_argument("--budget", type=float, default=60.0,
                        help="seconds the sequential calls may take at most (default 60); "
                             "a loaded machine reports fewer calls instead of running long")
    parser.add_argument("--retries", type=int, default=1,
                        help="re-run a phase that failed, e.g. because a test on this machine "
                             "restarted a browser (default 1)")
    parser.add_argument("--phases", default=",".join(PHASES),
                        help=f"comma-separated subset of {','.join(PHASES)} (default: all)")
    parser.add_argument("--json", type=Path, default=None, metavar="PATH",
                        help="also write every number (and the table) to this JSON file")
    parser.add_argument("--profile", type=Path, default=None, metavar="PATH",
                        help="afterwards, run --calls evaluate + cdp_command calls through a "
                             "gateway under cProfile, write the stats to PATH and print the "
                             "top functions (not part of the table)")
    args = parser.parse_args(argv)
    if args.hosts < 1 or args.calls < 1 or args.warmup < 0 or args.starts < 1 \
            or not 1 <= args.concurrency <= 256:
        parser.error("--hosts, --calls, --starts must be ≥ 1, --warmup ≥ 0, "
                     "--concurrency 1..256")
    phases = tuple(p.strip() for p in args.phases.split(",") if p.strip())
    unknown = set(phases) - set(PHASES)
    if unknown or not phases:
        parser.error(f"--phases: unknown {sorted(unknown)}; use {','.join(PHASES)}")
    return Options(hosts=args.hosts, calls=args.calls, warmup=args.warmup, starts=args.starts,
                   concurrency=args.concurrency, retries=max(0, args.retries),
                   phases=phases,
                   sequential_budget_s=args.budget,
                   profile=args.profile.resolve() if args.profile else None,
                   json_path=args.json)


def main(argv: Sequence[str] | None = None) -> int:
    opts = parse_args(argv)
    if os.geteuid() != 0:
        print("benchmarks need root (the topology uses network namespaces)", file=sys.stderr)
        return 2
    bench = Bench(opts)
    results = asyncio.run(bench.run())
    table = results.markdown()
    meta = results.meta
    print()
    print(table)
    print()
    print(f"Chromium {meta.get('browser', '?')}, Python {meta['python']}, mcp {meta['mcp']}, "
          f"asyncssh {meta['asyncssh']}, websockets {meta['websockets']}; {meta['machine']}; "
          f"{opts.calls} calls per sequential row; load average "
          f"{meta['loadavg_start'][0]:.2f} → {meta['loadavg_end'][0]:.2f}; "
          f"{meta['wall_s']} s.")
    if "model" in meta:
        print()
        print(meta["model"]["table"])
    for warning in results.warnings:
        print(f"WARNING: {warning}")
    for error in results.errors:
        print(f"ERROR: {error}")
    if opts.json_path is not None:
        payload = {"meta": meta, "rows": {k: row.as_json() for k, row in results.rows.items()},
                   "errors": results.errors, "warnings": results.warnings, "table": table}
        opts.json_path.write_text(json.dumps(payload, indent=2, default=str) + "\n")
    return 1 if results.errors else 0


if __name__ == "__main__":
    sys.exit(main())
