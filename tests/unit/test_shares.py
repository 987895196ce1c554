"""Shares as the gateway reads them: ``scripts/shares.sh`` run by a real ``sh`` over a
directory made here, its output parsed (``parse_listing``), every manifest treated as
untrusted input; and ``share``'s own options."""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from gateway.share.manifest import (
    MAX_MANIFEST_BYTES,
    SHARED_DIR,
    BadShare,
    Listing,
    ShareManifest,
    parse_listing,
    shares_script,
)
from gateway.share.options import name_from_host, parse_duration, share_options

MANIFEST = ShareManifest(name="laptop", share_id="0123456789abcdef", browser="Chrome/156.0",
                         pid=4242, program="chromium", sharer="alice-laptop",
                         shared_at="2026-12-01T10:00:00+00:00")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path


@pytest.fixture
def shared(home: Path) -> Path:
    path = home / SHARED_DIR
    path.mkdir(parents=True, mode=0o700)
    return path


def listing(home: Path) -> Listing:
    """The real script, run by sh as the gateway runs it, then parsed."""
    done = subprocess.run(["/bin/sh", "-c", shares_script()], capture_output=True, text=True,
                          env={"HOME": str(home), "PATH": os.environ.get("PATH", "/usr/bin:/bin")},
                          check=True, timeout=10)
    return parse_listing(done.stdout)


@pytest.fixture
def listening(shared: Path) -> Iterator[Path]:
    """A real Unix socket where a share's would be."""
    path = shared / "laptop.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    yield path
    server.close()


def test_no_directory_means_no_shares_and_no_problem(home: Path) -> None:
    seen = listing(home)
    assert (seen.directory, seen.problem, seen.shares, seen.bad) == (
        str(home / SHARED_DIR), None, (), ())


def test_a_share_is_read_with_its_socket(shared: Path, listening: Path) -> None:
    (shared / "laptop.json").write_text(MANIFEST.to_text())
    seen = listing(shared.parents[2])
    assert seen.problem is None
    [share] = seen.shares
    assert share.manifest == MANIFEST
    assert share.socket == str(listening)
    assert share.has_socket


def test_a_manifest_without_its_socket_says_so(shared: Path) -> None:
    (shared / "laptop.json").write_text(MANIFEST.to_text())
    [share] = listing(shared.parents[2]).shares
    assert not share.has_socket


def test_a_pretty_printed_manifest_still_reads(shared: Path) -> None:
    (shared / "laptop.json").write_text(MANIFEST.model_dump_json(indent=2))
    [share] = listing(shared.parents[2]).shares
    assert share.manifest == MANIFEST


def test_unknown_keys_are_ignored(shared: Path) -> None:
    text = MANIFEST.to_text()[:-1] + ', "newer": {"thing": 1}}'
    (shared / "laptop.json").write_text(text)
    assert listing(shared.parents[2]).shares[0].manifest == MANIFEST


@pytest.mark.parametrize(("file", "text", "problem"), [
    ("laptop", "{not json", "its manifest is not valid"),
    ("laptop", MANIFEST.to_text().replace('"pid":4242', '"pid":"4242"'),
     "pid: Input should be a valid integer"),
    ("laptop", MANIFEST.to_text().replace("alice-laptop", "a\\u0007bell"),
     "sharer: String should match pattern"),
    ("laptop", MANIFEST.to_text().replace("alice-laptop", "x" * 300),
     "sharer: String should have at most 200 characters"),
    ("laptop", MANIFEST.to_text().replace('"share_id":"0123456789abcdef",', ""),
     "share_id: Field required"),
    ("laptop", MANIFEST.to_text().replace('"name":"laptop"', '"name":"desktop"'),
     "its manifest names 'desktop', not 'laptop'"),
    ("laptop", "[" * 3000 + "]" * 3000, f"larger than {MAX_MANIFEST_BYTES} bytes"),
    ("laptop", "[" * 2000, "its manifest is not valid"),
])
def test_a_hostile_manifest_is_a_bad_share_with_the_reason(
        shared: Path, file: str, text: str, problem: str) -> None:
    (shared / f"{file}.json").write_text(text)
    seen = listing(shared.parents[2])
    assert seen.shares == ()
    [bad] = seen.bad
    assert bad.name == file
    assert problem in bad.problem, bad.problem


def test_a_file_name_that_is_no_target_name_is_bad_without_a_name(shared: Path) -> None:
    (shared / "Bad Name;rm.json").write_text(MANIFEST.to_text())
    [bad] = listing(shared.parents[2]).bad
    assert bad == BadShare("", str(shared / "Bad Name;rm.json"),
                           "its name is not 1-32 characters of a-z, 0-9, '_', '-'")


