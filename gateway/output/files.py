"""Where the gateway may write files (``save_to``) and read them (``upload``), and how.

Allowed: inside the MCP client's roots (when it declares them) and the OS
temp directory — unless the configuration lifts the restriction
(``[gateway] allow_any_path = true``). The requested path is resolved with
every symlink followed *before* the check, so a link inside an allowed
directory that points out of it is refused; a symlink as the final component
is refused outright, and the file is opened with ``O_NOFOLLOW`` so a link
planted between check and write is not followed either. Files are 0600.

Files to upload come from the same allowed directories, resolved the same way
(every symlink followed first, then the check), must be regular files, and are
bounded in size: ``MAX_UPLOAD_FILE_BYTES`` each, ``MAX_UPLOAD_BYTES`` for one
upload step — an agent must not ship a disk image over someone's SSH link.
"""

from __future__ import annotations

import os
import secrets
import stat
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from gateway.errors import InvalidArgument

__all__ = ["MAX_UPLOAD_BYTES", "MAX_UPLOAD_FILE_BYTES", "Readable", "default_allowed_dirs",
           "default_save_path", "open_private", "open_readable", "read_checked",
           "resolve_read_path", "resolve_save_path", "write_private"]

MAX_UPLOAD_FILE_BYTES = 100 * 1024 * 1024
MAX_UPLOAD_BYTES = 250 * 1024 * 1024


@dataclass(frozen=True)
class Readable:
    """A file the gateway may read for an upload: its real path, and its size and identity
    (device, inode) when checked — the file opened later must be that very file."""

    path: Path
    size: int
    identity: tuple[int, int]


def default_allowed_dirs() -> list[Path]:
    return [Path(os.path.realpath(tempfile.gettempdir()))]


def resolve_save_path(requested: str, allowed: Sequence[Path], *, allow_any: bool,
                      what: str = "save_to") -> Path:
    """The real path to write ``requested`` to, or ``InvalidArgument`` saying why not
    (naming the argument ``what``)."""
    if "\x00" in requested:
        raise InvalidArgument(f"{what} contains a NUL character")
    path = Path(requested).expanduser()
    if not path.is_absolute():
        raise InvalidArgument(f"{what} must be an absolute path, got {requested[:200]!r}")
    if path.is_symlink():
        raise InvalidArgument(f"{what} {requested[:200]!r} is a symlink; the gateway does not "
                              "write through links — pass the real path")
    resolved = Path(os.path.realpath(path))
    if not resolved.parent.is_dir():
        raise InvalidArgument(f"directory {str(resolved.parent)[:200]!r} does not exist")
    if resolved.is_dir():
        raise InvalidArgument(f"{what} {requested[:200]!r} is a directory; name a file in it")
    if resolved.exists() and not resolved.is_file():
        raise InvalidArgument(f"{what} {requested[:200]!r} is not a regular file (a FIFO, "
                              "socket or device); name a regular file")
    if not allow_any:
        _confine(what, requested, resolved, allowed, "name a file inside one of them")
    return resolved


def _confine(what: str, requested: str, resolved: Path, allowed: Sequence[Path],
             fix: str) -> None:
    """Refuse ``resolved`` (``requested`` with every link followed) outside ``allowed``,
    saying what to do instead: ``fix``, or the setting that lifts the rule — a shell's
    ``call`` declares no roots, so its user meets this first and needs the way out."""
    real_allowed = [Path(os.path.realpath(d)) for d in allowed]
    if not any(resolved.is_relative_to(d) for d in real_allowed):
        where = ", ".join(str(d) for d in real_allowed)
        asked = str(Path(requested).expanduser())
        via = f" (it resolves to {resolved})" if str(resolved) != asked else ""
        raise InvalidArgument(f"{what} {requested[:200]!r} is outside the allowed directories"
                              f"{via}; allowed: {where} (the temp directory and the MCP "
                              f"client's roots) — {fix}, or set allow_any_path = true in the "
                              "[gateway] table of the targets file")


