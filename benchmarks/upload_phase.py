"""The ``upload`` phase: a 10 MB file into a page's file input on h1, over SSH.

Three rows, interleaved round by round so load on the machine hits them alike:

* ``scp`` of the file to h1 (OpenSSH, a new connection each time, as a user would
  copy it): the floor a user knows;
* asyncssh SFTP ``put`` of the file on an already open connection, the library and
  cipher the gateway uses: the floor for the copy alone;
* the gateway's ``browse_act`` ``{"do": "upload"}`` into a ``data:`` page's file
  input on h1 (copy into a private directory on h1, ``DOM.setFileInputFiles``, the
  fresh view), end to end over stdio; each upload is checked by reading the input's
  file size in the page. Each sample is on a tab of its own, closed (and so its
  upload directory removed) outside the timed part;
* the same ``browse_act`` with a 1-byte file: what a step costs besides the copy
  (its settle window — ``gateway.page.waits`` gives every step at least 0.25 s to
  start a navigation and go network-quiet — and the fresh view), so the difference
  of the two gateway rows is the copy's cost inside the gateway, to compare with SFTP.

The benchmark runs ``scp``; the gateway never does.
"""

from __future__ import annotations

import os
import re
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
from tests.e2e.helpers import data_url
from tests.topology import Topology

__all__ = ["ROW_KEYS", "define_rows", "run", "upload_phase"]

FILE_BYTES = 10 * 1024 * 1024
ROUNDS = 8
BUDGET_S = 90.0
STEP_TIMEOUT_S = 60.0
ROW_KEYS = ("up_scp", "up_sftp", "up_gw", "up_gw_tiny", "up_gw_copy", "up_gw_over_scp")
PAGE = data_url("csgw-bench-upload", "<input type=file aria-label=Upload>")


def define_rows(row: Callable[..., Any]) -> None:
    row("up_scp", "`scp` of a 10 MB file to h1 (new connection each time)",
        target="floor: what a user runs")
    row("up_sftp", "asyncssh SFTP `put` of the same file on an open connection to h1",
        target="floor: the copy alone")
    row("up_gw", "gateway `browse_act` upload of the same file into a file input on h1, "
        "end to end", target="vs scp")
    row("up_gw_tiny", "↳ the same `browse_act` upload with a 1-byte file",
        target="the step without the copy")
    row("up_gw_copy", "↳ 10 MB - 1 byte: the copy's cost inside the gateway (medians)",
        show_p90=False, target="vs SFTP put")
    row("up_gw_over_scp", "↳ gateway end to end - scp (medians)", show_p90=False)


async def upload_phase(topo: Topology, rows: dict[str, Any], gateway: Callable[..., Any],
                       call: Callable[..., Any], workdir: Path,
                       ssh_connect: Callable[[], Awaitable[asyncssh.SSHClientConnection]]
                       ) -> None:
    """Fill the upload rows; ``gateway(env, args)`` opens an MCP client to a gateway,
    ``ssh_connect()`` an asyncssh connection to h1 as the gateway makes it."""
    local = workdir / "upload-10mb.bin"
    local.write_bytes(os.urandom(FILE_BYTES))
    tiny = workdir / "upload-1b.bin"
    tiny.write_bytes(b"x")
    env = {**topo.client_env(), "SSH_PROXY_TO": "h1"}
    remote = f"/tmp/csgw-bench-upload-{os.getpid()}.bin"
    deadline = time.perf_counter() + BUDGET_S
    with anyio.fail_after(STEP_TIMEOUT_S):
        conn = await ssh_connect()
    try:
        async with gateway(env, []) as client:
            for n in range(ROUNDS):
                if n >= 2 and time.perf_counter() > deadline:
                    break
                rows["up_scp"].samples.append(await _scp(topo, env, local, remote))
                rows["up_sftp"].samples.append(await _sftp(conn, local, remote))
                rows["up_gw"].samples.append(await _gateway(client, call, local, FILE_BYTES))
                rows["up_gw_tiny"].samples.append(await _gateway(client, call, tiny, 1))
        with anyio.fail_after(STEP_TIMEOUT_S):
            await conn.run(f"rm -f {remote}", check=True)
    finally:
        conn.close()
    scp, gw, step = rows["up_scp"].median, rows["up_gw"].median, rows["up_gw_tiny"].median
    rows["up_gw_over_scp"].samples = [gw - scp]
    rows["up_gw_copy"].samples = [gw - step]


async def _scp(topo: Topology, env: dict[str, str], local: Path, remote: str) -> float:
    argv = ["scp", "-q", "-o", "BatchMode=yes", "-F", str(topo.ssh_config), str(local),
            f"h1:{remote}"]
    start = time.perf_counter()
    with anyio.fail_after(STEP_TIMEOUT_S):
        await anyio.run_process(argv, env=env, stdin=subprocess.DEVNULL)
    return (time.perf_counter() - start) * 1000


async def _sftp(conn: asyncssh.SSHClientConnection, local: Path, remote: str) -> float:
    start = time.perf_counter()
    with anyio.fail_after(STEP_TIMEOUT_S):
        async with conn.start_sftp_client() as sftp:
            await sftp.put(str(local), remote)
    return (time.perf_counter() - start) * 1000


async def _gateway(client: Any, call: Callable[..., Any], local: Path, size: int) -> float:
    opened = await call(client, "browse", {"url": PAGE})
    tab = int(opened["tab"])
    try:
        found = re.search(r'#(\d+) "Upload"', opened["view"])
        assert found, opened["view"]
        ref = int(found.group(1))
        start = time.perf_counter()
        with anyio.fail_after(STEP_TIMEOUT_S):
            done = await call(client, "browse_act", {
                "tab": tab, "timeout_s": STEP_TIMEOUT_S,
                "actions": [{"do": "upload", "ref": ref, "paths": [str(local)]}]})
        elapsed = (time.perf_counter() - start) * 1000
        assert done["steps"] == [{"do": "upload", "ok": True}], done["steps"]
        seen = await call(client, "evaluate", {
            "tab": tab, "expression": "document.querySelector('input').files[0].size"})
        assert seen["value"] == size, seen
    finally:
        await call(client, "close_tab", {"tab": tab})
    return elapsed


async def run(bench: Bench) -> None:
    with tempfile.TemporaryDirectory(prefix="csgw-bench-upload-") as workdir:
        await upload_phase(bench.topo, bench.r.rows, bench.gateway, call, Path(workdir),
                           bench.raw("h1").ssh_connect)
