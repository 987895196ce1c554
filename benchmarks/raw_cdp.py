"""The floor of every latency row: raw CDP over the same path the gateway takes.

One browser websocket over an asyncssh Unix-socket forward (the gateway's route), one
session on a tab of its own (or someone else's): what a call costs with nothing of
the gateway in between. ``websocket`` is the path; a subclass may take another
(``share_phase.DirectCdp``: TCP inside the browser's own namespace, no SSH).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import asyncssh
from asyncssh.encryption import get_default_encryption_algs
from websockets.asyncio.client import ClientConnection, unix_connect

from gateway.hosts.ssh import cipher_preference
from tests.topology import RemoteHost, Topology

__all__ = ["EVALUATE_TOOL_PARAMS", "RAW_PARAMS", "RawCdp"]

RAW_PARAMS = {"expression": "1+1"}
# What the gateway's evaluate tool sends for the same expression (gateway/tools/runtime.py).
EVALUATE_TOOL_PARAMS = {"expression": "1+1", "awaitPromise": True, "replMode": True,
                        "userGesture": True, "returnByValue": False}


class RawCdp:
    """The floor: one browser websocket over an asyncssh Unix-socket forward, one session.

    ``socket``: a share's Unix socket on ``host`` (forwarded to, as the gateway does,
    instead of the browser's port there) and ``active_port_file`` the shared browser's
    ``DevToolsActivePort`` (for its websocket path)."""

    def __init__(self, topo: Topology, host: RemoteHost, socket: str | None = None,
                 active_port_file: Path | None = None) -> None:
        self.topo = topo
        self.host = host
        self.socket = socket
        self.active_port_file = active_port_file or host.devtools_active_port_file
        self.conn: asyncssh.SSHClientConnection | None = None
        self.ws: ClientConnection | None = None
        self.session_id: str | None = None
        self.target_id: str | None = None
        self.browser = ""
        self._ids = itertools.count(1)
        self._dir: str | None = None

    def connect_options(self) -> dict[str, Any]:
        # The client HOME's ssh config (alias h1 → address, user, key) and known_hosts,
        # given explicitly so this process's own HOME is not involved; no agent; the
        # cipher order the gateway asks for (AES-GCM first).
        return {"config": [str(self.topo.ssh_config)], "known_hosts": str(self.topo.known_hosts),
                "agent_path": None,
                "encryption_algs": cipher_preference(get_default_encryption_algs()) or ()}

    async def ssh_connect(self) -> asyncssh.SSHClientConnection:
        return await asyncssh.connect(self.host.name, **self.connect_options())

    async def open(self, attach_to: str | None = None) -> None:
        """Connect, and attach to a new tab of our own — or to the (someone else's) tab
        with target id ``attach_to``, which is then left open."""
        self.ws = await self.websocket()
        version = await self.send("Browser.getVersion", session=False)
        self.browser = version.get("product", "")
        target_id = attach_to
        if target_id is None:
            created = await self.send("Target.createTarget", {"url": "about:blank"},
                                      session=False)
            target_id = self.target_id = created["targetId"]
        attached = await self.send("Target.attachToTarget",
                                   {"targetId": target_id, "flatten": True}, session=False)
        self.session_id = attached["sessionId"]

    async def websocket(self) -> ClientConnection:
        """The browser's websocket over SSH (the path a subclass may change)."""
        self.conn = await self.ssh_connect()
        text = self.active_port_file.read_text()
        port_line, path = text.strip().split("\n")[:2]
        port = int(port_line)
        self._dir = tempfile.mkdtemp(prefix="csgw-bench-")  # 0700
        sock = os.path.join(self._dir, "cdp.sock")
        if self.socket is None:
            await self.conn.forward_local_path_to_port(sock, "127.0.0.1", port)
        else:  # direct-streamlocal to the share's socket, as the gateway's route
            await self.conn.forward_local_path(sock, self.socket)
        return await unix_connect(sock, f"ws://127.0.0.1:{port}{path.strip()}",
                                  compression=None, max_size=64 * 1024 * 1024,
                                  ping_interval=None)

    async def send(self, method: str, params: dict[str, Any] | None = None, *,
                   session: bool = True,
                   events: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
        """One command's result; ``events`` sees each event that arrives meanwhile."""
        assert self.ws is not None
        call_id = next(self._ids)
        message: dict[str, Any] = {"id": call_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self.session_id
        await self.ws.send(json.dumps(message))
        while True:
            reply = json.loads(await self.ws.recv())
            if reply.get("id") == call_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})  # type: ignore[no-any-return]
            if events is not None and "method" in reply:
                events(reply)

    async def aclose(self) -> None:
        if self.ws is not None:
            if self.target_id is not None:
                with contextlib.suppress(Exception):
                    with anyio.fail_after(5):
                        await self.send("Target.closeTarget", {"targetId": self.target_id},
                                        session=False)
            with contextlib.suppress(Exception):
                await self.ws.close()
        if self.conn is not None:
            self.conn.close()
            with contextlib.suppress(Exception), anyio.move_on_after(2):
                await self.conn.wait_closed()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
