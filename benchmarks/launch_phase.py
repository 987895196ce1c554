"""The ``launch`` phase: a cold launch over SSH beside Chromium's own start.

Each round, on h1 with its own Chromium stopped: Chromium started by hand in h1's
namespace as the test user (the floor: spawn → ``DevToolsActivePort`` written),
an asyncssh connect, then a gateway whose only target has ``launch = true``:
spawn → first non-empty ``list_tabs`` (cold: it launches), and a second gateway
on the same target (warm: it attaches to that browser, still running). Both
include the gateway's own start (Python, MCP, SSH connect, discovery); the
difference is what launching costs, set beside Chromium's own start. Every
profile is fresh and removed afterwards; every browser is killed by its pid;
h1's own Chromium is started again at the end.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import anyio

from benchmarks.bench import Bench
from benchmarks.clients import until_tabs
from benchmarks.results import RowMaker, fmt, progress
from tests.topology import CHROME_FLAGS, CHROMIUM, RemoteHost, Topology

__all__ = ["ROW_KEYS", "TARGET_SLACK_MS", "cold_launch", "define_rows", "run"]

TARGET_SLACK_MS = 300.0  # aim: within this of Chromium's own start plus one SSH connect
ROW_KEYS = ("launch_floor", "launch_ssh", "launch_cold", "launch_warm", "launch_cost")


def define_rows(row: RowMaker) -> None:
    row("launch_floor", "Chromium started by hand on h1: spawn → DevToolsActivePort",
        target="floor")
    row("launch_ssh", "asyncssh connect + auth to h1 (launch phase)", target="floor")
    row("launch_cold", "gateway, no browser on h1 (`launch = true`): spawn → first "
        "non-empty `list_tabs` (cold launch over SSH)")
    row("launch_warm", "↳ the same, its browser already running (reattach)")
    row("launch_cost", "↳ cold - warm: what launching costs",
        target=f"≤ Chromium by hand + {TARGET_SLACK_MS:.0f} ms")


async def run(bench: Bench) -> None:
    """A cold launch over SSH, median of --starts."""
    topo, r = bench.topo, bench.r
    env = topo.client_env()
    with tempfile.TemporaryDirectory(prefix="csgw-bench-") as scratch:
        await cold_launch(r.rows, topo, bench.opts.starts, Path(scratch),
                          lambda config: bench.gateway(env, ["--config", str(config)]),
                          bench.raw("h1").ssh_connect)
    row, floor = r.rows["launch_cost"], r.rows["launch_floor"]
    if row.median is not None and floor.median is not None:
        bound = floor.median + TARGET_SLACK_MS
        row.ok = row.median <= bound
        row.target = f"≤ {bound:.0f} ms (Chromium by hand + {TARGET_SLACK_MS:.0f} ms)"
    progress(f"launch: cold {fmt(r.rows['launch_cold'].median, 'ms')}, warm "
             f"{fmt(r.rows['launch_warm'].median, 'ms')}, Chromium by hand "
             f"{fmt(floor.median, 'ms')}")


def _by_hand(host: RemoteHost, profile: Path) -> float:
    """Milliseconds from spawning Chromium on ``host`` to its DevToolsActivePort."""
    active = profile / "DevToolsActivePort"
    argv = host.netns_exec(
        "setpriv", f"--reuid={host.uid}", f"--regid={host.uid}", "--clear-groups", "env", "-i",
        f"HOME={host.home}", "PATH=/usr/bin:/bin", CHROMIUM,
        *(f for f in CHROME_FLAGS if f != "--no-sandbox"),
        "--remote-debugging-port=0", f"--user-data-dir={profile}", "about:blank")
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        while time.perf_counter() - t0 < 30:
            if active.exists() and active.stat().st_size > 0:
                return (time.perf_counter() - t0) * 1000
            if proc.poll() is not None:
                raise RuntimeError(f"Chromium on {host.name} exited with {proc.returncode}")
            time.sleep(0.002)
        raise RuntimeError(f"Chromium on {host.name} wrote no DevToolsActivePort in 30 s")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def _left_on(profile: Path) -> list[int]:
    """Processes still running with ``--user-data-dir=<profile>``."""
    found = []
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            argv = Path(f"/proc/{name}/cmdline").read_bytes().split(b"\0")
            state = Path(f"/proc/{name}/stat").read_text().rpartition(")")[2].split()[0]
        except (OSError, IndexError):
            continue
        if f"--user-data-dir={profile}".encode() in argv and state not in ("Z", "X"):
            found.append(int(name))
    return found


async def cold_launch(
    rows: dict[str, Any], topo: Topology, starts: int, scratch: Path,
    gateway: Callable[[Path], AbstractAsyncContextManager[Any]],
    ssh_connect: Callable[[], Awaitable[Any]],
) -> None:
    """Fill ``rows["launch_floor"]``, ``["launch_ssh"]``, ``["launch_cold"]``,
    ``["launch_warm"]`` and ``["launch_cost"]`` (cold - warm, per round)."""
    host = topo.host("h1")
    await anyio.to_thread.run_sync(host.stop_chrome)
    try:
        for i in range(starts):
            tag = uuid.uuid4().hex[:8]
            floor_profile = host.home / f"bench-floor-{tag}"
            try:
                rows["launch_floor"].samples.append(
                    await anyio.to_thread.run_sync(_by_hand, host, floor_profile))
            finally:
                shutil.rmtree(floor_profile, ignore_errors=True)
            t0 = time.perf_counter()
            conn = await ssh_connect()
            rows["launch_ssh"].samples.append((time.perf_counter() - t0) * 1000)
            conn.close()
            await conn.wait_closed()
            profile = host.home / f"bench-launch-{tag}"
            config = scratch / f"launch-{i}.toml"
            config.write_text(f'[targets.vm]\nssh = "{host.name}"\nlaunch = true\n'
                              f'launch_profile = "~/{profile.name}"\n')
            try:
                cold = await _first_tabs_ms(gateway(config))
                if not _left_on(profile):
                    raise RuntimeError(f"no browser kept running on {profile}")
                warm = await _first_tabs_ms(gateway(config))
                rows["launch_cold"].samples.append(cold)
                rows["launch_warm"].samples.append(warm)
                rows["launch_cost"].samples.append(cold - warm)
            finally:
                for pid in _left_on(profile):
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                shutil.rmtree(profile, ignore_errors=True)
    finally:
        if host.chrome_pid() is None:
            await anyio.to_thread.run_sync(host.start_chrome)


async def _first_tabs_ms(gateway: AbstractAsyncContextManager[Any]) -> float:
    """Milliseconds from spawning ``gateway`` to its first non-empty ``list_tabs``."""
    t0 = time.perf_counter()
    with anyio.fail_after(60):
        async with gateway as gw:
            await until_tabs(gw)
            return (time.perf_counter() - t0) * 1000

