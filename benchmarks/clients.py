"""MCP clients of the servers the benchmarks measure: the gateway and the SDK's no-op floor.

Both run over stdio from this checkout (``sys.executable``, cwd the repository), so a
run measures the code of the worktree it is started in.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from mcp.types import Tool

from benchmarks.cpu import process_cpu_s
from gateway.mcp import STRUCTURED_META

__all__ = ["CALL_TIMEOUT_S", "NOOP_SERVER", "REPO", "call", "call_with_text",
           "child_cpu_ms", "child_pid_with", "cpu_ns", "describe", "gateway_params", "mcp_client",
           "noop_params",
           "noop_start", "noop_start_ms", "tools_list_json", "until_tabs"]

REPO = Path(__file__).resolve().parent.parent
NOOP_SERVER = Path(__file__).resolve().parent / "noop_server.py"
CALL_TIMEOUT_S = 60.0          # one MCP request (the SDK enforces it)
# A request ``_meta`` the SDK types as a TypedDict of its own keys only.
STRUCTURED: Any = {STRUCTURED_META: True}


def gateway_params(env: dict[str, str], args: Sequence[str] = (),
                   profile_to: Path | None = None) -> StdioServerParameters:
    """``python -m gateway serve ARGS`` in ``env``; under cProfile into ``profile_to``."""
    argv = ["-m", "gateway", "serve", "--log-level", "WARNING", *args]
    if profile_to is not None:
        argv = ["-m", "cProfile", "-o", str(profile_to), *argv]
    return StdioServerParameters(command=sys.executable, args=argv, env=env, cwd=str(REPO))


def noop_params() -> StdioServerParameters:
    """The SDK's floor: ``benchmarks/noop_server.py``."""
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
    """One tool call that must succeed; its structured content and its text content.

    A page view reaches a model as text only; its structured form, which the benchmarks
    check each result by, is asked for as ``call --json`` and the tests ask for it."""
    result = await client.call_tool(tool, args, meta=STRUCTURED)
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


def cpu_ns(pid: int) -> int:
    """On-CPU nanoseconds of all the threads of ``pid`` (``schedstat``'s first field)."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(OSError):
            total += int(Path(f"/proc/{pid}/task/{task}/schedstat").read_text().split()[0])
    return total


def describe(exc: BaseException) -> str:
    """The leaf exceptions of a (possibly nested) exception group, one line."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(describe(inner) for inner in exc.exceptions)
    return f"{type(exc).__name__}: {exc}"


async def noop_start_ms() -> float:
    """The SDK's own start, the floor under any MCP server's: spawn the no-op server,
    handshake, one call (milliseconds)."""
    return (await noop_start())[0]


async def noop_start() -> tuple[float, float]:
    """``noop_start_ms``, and the CPU the no-op server's process spent by then (ms)."""
    t0 = time.perf_counter()
    with anyio.fail_after(60):
        async with mcp_client(noop_params()) as noop:
            await call(noop, "noop", {"expression": "1+1", "tab": 1})
            wall_ms = (time.perf_counter() - t0) * 1000
            return wall_ms, child_cpu_ms(str(NOOP_SERVER))


def child_cpu_ms(marker: str) -> float:
    """CPU so far (ms) of our child process whose command line contains ``marker``."""
    pid = child_pid_with(marker)
    if pid is None:
        raise RuntimeError(f"no child process running {marker!r}")
    return process_cpu_s(pid) * 1000


async def until_tabs(gw: Client) -> int:
    """Call ``list_tabs`` until it lists a tab (the caller bounds the time); how many
    calls that took (each costs the server CPU while its browsers still connect)."""
    for attempt in range(1, 2001):
        content = await call(gw, "list_tabs", {})
        if content["tabs"]:
            return attempt
        await anyio.sleep(0.005)
    raise RuntimeError(f"list_tabs stayed empty: {content}")


def tools_list_json(tools: Sequence[Tool]) -> str:
    """A ``tools/list`` result's tools as JSON, as a client receives them (camelCase keys,
    no nulls), the same measure for any server."""
    return json.dumps([t.model_dump(mode="json", by_alias=True, exclude_none=True)
                       for t in tools])
