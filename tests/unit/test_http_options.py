"""``--http`` addresses, token files and ``call``'s output (pure parts of the HTTP side)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from gateway.client.output import print_result
from gateway.errors import ConfigError
from gateway.mcp.auth import read_token_file
from gateway.mcp.http import HttpAddress, parse_http_address, resolve_token


@pytest.mark.parametrize(("text", "address", "loopback"), [
    ("127.0.0.1:8931", HttpAddress("127.0.0.1", 8931), True),
    ("localhost:1", HttpAddress("localhost", 1), True),
    ("[::1]:8931", HttpAddress("::1", 8931), True),
    ("0.0.0.0:8931", HttpAddress("0.0.0.0", 8931), False),
    ("10.0.0.5:80", HttpAddress("10.0.0.5", 80), False),
    ("unix:/run/user/1000/gw.sock", HttpAddress(path="/run/user/1000/gw.sock"), True),
])
def test_addresses(text: str, address: HttpAddress, loopback: bool) -> None:
    assert parse_http_address(text) == address
    assert parse_http_address(text).loopback is loopback


@pytest.mark.parametrize(("text", "reason"), [
    ("8931", "expected HOST:PORT"), ("127.0.0.1:99999", "expected HOST:PORT"),
    ("devvm.example:8931", "IP address or localhost"), ("unix:gw.sock", "absolute"),
])
def test_bad_addresses(text: str, reason: str) -> None:
    with pytest.raises(ConfigError, match=reason):
        parse_http_address(text)


def test_non_loopback_needs_a_token_file(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ConfigError, match="--token-file"):
        resolve_token(parse_http_address("0.0.0.0:1"), None)
    assert resolve_token(parse_http_address("unix:/x.sock"), None) is None
    token = resolve_token(parse_http_address("127.0.0.1:1"), None)
    assert token is not None and len(token) >= 32 and token in capsys.readouterr().err


def test_token_file_must_be_private_and_real(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text("a-long-enough-token-value\n")
    path.chmod(0o640)
    with pytest.raises(ConfigError, match="chmod 600"):
        read_token_file(str(path))
    path.chmod(0o600)
    assert read_token_file(str(path)) == "a-long-enough-token-value"
    (tmp_path / "link").symlink_to(path)
    with pytest.raises(ConfigError, match="symlink"):
        read_token_file(str(tmp_path / "link"))
    path.write_text("short")
    with pytest.raises(ConfigError, match="at least 16"):
        read_token_file(str(path))


PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 8


def _shot() -> dict[str, object]:
    return {"content": [{"type": "image", "mimeType": "image/png",
                         "data": base64.b64encode(PNG).decode()},
                        {"type": "text", "text": '{"tab": 3}'}],
            "structuredContent": {"tab": 3}, "isError": False}


def test_images_are_saved_and_their_path_printed(capsys: pytest.CaptureFixture[str]) -> None:
    assert print_result(_shot(), as_json=False) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == '{"tab": 3}' and out[1].startswith("image saved: ")
    saved = Path(out[1].removeprefix("image saved: "))
    assert saved.read_bytes() == PNG and saved.suffix == ".png"
    assert saved.stat().st_mode & 0o777 == 0o600


def test_json_prints_the_structured_result(capsys: pytest.CaptureFixture[str]) -> None:
    assert print_result(_shot(), as_json=True) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["tab"] == 3 and Path(payload["image_files"][0]).read_bytes() == PNG


def test_a_tool_error_goes_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    result = {"content": [{"type": "text", "text": "tab 9 is gone"}], "isError": True}
    assert print_result(result, as_json=False) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == "error: tab 9 is gone\n"


def test_a_tool_error_with_a_result_prints_it_under_json(
        capsys: pytest.CaptureFixture[str]) -> None:
    """A call that did part of its work: the error on stderr, exit 1, and under --json its
    result on stdout (the steps and the fresh view of a browse_act that stopped)."""
    steps = {"tab": 3, "steps": [{"do": "click", "ok": False, "error": "disabled"}]}
    result = {"content": [{"type": "text", "text": "step 1 of 1 (click) failed: disabled"}],
              "structuredContent": steps, "isError": True}
    assert print_result(result, as_json=True) == 1
    captured = capsys.readouterr()
    assert json.loads(captured.out) == steps
    assert captured.err == "error: step 1 of 1 (click) failed: disabled\n"
    assert print_result(result, as_json=False) == 1
    assert capsys.readouterr().out == ""


def test_the_shell_side_of_call_stays_light() -> None:
    """A warm ``call`` must not pay for the MCP SDK, pydantic or the serving code."""
    import subprocess
    import sys

    probe = ("import sys, gateway.cli, gateway.client.call, gateway.client.output, "
             "gateway.daemon.control, gateway.daemon.runtime_dir; "
             "print(sorted({m.split('.')[0] for m in sys.modules} & "
             "{'mcp', 'pydantic', 'anyio', 'structlog', 'asyncssh', 'websockets', 'uvicorn', "
             "'starlette', 'httpx2'}) + sorted(m for m in sys.modules if m.startswith("
             "('gateway.config', 'gateway.browsers', 'gateway.tools', 'gateway.mcp.app'))))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=60, check=True)
    assert done.stdout.strip() == "[]", done.stdout


@pytest.mark.parametrize("argv", [
    ["serve", "--http", "127.0.0.1:8931", "--token-file", "/t"],
    ["--http", "127.0.0.1:8931", "serve", "--token-file", "/t"],
    ["--http", "127.0.0.1:8931", "--token-file", "/t"],  # no subcommand: serve
])
def test_http_options_go_before_or_after_serve(argv: list[str]) -> None:
    from gateway.cli import parse_args

    args = parse_args(argv)
    assert (args.http, args.token_file) == ("127.0.0.1:8931", "/t")


@pytest.mark.parametrize(("argv", "message"), [
    (["--http", "127.0.0.1:1", "call", "list_tabs"], "--http and --token-file apply to serve"),
    (["serve", "--token-file", "/t"], "--token-file needs --http"),
])
def test_http_options_elsewhere_are_refused(argv: list[str], message: str,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    from gateway.cli import parse_args

    with pytest.raises(SystemExit) as exited:
        parse_args(argv)
    assert exited.value.code == 2 and message in capsys.readouterr().err
