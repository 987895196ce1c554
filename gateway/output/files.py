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
import stat
import tempfile
from collections.abc import Sequence
from pathlib import Path

from gateway.errors import InvalidArgument

__all__ = ["default_allowed_dirs", "resolve_save_path", "write_private"]


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


def write_private(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` as a 0600 file, never following a final symlink."""
    try:
        # O_NONBLOCK: a FIFO slipped in after the check fails instead of hanging the loop.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
                     | os.O_NONBLOCK, 0o600)
    except OSError as exc:
        raise InvalidArgument(f"cannot write {path}: {exc.strerror or exc}") from None
    with os.fdopen(fd, "wb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise InvalidArgument(f"{path} is not a regular file")
        os.set_blocking(fd, True)
        os.fchmod(fd, 0o600)
        f.write(data)
