"""uvicorn as the gateway runs it: no signal handling of its own.

uvicorn re-raises SIGTERM after its shutdown, which would kill the process before the
gateway has cleaned up (its browsers, its forwards); the gateway stops its servers
itself (``should_exit``). Used by ``serve --http`` and the live view's own server.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import uvicorn

__all__ = ["QuietServer"]


class QuietServer(uvicorn.Server):
    """uvicorn without its own signal handling."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield
