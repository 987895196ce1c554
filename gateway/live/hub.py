"""The live view of one gateway: its links, its screencasts (and the recordings that
watch them), the tabs people hold, and where its page is served.

In ``serve --http`` mode on a loopback TCP port the page is part of that server, at
``/live`` (``mounted``). Otherwise (stdio, the ``call`` daemon on its Unix socket, a
non-loopback ``--http``) the first URL asked for starts a server of its own on
``127.0.0.1`` and a free port, which runs until the gateway exits. Either way, links
live in this process's memory only, so they die with it.
"""

from __future__ import annotations

import socket
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import structlog

from gateway.errors import GatewayError
from gateway.live.hold import HOLD, Hold, held
from gateway.live.links import Links
from gateway.page.capture.recording import Recordings
from gateway.page.capture.screencast import Screencasts
from gateway.tabs.tab import Tab

if TYPE_CHECKING:
    from gateway.fleet.registry import Registry

__all__ = ["MAX_HOLD_S", "Live", "open_live"]

log = structlog.get_logger("gateway.live")

Note = Callable[[dict[str, Any]], None]
"""Writes one record to the call log (redacted there)."""
MAX_HOLD_S = 3600.0
"""The longest a person may hold a tab (``handoff``): an agent gets it back for sure."""
START_TIMEOUT_S = 5.0


class Live:
    """Links, screencasts and holds of one gateway; its tasks run in ``tasks``."""

    def __init__(self, registry: Registry, recent: Sequence[dict[str, Any]], note: Note,
                 tasks: anyio.abc.TaskGroup) -> None:
        self.registry = registry
        self.recent = recent
        self.links = Links()
        self.screencasts = Screencasts(tasks)
        self.recordings = Recordings(tasks, self.screencasts)
        self._note = note
        self._tasks = tasks
        self._base: str | None = None
        self._server: Any = None  # a QuietServer, once started
        self._starting = anyio.Lock()

    def watched(self) -> bool:
        """Whether a person watches a tab now (a gateway that idles out waits for them)."""
        return bool(self.screencasts.watched())

    def mounted(self, base: str) -> None:
        """The page is served at ``base`` + ``/live`` by the HTTP server (``serve --http``)."""
        self._base = base

    async def url(self, tab: int | None, *, control: bool) -> str:
        """A new link's URL (its token inside: give it to the person, never log it)."""
        base = self._base or await self._start()
        return f"{base}/live/?t={self.links.issue(tab, control=control)}"

    async def handoff(self, tab: Tab, reason: str, seconds: float) -> tuple[Hold, str]:
        """Hold ``tab`` for a person (``hold``) and a control link for that hold alone
        (Done on it ends this hold, its input stops with it). The page is served
        first: a hold is never made without a link that can end it."""
        base = self._base or await self._start()
        hold = self.hold(tab, reason, seconds)
        token = self.links.issue(tab.id, control=True, handoff=hold)
        return hold, f"{base}/live/?t={token}"

    async def _start(self) -> str:
        """Serve the page on a free loopback port, once; a server that does not come
        up in time is stopped (the next request starts afresh)."""
        async with self._starting:
            if self._base is not None:
                return self._base
            import uvicorn  # here: a gateway nobody watches never loads the web stack

            from gateway.live.app import live_app
            from gateway.live.web import QuietServer

            sock = socket.create_server(("127.0.0.1", 0))
            sock.set_inheritable(False)
            port = sock.getsockname()[1]
            server = QuietServer(uvicorn.Config(
                live_app(self), log_level="warning", lifespan="off", ws_max_size=65_536,
                ws_per_message_deflate=False,  # JPEG frames: compressing them costs CPU only
                timeout_graceful_shutdown=1, access_log=False))
            serving = anyio.CancelScope()

            async def serve() -> None:
                with serving:
                    try:
                        await server.serve(sockets=[sock])
                    finally:
                        sock.close()

            self._tasks.start_soon(serve)
            with anyio.move_on_after(START_TIMEOUT_S):
                while not server.started:
                    await anyio.sleep(0.01)
            if not server.started:
                serving.cancel()
                raise GatewayError(f"the live page's server did not start within "
                                   f"{START_TIMEOUT_S:g} s (is this machine overloaded?); "
                                   "try again")
            self._server = server
            self._base = f"http://127.0.0.1:{port}"
            log.info("live view serving", address=f"127.0.0.1:{port}")
            return self._base

    def stop(self) -> None:
        """The gateway is exiting: every link dies, every watcher is let go, every hold
        ends (its end written to the call log). Recordings end with the task group."""
        self.links.clear()
        for browser in self.registry.browsers.values():
            for tab in browser.tabs.values():
                hold = tab.peek(HOLD)
                if hold is not None:
                    hold.end("gateway exiting")
        if self._server is not None:
            self._server.should_exit = True

    # ----------------------------------------------------------------- holds

    def hold(self, tab: Tab, reason: str, seconds: float) -> Hold:
        """``tab`` is with a person until Done, ``seconds`` pass or the tab goes; an
        existing hold stays as it is (its own reason and end)."""
        holding = held(tab)
        if holding is not None:
            return holding
        hold = Hold(reason, time.monotonic() + min(seconds, MAX_HOLD_S))
        tab.put(HOLD, hold)
        self._note({"ts": time.time(), "event": "handoff", "tab": tab.id,
                    "target": tab.target, "reason": reason, "hold_s": round(seconds, 3)})
        self._tasks.start_soon(self._end_of, tab, hold)
        return hold

    async def _end_of(self, tab: Tab, hold: Hold) -> None:
        """Wait for the hold to end, then write its end to the call log."""
        started = time.monotonic()
        with anyio.move_on_after(max(hold.until - started, 0)):
            await hold.released.wait()
        hold.end("expired")  # an expired hold ends for its waiters as well
        how = hold.ended or "expired"
        if tab.peek(HOLD) is hold:
            tab.clear(HOLD)
        self._note({"ts": time.time(), "event": "handoff_end", "tab": tab.id,
                    "target": tab.target, "reason": hold.reason, "ended": how,
                    "held_s": round(time.monotonic() - started, 3)})


@asynccontextmanager
async def open_live(registry: Registry, recent: Sequence[dict[str, Any]],
                    note: Note) -> AsyncIterator[Live]:
    """A live view for the gateway's lifetime; its server and links end with the block."""
    async with anyio.create_task_group() as tasks:
        live = Live(registry, recent, note, tasks)
        try:
            yield live
        finally:
            live.stop()
            tasks.cancel_scope.deadline = anyio.current_time() + 2
