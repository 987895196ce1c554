"""The files this gateway wrote for its clients, readable through ``resources/read``.

A tool result links each file it wrote (``resource_link``, ``gateway.tools.links``);
a client that opens one asks this server for it. Only those files are served, and
only while each is still the very file linked: its identity (device, inode) and size
are taken when it is linked, and a read opens it without following a symlink and
compares — a file deleted and replaced by a link to another (``/tmp`` is shared)
is refused, and a FIFO put there cannot hang the server (the read runs in a worker
thread, non-blocking open). The most recent ``MAX_FILES``, each up to
``MAX_READ_BYTES`` (a resource is sent whole, base64, in one message: a bigger file
is refused with where to copy it from). All of a server's clients share the list: in
``serve --http`` they are one user's sessions.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from pathlib import Path
from urllib.parse import unquote, urlsplit

import anyio
from mcp.types import CallToolResult, ResourceLink

from gateway.errors import InvalidArgument
from gateway.output.files import Readable, open_readable
from gateway.tools.links import mime_type_of

__all__ = ["MAX_FILES", "MAX_READ_BYTES", "ServedFiles", "Unservable"]

MAX_FILES = 256
MAX_READ_BYTES = 32 * 1024 * 1024


class Unservable(Exception):
    """A linked file that cannot be served now: its text says why, for the client."""


def _path_of(uri: str) -> Path | None:
    """The local path a ``file:`` URI names (however its characters are escaped)."""
    url = urlsplit(uri)
    if url.scheme != "file" or url.netloc not in ("", "localhost"):
        return None
    return Path(unquote(url.path))


class ServedFiles:
    """Files a result linked, by path, newest last, at most ``MAX_FILES``."""

    def __init__(self) -> None:
        self._files: OrderedDict[Path, Readable] = OrderedDict()

    def note(self, result: CallToolResult) -> None:
        """Remember the files ``result`` links to, as they are now."""
        for block in result.content:
            path = _path_of(str(block.uri)) if isinstance(block, ResourceLink) else None
            if path is None:
                continue
            try:
                info = os.lstat(path)
            except OSError:
                continue
            self._files[path] = Readable(path, info.st_size, (info.st_dev, info.st_ino))
            self._files.move_to_end(path)
            while len(self._files) > MAX_FILES:
                self._files.popitem(last=False)

    def serves(self, uri: str) -> bool:
        path = _path_of(uri)
        return path is not None and path in self._files

    async def read(self, uri: str) -> tuple[bytes, str]:
        """The file behind ``uri`` and its MIME type, or ``Unservable`` saying why
        not."""
        path = _path_of(uri)
        assert path is not None
        file = self._files[path]
        if file.size > MAX_READ_BYTES:
            raise Unservable(f"{path} is {file.size:,} bytes, more than the "
                                f"{MAX_READ_BYTES:,} a resource read sends; copy it from the "
                                "gateway's machine instead")
        try:
            data = await anyio.to_thread.run_sync(_read, file)
        except (OSError, InvalidArgument):
            raise Unservable(f"{path} is no longer the file the gateway wrote (removed, "
                                "replaced or changed since); call the tool again for a new "
                                "one") from None
        return data, mime_type_of(path)


def _read(file: Readable) -> bytes:
    with open_readable(file) as reader:
        return reader.read(file.size)