def resolve_read_path(requested: str, allowed: Sequence[Path], *, allow_any: bool,
                      what: str = "upload path") -> Readable:
    """The real path and size of a file to upload (or read, as the argument ``what``),
    or ``InvalidArgument`` saying why not: inside ``allowed`` (after following every
    symlink), a regular file, and not larger than ``MAX_UPLOAD_FILE_BYTES``."""
    if "\x00" in requested:
        raise InvalidArgument(f"{what} contains a NUL character")
    path = Path(requested).expanduser()
    if not path.is_absolute():
        raise InvalidArgument(f"{what} must be absolute, got {requested[:200]!r}")
    resolved = Path(os.path.realpath(path))
    if not allow_any:
        _confine(what, requested, resolved, allowed, "copy the file into one of them")
    try:
        info = resolved.stat()
    except OSError as exc:
        raise InvalidArgument(f"cannot read {requested[:200]!r}: "
                              f"{exc.strerror or exc}") from None
    if not stat.S_ISREG(info.st_mode):
        raise InvalidArgument(f"cannot read {requested[:200]!r}: not a regular file")
    if info.st_size > MAX_UPLOAD_FILE_BYTES:
        raise InvalidArgument(f"cannot read {requested[:200]!r}: {info.st_size:,} bytes is "
                              f"over the limit of {MAX_UPLOAD_FILE_BYTES:,} bytes per file")
    return Readable(resolved, info.st_size, (info.st_dev, info.st_ino))


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
    except FileExistsError:
        raise InvalidArgument(f"{path} exists already (it appeared since it was checked); "
                              "name a new file") from None
    except OSError as exc:
        raise InvalidArgument(f"cannot write {path}: {exc.strerror or exc}") from None
    # named by its path (a write that fails says which file); the caller closes it
    f = open(str(path), "wb", opener=lambda _path, _flags: fd)  # noqa: SIM115
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        f.close()
        raise InvalidArgument(f"{path} is not a regular file")
    os.set_blocking(fd, True)
    os.fchmod(fd, 0o600)
    return f


def write_private(path: Path, data: bytes) -> None:
    """Write ``data`` to a new 0600 file at ``path`` (never replacing one, never through a
    final symlink)."""
    with open_private(path, exclusive=True) as f:
        f.write(data)


def open_readable(file: Readable) -> BinaryIO:
    """Open a checked upload file for reading: never through a final symlink, and only if
    it is still the file checked — same device and inode, so neither a file put in its
    place nor a directory on its path swapped for a link is read — a regular file of the
    size checked (else ``InvalidArgument``)."""
    try:
        fd = os.open(file.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as exc:
        raise InvalidArgument(f"cannot read {file.path}: {exc.strerror or exc}") from None
    reader = os.fdopen(fd, "rb")
    info = os.fstat(fd)
    if (not stat.S_ISREG(info.st_mode) or info.st_size != file.size
            or (info.st_dev, info.st_ino) != file.identity):
        reader.close()
        raise InvalidArgument(f"{file.path} changed while it was being uploaded; try again")
    os.set_blocking(fd, True)
    return reader


def read_checked(file: Readable, chunk: int) -> Iterator[bytes]:
    """The bytes of a checked upload file, ``chunk`` at a time, and never more than the
    size checked: a file that grows while it is copied (a log being written), or one whose
    size says nothing of its content (``/proc``, ``/sys``: 0 or 4096 bytes) raises
    ``InvalidArgument`` instead of streaming past the upload limits."""
    with open_readable(file) as reader:
        left = file.size
        while left:
            data = reader.read(min(chunk, left))
            if not data:
                raise InvalidArgument(f"{file.path} shrank while it was being uploaded; "
                                      "try again")
            left -= len(data)
            yield data
        if reader.read(1):
            raise InvalidArgument(f"{file.path} holds more than the {file.size:,} bytes its "
                                  "size says (it grew while being uploaded, or it is not a "
                                  "plain file on disk, like those in /proc); upload a copy")
