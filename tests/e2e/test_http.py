"""``serve --http``: MCP over streamable HTTP, shared by several clients at once.

Real parts only: the gateway as a subprocess, the SDK's HTTP client, Chromium on h1
behind sshd. Covers the token (missing, wrong, right), web-page ``Origin`` refusal,
the refusal to bind a non-loopback address without a token, the 0600 Unix socket,
two clients driving their own tabs concurrently (500 calls each, every reply
checked) while a third disconnects mid-call, the call log naming each session, and
SIGHUP reloading the targets.
"""

from __future__ import annotations

import contextlib
import json
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client

from tests.e2e.helpers import (
    accepts,
    call_ok,
    data_url,
    eventually,
    open_http,
    present,
    terminated,
    write_targets,
)
from tests.topology import Topology

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "e2e-token-0123456789abcdef"
CALLS_EACH = 500

pytestmark = pytest.mark.anyio


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@asynccontextmanager
async def _gateway(env: dict[str, str], listen: str, *extra: str,
                   errlog: Path | None = None) -> AsyncIterator[None]:
    """``serve --http listen`` running until the block ends (SIGTERM, bounded); its
    stderr goes to ``errlog`` when given."""
    argv = [sys.executable, "-m", "gateway", "serve", "--http", listen, *extra]
    with contextlib.ExitStack() as files:
        stderr = files.enter_context(errlog.open("wb")) if errlog is not None else None
        async with await anyio.open_process(argv, env=env, cwd=ROOT, stdin=subprocess.DEVNULL,
                                            stdout=subprocess.DEVNULL,
                                            stderr=stderr) as process, terminated(process):
            with anyio.fail_after(30):
                while not await accepts(listen):
                    assert process.returncode is None, "gateway exited at start"
                    await anyio.sleep(0.05)
            yield


def _client(url: str, headers: dict[str, str] | None = None,
            uds: str | None = None) -> AbstractAsyncContextManager[Client]:
    token = (headers or {}).get("Authorization", "").removeprefix("Bearer ") or None
    return open_http(url, token, uds)


@pytest.fixture
def setup(topology: Topology, tmp_path: Path) -> tuple[dict[str, str], Path, Path]:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    token_file.chmod(0o600)
    log = tmp_path / "calls.jsonl"
    env = topology.client_env() | {"SSH_PROXY_TO": "h1", "MCP_DEBUG_LOG": str(log)}
    return env, token_file, log


async def test_token_and_origin_are_checked_before_any_tool_runs(
        setup: tuple[dict[str, str], Path, Path]) -> None:
    env, token_file, log = setup
    listen = f"127.0.0.1:{_free_port()}"
    url = f"http://{listen}/mcp"
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "list_tabs", "arguments": {}}}
    errlog = log.with_name("stderr.log")
    async with _gateway(env, listen, "--token-file", str(token_file), errlog=errlog):
        async with httpx2.AsyncClient(timeout=20) as http:
            for headers, status in (({}, 401), ({"Authorization": "Bearer wrong"}, 401),
                                    ({"Authorization": f"Bearer {TOKEN}x"}, 401),
                                    ({"Authorization": f"Bearer {TOKEN}",
                                      "Origin": "http://evil.example"}, 403),
                                    ({"Authorization": f"Bearer {TOKEN}",  # DNS rebinding
                                      "Host": "evil.example:8931"}, 421)):
                reply = await http.post(url, json=call, headers=headers)
                assert reply.status_code == status, (headers, reply.text)
        assert not log.exists() or log.read_text() == ""  # nothing ran, nothing logged
        said = errlog.read_text()
        assert said.count("request refused: missing or wrong token") == 3, said
        assert "request refused: it came from a web page" in said
        assert TOKEN not in said  # the token is never logged
        async with _client(url, {"Authorization": f"Bearer {TOKEN}"}) as client:
            listing = await call_ok(client, "list_tabs")
            assert "unavailable" not in listing
    [line] = [json.loads(text) for text in log.read_text().splitlines()]
    assert line["tool"] == "list_tabs" and line["session"].startswith("127.0.0.1:")


def test_non_loopback_without_token_and_open_token_file_are_refused(
        setup: tuple[dict[str, str], Path, Path]) -> None:
    env, token_file, _ = setup

    def serve(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "gateway", "serve", "--http", *argv],
                              env=env, cwd=ROOT, capture_output=True, text=True, timeout=60,
                              stdin=subprocess.DEVNULL)

    done = serve(f"0.0.0.0:{_free_port()}")
    assert done.returncode == 2 and "non-loopback address" in done.stderr, done.stderr
    token_file.chmod(0o644)
    done = serve(f"127.0.0.1:{_free_port()}", "--token-file", str(token_file))
    assert done.returncode == 2 and "chmod 600" in done.stderr, done.stderr


