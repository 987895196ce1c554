"""A file copied back on this machine (``LocalHost.fetch_file``): byte for byte, with its
bytes as progress, never through a link, never past its bound; a disk full here said so.
(Over SFTP: the e2e tests, ``tests/e2e/test_downloads.py``.)"""

from __future__ import annotations

import errno
import io
import os
from pathlib import Path

import pytest

from gateway import progress
from gateway.errors import HostError, InvalidArgument
from gateway.hosts.local import LocalHost
from gateway.hosts.transfer import CHUNK, copy_back
from gateway.output.files import open_private

pytestmark = pytest.mark.anyio


async def test_a_file_comes_back_whole_and_its_bytes_are_heard(tmp_path: Path) -> None:
    data = os.urandom(2 * CHUNK + 123)
    (tmp_path / "f.bin").write_bytes(data)
    heard: list[tuple[float, float | None, str | None]] = []

    async def send(done: float, total: float | None, message: str | None) -> None:
        heard.append((done, total, message))

    into = io.BytesIO()
    with progress.reporting(send):
        size = await LocalHost().fetch_file(str(tmp_path / "f.bin"), into, len(data), 10)
    assert size == len(data) and into.getvalue() == data
    assert heard[0][0] == CHUNK and heard[-1][:2] == (len(data), len(data)), heard
    assert str(heard[-1][2]).startswith("copying back: ")


@pytest.mark.parametrize(("make", "says"), [
    (lambda d: (d / "t").write_bytes(b"x" * 11), "is 11 bytes, over the limit of 10"),
    (lambda d: (d / "t").mkdir(), "is not a regular file"),
    (lambda d: (d / "t").symlink_to(d / "elsewhere"), "cannot read"),
    (lambda d: None, "No such file"),
])
async def test_what_is_not_copied(tmp_path: Path, make: object, says: str) -> None:
    (tmp_path / "elsewhere").write_bytes(b"secret")
    make(tmp_path)  # type: ignore[operator]
    into = io.BytesIO()
    with pytest.raises(HostError, match=says):
        await LocalHost().fetch_file(str(tmp_path / "t"), into, 10, 10)
    assert into.getvalue() == b""


async def test_a_file_that_grows_past_its_bound_while_copied_stops_there() -> None:
    chunks = iter([b"x" * 6, b"x" * 6, b"never read"])

    async def read(size: int) -> bytes:
        return next(chunks)

    into = io.BytesIO()
    with pytest.raises(HostError, match="grew past the limit of 10 bytes while it was copied"):
        await copy_back(read, into, "/tmp/f", 6, 10)
    assert into.getvalue() == b"x" * 6  # nothing past the bound is written


class Full(io.BytesIO):
    name = "/home/u/out.bin"

    def write(self, data: object) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


async def test_a_full_disk_here_is_said_as_such(tmp_path: Path) -> None:
    (tmp_path / "f.bin").write_bytes(b"data")
    with pytest.raises(InvalidArgument, match=r"cannot write /home/u/out\.bin: No space left "
                                              r"on device; free space there, or name a file "
                                              r"elsewhere with save_to"):
        await LocalHost().fetch_file(str(tmp_path / "f.bin"), Full(), 10, 10)
    with open_private(tmp_path / "new.bin", exclusive=True) as new:  # what fetch writes
        assert new.name == str(tmp_path / "new.bin")
