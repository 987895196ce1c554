"""gateway.output.files, reading side: which files ``upload`` may read (tmp_path only)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gateway.errors import InvalidArgument
from gateway.output.files import (
    MAX_UPLOAD_FILE_BYTES,
    Readable,
    open_readable,
    resolve_read_path,
)


@pytest.fixture
def allowed(tmp_path: Path) -> Path:
    d = tmp_path / "allowed"
    d.mkdir()
    return d


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    d = tmp_path / "outside"
    d.mkdir()
    return d


def refused(requested: str | Path, allowed_dirs: list[Path], *, allow_any: bool = False) -> str:
    with pytest.raises(InvalidArgument) as info:
        resolve_read_path(str(requested), allowed_dirs, allow_any=allow_any)
    return str(info.value)


def test_a_file_inside_an_allowed_dir_is_read_with_its_size(allowed: Path) -> None:
    (allowed / "sub").mkdir()
    path = allowed / "sub" / "a.txt"
    path.write_bytes(b"hello")
    assert resolve_read_path(str(path), [allowed], allow_any=False) == Readable(path, 5)


def test_outside_the_allowed_dirs_is_refused_and_says_where_is_allowed(
    allowed: Path, outside: Path
) -> None:
    secret = outside / "secret.txt"
    secret.write_text("x")
    message = refused(secret, [allowed])
    assert "outside the allowed directories" in message and str(allowed) in message
    assert resolve_read_path(str(secret), [allowed], allow_any=True).path == secret


def test_links_are_resolved_before_the_check(allowed: Path, outside: Path) -> None:
    secret = outside / "secret.txt"
    secret.write_text("x")
    (allowed / "file-link").symlink_to(secret)
    (allowed / "dir-link").symlink_to(outside, target_is_directory=True)
    assert f"resolves to {secret}" in refused(allowed / "file-link", [allowed])
    assert f"resolves to {secret}" in refused(allowed / "dir-link" / "secret.txt", [allowed])
    inside = allowed / "real.txt"
    inside.write_text("y")
    (allowed / "inner-link").symlink_to(inside)
    assert resolve_read_path(str(allowed / "inner-link"), [allowed],
                             allow_any=False).path == inside


def test_only_existing_regular_files_with_absolute_paths(allowed: Path) -> None:
    assert "No such file" in refused(allowed / "missing", [allowed])
    assert "not a regular file" in refused(allowed, [allowed])
    os.mkfifo(allowed / "fifo")
    assert "not a regular file" in refused(allowed / "fifo", [allowed])
    assert "must be absolute" in refused("a.txt", [allowed])
    assert "NUL" in refused(f"{allowed}/a\x00b", [allowed])


def test_a_file_over_the_limit_is_refused_with_its_size_and_the_limit(allowed: Path) -> None:
    big = allowed / "big.iso"
    with open(big, "wb") as f:
        f.truncate(MAX_UPLOAD_FILE_BYTES + 1)
    message = refused(big, [allowed])
    assert f"{MAX_UPLOAD_FILE_BYTES + 1:,} bytes" in message
    assert f"{MAX_UPLOAD_FILE_BYTES:,} bytes per file" in message
    with open(big, "wb") as f:
        f.truncate(MAX_UPLOAD_FILE_BYTES)
    assert resolve_read_path(str(big), [allowed], allow_any=False).size == MAX_UPLOAD_FILE_BYTES


def test_open_readable_refuses_a_file_swapped_or_changed_after_the_check(
    allowed: Path, outside: Path
) -> None:
    path = allowed / "a.txt"
    path.write_bytes(b"12345")
    checked = resolve_read_path(str(path), [allowed], allow_any=False)
    with open_readable(checked) as reader:
        assert reader.read() == b"12345"
    path.write_bytes(b"123456")  # grew since the check
    with pytest.raises(InvalidArgument, match="changed"):
        open_readable(checked)
    path.unlink()
    secret = outside / "secret.txt"
    secret.write_bytes(b"12345")
    path.symlink_to(secret)  # a link planted after the check is not followed
    with pytest.raises(InvalidArgument, match="cannot read"):
        open_readable(checked)
