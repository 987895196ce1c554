"""The ``flood`` phase: latency of ``evaluate`` on other tabs while one tab logs
FLOOD_RATE console messages a second.

One gateway with a target per host (h1 and the last host). Probes: a second tab of h1's
browser (its events and replies share the flooded tab's websocket and SSH connection),
a tab of the other host's browser, and a raw CDP client with a tab of its own in h1's
browser over the same kind of forward (Chrome's own share). Rounds alternate a quiet
window and a flood of FLOOD_S seconds each; each probe calls one after the other, all
probes at once. The gateway's own CPU per flood message is read from ``/proc`` over each
flood window, less what its probe calls cost (the quiet windows' CPU per call): what the
gateway spends on each message the page logs, which is what lets a reply queue behind
them. A flood is over for the gateway when its last message is in the console (a flood
is sampled, ``gateway.tabs.console_flood``: not every message is seen).
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client

from benchmarks.bench import Bench
from benchmarks.clients import CALL_TIMEOUT_S, call, child_pid_with, cpu_ns
from benchmarks.raw_cdp import RAW_PARAMS, RawCdp
from benchmarks.results import RowMaker, fmt, progress
from tests.e2e.helpers import data_url, write_targets
from tests.e2e.load_mix import flood_js

__all__ = ["ROW_KEYS", "define_rows", "run"]

FLOOD_S = 3.0                  # one flood (and one quiet window)
FLOOD_RATE = 10_000            # console messages a second
FLOOD_ROUNDS = 3
ROW_KEYS = ("flood_raw_quiet", "flood_raw", "flood_quiet", "flood_same", "flood_other",
            "flood_other_quiet", "flood_ratio", "flood_rate", "flood_cpu")


def define_rows(row: RowMaker) -> None:
    row("flood_raw_quiet", "raw CDP `Runtime.evaluate 1+1` on a tab of h1's browser, "
        "quiet", target="floor")
    row("flood_raw", "↳ same, while another tab of that browser logs 10,000 console "
        "messages/s", target="floor under the flood")
    row("flood_quiet", "gateway `evaluate 1+1` on another tab of the same browser, quiet")
    row("flood_same", "↳ same, during the flood (same websocket and SSH connection)")
    row("flood_other", "↳ `evaluate` on another host's browser during the flood")
    row("flood_other_quiet", "gateway `evaluate` on another host's browser, quiet",
        hidden=True)
    row("flood_ratio", "↳ flood / quiet, same browser (median)", unit="x", show_p90=False,
        target="≤ 3x")
    row("flood_rate", "↳ console messages the page logged per second", unit="msg/s",
        show_p90=False, target=f"{FLOOD_RATE:,} planned")
    row("flood_cpu", "↳ the gateway's CPU per message of the flood (its probe calls' "
        "taken out)", unit="µs", show_p90=False)


async def run(bench: Bench) -> None:
    r = bench.r
    hosts = bench.hosts()
    near, far = hosts[0], hosts[-1]
    workdir = Path(tempfile.mkdtemp(prefix="csgw-bench-"))
    config = write_targets(workdir / "flood-targets.toml",
                           {h.name: {"ssh": h.name} for h in (near, far)})
    raw = bench.raw(near.name)
    tabs: list[tuple[Client, int]] = []
    rates: list[float] = []
    cpu = _CpuPerMessage()
    try:
        await raw.open()
        bench.r.meta.setdefault("browser", raw.browser)  # the machine line's Chromium
        async with bench.gateway(bench.topo.client_env(), ["--config", str(config)]) as gw:
            try:
                with anyio.fail_after(60):
                    await bench.all_up(gw)

                async def page(target: str, title: str) -> int:
                    nav = await call(gw, "navigate", {"url": data_url(title), "target": target})
                    tabs.append((gw, int(nav["tab"])))
                    return int(nav["tab"])

                flooded = await page(near.name, "flooded")
                same, other = await page(near.name, "quiet"), await page(far.name, "other")
                cpu.pid = child_pid_with("flood-targets.toml")
                for _ in range(FLOOD_ROUNDS):
                    await _probe_window(bench, gw, raw, same, other, None, cpu)
                    rates.append(await _probe_window(bench, gw, raw, same, other, flooded, cpu))
            finally:
                await bench.close_tabs(tabs)
    finally:
        await raw.aclose()
        shutil.rmtree(workdir, ignore_errors=True)
    rows = r.rows
    rows["flood_rate"].samples = rates
    rows["flood_cpu"].samples = cpu.per_message()
    quiet, flooded_row = rows["flood_quiet"].median, rows["flood_same"].median
    if quiet and flooded_row is not None:
        rows["flood_ratio"].samples = [flooded_row / quiet]
    progress(f"flood: {fmt(rows['flood_rate'].median, 'msg/s')}; evaluate same browser "
             f"{fmt(quiet, 'ms')} quiet, {fmt(flooded_row, 'ms')} flooded; other host "
             f"{fmt(rows['flood_other'].median, 'ms')}; raw "
             f"{fmt(rows['flood_raw_quiet'].median, 'ms')} → "
             f"{fmt(rows['flood_raw'].median, 'ms')}")


class _CpuPerMessage:
    """The gateway's CPU over the windows (``pid``: the gateway process), by kind."""

    def __init__(self) -> None:
        self.pid: int | None = None
        self.quiet_ns = self.quiet_calls = 0
        self.flood_ns: list[tuple[int, int, int]] = []  # (CPU ns, gateway calls, messages)

    def per_message(self) -> list[float]:
        """µs per flood message, each window's calls costed at the quiet windows' rate."""
        per_call = self.quiet_ns / self.quiet_calls if self.quiet_calls else 0.0
        return [round(max(ns - calls * per_call, 0.0) / 1000 / messages, 1)
                for ns, calls, messages in self.flood_ns if messages]