def test_a_symlinked_manifest_is_not_read(shared: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.json"
    secret.write_text(MANIFEST.to_text())
    (shared / "laptop.json").symlink_to(secret)
    seen = listing(shared.parents[2])
    assert (seen.shares, seen.bad) == ((), ())


def test_a_directory_others_can_write_is_used_for_nothing(shared: Path) -> None:
    (shared / "laptop.json").write_text(MANIFEST.to_text())
    shared.chmod(0o777)
    seen = listing(shared.parents[2])
    assert seen.shares == ()
    assert seen.problem is not None
    assert "writable by group or others (mode 777)" in seen.problem
    assert f"chmod 700 {shared}" in seen.problem


def test_a_symlinked_directory_is_used_for_nothing(home: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (elsewhere / "laptop.json").write_text(MANIFEST.to_text())
    (home / SHARED_DIR).parent.mkdir(parents=True)
    (home / SHARED_DIR).symlink_to(elsewhere)
    seen = listing(home)
    assert seen.shares == ()
    assert seen.problem is not None and "symbolic link" in seen.problem


@pytest.mark.parametrize(("line", "problem"), [
    ("D\x1f/h/s\x1f1000 700\x1f1001", "belongs to uid 1000, not to this user (uid 1001)"),
    ("D\x1f/h/s\x1f1000 720\x1f1000", "writable by group or others (mode 720)"),
    ("D\x1f/h/s\x1fgarbage\x1f1000", "could not read the owner and mode"),
    ("", "the host printed no listing"),
])
def test_directory_checks(line: str, problem: str) -> None:
    seen = parse_listing(line + "\nM\x1flaptop\x1fS\x1f" + MANIFEST.to_text() + "\n")
    assert seen.shares == ()
    assert seen.problem is not None and problem in seen.problem


def test_the_listing_is_bounded(shared: Path) -> None:
    for n in range(70):
        (shared / f"s{n}.json").write_text(MANIFEST.to_text().replace("laptop", f"s{n}"))
    seen = listing(shared.parents[2])
    assert seen.truncated
    assert len(seen.shares) == 64


def test_expiry() -> None:
    now = datetime(2026, 12, 1, 12, tzinfo=UTC)
    soon = MANIFEST.model_copy(update={"expires": (now + timedelta(minutes=1)).isoformat()})
    assert not soon.expired(now)
    assert soon.expired(now + timedelta(minutes=2))
    assert not MANIFEST.expired(now)
    assert not MANIFEST.model_copy(update={"expires": "whenever"}).expired(now)


# ----------------------------------------------------------------------------- share options


@pytest.mark.parametrize(("text", "seconds"), [
    ("45m", 2700), ("2h", 7200), ("90s", 90), ("1h30m", 5400), ("600", 600), (" 5M ", 300)])
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(("text", "reason"), [
    ("", "is not a duration"), ("3x", "is not a duration"), ("m", "is not a duration"),
    ("0", "out of range"), ("0m", "out of range"), ("8d", "is not a duration"),
    ("200h", "out of range")])
def test_bad_durations(text: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        parse_duration(text)


@pytest.mark.parametrize(("host", "name"), [
    ("Alice's MacBook.local", "alice-s-macbook"), ("runner-1.ci.example", "runner-1"),
    ("---", "browser"), ("x" * 60, "x" * 28), ("fv-az123-456", "fv-az123-456")])
def test_default_name_from_the_host_name(host: str, name: str) -> None:
    assert name_from_host(host) == name


def _options(dest: str = "devvm", name: str | None = "laptop", cdp: str | None = None,
             launch: bool = False, temporary: bool = False, browsers: str = "one",
             for_text: str | None = None, accept_new: bool = False) -> object:
    return share_options(dest, name, cdp, launch, temporary, browsers, for_text, accept_new)


def test_share_options_together() -> None:
    options = share_options("ci@bastion:2222", "gh-1", None, False, False, "all", "45m", True)
    assert (str(options.dest), options.name, options.browsers, options.for_s,
            options.host_key_policy, options.launch) == (
        "ci@bastion:2222", "gh-1", "all", 2700.0, "accept-new", "no")
    assert share_options("devvm", None, "127.0.0.1:9222", True, True, "one", None,
                         False).launch == "temporary"


@pytest.mark.parametrize(("kwargs", "reason"), [
    ({"dest": "a b"}, "DEST"),
    ({"cdp": "10.0.0.5:9222"}, "expected 127.0.0.1:PORT"),
    ({"cdp": "nonsense"}, "--cdp"),
    ({"browsers": "all", "launch": True}, "drop --cdp and --launch"),
    ({"temporary": True}, "--temporary-profile applies with --launch"),
    ({"name": "Laptop"}, "--name 'Laptop'"),
    ({"name": "x" * 30, "browsers": "all"}, "1-28 characters"),
    ({"for_text": "forever"}, "not a duration"),
])
def test_share_options_refused(kwargs: dict[str, object], reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        _options(**kwargs)  # type: ignore[arg-type]
