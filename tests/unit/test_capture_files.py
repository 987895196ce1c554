"""Where a trace or heap snapshot is written: a file of its own, never one that was there.

A capture can fail late (past ``max_capture_mb``, a tab closed, the link gone) and then
removes its partial file; had it opened an existing ``save_to`` for writing, it would
have truncated the user's file and then removed it.
"""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import pytest

from gateway.errors import CaptureFailed, InvalidArgument
from gateway.tools.saving import save_new

pytestmark = pytest.mark.anyio


async def test_a_capture_writes_a_new_0600_file(tmp_path: Path) -> None:
    async def write(file: Any) -> int:
        return file.write(b"trace")

    path, size = await save_new(tmp_path / "t.json.gz", "trace", ".json.gz", write)
    assert (path.read_bytes(), size) == (b"trace", 5)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


async def test_an_existing_file_is_neither_overwritten_nor_removed(tmp_path: Path) -> None:
    mine = tmp_path / "notes.json"
    mine.write_bytes(b"the user's own work")
    called = []

    async def write(file: Any) -> int:
        called.append(file)
        raise CaptureFailed("the heap snapshot is larger than max_capture_mb")

    with pytest.raises(InvalidArgument, match="exists already"):
        await save_new(mine, "heap", ".heapsnapshot", write)
    assert mine.read_bytes() == b"the user's own work" and not called


async def test_a_failed_capture_removes_only_its_own_partial_file(tmp_path: Path) -> None:
    async def write(file: Any) -> int:
        file.write(b"half a snapshot")
        raise CaptureFailed("tab 3 went away")

    with pytest.raises(CaptureFailed):
        await save_new(tmp_path / "h.heapsnapshot", "heap", ".heapsnapshot", write)
    assert list(tmp_path.iterdir()) == []
