"""The ``shell`` phase: ``call`` from a shell, and MCP over HTTP against stdio.

* ``call list_tabs`` against a warm daemon, whole process (spawn to exit), interleaved
  with ``python -c pass`` (the floor) and with today's one-shot ``call --no-daemon``.
* ``evaluate 1+1`` through ``serve --http`` (loopback TCP, bearer token) and through
  ``serve`` on stdio, both gateways up at once, in interleaved blocks: the HTTP
  transport's cost per call is the difference of the medians.

The daemon lives in a runtime directory of the run's own and is stopped at the end;
the HTTP gateway listens on 127.0.0.1 only.
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from benchmarks.bench import Bench
from benchmarks.clients import call
from benchmarks.results import fmt, progress
from tests.e2e.helpers import accepts, open_http, terminated

__all__ = ["ROW_KEYS", "TARGET_HTTP_OVERHEAD_MS", "TARGET_WARM_CALL_MS", "define_rows", "measure",
           "run"]

REPO = Path(__file__).resolve().parents[1]
TARGET_WARM_CALL_MS = 150.0
TARGET_HTTP_OVERHEAD_MS = 1.0
SHELL_RUNS = 20
HTTP_BUDGET_S = 25.0         # the HTTP-vs-stdio rounds stop early (after 2) beyond this
ROW_KEYS = ("sh_pass", "sh_call", "sh_oneshot", "stdio_eval", "http_eval", "ovh_http")


def define_rows(row: Callable[..., Any]) -> None:
    row("sh_pass", "`python -c pass`, whole process (20 runs)", target="floor")
    row("sh_call", "`chrome-ssh-gateway call list_tabs`, warm daemon, whole process",
        target=f"≤ {TARGET_WARM_CALL_MS:.0f} ms")
    row("sh_oneshot", "↳ same with `call --no-daemon` (a gateway per command)",
        target="before: the old `call`")
    row("stdio_eval", "gateway `evaluate 1+1` over stdio (same run as the row below)",
        target="floor")
    row("http_eval", "gateway `evaluate 1+1` over streamable HTTP, loopback TCP + token")
    row("ovh_http", "↳ HTTP - stdio, per call", show_p90=False,
        target=f"≤ {TARGET_HTTP_OVERHEAD_MS:g} ms")


def _run(argv: list[str], env: dict[str, str]) -> float:
    """Wall time of one process in ms (it must succeed)."""
    t0 = time.perf_counter()
    subprocess.run(argv, env=env, cwd=REPO, check=True, stdin=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120)
    return (time.perf_counter() - t0) * 1000


def _shell_rows(rows: dict[str, Any], env: dict[str, str], starts: int) -> None:
    gateway = [sys.executable, "-m", "gateway"]
    with tempfile.TemporaryDirectory(prefix="csgw-bench-") as run:
        os.chmod(run, 0o700)
        env = env | {"XDG_RUNTIME_DIR": run}
        _run([*gateway, "daemon", "start"], env)
        try:
            _run([*gateway, "call", "list_tabs"], env)  # warm: page cache, first SSH use
            for i in range(SHELL_RUNS):
                rows["sh_pass"].samples.append(_run([sys.executable, "-c", "pass"], env))
                rows["sh_call"].samples.append(_run([*gateway, "call", "list_tabs"], env))
                if i < starts:
                    rows["sh_oneshot"].samples.append(
                        _run([*gateway, "call", "--no-daemon", "list_tabs"], env))
        finally:
            _run([*gateway, "daemon", "stop"], env)


@asynccontextmanager
async def _http_gateway(env: dict[str, str]) -> AsyncIterator[Client]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    token = secrets.token_urlsafe(24)
    with tempfile.NamedTemporaryFile("w", prefix="csgw-token-") as token_file:
        token_file.write(token)
        token_file.flush()
        argv = [sys.executable, "-m", "gateway", "serve", "--log-level", "WARNING",
                "--http", f"127.0.0.1:{port}", "--token-file", token_file.name]
        async with await anyio.open_process(argv, env=env, cwd=REPO,
                                            stdin=subprocess.DEVNULL,
                                            stdout=subprocess.DEVNULL) as process, \
                terminated(process):
            with anyio.fail_after(60):
                while not await accepts(f"127.0.0.1:{port}"):
                    await anyio.sleep(0.05)
            async with open_http(f"http://127.0.0.1:{port}/mcp", token) as client:
                yield client


async def measure(rows: dict[str, Any], env: dict[str, str], stdio: Client,
                  call: Callable[..., Any], calls: int, starts: int,
                  budget_s: float) -> None:
    """Fill the shell rows; ``stdio`` is a stdio gateway client on the same target."""
    await anyio.to_thread.run_sync(_shell_rows, rows, env, starts)
    deadline = time.perf_counter() + budget_s
    async with _http_gateway(env) as http:
        sides = {"stdio_eval": stdio, "http_eval": http}
        tabs = {key: (await call(client, "new_tab", {}))["tab"] for key, client in sides.items()}
        block = max(10, calls // 20)
        try:
            for round_no in range(20):
                if round_no >= 2 and time.perf_counter() > deadline:
                    break
                order = list(sides.items())[::1 if round_no % 2 == 0 else -1]
                for key, client in order:
                    args = {"tab": tabs[key], "expression": "1+1"}
                    for _ in range(block):
                        t0 = time.perf_counter()
                        await call(client, "evaluate", args)
                        rows[key].samples.append((time.perf_counter() - t0) * 1000)
        finally:
            for key, client in sides.items():
                await call(client, "close_tab", {"tab": tabs[key]})
    stdio_ms, http_ms = rows["stdio_eval"].median, rows["http_eval"].median
    rows["ovh_http"].samples.append(http_ms - stdio_ms)
    rows["ovh_http"].ok = http_ms - stdio_ms <= TARGET_HTTP_OVERHEAD_MS
    rows["sh_call"].ok = rows["sh_call"].median <= TARGET_WARM_CALL_MS


async def run(bench: Bench) -> None:
    """Warm `call` against its floors; HTTP against stdio."""
    env = bench.env("h1")
    with anyio.fail_after(240):
        async with bench.gateway(env) as stdio:
            await measure(bench.r.rows, env, stdio, call, bench.opts.calls, bench.opts.starts,
                          HTTP_BUDGET_S)
    rows = bench.r.rows
    progress(f"shell: warm call {fmt(rows['sh_call'].median, 'ms')}, python -c pass "
             f"{fmt(rows['sh_pass'].median, 'ms')}, HTTP - stdio "
             f"{fmt(rows['ovh_http'].median, 'ms')}")
