"""``save_to`` for the tools that can write a file: where it may go, checked before any
browser work (a refused path should fail at once, not after a capture), and the write
of a capture streamed into a new file (``save_new``)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gateway.errors import InvalidArgument
from gateway.output.files import (
    default_allowed_dirs,
    default_save_path,
    open_private,
    resolve_save_path,
)

if TYPE_CHECKING:
    from .definition import Gateway

__all__ = ["allowed_dirs", "save_new", "save_path"]


async def save_path(gateway: Gateway, requested: str | None,
                    what: str = "save_to") -> Path | None:
    """The real path to write to for ``save_to`` (None when not given), or ``InvalidArgument``
    — also, at once, when a file is there already: the gateway never replaces a file.
    Tools that write are offered as read-only (clients run them without asking), and
    the bytes may be a website's (a response body): they must not be able to overwrite
    a project's file.

    ``write_private`` re-checks at write time (no symlink, regular file, still new), so a
    path swapped between this check and the write is still refused."""
    if requested is None:
        return None
    path = resolve_save_path(requested, await allowed_dirs(gateway),
                             allow_any=gateway.registry.config.allow_any_path, what=what)
    if os.path.lexists(path):
        raise InvalidArgument(f"{what} {str(path)[:200]!r} exists already; the gateway "
                              "never replaces a file — name a new one")
    return path


async def allowed_dirs(gateway: Gateway) -> list[Path]:
    """Where the gateway may write (``save_to``) and read (``upload``) files: the MCP
    client's roots (``Gateway.roots``) and the OS temp directory."""
    return [*await gateway.roots(), *default_allowed_dirs()]


async def save_new(path: Path | None, kind: str, suffix: str,
                   write: Callable[[Any], Awaitable[int]]) -> tuple[Path, int]:
    """Run ``write(file)`` on ``path`` (the checked ``save_to``; a fresh temp file
    without it): (path, bytes). The file is created here 0600, never replaced (a file put
    there since the check is refused too), so a capture that fails or is cancelled
    removes only the partial file of its own."""
    path = path or default_save_path(kind, suffix)
    file = open_private(path, exclusive=True)
    try:
        with file:
            size = await write(file)
    except BaseException:
        with contextlib.suppress(OSError):
            path.unlink()
        raise
    return path, size
