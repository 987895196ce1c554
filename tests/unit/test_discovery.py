"""Discovery's pure parts, on files captured from real Chromium (fixtures/devtools)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gateway.browsers.discovery import (
    DEFAULT_PROFILE_DIRS,
    active_port_command,
    http_response_complete,
    parse_active_port,
    parse_active_port_listing,
    parse_http_response,
    parse_version_payload,
)

FIXTURES = Path(__file__).parents[2] / "fixtures" / "devtools"


def test_active_port_file_as_chrome_writes_it() -> None:
    text = (FIXTURES / "chromium-linux.DevToolsActivePort").read_text()
    assert not text.endswith("\n")  # Chrome writes no trailing newline
    port, path = parse_active_port(text)  # type: ignore[misc]
    assert 0 < port < 65536
    assert path.startswith("/devtools/browser/") and len(path) == len("/devtools/browser/") + 36


@pytest.mark.parametrize("text", [
    "", "9222", "abc\n/devtools/browser/x", "0\n/devtools/browser/x",
    "70000\n/devtools/browser/x", "9222\n/devtools/page/x", "9222\n",
])
def test_malformed_active_port_is_none(text: str) -> None:
    assert parse_active_port(text) is None


def test_listing_round_trip_through_a_real_shell(tmp_path: Path) -> None:
    """The command runs in /bin/sh exactly as sshd would run it, paths with spaces included."""
    good = tmp_path / "Library/Application Support/Google/Chrome"
    good.mkdir(parents=True)
    (good / "DevToolsActivePort").write_text("41234\n/devtools/browser/abc-def")
    broken = tmp_path / ".config/chromium"
    broken.mkdir(parents=True)
    (broken / "DevToolsActivePort").write_text("garbage")
    dirs = [str(broken), str(tmp_path / "missing"), str(good), "~/nonexistent"]
    out = subprocess.run(["/bin/sh", "-c", active_port_command(dirs)], capture_output=True,
                         text=True, check=True, env={"HOME": str(tmp_path)}).stdout
    assert parse_active_port_listing(out) == [(str(good), 41234, "/devtools/browser/abc-def")]


def test_command_quotes_hostile_profile_paths(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    hostile = f"/tmp/x'; touch {marker}; echo '"
    subprocess.run(["/bin/sh", "-c", active_port_command([hostile, "$(touch " + str(marker)
                                                           + ")"])], check=True)
    assert not marker.exists()


def test_home_relative_profile_expands_on_the_remote_side(tmp_path: Path) -> None:
    profile = tmp_path / "p"
    profile.mkdir()
    (profile / "DevToolsActivePort").write_text("9333\n/devtools/browser/u")
    out = subprocess.run(["/bin/sh", "-c", active_port_command(["~/p"])], capture_output=True,
                         text=True, check=True, env={"HOME": str(tmp_path)}).stdout
    assert parse_active_port_listing(out) == [(f"{tmp_path}/p", 9333, "/devtools/browser/u")]


def test_default_dirs_cover_linux_and_macos() -> None:
    assert ".config/google-chrome" in DEFAULT_PROFILE_DIRS
    assert ".config/chromium" in DEFAULT_PROFILE_DIRS
    assert "Library/Application Support/Google/Chrome" in DEFAULT_PROFILE_DIRS


def test_json_version_response_from_chrome() -> None:
    raw = (FIXTURES / "json-version.http").read_bytes()
    assert http_response_complete(raw)
    assert not http_response_complete(raw[:-1])
    status, body = parse_http_response(raw)
    assert status == 200
    assert parse_version_payload(body).startswith("/devtools/browser/")


def test_bad_host_header_answer_is_not_a_payload() -> None:
    status, body = parse_http_response((FIXTURES / "json-version-bad-host.http").read_bytes())
    assert status == 500
    with pytest.raises(ValueError):
        parse_version_payload(body)


def test_chunked_response() -> None:
    raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n2\r\nef\r\n0\r\n\r\n"
    assert http_response_complete(raw)
    assert parse_http_response(raw) == (200, b"abcdef")


@pytest.mark.parametrize("raw", [b"", b"HTTP/1.1 200 OK\r\n", b"garbage\r\n\r\n"])
def test_broken_responses_raise(raw: bytes) -> None:
    with pytest.raises(ValueError):
        parse_http_response(raw)
