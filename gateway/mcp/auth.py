"""Who may talk to the HTTP transport: a bearer token on TCP, and never a web page.

A gateway on a TCP port can be reached by every local user and by every web
page the user's own browser opens (a page may POST to ``127.0.0.1``, and DNS
rebinding lets it pose as any host name). Two checks stand in front of the MCP
app, before any byte reaches it:

- a request with an ``Origin`` header is refused (403): MCP clients do not send
  one, browsers always do on a cross-origin POST;
- on TCP, ``Authorization: Bearer <token>`` must match, compared in constant
  time; a wrong or missing token gets 401 and a log line, never a tool run.

A Unix socket needs no token: it is 0600 in a 0700 directory, so only its
owner can connect. The token comes from ``--token-file`` (which must be 0600 —
a token others can read protects nothing), else one is generated per start.
"""

from __future__ import annotations

import hmac
import os
import secrets
import stat
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

import structlog

from gateway.errors import ConfigError

__all__ = ["Guard", "generate_token", "read_token_file"]

log = structlog.get_logger("gateway.http")

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


def generate_token() -> str:
    """A fresh random token (256 bits, URL-safe)."""
    return secrets.token_urlsafe(32)


def read_token_file(path: str) -> str:
    """The token in ``path``: a regular file of ours, not readable by others, not empty.

    Opened with ``O_NOFOLLOW`` so a symlink planted at the path is refused, not read.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        reason = ("it is a symlink, which the gateway does not follow"
                  if Path(path).is_symlink() else exc.strerror or str(exc))
        raise ConfigError("--token-file", path, f"cannot read: {reason}") from None
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(file.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError("--token-file", path, "not a regular file")
        if info.st_mode & 0o077:
            raise ConfigError("--token-file", path,
                              f"mode {stat.S_IMODE(info.st_mode):04o} lets others read the "
                              f"token; run: chmod 600 {path}")
        token = file.read(4096).decode("utf-8", "replace").strip()
    if len(token) < 16 or any(c.isspace() for c in token):
        raise ConfigError("--token-file", path,
                          "the token must be one line of at least 16 characters, no spaces")
    return token


class Guard:
    """ASGI middleware: refuses browser requests and, with a token, unauthenticated ones."""

    def __init__(self, app: App, token: str | None) -> None:
        self._app = app
        self._expected = f"Bearer {token}".encode() if token is not None else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)  # lifespan: the SDK's session manager
            return
        headers = dict(scope.get("headers") or [])
        client = scope.get("client")
        peer = f"{client[0]}:{client[1]}" if client else "unix socket"
        if b"origin" in headers:
            log.warning("request refused: it came from a web page", peer=peer,
                        origin=headers[b"origin"][:200].decode("latin-1"))
            await _reply(send, 403, "requests from web pages (with an Origin header) are "
                                    "not accepted")
            return
        if self._expected is not None and not hmac.compare_digest(
                headers.get(b"authorization", b""), self._expected):
            log.warning("request refused: missing or wrong token", peer=peer,
                        path=scope.get("path"))
            await _reply(send, 401, "missing or wrong bearer token; send Authorization: "
                                    "Bearer <the token the gateway printed or --token-file>",
                         [(b"www-authenticate", b"Bearer")])
            return
        await self._app(scope, receive, send)


async def _reply(send: Send, status: int, text: str,
                 extra: list[tuple[bytes, bytes]] | None = None) -> None:
    body = text.encode() + b"\n"
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode()), *(extra or [])]})
    await send({"type": "http.response.body", "body": body})
