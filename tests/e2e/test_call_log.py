"""The call log (``MCP_DEBUG_LOG=path``): one JSON line per tool call, secrets redacted,
created 0600, never written through a symlink."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from tests.e2e.helpers import (
    ERROR_BOUND,
    call_err,
    call_ok,
    data_url,
    eventually,
    open_gateway,
    present,
    wait_for_targets,
)
from tests.topology import Topology

pytestmark = pytest.mark.anyio

FIELDS = {"call_id", "tool", "target", "tab", "arguments", "duration_ms", "outcome", "error",
          "result_bytes"}
SECRETS = ("SECRET-TOKEN-123", "SECRET-COOKIE", "SECRET-PROXY-PW", "SECRET-COOKIE-2")


def _lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


async def _lines_after(path: Path, start: int, count: int) -> list[dict[str, Any]]:
    """The ``count`` lines logged after the first ``start`` (they appear when calls end)."""

    async def ready() -> list[dict[str, Any]] | None:
        lines = _lines(path)
        return lines[start:] if len(lines) >= start + count else None

    return await eventually(ready, until=present, timeout=10, what=f"{count} new call log lines")


@pytest.fixture(scope="module")
async def logged(
    topology: Topology, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[tuple[Client, Path]]:
    path = tmp_path_factory.mktemp("calllog") / "logs" / "calls.jsonl"  # dir does not exist
    env = topology.client_env() | {"SSH_PROXY_TO": "h1", "MCP_DEBUG_LOG": str(path)}
    async with open_gateway(env) as client:
        await wait_for_targets(client, {"default": "up"})
        yield client, path


async def test_one_line_per_call(logged: tuple[Client, Path]) -> None:
    gw, path = logged
    start = len(_lines(path))

    await call_ok(gw, "list_targets")
    nav = await call_ok(gw, "navigate", {"url": data_url("logged")})
    tab = nav["tab"]
    await call_ok(gw, "evaluate", {"tab": tab, "expression": "document.title"})
    await call_ok(gw, "cdp_command", {"method": "Browser.getVersion"})
    unknown = await call_err(gw, "evaluate", {"tab": 999999, "expression": "1"})
    bad = await call_err(gw, "cdp_command", {"method": "Page.navigate;rm", "tab": tab})
    await call_ok(gw, "close_tab", {"tab": tab})

    lines = await _lines_after(path, start, 7)
    assert len(lines) == 7
    for line in lines:
        assert set(line) >= FIELDS, line
        assert isinstance(line["duration_ms"], int | float) and line["duration_ms"] >= 0
    assert [line["tool"] for line in lines] == [
        "list_targets", "navigate", "evaluate", "cdp_command", "evaluate", "cdp_command",
        "close_tab"]
    ids = [line["call_id"] for line in lines]
    assert ids == sorted(ids) and len(set(ids)) == 7
    assert [line["outcome"] for line in lines] == ["ok"] * 4 + ["error"] * 2 + ["ok"]

    listed, navigated, evaluated, version, unknown_line, bad_line, closed = lines
    assert (listed["target"], listed["tab"], listed["error"]) == (None, None, None)
    assert listed["result_bytes"] > 0
    assert (navigated["target"], navigated["tab"]) == ("default", tab)
    assert navigated["arguments"]["url"] == data_url("logged")
    assert (evaluated["target"], evaluated["tab"]) == ("default", tab)
    assert evaluated["arguments"]["expression"] == "document.title"
    assert version["target"] == "default" and version["arguments"]["method"] == "Browser.getVersion"
    assert version["result_bytes"] > 0
    assert (closed["tab"], closed["outcome"]) == (tab, "ok")

    # Errors: outcome=error, the same text the client saw, no result.
    for line, text in ((unknown_line, unknown), (bad_line, bad)):
        assert line["error"] and line["error"] in text
        assert line["result_bytes"] == 0
    assert unknown_line["tab"] == 999999
    assert "is not a known tab id" in unknown_line["error"]
    assert "is not a CDP method name" in bad_line["error"]


async def test_arguments_refused_before_the_tool_runs_are_logged(
    logged: tuple[Client, Path]
) -> None:
    """A call whose arguments fail validation is still a call: it gets its line."""
    gw, path = logged
    start = len(_lines(path))
    error = await call_err(gw, "cdp_command", {"method": "Page.navigate", "params": ["x"]})
    assert "valid dictionary" in error
    await call_ok(gw, "list_targets")  # a marker call after it

    async def through_marker() -> list[dict[str, Any]] | None:
        lines = _lines(path)[start:]
        tools = [line["tool"] for line in lines]
        return lines[: tools.index("list_targets") + 1] if "list_targets" in tools else None

    lines = await eventually(through_marker, until=present,
                             timeout=10, what="the marker call's log line")
    assert [line["tool"] for line in lines] == ["cdp_command", "list_targets"]
    assert lines[0]["outcome"] == "error"
    assert lines[0]["arguments"]["method"] == "Page.navigate"


async def test_secrets_never_reach_the_log(logged: tuple[Client, Path]) -> None:
    gw, path = logged
    start = len(_lines(path))
    tab = (await call_ok(gw, "new_tab"))["tab"]
    headers = {"Authorization": "Bearer SECRET-TOKEN-123", "Cookie": "sid=SECRET-COOKIE",
               "Proxy-Authorization": "Basic SECRET-PROXY-PW", "X-Plain": "visible-value"}

    ok = await call_ok(gw, "cdp_command", {
        "tab": tab, "method": "Network.setExtraHTTPHeaders", "params": {"headers": headers}})
    cookie = await call_ok(gw, "cdp_command", {
        "tab": tab, "method": "Network.setCookie",
        "params": {"name": "sid", "value": "SECRET-COOKIE-2", "url": "https://csgw.invalid/"}})
    # A failing call carries the same secrets in its arguments.
    failed = await call_err(gw, "cdp_command", {
        "method": "Network.setExtraHTTPHeaders", "params": {"headers": headers}})
    await call_ok(gw, "close_tab", {"tab": tab})

    assert ok["result"] == {} and cookie["result"] == {"success": True}
    assert "need tab=<id>" in failed
    lines = await _lines_after(path, start, 5)
    raw = path.read_bytes()
    for secret in SECRETS:
        assert secret.encode() not in raw, f"{secret} written to the call log"
    logged_headers = lines[1]["arguments"]["params"]["headers"]
    assert logged_headers == {"Authorization": "[redacted]", "Cookie": "[redacted]",
                              "Proxy-Authorization": "[redacted]", "X-Plain": "visible-value"}
    assert lines[2]["arguments"]["params"]["value"] == "[redacted]"
    assert lines[3]["outcome"] == "error"
    assert lines[3]["arguments"]["params"]["headers"]["Authorization"] == "[redacted]"


async def test_log_file_is_private(logged: tuple[Client, Path]) -> None:
    gw, path = logged
    await call_ok(gw, "list_targets")
    await eventually(lambda: _exists(path), timeout=10, what="the call log file")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert not path.is_symlink()


async def _exists(path: Path) -> bool:
    return path.exists()


async def test_existing_log_file_is_appended_and_made_private(
    topology: Topology, tmp_path: Path
) -> None:
    path = tmp_path / "calls.jsonl"
    path.write_text('{"old": "line"}\n')
    os.chmod(path, 0o644)
    env = topology.client_env() | {"SSH_PROXY_TO": "h1", "MCP_DEBUG_LOG": str(path)}

    async with open_gateway(env) as gw:
        await call_ok(gw, "list_targets")
        await _lines_after(path, 1, 1)
        mode = stat.S_IMODE(path.stat().st_mode)

    lines = _lines(path)
    assert lines[0] == {"old": "line"}
    assert [line.get("tool") for line in lines[1:]] == ["list_targets"]
    assert mode == 0o600


@pytest.mark.parametrize("victim_exists", [False, True], ids=["dangling", "existing"])
async def test_symlink_at_the_log_path_is_not_followed(
    topology: Topology, tmp_path: Path, victim_exists: bool
) -> None:
    victim = tmp_path / "victim.txt"
    if victim_exists:
        victim.write_text("precious\n")
        os.chmod(victim, 0o644)
    link = tmp_path / "calls.jsonl"
    link.symlink_to(victim)
    stderr_path = tmp_path / "stderr.txt"
    env = topology.client_env() | {"SSH_PROXY_TO": "h1", "MCP_DEBUG_LOG": str(link)}

    with stderr_path.open("w") as errlog:
        async with open_gateway(env, errlog=errlog) as gw:
            await wait_for_targets(gw, {"default": "up"})
            nav = await call_ok(gw, "navigate", {"url": data_url("symlinked-log")})
            await call_ok(gw, "evaluate", {"tab": nav["tab"], "expression": "1"})
            await call_err(gw, "evaluate", {"tab": 999999, "expression": "1"},
                           timeout=ERROR_BOUND)
            await call_ok(gw, "close_tab", {"tab": nav["tab"]})
    stderr = stderr_path.read_text()

    assert link.is_symlink() and os.readlink(link) == str(victim)
    if victim_exists:
        assert victim.read_text() == "precious\n"
        assert stat.S_IMODE(victim.stat().st_mode) == 0o644
    else:
        assert not victim.exists()
    assert "call log disabled" in stderr
    assert "symlink" in stderr
