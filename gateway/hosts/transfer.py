"""Whole files between this machine and a host, chunk by chunk, with the bytes as progress.

Both directions count here: ``stage_files`` (uploads: this machine's files into a
private directory on the host, over SFTP: ``sftp``) and ``fetch_file`` (downloads: a
browser's file on its host back to this machine, over SFTP, or read directly on this
machine: ``fetch_here``). A copy reports its bytes as the call's progress
(``gateway.progress``), and one copied back is bounded while it is read — its size
when asked says little of a file a browser may still be writing. Nothing here needs
asyncssh: a gateway with only local targets never imports it.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Awaitable, Callable
from typing import BinaryIO

import anyio

from gateway import progress
from gateway.errors import HostError, InvalidArgument

__all__ = ["CHUNK", "Copied", "check_size", "copy_back", "fetch_here"]

CHUNK = 4 * 1024 * 1024  # per SFTP read or write (asyncssh pipelines its requests)


class Copied:
    """Bytes copied so far of ``total``: the call's progress, ``doing`` naming it."""

    def __init__(self, total: int, doing: str) -> None:
        self.total, self.done, self.doing = total, 0, doing

    async def report(self, *, final: bool = False) -> None:
        await progress.report(self.done, self.total, f"{self.doing}: {self.done / 2**20:.1f} "
                              f"of {self.total / 2**20:.1f} MB", final=final)


def check_size(path: str, mode: int, size: int, max_bytes: int) -> None:
    if not stat.S_ISREG(mode):
        raise HostError(f"{path} is not a regular file")
    if size > max_bytes:
        raise HostError(f"{path} is {size:,} bytes, over the limit of {max_bytes:,}")


async def copy_back(read: Callable[[int], Awaitable[bytes]], into: BinaryIO, path: str,
                size: int, max_bytes: int) -> int:
    """Read ``read`` to its end into ``into``; the bytes as progress, never past
    ``max_bytes``. Writing here failing (a full disk) is said as such, once for every
    host: it is no failure of the host's."""
    copied = Copied(size, "copying back")
    while data := await read(CHUNK):
        copied.done += len(data)
        if copied.done > max_bytes:
            raise HostError(f"{path} grew past the limit of {max_bytes:,} bytes while it "
                            "was copied")
        try:
            await anyio.to_thread.run_sync(into.write, data)
        except OSError as exc:
            name = getattr(into, "name", None)
            raise InvalidArgument(
                f"cannot write {name if isinstance(name, str) else 'the file here'}: "
                f"{exc.strerror or exc}; free space there, or name a file elsewhere with "
                "save_to") from None
        copied.total = max(copied.total, copied.done)
        await copied.report()
    await copied.report(final=True)
    return copied.done


async def fetch_here(path: str, into: BinaryIO, max_bytes: int) -> int:
    """Copy this machine's regular file ``path`` (a final link is not followed) into
    ``into``; ``HostError`` in the OS's words when it cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as exc:
        raise HostError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        check_size(path, info.st_mode, info.st_size, max_bytes)  # before fdopen: a directory
    except BaseException:
        os.close(fd)
        raise
    with os.fdopen(fd, "rb") as src:
        os.set_blocking(fd, True)

        async def read(size: int) -> bytes:
            try:
                return await anyio.to_thread.run_sync(src.read, size)
            except OSError as exc:
                raise HostError(f"cannot read {path}: {exc.strerror or exc}") from None

        return await copy_back(read, into, path, info.st_size, max_bytes)
