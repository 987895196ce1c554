"""The ``download`` phase: a 10 MB file h1's browser downloaded, brought back.

The browser on h1 downloads 10 MB of random bytes once (a page makes them and clicks a
``download`` link), so the file sits where the gateway keeps downloads on h1. Then,
interleaved round by round so load on the machine hits them alike:

* ``scp`` of that very file from h1 (OpenSSH, a new connection each time, as a user
  would copy it): the floor a user knows;
* asyncssh SFTP ``get`` of it on an already open connection, the library and cipher
  the gateway uses: the floor for the copy alone;
* the gateway's ``downloads`` ``fetch`` of it, end to end over stdio, into a new file
  each round (checked byte for byte against the first copy, then removed).

The ratio row is the gateway's median over scp's. The benchmark runs ``scp``; the
gateway never does (its copy is SFTP over its own asyncssh connection).
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import asyncssh

from benchmarks.bench import Bench
from benchmarks.clients import call
from tests.topology import Topology

__all__ = ["ROW_KEYS", "define_rows", "download_phase", "run"]

FILE_BYTES = 10 * 1024 * 1024
ROUNDS = 8
BUDGET_S = 90.0
STEP_TIMEOUT_S = 60.0
ROW_KEYS = ("dl_scp", "dl_sftp", "dl_gw", "dl_gw_vs_scp")
DOWNLOAD_JS = f"""
const bytes = new Uint8Array({FILE_BYTES});
for (let i = 0; i < bytes.length; i += 65536) crypto.getRandomValues(bytes.subarray(i, i + 65536));
const a = document.createElement('a');
a.href = URL.createObjectURL(new Blob([bytes]));
a.download = 'bench-10mb.bin';
document.body.append(a); a.click(); 1
"""


def define_rows(row: Callable[..., Any]) -> None:
    row("dl_scp", "`scp` of a 10 MB file the browser on h1 downloaded, from h1 (new "
        "connection each time)", target="floor: what a user runs")
    row("dl_sftp", "asyncssh SFTP `get` of the same file on an open connection to h1",
        target="floor: the copy alone")
    row("dl_gw", "gateway `downloads` fetch of the same file, end to end", target="vs scp")
    row("dl_gw_vs_scp", "↳ gateway fetch / scp (medians)", unit="x", show_p90=False)


async def download_phase(topo: Topology, rows: dict[str, Any], gateway: Callable[..., Any],
                         call: Callable[..., Any], workdir: Path,
                         ssh_connect: Callable[[], Awaitable[asyncssh.SSHClientConnection]]
                         ) -> None:
    """Fill the download rows; ``gateway(env, args)`` opens an MCP client to a gateway,
    ``ssh_connect()`` an asyncssh connection to h1 as the gateway makes it."""
    env = {**topo.client_env(), "SSH_PROXY_TO": "h1"}
    deadline = time.perf_counter() + BUDGET_S
    with anyio.fail_after(STEP_TIMEOUT_S):
        conn = await ssh_connect()
    try:
        async with gateway(env, []) as client:
            # a context of the gateway's: h1's browser was not launched by it, so only
            # its contexts' downloads are saved where the gateway can fetch them
            tab = int((await call(client, "new_tab", {"context": "bench-download"}))["tab"])
            try:
                fetch = await _downloaded(client, call, tab)
                remote = await _remote_path(conn)
                first = workdir / "first.bin"
                await call(client, "downloads", {**fetch, "save_to": str(first)})
                assert first.stat().st_size == FILE_BYTES
                for n in range(ROUNDS):
                    if n >= 2 and time.perf_counter() > deadline:
                        break
                    rows["dl_scp"].samples.append(await _scp(topo, env, remote, workdir))
                    rows["dl_sftp"].samples.append(await _sftp(conn, remote, workdir))
                    rows["dl_gw"].samples.append(
                        await _gateway(client, call, fetch, workdir, first.read_bytes()))
            finally:
                await call(client, "close_tab", {"tab": tab})
    finally:
        conn.close()
    rows["dl_gw_vs_scp"].samples = [rows["dl_gw"].median / rows["dl_scp"].median]


async def _downloaded(client: Any, call: Callable[..., Any], tab: int) -> dict[str, Any]:
    """Have the page download 10 MB; the ``downloads`` arguments that fetch it."""
    await call(client, "evaluate", {"tab": tab, "expression": DOWNLOAD_JS})
    with anyio.fail_after(STEP_TIMEOUT_S):
        while True:
            listed = (await call(client, "downloads", {"tab": tab}))["downloads"]
            done = [d for d in listed if d["state"] == "completed"]
            if done:
                assert done[0]["bytes"] == FILE_BYTES, done
                return {"tab": tab, "fetch": done[0]["id"], "timeout_s": STEP_TIMEOUT_S}
            await anyio.sleep(0.1)


async def _remote_path(conn: asyncssh.SSHClientConnection) -> str:
    """The file on h1: the one 10 MB file in the gateway's download directories there."""
    with anyio.fail_after(STEP_TIMEOUT_S):
        found = await conn.run(f"find /tmp/csgw-downloads-*/files -type f -size "
                               f"{FILE_BYTES}c", check=True)
    paths = str(found.stdout).split()
    assert len(paths) == 1, paths
    return paths[0]


async def _scp(topo: Topology, env: dict[str, str], remote: str, workdir: Path) -> float:
    local = workdir / "scp.bin"
    argv = ["scp", "-q", "-o", "BatchMode=yes", "-F", str(topo.ssh_config), f"h1:{remote}",
            str(local)]
    start = time.perf_counter()
    with anyio.fail_after(STEP_TIMEOUT_S):
        await anyio.run_process(argv, env=env, stdin=subprocess.DEVNULL)
    elapsed = (time.perf_counter() - start) * 1000
    assert local.stat().st_size == FILE_BYTES
    local.unlink()
    return elapsed


async def _sftp(conn: asyncssh.SSHClientConnection, remote: str, workdir: Path) -> float:
    local = workdir / "sftp.bin"
    start = time.perf_counter()
    with anyio.fail_after(STEP_TIMEOUT_S):
        async with conn.start_sftp_client() as sftp:
            await sftp.get(remote, str(local))
    elapsed = (time.perf_counter() - start) * 1000
    local.unlink()
    return elapsed


async def _gateway(client: Any, call: Callable[..., Any], fetch: dict[str, Any],
                   workdir: Path, expected: bytes) -> float:
    local = workdir / f"gw-{os.urandom(4).hex()}.bin"
    start = time.perf_counter()
    with anyio.fail_after(STEP_TIMEOUT_S):
        done = await call(client, "downloads", {**fetch, "save_to": str(local)})
    elapsed = (time.perf_counter() - start) * 1000
    assert done["bytes"] == FILE_BYTES and local.read_bytes() == expected
    local.unlink()
    return elapsed


async def run(bench: Bench) -> None:
    with tempfile.TemporaryDirectory(prefix="csgw-bench-download-") as workdir:
        await download_phase(bench.topo, bench.r.rows, bench.gateway, call, Path(workdir),
                             bench.raw("h1").ssh_connect)
