"""``ServedFiles``: only the files results linked are readable, the newest few, whole
and bounded; and ``as_call_result`` links each file a result names."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest
from mcp.types import CallToolResult, ResourceLink
from pydantic import BaseModel

from gateway.mcp import served_files
from gateway.mcp.calls import as_call_result
from gateway.mcp.served_files import ServedFiles, Unservable
from gateway.tools.links import file_link

pytestmark = pytest.mark.anyio


class Saved(BaseModel):
    path: str

    def written(self) -> list[str]:
        return [self.path]


async def test_a_result_naming_a_file_links_it_and_the_file_reads_back(tmp_path: Path) -> None:
    path = tmp_path / "trace 1.json.gz"
    path.write_bytes(b"\x1f\x8b data")
    result = as_call_result(Saved(path=str(path)))
    [_text, link] = result.content
    assert isinstance(link, ResourceLink)
    assert (str(link.uri), link.name, link.mime_type, link.size) == (
        path.as_uri(), "trace 1.json.gz", "application/gzip", 7)
    files = ServedFiles()
    files.note(result)
    assert files.serves(path.as_uri()) and not files.serves((tmp_path / "other").as_uri())
    assert await files.read(path.as_uri()) == (b"\x1f\x8b data", "application/gzip")
    assert files.serves(path.as_uri().replace("/tmp", "//localhost/tmp").replace(
        "file:////", "file://"))  # the same path, however the client spells its URI
    secret = tmp_path / "secret"
    secret.write_bytes(b"not the gateway's")
    path.unlink()
    with pytest.raises(Unservable, match="no longer the file the gateway wrote"):
        await files.read(path.as_uri())
    path.symlink_to(secret)  # a link to another file planted where the file was
    with pytest.raises(Unservable, match="no longer the file the gateway wrote"):
        await files.read(path.as_uri())
    path.unlink()
    os.mkfifo(path)  # nor can a FIFO hang the read
    with anyio.fail_after(5), pytest.raises(Unservable, match="no longer the file"):
        await files.read(path.as_uri())


async def test_only_the_newest_files_are_kept_and_big_ones_are_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(served_files, "MAX_FILES", 2)
    monkeypatch.setattr(served_files, "MAX_READ_BYTES", 4)
    files = ServedFiles()
    paths = [tmp_path / f"{n}.png" for n in range(3)]
    for path in paths:
        path.write_bytes(b"12345")
        files.note(CallToolResult(content=[file_link(path)]))
    assert [files.serves(p.as_uri()) for p in paths] == [False, True, True]
    with pytest.raises(Unservable, match="5 bytes, more than the 4"):
        await files.read(paths[2].as_uri())
