"""Files over an SFTP session of a host's SSH connection: uploads there, downloads back.

The byte counting and the bound are ``transfer``'s, shared with the plain copy a
browser on this machine gets; what is SFTP's is here.
"""

from __future__ import annotations

from typing import BinaryIO

from gateway.errors import HostError
from gateway.hosts.asyncssh_import import asyncssh
from gateway.hosts.transfer import CHUNK, Copied, check_size, copy_back
from gateway.output.files import Readable, read_checked

__all__ = ["fetch_over_sftp", "put_over_sftp"]


async def put_over_sftp(sftp: asyncssh.SFTPClient, directory: str, n: int, file: Readable,
                        copied: Copied) -> str:
    """Copy one file into ``directory/<n>/`` (its own folder: two files may share a name,
    and the page sees the name) and return its remote path."""
    folder = f"{directory}/{n}"
    await sftp.mkdir(folder, asyncssh.SFTPAttrs(permissions=0o700))
    remote = f"{folder}/{file.path.name}"
    async with sftp.open(remote, "wb", asyncssh.SFTPAttrs(permissions=0o600)) as out:
        for chunk in read_checked(file, CHUNK):
            await out.write(chunk)
            copied.done += len(chunk)
            await copied.report()
    return remote


async def fetch_over_sftp(sftp: asyncssh.SFTPClient, path: str, into: BinaryIO,
                          max_bytes: int) -> int:
    """Copy the host's regular file ``path`` (a final link is not followed) into ``into``.

    SFTP opens through links: what was opened must still be what ``lstat`` saw, a regular
    file (a link put there in between points elsewhere: its target differs in kind,
    owner, mode or times)."""
    attrs = await sftp.lstat(path)
    check_size(path, attrs.permissions or 0, attrs.size or 0, max_bytes)
    async with sftp.open(path, "rb", encoding=None) as src:
        opened = await src.stat()
        check_size(path, opened.permissions or 0, opened.size or 0, max_bytes)
        if _identity(opened) != _identity(attrs):
            raise HostError(f"{path} changed while it was opened (replaced by a link?); "
                            "not copied")
        return await copy_back(src.read, into, path, attrs.size or 0, max_bytes)


def _identity(attrs: asyncssh.SFTPAttrs) -> tuple[object, ...]:
    return attrs.uid, attrs.gid, attrs.permissions, attrs.mtime, attrs.mtime_ns
