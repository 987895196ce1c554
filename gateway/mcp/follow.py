"""The background gateway of ``call`` follows its targets file.

A shell user edits the targets file and runs the next ``call``; the daemon serving
it is out of sight (started by the first ``call``), so nobody sends it ``SIGHUP``
and it went on answering ``unknown target`` for the target just added. Before each
request, ``FollowFile`` compares the file's identity (device, inode, size, mtime)
with the one last loaded — one ``stat``, no read — and when it changed reloads the
configuration as ``SIGHUP`` does (``reload.reload``: a file that does not load
changes nothing) before the request runs, and waits (bounded) for the first
connection attempts of what it added, as the daemon's first call does — so the call
sees the file as saved.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import anyio

from gateway.config import GatewayConfig
from gateway.fleet.registry import Registry
from gateway.mcp.auth import App, Receive, Scope, Send
from gateway.mcp.reload import reload

__all__ = ["FollowFile"]

Signature = tuple[int, int, int, int] | None


def _signature(path: str) -> Signature:
    try:
        info = os.stat(path)
    except OSError:
        return None  # gone for a moment (an editor's save): reloading says what is wrong
    return info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns


class FollowFile:
    """ASGI wrapper: reload ``load()`` into ``registry`` when ``path`` changed."""

    def __init__(self, app: App, path: str, registry: Registry,
                 load: Callable[[], GatewayConfig]) -> None:
        self._app, self._path, self._registry, self._load = app, path, registry, load
        self._seen = _signature(path)
        self._lock = anyio.Lock()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and _signature(self._path) != self._seen:
            async with self._lock:  # concurrent requests: one reload, the others wait for it
                now = _signature(self._path)
                if now != self._seen:
                    self._seen = now
                    await reload(self._registry, self._load)
                    await self._registry.settled()  # as at the daemon's start: real states
        await self._app(scope, receive, send)
