"""Where the gateway may write files (``save_to``), and how it writes them.

Allowed: inside the MCP client's roots (when it declares them) and the OS
temp directory — unless the configuration lifts the restriction
(``[gateway] allow_any_path = true``). The requested path is resolved with
every symlink followed *before* the check, so a link inside an allowed
directory that points out of it is refused; a symlink as the final component
is refused outright, and the file is opened with ``O_NOFOLLOW`` so a link
planted between check and write is not followed either. Files are 0600.
"""

from __future__ import annotations

import os
import secrets
import stat
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

from gateway.errors import InvalidArgument

__all__ = ["default_allowed_dirs", "default_save_path", "open_private", "resolve_save_path",
           "write_private"]


def default_allowed_dirs() -> list[Path]:
    return [Path(os.path.realpath(tempfile.gettempdir()))]


def resolve_save_path(requested: str, allowed: Sequence[Path], *, allow_any: bool) -> Path:
    """The real path to write ``requested`` to, or ``InvalidArgument`` saying why not."""
    if "\x00" in requested:
        raise InvalidArgument("save_to contains a NUL character")
    path = Path(requested).expanduser()
    if not path.is_absolute():
        raise InvalidArgument(f"save_to must be an absolute path, got {requested[:200]!r}")
    if path.is_symlink():
        raise InvalidArgument(f"save_to {requested[:200]!r} is a symlink; the gateway does not "
                              "write through links — pass the real path")
    resolved = Path(os.path.realpath(path))
    if not resolved.parent.is_dir():
        raise InvalidArgument(f"directory {str(resolved.parent)[:200]!r} does not exist")
    if resolved.is_dir():
        raise InvalidArgument(f"save_to {requested[:200]!r} is a directory; name a file in it")
    if resolved.exists() and not resolved.is_file():
        raise InvalidArgument(f"save_to {requested[:200]!r} is not a regular file (a FIFO, "
                              "socket or device); name a regular file")
    if allow_any:
        return resolved
    real_allowed = [Path(os.path.realpath(d)) for d in allowed]
    if not any(resolved.is_relative_to(d) for d in real_allowed):
        where = ", ".join(str(d) for d in real_allowed)
        via = f" (it resolves to {resolved})" if str(resolved) != str(path) else ""
        raise InvalidArgument(f"save_to {requested[:200]!r} is outside the allowed directories"
                              f"{via}; allowed: {where}")
    return resolved


def default_save_path(kind: str, suffix: str) -> Path:
    """A fresh file name in the temp directory for a capture the caller gave no ``save_to``
    for (a trace, a heap snapshot): random, so another user cannot plant it in advance,
    and opened with ``exclusive=True`` so a file there already is never overwritten."""
    return Path(default_allowed_dirs()[0]) / f"csgw-{kind}-{secrets.token_hex(6)}{suffix}"


def open_private(path: Path, *, exclusive: bool = False) -> BinaryIO:
    """``path`` opened for writing as a 0600 regular file, never through a final symlink
    (``exclusive``: only if it does not exist yet). For writes that stream: the caller
    writes chunk by chunk and closes it."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    flags |= os.O_EXCL if exclusive else os.O_TRUNC
    try:
        # O_NONBLOCK: a FIFO slipped in after the check fails instead of hanging the loop.
        fd = os.open(path, flags, 0o600)
    except OSError as exc:
        raise InvalidArgument(f"cannot write {path}: {exc.strerror or exc}") from None
    f = os.fdopen(fd, "wb")
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        f.close()
        raise InvalidArgument(f"{path} is not a regular file")
    os.set_blocking(fd, True)
    os.fchmod(fd, 0o600)
    return f


def write_private(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` as a 0600 file, never following a final symlink."""
    with open_private(path) as f:
        f.write(data)
