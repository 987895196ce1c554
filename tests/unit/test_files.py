"""gateway.output.files: where save_to may write, and how the file is written; which files
upload may read (tmp_path only)."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.errors import InvalidArgument
from gateway.hosts.local import LocalHost
from gateway.output.files import (
    MAX_UPLOAD_FILE_BYTES,
    default_allowed_dirs,
    open_readable,
    read_checked,
    resolve_read_path,
    resolve_save_path,
    write_private,
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


@pytest.fixture
def umask_zero() -> Iterator[None]:
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


def refused(requested: str | Path, allowed_dirs: list[Path], *, allow_any: bool = False,
            match: str = "") -> str:
    with pytest.raises(InvalidArgument, match=match) as info:
        resolve_save_path(str(requested), allowed_dirs, allow_any=allow_any)
    return str(info.value)


# ------------------------------------------------------------------ resolve_save_path


def test_file_inside_an_allowed_dir(allowed: Path) -> None:
    target = allowed / "shot.png"
    assert resolve_save_path(str(target), [allowed], allow_any=False) == target
    nested = allowed / "a" / "b"
    nested.mkdir(parents=True)
    assert resolve_save_path(str(nested / "x.bin"), [allowed], allow_any=False) == nested / "x.bin"
    (allowed / "exists.txt").write_text("old")
    assert resolve_save_path(str(allowed / "exists.txt"), [allowed], allow_any=False) == (
        allowed / "exists.txt")


def test_only_absolute_paths(allowed: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(allowed)  # even where a relative path would land inside
    message = refused("shot.png", [allowed], match="absolute")
    assert "'shot.png'" in message
    refused("./shot.png", [allowed], match="absolute")
    refused("", [allowed], match="absolute")
    refused("shot.png", [allowed], allow_any=True, match="absolute")


def test_nul_character_is_refused(allowed: Path) -> None:
    refused(f"{allowed}/a\x00b", [allowed], match="NUL")
    refused(f"{allowed}/a\x00b", [allowed], allow_any=True, match="NUL")


def test_home_is_expanded(allowed: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(allowed))
    assert resolve_save_path("~/x.png", [allowed], allow_any=False) == allowed / "x.png"


def test_outside_the_allowed_dirs(allowed: Path, outside: Path) -> None:
    message = refused(outside / "x.png", [allowed], match="outside the allowed directories")
    assert str(allowed) in message and "resolves to" not in message
    assert "name a file inside one of them" in message and "allow_any_path = true" in message
    refused(outside / "x.png", [], match="outside")


def test_no_string_prefix_confusion(tmp_path: Path, allowed: Path) -> None:
    sibling = tmp_path / "allowed-not"
    sibling.mkdir()
    refused(sibling / "x.png", [allowed], match="outside")


def test_dot_dot_is_resolved_before_the_check(allowed: Path, outside: Path) -> None:
    message = refused(f"{allowed}/../outside/x.png", [allowed], match="outside")
    assert f"resolves to {outside / 'x.png'}" in message
    (allowed / "sub").mkdir()
    assert resolve_save_path(f"{allowed}/sub/../x.png", [allowed], allow_any=False) == (
        allowed / "x.png")


def test_missing_directory(allowed: Path) -> None:
    refused(allowed / "nope" / "x.png", [allowed], match="does not exist")
    refused(allowed / "nope" / "x.png", [allowed], allow_any=True, match="does not exist")


def test_a_directory_is_not_a_file_name(allowed: Path) -> None:
    refused(allowed, [allowed], match="is a directory")
    (allowed / "sub").mkdir()
    refused(allowed / "sub", [allowed], allow_any=True, match="is a directory")


def test_symlink_as_final_component_is_refused_even_pointing_inside(allowed: Path) -> None:
    real = allowed / "real.png"
    real.write_bytes(b"keep")
    link = allowed / "link.png"
    link.symlink_to(real)
    refused(link, [allowed], match="symlink")
    refused(link, [allowed], allow_any=True, match="symlink")
    assert real.read_bytes() == b"keep"


def test_dangling_and_looping_symlinks_are_refused(allowed: Path, outside: Path) -> None:
    dangling = allowed / "dangling.png"
    dangling.symlink_to(outside / "not-yet.png")
    refused(dangling, [allowed], allow_any=True, match="symlink")
    loop = allowed / "loop"
    loop.symlink_to(loop)
    refused(loop, [allowed], allow_any=True, match="symlink")
    assert not (outside / "not-yet.png").exists()


def test_symlinked_directory_pointing_outside_is_refused(allowed: Path, outside: Path) -> None:
    (allowed / "escape").symlink_to(outside, target_is_directory=True)
    message = refused(allowed / "escape" / "x.png", [allowed], match="outside")
    assert f"resolves to {outside / 'x.png'}" in message
    # the same link is fine when any path is allowed: the real path is returned
    assert resolve_save_path(str(allowed / "escape" / "x.png"), [allowed], allow_any=True) == (
        outside / "x.png")


def test_symlinked_directory_staying_inside_returns_the_real_path(allowed: Path) -> None:
    (allowed / "real").mkdir()
    (allowed / "alias").symlink_to(allowed / "real", target_is_directory=True)
    got = resolve_save_path(str(allowed / "alias" / "x.png"), [allowed], allow_any=False)
    assert got == allowed / "real" / "x.png"


def test_symlink_behind_a_symlinked_directory_is_refused(allowed: Path, outside: Path) -> None:
    (allowed / "real").mkdir()
    (allowed / "alias").symlink_to(allowed / "real", target_is_directory=True)
    (allowed / "real" / "x.png").symlink_to(outside / "x.png")
    refused(allowed / "alias" / "x.png", [allowed], match="symlink")


def test_allowed_dirs_are_resolved(tmp_path: Path, allowed: Path) -> None:
    """An allowed dir given through a link (macOS /tmp → /private/tmp) still matches."""
    link = tmp_path / "allowed-link"
    link.symlink_to(allowed, target_is_directory=True)
    assert resolve_save_path(str(allowed / "a.png"), [link], allow_any=False) == allowed / "a.png"
    assert resolve_save_path(str(link / "b.png"), [link], allow_any=False) == allowed / "b.png"
    assert resolve_save_path(str(link / "c.png"), [allowed], allow_any=False) == allowed / "c.png"
    message = refused(tmp_path / "d.png", [link], match="outside")
    assert f"allowed: {allowed}" in message  # the resolved dir is what the error names


def test_any_of_several_allowed_dirs(tmp_path: Path, allowed: Path, outside: Path) -> None:
    assert resolve_save_path(str(outside / "x"), [allowed, outside], allow_any=False) == (
        outside / "x")
    message = refused(tmp_path / "x", [allowed, outside], match="outside")
    assert f"allowed: {allowed}, {outside}" in message


def test_allow_any_lifts_only_the_directory_restriction(outside: Path) -> None:
    assert resolve_save_path(str(outside / "x.png"), [], allow_any=True) == outside / "x.png"


def test_default_allowed_dir_is_the_resolved_temp_dir(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    real = tmp_path / "real-tmp"
    real.mkdir()
    link = tmp_path / "tmp-link"
    link.symlink_to(real, target_is_directory=True)
    monkeypatch.setattr(tempfile, "tempdir", str(link))
    assert default_allowed_dirs() == [real]
    assert resolve_save_path(str(link / "s.png"), default_allowed_dirs(), allow_any=False) == (
        real / "s.png")


# ------------------------------------------------------------------ write_private


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


@pytest.mark.usefixtures("umask_zero")
def test_write_private_creates_0600(allowed: Path) -> None:
    target = allowed / "new.bin"
    write_private(target, b"\x00data\xff")
    assert target.read_bytes() == b"\x00data\xff" and mode(target) == 0o600
    assert stat.S_ISREG(target.lstat().st_mode)


@pytest.mark.usefixtures("umask_zero")
def test_write_private_never_replaces_a_file(allowed: Path) -> None:
    target = allowed / "old.bin"
    target.write_bytes(b"a much longer old content")
    target.chmod(0o666)
    with pytest.raises(InvalidArgument, match="exists already"):
        write_private(target, b"new")
    assert target.read_bytes() == b"a much longer old content" and mode(target) == 0o666


def test_write_private_does_not_follow_a_symlink(allowed: Path, outside: Path) -> None:
    victim = outside / "victim.txt"
    victim.write_bytes(b"precious")
    victim.chmod(0o644)
    link = allowed / "planted.png"
    link.symlink_to(victim)
    with pytest.raises(InvalidArgument, match="exists already"):
        write_private(link, b"overwritten")
    assert victim.read_bytes() == b"precious" and mode(victim) == 0o644
    assert link.is_symlink()


def test_write_private_does_not_create_through_a_dangling_symlink(allowed: Path,
                                                                  outside: Path) -> None:
    link = allowed / "planted.png"
    link.symlink_to(outside / "created.txt")
    with pytest.raises(InvalidArgument, match="exists already"):
        write_private(link, b"x")
    assert not (outside / "created.txt").exists()


def test_write_private_errors_are_invalid_argument(allowed: Path) -> None:
    with pytest.raises(InvalidArgument, match="cannot write"):
        write_private(allowed / "missing-dir" / "x", b"x")
    with pytest.raises(InvalidArgument, match="exists already"):
        write_private(allowed, b"x")


def test_saving_to_a_fifo_neither_hangs_nor_writes(allowed: Path) -> None:
    """BUG: resolve_save_path accepts an existing FIFO and write_private opens it
    O_WRONLY without O_NONBLOCK, so the call blocks until some process opens the FIFO
    for reading — forever, and on the event loop (tools/saving.py calls it directly), so
    the whole gateway stops. Anyone who can create a file in an allowed dir (the OS temp
    dir, unless fs.protected_fifos forbids it) can plant one at a predictable name."""
    fifo = allowed / "screenshot.png"
    os.mkfifo(fifo, 0o666)
    outcome: list[BaseException | None] = []

    def save() -> None:
        try:
            write_private(resolve_save_path(str(fifo), [allowed], allow_any=False), b"PNG")
            outcome.append(None)
        except BaseException as exc:  # recorded for the assertion below
            outcome.append(exc)

    worker = threading.Thread(target=save, daemon=True)
    worker.start()
    worker.join(timeout=2)
    hung = worker.is_alive()
    received = b""
    if hung:  # release the writer: open the read end, let it write, read what it wrote
        reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        try:
            worker.join(timeout=5)
            with contextlib.suppress(BlockingIOError):
                received = os.read(reader, 4096)
        finally:
            os.close(reader)
    assert not hung, f"saving to a FIFO blocked until a reader appeared (then wrote {received!r})"
    assert len(outcome) == 1 and isinstance(outcome[0], InvalidArgument)


# ------------------------------------------------------------------ resolve_read_path


def refused_read(requested: str | Path, allowed_dirs: list[Path], *,
                 allow_any: bool = False) -> str:
    with pytest.raises(InvalidArgument) as info:
        resolve_read_path(str(requested), allowed_dirs, allow_any=allow_any)
    return str(info.value)


def test_a_file_inside_an_allowed_dir_is_read_with_its_size(allowed: Path) -> None:
    (allowed / "sub").mkdir()
    path = allowed / "sub" / "a.txt"
    path.write_bytes(b"hello")
    checked = resolve_read_path(str(path), [allowed], allow_any=False)
    assert (checked.path, checked.size) == (path, 5)


def test_outside_the_allowed_dirs_is_refused_and_says_where_is_allowed(
    allowed: Path, outside: Path
) -> None:
    secret = outside / "secret.txt"
    secret.write_text("x")
    message = refused_read(secret, [allowed])
    assert "outside the allowed directories" in message and str(allowed) in message
    assert "copy the file into one of them" in message and "allow_any_path = true" in message
    assert resolve_read_path(str(secret), [allowed], allow_any=True).path == secret


def test_links_are_resolved_before_the_check(allowed: Path, outside: Path) -> None:
    secret = outside / "secret.txt"
    secret.write_text("x")
    (allowed / "file-link").symlink_to(secret)
    (allowed / "dir-link").symlink_to(outside, target_is_directory=True)
    assert f"resolves to {secret}" in refused_read(allowed / "file-link", [allowed])
    assert f"resolves to {secret}" in refused_read(allowed / "dir-link" / "secret.txt", [allowed])
    inside = allowed / "real.txt"
    inside.write_text("y")
    (allowed / "inner-link").symlink_to(inside)
    assert resolve_read_path(str(allowed / "inner-link"), [allowed],
                             allow_any=False).path == inside


def test_only_existing_regular_files_with_absolute_paths(allowed: Path) -> None:
    assert "No such file" in refused_read(allowed / "missing", [allowed])
    assert "not a regular file" in refused_read(allowed, [allowed])
    os.mkfifo(allowed / "fifo")
    assert "not a regular file" in refused_read(allowed / "fifo", [allowed])
    assert "must be absolute" in refused_read("a.txt", [allowed])
    assert "NUL" in refused_read(f"{allowed}/a\x00b", [allowed])


def test_a_file_over_the_limit_is_refused_with_its_size_and_the_limit(allowed: Path) -> None:
    big = allowed / "big.iso"
    with open(big, "wb") as f:
        f.truncate(MAX_UPLOAD_FILE_BYTES + 1)
    message = refused_read(big, [allowed])
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


def test_read_checked_gives_the_checked_bytes_in_chunks(allowed: Path) -> None:
    path = allowed / "a.bin"
    path.write_bytes(b"0123456789")
    checked = resolve_read_path(str(path), [allowed], allow_any=False)
    assert list(read_checked(checked, 4)) == [b"0123", b"4567", b"89"]
    (allowed / "empty").write_bytes(b"")
    assert list(read_checked(resolve_read_path(str(allowed / "empty"), [allowed],
                                               allow_any=False), 4)) == []


def test_read_checked_stops_at_the_checked_size_when_the_file_grows(allowed: Path) -> None:
    path = allowed / "growing.log"
    path.write_bytes(b"x" * 8)
    checked = resolve_read_path(str(path), [allowed], allow_any=False)
    chunks = read_checked(checked, 4)
    assert next(chunks) == b"xxxx"  # opened and checked: now it grows, as a log would
    with open(path, "ab") as f:
        f.write(b"y" * 1000)
    with pytest.raises(InvalidArgument, match="more than the 8 bytes"):
        list(chunks)


def test_read_checked_refuses_a_proc_file_whose_size_says_nothing() -> None:
    checked = resolve_read_path("/proc/self/status", [], allow_any=True)
    assert checked.size == 0  # what the size check saw: nothing to bound
    with pytest.raises(InvalidArgument, match="not a plain file on disk"):
        list(read_checked(checked, 4096))


def test_open_readable_refuses_a_directory_swapped_for_a_link_after_the_check(
    allowed: Path, outside: Path
) -> None:
    """O_NOFOLLOW guards only the last component: a directory on the way swapped for a
    link to elsewhere, holding a file of the same size, must not be read either."""
    folder = allowed / "report"
    folder.mkdir()
    (folder / "a.txt").write_bytes(b"12345")
    checked = resolve_read_path(str(folder / "a.txt"), [allowed], allow_any=False)
    (outside / "a.txt").write_bytes(b"s3cr3")
    folder.rename(allowed / "report-was")
    folder.symlink_to(outside)
    with pytest.raises(InvalidArgument, match="changed"):
        open_readable(checked)


def test_open_readable_refuses_a_file_replaced_by_another_of_the_same_size(
    allowed: Path
) -> None:
    path = allowed / "a.txt"
    path.write_bytes(b"12345")
    checked = resolve_read_path(str(path), [allowed], allow_any=False)
    other = allowed / "b.txt"
    other.write_bytes(b"abcde")
    other.replace(path)
    with pytest.raises(InvalidArgument, match="changed"):
        open_readable(checked)


@pytest.mark.anyio
async def test_local_staging_refuses_a_file_swapped_since_the_check(allowed: Path) -> None:
    path = allowed / "a.txt"
    path.write_bytes(b"12345")
    checked = resolve_read_path(str(path), [allowed], allow_any=False)
    assert (await LocalHost().stage_files([checked], 5)).paths == (str(path),)
    other = allowed / "b.txt"
    other.write_bytes(b"abcde")
    other.replace(path)
    with pytest.raises(InvalidArgument, match="changed"):
        await LocalHost().stage_files([checked], 5)
