"""Discovery's pure parts, on files captured from real Chromium (fixtures/devtools): the
DevToolsActivePort and /json/version parsers, the one-exec file read a host does over SSH
(run here through a real /bin/sh, as sshd runs it), and HTTP over a stream with h11."""

from __future__ import annotations

import subprocess
from pathlib import Path

import anyio
import pytest

from gateway.cdp.endpoint import DEFAULT_PROFILE_DIRS, parse_active_port, parse_version_payload
from gateway.errors import HostError
from gateway.hosts.http import ChannelStream, HttpResponse, request_over
from gateway.hosts.shell import parse_read_files, read_files_command

MARK = "#csgw-file-0123456789abcdef"


def read_through_sh(paths: list[str], home: Path) -> dict[str, str]:
    """Content by asked path, after checking each printed path is the asked one expanded."""
    out = subprocess.run(["/bin/sh", "-c", read_files_command(paths, MARK)], capture_output=True,
                         text=True, check=True, env={"HOME": str(home)}).stdout
    found = parse_read_files(out, MARK, paths)
    for asked, (printed, _) in found.items():
        assert printed == asked.replace("~", str(home), 1) if asked.startswith("~/") else asked
    return {asked: text for asked, (_, text) in found.items()}

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
    files = [f"{d}/DevToolsActivePort" for d in
             (broken, tmp_path / "missing", good, "~/nonexistent")]
    texts = read_through_sh(files, tmp_path)
    assert texts == {files[0]: "garbage", files[2]: "41234\n/devtools/browser/abc-def"}
    assert parse_active_port(texts[files[2]]) == (41234, "/devtools/browser/abc-def")


def test_file_content_cannot_forge_the_framing(tmp_path: Path) -> None:
    """A file that prints a marker of its own (the token is random per call) stays content,
    trailing newlines included."""
    (tmp_path / "a").write_text("#csgw-file-deadbeefdeadbeef /etc/shadow\nroot::0\n\n")
    (tmp_path / "b").write_text("")
    texts = read_through_sh([str(tmp_path / "a"), str(tmp_path / "b"), str(tmp_path)], tmp_path)
    assert texts == {str(tmp_path / "a"): "#csgw-file-deadbeefdeadbeef /etc/shadow\nroot::0\n\n",
                     str(tmp_path / "b"): ""}  # a directory is not a file


def test_command_quotes_hostile_profile_paths(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    hostile = f"/tmp/x'; touch {marker}; echo '"
    subprocess.run(["/bin/sh", "-c", read_files_command([hostile, "$(touch " + str(marker)
                                                          + ")", "~/`touch x`"], MARK)],
                   check=True, cwd=tmp_path)
    assert not marker.exists()


def test_home_relative_profile_expands_on_the_remote_side(tmp_path: Path) -> None:
    profile = tmp_path / "p"
    profile.mkdir()
    (profile / "DevToolsActivePort").write_text("9333\n/devtools/browser/u")
    assert read_through_sh(["~/p/DevToolsActivePort"], tmp_path) == {
        "~/p/DevToolsActivePort": "9333\n/devtools/browser/u"}


def test_default_dirs_cover_linux_and_macos() -> None:
    assert ".config/google-chrome" in DEFAULT_PROFILE_DIRS
    assert ".config/chromium" in DEFAULT_PROFILE_DIRS
    assert "Library/Application Support/Google/Chrome" in DEFAULT_PROFILE_DIRS


class Stream:
    """What ``request_over`` reads and writes: a captured response, fed in small pieces (as a
    socket or SSH channel delivers it); what was written is kept. It is a channel's reader
    and writer (asyncssh's style), which ``ChannelStream`` makes a stream."""

    def __init__(self, raw: bytes, piece: int = 7) -> None:
        self._pieces = [raw[i:i + piece] for i in range(0, len(raw), piece)]
        self.sent = b""
        self.closed = False

    async def read(self, n: int = -1) -> bytes:
        return self._pieces.pop(0) if self._pieces else b""

    def write(self, data: bytes) -> None:
        self.sent += data

    async def drain(self) -> None:
        return None

    def close(self) -> None:
        self.closed = True


def get(raw: bytes, host: str = "127.0.0.1", port: int = 9222,
        piece: int = 7) -> tuple[HttpResponse, Stream]:
    stream = Stream(raw, piece)

    async def main() -> HttpResponse:
        return await request_over(ChannelStream(stream, stream), host, port, "/json/version")

    return anyio.run(main), stream


def test_json_version_response_from_chrome() -> None:
    """Chrome keeps the socket open after answering: the response ends at its length."""
    response, stream = get((FIXTURES / "json-version.http").read_bytes() + b"NOT READ")
    assert response.status == 200
    assert parse_version_payload(response.body).startswith("/devtools/browser/")
    assert stream.sent.startswith(b"GET /json/version HTTP/1.1\r\n")
    assert b"host: 127.0.0.1:9222\r\n" in stream.sent.lower()
    assert stream.closed


def test_ipv6_host_header_is_bracketed() -> None:
    _, stream = get((FIXTURES / "json-version.http").read_bytes(), host="::1")
    assert b"host: [::1]:9222\r\n" in stream.sent.lower()


def test_bad_host_header_answer_is_not_a_payload() -> None:
    response, _ = get((FIXTURES / "json-version-bad-host.http").read_bytes())
    assert response.status == 500
    with pytest.raises(ValueError):
        parse_version_payload(response.body)


def test_chunked_response() -> None:
    raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n2\r\nef\r\n0\r\n\r\n"
    assert get(raw)[0] == HttpResponse(200, b"abcdef")


@pytest.mark.parametrize("raw", [b"", b"HTTP/1.1 200 OK\r\n", b"garbage\r\n\r\n",
                                 b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"])
def test_broken_responses_raise(raw: bytes) -> None:
    with pytest.raises(HostError):
        get(raw)


def test_oversized_response_is_refused() -> None:
    body = b"x" * (1024 * 1024 + 1)
    raw = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body
    with pytest.raises(HostError, match="too large"):
        get(raw, piece=65536)
