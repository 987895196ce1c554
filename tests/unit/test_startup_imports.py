"""Serving imports only what serving needs (issue 12): a start is the SDK's import plus ours.

A fresh interpreter imports what ``gateway serve`` imports before any browser is
contacted — the CLI, the server, every tool family — and builds the server with
every tool registered. None of the modules that only some gateways use may be
loaded by then: the doctor, the Chrome launcher, host scans, SSH (asyncssh, for a
local target), RE2 (a ``/regex/`` network filter), TOML (a targets file). The same
child then uses a filter, a targets file and an SSH host once and shows that their
modules arrive then (and that every name checked is a real module), so the check
can fail.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest

from gateway.config import load_config

__all__: list[str] = []

ROOT = Path(__file__).parents[2]

LAZY = ("gateway.doctor", "gateway.discovery.launcher", "gateway.discovery.launch_script",
        "gateway.fleet.host_scan", "gateway.hosts.ssh", "asyncssh", "re2", "tomllib")

CHILD = textwrap.dedent("""
    import importlib, json, sys, tempfile
    import gateway.cli, gateway.mcp.app, gateway.tools
    from gateway.fleet.registry import Registry
    from gateway.config import load_config
    from gateway.mcp.app import build_server
    from gateway.mcp.call_log import CallLog

    lazy = json.loads(sys.argv[1])
    build_server(Registry(load_config({"CDP_URL": "127.0.0.1:9"})), CallLog.open(None))
    serving = [m for m in lazy if m in sys.modules]

    from gateway.tabs.network_log import url_matcher
    url_matcher("/a+/")  # a /regex/ filter: RE2
    with tempfile.NamedTemporaryFile("w", suffix=".toml") as f:
        f.write('[targets.r]\\nssh = "u@127.0.0.1"\\n')
        f.flush()
        target = load_config({}, f.name).targets[0]  # a targets file: TOML
    Registry._new_host(target)  # an SSH target: asyncssh (nothing is contacted)
    for name in lazy:  # and the rest are real module names
        importlib.import_module(name)
    print(json.dumps({"serving": serving, "used": [m for m in lazy if m in sys.modules]}))
""")


def test_serving_does_not_import_what_only_some_gateways_use() -> None:
    done = subprocess.run([sys.executable, "-c", CHILD, json.dumps(LAZY)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["serving"] == [], f"imported to serve: {found['serving']}"
    assert found["used"] == list(LAZY), "each module arrives when its feature is first used"


START_CHILD = textwrap.dedent("""
    import gc, json, sys, threading
    gc.disable()  # as cli._serve_or_run does
    import anyio
    from gateway.config import load_config
    from gateway.mcp.start import running_server

    alone = "mcp" in sys.modules  # the start module must not bring the SDK
    where = {}
    class Recorder:
        def find_spec(self, name, path=None, target=None):
            where.setdefault(name, threading.current_thread().name)
    sys.meta_path.insert(0, Recorder())

    async def main():
        async with running_server(load_config({"CDP_URL": "127.0.0.1:9"})) as (server, _):
            tools = await server.list_tools()
            return len(tools), gc.isenabled(), gc.get_freeze_count() > 0
    count, enabled, frozen = anyio.run(main)
    print(json.dumps({"alone": alone, "sdk_in": where.get("mcp"), "tools": count,
                      "gc": enabled, "frozen": frozen}))
""")


def test_the_sdk_loads_in_a_worker_while_browsers_connect_and_gc_resumes() -> None:
    """``server.start``: the SDK and the tools are imported off the loop thread (which
    meanwhile connects), and the collector the CLI paused is on again once serving."""
    done = subprocess.run([sys.executable, "-c", START_CHILD], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["alone"] is False
    assert found["sdk_in"] not in (None, "MainThread"), found
    assert found["tools"] >= 18 and found["gc"] is True and found["frozen"] is True, found


@pytest.mark.anyio
async def test_a_bad_tools_spec_fails_before_any_browser_is_contacted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``running_server`` reads the tools in a worker while the registry connects; a spec
    naming no tool must still end the start before a host is contacted (a ``launch =
    true`` target would otherwise start a browser there, left running). The worker's
    import is slowed to a cold start's."""
    from gateway.errors import ConfigError
    from gateway.mcp import start

    cold = start._offered

    def slow(config: Any) -> Any:
        time.sleep(0.5)  # ~ importing the SDK and the tool families in a fresh process
        return cold(config)

    monkeypatch.setattr(start, "_offered", slow)
    accepted = 0

    async def count(stream: anyio.abc.SocketStream) -> None:
        nonlocal accepted
        accepted += 1
        await stream.aclose()

    async with await anyio.create_tcp_listener(local_host="127.0.0.1") as listener, \
            anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, count)
        port = listener.extra(anyio.abc.SocketAttribute.local_port)
        config = load_config({"CDP_URL": f"127.0.0.1:{port}"}, tools="core,+nope")
        with pytest.raises(ConfigError, match="unknown tool or set '\\+nope'"):
            async with start.running_server(config):
                pass
        await anyio.sleep(0.1)
        tg.cancel_scope.cancel()
    assert accepted == 0, "the browser was contacted before the bad --tools was reported"