async def _probe_window(bench: Bench, gw: Client, raw: RawCdp, same: int, other: int,
                        flooded: int | None, cpu: _CpuPerMessage) -> float:
    """FLOOD_S seconds of probe calls, with a flood on tab ``flooded`` if given; then
    wait for the flood to end and the gateway to hold all of it. The flood's
    messages per second (0 for a quiet window)."""
    rows = bench.r.rows
    calls = 0
    began = cpu_ns(cpu.pid) if cpu.pid else 0
    keys = ("flood_same", "flood_other", "flood_raw") if flooded else (
        "flood_quiet", "flood_other_quiet", "flood_raw_quiet")
    if flooded is not None:
        started = await call(gw, "evaluate", {"tab": flooded,
                                              "expression": flood_js(FLOOD_S, FLOOD_RATE)})
        assert started["value"] == "started", started
    end = time.perf_counter() + FLOOD_S

    async def gw_probe(tab: int, samples: list[float]) -> None:
        nonlocal calls
        while time.perf_counter() < end:
            t0 = time.perf_counter()
            content = await call(gw, "evaluate", {"expression": "1+1", "tab": tab})
            samples.append((time.perf_counter() - t0) * 1000)
            calls += 1
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
        if cpu.pid:
            cpu.quiet_ns += cpu_ns(cpu.pid) - began
            cpu.quiet_calls += calls
        return 0.0
    with anyio.fail_after(60):
        while True:
            calls += 1
            state = await call(gw, "evaluate", {
                "tab": flooded, "expression": "[window.floodDone, window.floodLogged]"})
            done, logged = state["value"]
            if done:
                # The gateway's CPU so far, before this read of the console (its entries are
                # read, and so parsed, there: a cost of reading, not of the flood).
                spent = cpu_ns(cpu.pid) - began if cpu.pid else 0
                listing = await call(gw, "console_messages", {"tab": flooded, "limit": 1})
                if [m["text"] for m in listing["messages"]] == [f"flood {logged}"]:
                    cpu.flood_ns.append((spent, calls, int(logged)))
                    return float(logged) / FLOOD_S
            await anyio.sleep(0.1)
