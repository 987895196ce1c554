"""The ``scan`` phase: what finding every browser on a host costs.

Two rows families, beside their floors in the same run:

* one scan over SSH with 0, 5 and 20 browsers of our own running on h1 (the
  machine's other browsers — h2's, other test slots' — are seen too, and counted
  in the label), the gateway's own ``SshHost.run`` of the scan script, beside the
  same connection running ``true``: the difference is the scan's host time;
* a browser's start on h1 → its target ``up`` in a gateway serving
  ``browsers = "all"`` at the default interval (polled through ``list_targets``),
  median of 10.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from benchmarks.bench import Bench
from benchmarks.clients import call
from gateway.config import TargetConfig, load_config
from gateway.discovery.scan import parse_scan, scan_script
from gateway.hosts.ssh import SshHost
from tests.e2e.browsers_on_host import BrowserFarm
from tests.e2e.helpers import write_targets
from tests.topology import Topology

__all__ = ["ROW_KEYS", "define_rows", "run", "scan_phase"]

SCANS_PER_ROW = 20
STARTS = 10
TARGET_SCAN_MS = 30.0
TARGET_UP_MS = 2500.0
UP_TIMEOUT_S = 20.0
ROW_KEYS = ("scan_floor", "scan_0", "scan_5", "scan_20", "scan_host_20", "scan_up")


def define_rows(row: Callable[..., Any]) -> None:
    row("scan_floor", "SSH exec of `true` to h1 (the gateway's SshHost)",
        target="floor for the scan rows")
    for n in (0, 5, 20):
        row(f"scan_{n}", f"one host scan over SSH, {n} browsers of ours on h1",
            target=f"≤ floor + {TARGET_SCAN_MS:.0f} ms" if n == 20 else "")
    row("scan_host_20", "↳ host time of the scan with 20 browsers (scan - floor)",
        show_p90=False, target=f"≤ {TARGET_SCAN_MS:.0f} ms")
    row("scan_up", "a browser's start on h1 → its target `up` (`browsers = \"all\"`, "
        "2 s interval)", target=f"≤ {TARGET_UP_MS:,.0f} ms")


async def scan_phase(topo: Topology, rows: dict[str, Any], gateway: Callable[..., Any],
                     call: Callable[..., Any], workdir: Path) -> None:
    """Fill the scan rows; ``gateway(env, args)`` opens an MCP client to a gateway."""
    h1 = topo.host("h1")
    farm = BrowserFarm(h1)
    env = topo.client_env()
    saved = {k: os.environ.get(k) for k in (*env, "SSH_AUTH_SOCK")}
    os.environ.update(env)  # the gateway's SshHost reads ~/.ssh/config of this process
    os.environ.pop("SSH_AUTH_SOCK", None)
    try:
        config = load_config({**os.environ, "SSH_PROXY_TO": "h1"}).targets[0]
        await _scan_costs(config, farm, rows)
        path = write_targets(workdir / "scan-targets.toml", {
            "ci": {"ssh": "h1", "browsers": "all"}})
        async with gateway(env, ["--config", str(path)]) as client:
            for _ in range(STARTS):
                rows["scan_up"].samples.append(await _time_to_up(farm, client, call))
    finally:
        farm.close()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    up = rows["scan_up"]
    up.ok = up.median is not None and up.median <= TARGET_UP_MS


async def _scan_costs(config: TargetConfig, farm: BrowserFarm, rows: dict[str, Any]) -> None:
    assert config.ssh is not None
    host = SshHost(config.ssh, config.host_key_policy, config.reconnect)
    try:
        await host.connect()
        script = scan_script()
        for n in (0, 5, 20):
            while len(farm.started) < n:
                farm.start("puppeteer_dev_chrome_profile-", "--remote-debugging-port=0")
            for browser in farm.started:
                assert browser.port
            for _ in range(SCANS_PER_ROW):
                start = time.perf_counter()
                await host.run("true", 10)
                rows["scan_floor"].samples.append((time.perf_counter() - start) * 1000)
                start = time.perf_counter()
                output = await host.run(script, 10)
                rows[f"scan_{n}"].samples.append((time.perf_counter() - start) * 1000)
            seen = len(parse_scan(output).processes)
            rows[f"scan_{n}"].label += f" ({seen} browser processes on the machine seen)"
    finally:
        await host.aclose()
        farm.close()
    floor, twenty = rows["scan_floor"].median, rows["scan_20"].median
    host_ms = twenty - floor
    rows["scan_host_20"].samples = [host_ms]
    rows["scan_host_20"].ok = rows["scan_20"].ok = host_ms <= TARGET_SCAN_MS


async def _time_to_up(farm: BrowserFarm, client: Any, call: Callable[..., Any]) -> float:
    """Milliseconds from starting one browser to its target being up; then stop it."""
    start = time.perf_counter()
    browser = farm.start("puppeteer_dev_chrome_profile-", "--remote-debugging-port=0")
    with anyio.fail_after(UP_TIMEOUT_S):
        while True:
            listed = await call(client, "list_targets", {})
            if any(t.get("pid") == browser.pid and t["state"] == "up"
                   for t in listed["targets"]):
                break
            await anyio.sleep(0.02)
    elapsed = (time.perf_counter() - start) * 1000
    farm.kill(browser)  # its profile goes when the farm closes
    return elapsed


async def run(bench: Bench) -> None:
    with tempfile.TemporaryDirectory(prefix="csgw-bench-scan-") as workdir:
        await scan_phase(bench.topo, bench.r.rows, bench.gateway, call, Path(workdir))
