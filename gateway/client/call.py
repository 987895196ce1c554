"""The smallest MCP client that works: one tool call over HTTP on the daemon's socket.

This runs in every ``call`` from a shell, so it uses only the standard library —
no MCP SDK, no serving code — and costs little more than starting Python. It
speaks the SDK's streamable HTTP transport with sessions: ``initialize``, the
``initialized`` notification, ``tools/call``, then ``DELETE`` to end the session,
one short connection per request. Replies come as JSON or as a server-sent
event stream; either is read until the response with our id arrives.
"""

from __future__ import annotations

import http.client
import json
import socket
from pathlib import Path
from typing import Any

from gateway import __version__
from gateway.errors import DaemonError
from gateway.mcp import STRUCTURED_META

__all__ = ["STRUCTURED_META", "UnixConnection", "call_tool"]

PROTOCOL_VERSION = "2025-06-18"
CALL_TIMEOUT_S = 600.0
"""Longest a tool call may take here; the gateway bounds every call far below this."""
INITIALIZE_TIMEOUT_S = 90.0
"""A daemon that just started answers once its targets' first connection attempts are
over (each bounded by its connect timeout); until then requests wait in its backlog."""


class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: Path, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self._path = str(path)

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self._path)
        self.sock = sock


class _Session:
    def __init__(self, path: Path) -> None:
        self._path = path
        self._id: str | None = None
        self._next = 0

    def _send(self, method: str, body: dict[str, Any] | None,
              timeout: float) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
        headers = {"Accept": "application/json, text/event-stream",
                   "Content-Type": "application/json"}
        if self._id is not None:
            headers |= {"mcp-session-id": self._id, "mcp-protocol-version": PROTOCOL_VERSION}
        conn = UnixConnection(self._path, timeout)
        data = json.dumps(body).encode() if body is not None else None
        conn.request(method, "/mcp", body=data, headers=headers)
        return conn, conn.getresponse()

    def request(self, method: str, params: dict[str, Any],
                timeout: float = 30.0) -> dict[str, Any]:
        self._next += 1
        conn, response = self._send("POST", {"jsonrpc": "2.0", "id": self._next,
                                             "method": method, "params": params}, timeout)
        try:
            if response.status != 200:
                body = response.read(300).decode(errors="replace")
                raise DaemonError(f"the gateway daemon answered {method} with HTTP "
                                  f"{response.status}: {body}")
            self._id = self._id or response.getheader("mcp-session-id")
            message = _reply(response, self._next)
        finally:
            conn.close()
        if "error" in message:
            raise DaemonError(f"{method} failed: {message['error'].get('message')}")
        result: dict[str, Any] = message["result"]
        return result

    def notify(self, method: str) -> None:
        conn, response = self._send("POST", {"jsonrpc": "2.0", "method": method}, 10.0)
        response.read()
        conn.close()

    def end(self) -> None:
        conn, response = self._send("DELETE", None, 5.0)
        response.read()
        conn.close()


def _reply(response: http.client.HTTPResponse, request_id: int) -> dict[str, Any]:
    """The JSON-RPC response for ``request_id`` in a JSON body or an SSE stream."""
    if not (response.getheader("content-type") or "").startswith("text/event-stream"):
        message: dict[str, Any] = json.loads(response.read())
        return message
    data: list[str] = []
    for raw in response:
        line = raw.decode().rstrip("\r\n")
        if line.startswith("data:"):
            data.append(line[5:].lstrip())
        elif not line and data:
            message = json.loads("\n".join(data))
            data = []
            if message.get("id") == request_id:
                return message
    raise DaemonError("the gateway daemon closed the stream before answering")


def call_tool(socket_path: Path, tool: str, arguments: dict[str, Any], *,
              structured: bool = False) -> dict[str, Any]:
    """``tools/call`` on the daemon at ``socket_path``: the result as sent (camelCase);
    ``structured`` asks for a text result's structured form too."""
    session = _Session(socket_path)
    try:
        session.request("initialize", {"protocolVersion": PROTOCOL_VERSION, "capabilities": {},
                                       "clientInfo": {"name": "chrome-ssh-gateway call",
                                                      "version": __version__}},
                        timeout=INITIALIZE_TIMEOUT_S)
        session.notify("notifications/initialized")
        params: dict[str, Any] = {"name": tool, "arguments": arguments}
        if structured:
            params["_meta"] = {STRUCTURED_META: True}
        result = session.request("tools/call", params, timeout=CALL_TIMEOUT_S)
        session.end()
    except (OSError, http.client.HTTPException, ValueError) as exc:
        raise DaemonError(f"lost the gateway daemon at {socket_path} ({exc}); run the "
                          "command again (a new daemon starts; earlier tab ids are gone)") from None
    return result
