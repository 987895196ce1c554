"""The ``webdriver`` phase: a call on a cold ``webdriver`` target, beside its floor.

chromedriver runs on h1's loopback (``tests/e2e/webdriver_host.py``). Each of
``--starts`` rounds, interleaved:

* the floor: chromedriver's own ``POST /session`` (Chromium started, session
  answered), timed with a plain HTTP client inside h1's namespace, then deleted;
* a gateway serving one ``webdriver`` target through SSH, already initialized
  (process start is not in this row): its first ``ping`` on that target → result.
  That is SSH connect + ``POST /session`` over the SSH channel + attaching to the
  DevTools endpoint the capabilities name + the set-up commands. The gateway then
  exits and must have deleted its session (checked: ``GET /sessions`` empty).

The SSH connect is timed on its own too (the second floor), so ``cold - session -
ssh`` is what the gateway adds.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import anyio

from benchmarks.bench import Bench
from benchmarks.clients import call
from benchmarks.results import fmt, progress
from tests.e2e.helpers import write_targets
from tests.e2e.webdriver_host import CAPABILITIES, PORT, Chromedriver
from tests.topology import Topology

__all__ = ["ROW_KEYS", "TARGET_SLACK_MS", "define_rows", "run", "webdriver_phase"]

TARGET_SLACK_MS = 150.0  # aim: within this of chromedriver's own session + one SSH connect
ROW_KEYS = ("wd_session", "wd_ssh", "wd_cold", "wd_added")


def define_rows(row: Callable[..., Any]) -> None:
    row("wd_session", "chromedriver on h1: `POST /session` → answer (plain HTTP, in h1)",
        target="floor")
    row("wd_ssh", "asyncssh connect + auth to h1 (webdriver phase)", target="floor")
    row("wd_cold", "gateway, cold `webdriver` target over SSH: first `ping` → result")
    row("wd_added", "↳ cold - session - SSH connect: what the gateway adds",
        target=f"≤ {TARGET_SLACK_MS:.0f} ms")


async def webdriver_phase(
    topo: Topology, rows: dict[str, Any], starts: int, workdir: Path,
    gateway: Callable[[Path], AbstractAsyncContextManager[Any]],
    call: Callable[[Any, str, dict[str, Any]], Awaitable[dict[str, Any]]],
    ssh_connect: Callable[[], Awaitable[Any]],
) -> None:
    host = topo.host("h1")
    config = write_targets(workdir / "webdriver.toml", {"wd": {
        "ssh": host.name, "webdriver": f"http://127.0.0.1:{PORT}",
        "capabilities": CAPABILITIES}})
    driver = await anyio.to_thread.run_sync(Chromedriver, host)
    try:
        for _ in range(starts):
            rows["wd_session"].samples.append(await anyio.to_thread.run_sync(_floor, driver))
            t0 = time.perf_counter()
            conn = await ssh_connect()
            rows["wd_ssh"].samples.append((time.perf_counter() - t0) * 1000)
            conn.close()
            await conn.wait_closed()
            with anyio.fail_after(60):
                async with gateway(config) as gw:
                    t0 = time.perf_counter()
                    pong = await call(gw, "ping", {"target": "wd"})
                    rows["wd_cold"].samples.append((time.perf_counter() - t0) * 1000)
                    if not pong["connected"]:
                        raise RuntimeError(f"the webdriver target did not come up: {pong}")
            left = await anyio.to_thread.run_sync(driver.sessions)
            if left:
                raise RuntimeError(f"the gateway left WebDriver sessions behind: {left}")
            rows["wd_added"].samples.append(rows["wd_cold"].samples[-1]
                                            - rows["wd_session"].samples[-1]
                                            - rows["wd_ssh"].samples[-1])
    finally:
        await anyio.to_thread.run_sync(driver.close)


def _floor(driver: Chromedriver) -> float:
    """Milliseconds of one ``POST /session``; the session is deleted afterwards."""
    t0 = time.perf_counter()
    status, answer = driver.request("POST", "/session",
                                    {"capabilities": {"alwaysMatch": CAPABILITIES}})
    elapsed = (time.perf_counter() - t0) * 1000
    if status != 200:
        raise RuntimeError(f"chromedriver refused a session: {answer}")
    driver.delete(answer["value"]["sessionId"])
    return elapsed


async def run(bench: Bench) -> None:
    env = bench.topo.client_env()
    with tempfile.TemporaryDirectory(prefix="csgw-bench-wd-") as workdir:
        await webdriver_phase(bench.topo, bench.r.rows, bench.opts.starts, Path(workdir),
                              lambda config: bench.gateway(env, ["--config", str(config)]),
                              call, bench.raw("h1").ssh_connect)
    rows = bench.r.rows
    if rows["wd_added"].median is not None:
        rows["wd_added"].ok = rows["wd_added"].median <= TARGET_SLACK_MS
    progress(f"webdriver: cold target {fmt(rows['wd_cold'].median, 'ms')}, "
             f"chromedriver's own session {fmt(rows['wd_session'].median, 'ms')}")