async def test_two_clients_share_the_gateway_and_a_third_leaving_mid_call_disturbs_neither(
        setup: tuple[dict[str, str], Path, Path]) -> None:
    env, token_file, log = setup
    listen = f"127.0.0.1:{_free_port()}"
    url, auth = f"http://{listen}/mcp", {"Authorization": f"Bearer {TOKEN}"}

    async def drive(name: str, tabs: dict[str, int]) -> None:
        async with _client(url, auth) as client:
            # navigate (no tab: a new one) waits for the load, so the title is there.
            opened = await call_ok(client, "navigate", {"url": data_url(name, f"<p>{name}</p>")})
            tabs[name] = opened["tab"]
            for i in range(CALLS_EACH):
                result = await call_ok(client, "evaluate", {
                    "tab": opened["tab"], "expression": f"document.title + ':{i}'"})
                assert result["value"] == f"{name}:{i}", result

    async def leave_mid_call() -> None:
        with anyio.move_on_after(1.0) as scope:
            async with _client(url, auth) as client:
                opened = await call_ok(client, "new_tab", {"url": data_url("gone", "<p/>")})
                await client.call_tool("evaluate", {
                    "tab": opened["tab"], "await_promise": True, "timeout_s": 20,
                    "expression": "new Promise(r => setTimeout(r, 10000))"})
        assert scope.cancelled_caught  # the client really left while its call ran

    tabs: dict[str, int] = {}
    started = time.monotonic()
    async with _gateway(env, listen, "--token-file", str(token_file)):
        async with anyio.create_task_group() as tg:
            tg.start_soon(drive, "alpha", tabs)
            tg.start_soon(drive, "beta", tabs)
            tg.start_soon(leave_mid_call)
        async with _client(url, auth) as client:  # still serving, tab ids shared
            listing = await call_ok(client, "list_tabs")
            assert {tabs["alpha"], tabs["beta"]} <= {t["tab"] for t in listing["tabs"]}
            for name in ("alpha", "beta"):
                await call_ok(client, "close_tab", {"tab": tabs[name]})
    assert time.monotonic() - started < 240

    lines = [json.loads(text) for text in log.read_text().splitlines()]
    evaluated = [line for line in lines if line["tool"] == "evaluate"
                 and line["tab"] in tabs.values()]
    assert len(evaluated) == 2 * CALLS_EACH
    assert all(line["outcome"] == "ok" and line["session"] for line in evaluated)
    tabs_of: dict[str, set[Any]] = {}
    for line in evaluated:
        tabs_of.setdefault(line["session"], set()).add(line["tab"])
    assert all(len(seen) == 1 for seen in tabs_of.values()), tabs_of  # a session, a client


async def test_unix_socket_is_0600_and_needs_no_token(
        setup: tuple[dict[str, str], Path, Path], tmp_path: Path) -> None:
    env, _, log = setup
    path = tmp_path / "gw.sock"
    async with _gateway(env, f"unix:{path}"):
        assert path.stat().st_mode & 0o777 == 0o600
        async with _client("http://localhost/mcp", uds=str(path)) as client:
            opened = await call_ok(client, "new_tab", {"url": data_url("u", "<p>u</p>")})
            await call_ok(client, "close_tab", {"tab": opened["tab"]})
    assert not path.exists()  # removed at exit
    sessions = {json.loads(text)["session"] for text in log.read_text().splitlines()}
    assert sessions == {"unix socket"}


async def test_sighup_reloads_the_targets_of_an_http_gateway(
        setup: tuple[dict[str, str], Path, Path], tmp_path: Path) -> None:
    env, token_file, _ = setup
    env = {k: v for k, v in env.items() if k != "SSH_PROXY_TO"}
    targets = write_targets(tmp_path / "targets.toml", {"one": {"ssh": "h1"}})
    listen = f"127.0.0.1:{_free_port()}"
    argv = [sys.executable, "-m", "gateway", "--config", str(targets), "serve", "--http", listen,
            "--token-file", str(token_file)]
    async with await anyio.open_process(argv, env=env, cwd=ROOT, stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL) as process, \
            terminated(process):
        with anyio.fail_after(30):
            while not await accepts(listen):
                await anyio.sleep(0.05)
        async with open_http(f"http://{listen}/mcp", TOKEN) as client:
            names = {t["name"] for t in (await call_ok(client, "list_targets"))["targets"]}
            assert names == {"one"}
            write_targets(targets, {"one": {"ssh": "h1"}, "two": {"ssh": "h2"}})
            process.send_signal(signal.SIGHUP)

            async def both() -> set[str] | None:
                listing = await call_ok(client, "list_targets")
                found = {t["name"] for t in listing["targets"]}
                return found if found == {"one", "two"} else None

            assert await eventually(both, until=present,
                                    timeout=20, what="target two added") == {"one", "two"}


async def test_the_live_page_is_served_at_live_of_the_same_server(
        setup: tuple[dict[str, str], Path, Path]) -> None:
    """Issue 20: with ``serve --http`` on loopback the live view is this server's
    ``/live`` — its links from a caller with the bearer token (a tool, or ``POST
    /live-link``), the page behind its own one-use token, and no other way in."""
    env, token_file, log = setup
    listen = f"127.0.0.1:{_free_port()}"
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    async with _gateway(env, listen, "--token-file", str(token_file)):
        async with _client(f"http://{listen}/mcp", bearer) as client:
            tab = (await call_ok(client, "new_tab", {"url": data_url("served")}))["tab"]
            held = await call_ok(client, "handoff", {"tab": tab, "reason": "look",
                                                     "timeout_s": 1})
        assert held["url"].startswith(f"http://{listen}/live/?t="), held
        async with httpx2.AsyncClient(timeout=20) as http:
            assert (await http.get(f"http://{listen}/live/")).status_code == 403
            assert (await http.post(f"http://{listen}/live-link", json={})).status_code == 401
            issued = await http.post(f"http://{listen}/live-link", json={"tab": tab},
                                     headers=bearer)
            assert issued.status_code == 200, issued.text
            for url in (held["url"], issued.json()["url"]):
                opened = await http.get(url)
                assert opened.status_code == 303, opened.text
                cookie = opened.headers["set-cookie"].split(";")[0]
                page = await http.get(f"http://{listen}{opened.headers['location']}",
                                      headers={"Cookie": cookie})
                assert page.status_code == 200 and "<img id=\"frame\"" in page.text
                assert (await http.get(url)).status_code == 403  # once
    assert "?t=" not in log.read_text()  # no link's token in the call log
