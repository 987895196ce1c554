"""What a target's config lets an agent do: raw CDP, page JavaScript, URL schemes,
and the read-only mode that leaves only tools which change nothing.

Three targets share h1's browser, so each difference in outcome comes from the
policy alone:

* ``open``    — the defaults (everything but opt-in schemes);
* ``limited`` — ``cdp_allow = ["Runtime.*", "Page.*"]``, ``allow_schemes = ["file"]``;
* ``locked``  — ``allow_cdp = false``, ``allow_evaluate = false``.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from mcp import Client

from tests.e2e.helpers import (
    ERROR_BOUND,
    call_err,
    call_ok,
    data_url,
    open_gateway,
    wait_for_targets,
    write_targets,
)
from tests.topology import Topology

pytestmark = pytest.mark.anyio

# Everything that changes nothing in a browser; the rest must vanish in read-only mode.
READ_ONLY_TOOLS = {"list_targets", "ping", "list_tabs", "browse_view", "screenshot",
                   "console_messages", "network_requests", "network_request",
                   "performance_trace", "heap_snapshot", "pdf", "downloads"}
CHANGING_TOOLS = {"new_tab", "navigate", "close_tab", "browse", "browse_act", "evaluate",
                  "cdp_command", "handle_dialog", "emulate", "storage_state", "network_route",
                  "handoff"}


@pytest.fixture(scope="module")
async def gw(
    topology: Topology, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Client]:
    path = write_targets(tmp_path_factory.mktemp("policy") / "targets.toml", {
        "open": {"ssh": "h1"},
        "limited": {"ssh": "h1", "cdp_allow": ["Runtime.*", "Page.*"],
                    "allow_schemes": ["file"]},
        "locked": {"ssh": "h1", "allow_cdp": False, "allow_evaluate": False},
    })
    async with open_gateway(topology.client_env(), ["--config", str(path)]) as client:
        await wait_for_targets(client, {"open": "up", "limited": "up", "locked": "up"})
        yield client


async def _tab(gw: Client, target: str, title: str) -> int:
    result = await call_ok(gw, "navigate", {"target": target, "url": data_url(title)})
    return int(result["tab"])


async def test_allow_cdp_false_turns_cdp_command_off(gw: Client) -> None:
    tab = await _tab(gw, "locked", "locked-cdp")
    for args in ({"target": "locked", "method": "Browser.getVersion"},
                 {"tab": tab, "method": "Page.reload"}):
        error = await call_err(gw, "cdp_command", args, timeout=ERROR_BOUND)
        assert "cdp_command is turned off for target 'locked'" in error
        assert "allow_cdp = false" in error
    # The same browser through a target without the restriction answers.
    version = await call_ok(gw, "cdp_command", {"target": "open",
                                                "method": "Browser.getVersion"})
    assert "Chrome" in version["result"]["product"]
    await call_ok(gw, "close_tab", {"tab": tab})


async def test_cdp_allow_restricts_domains(gw: Client) -> None:
    tab = await _tab(gw, "limited", "limited-cdp")
    allowed = await call_ok(gw, "cdp_command", {"tab": tab, "method": "Runtime.evaluate",
                                                "params": {"expression": "6*7"}})
    assert allowed["result"]["result"]["value"] == 42
    title = await call_ok(gw, "cdp_command", {"tab": tab, "method": "Page.getNavigationHistory"})
    assert title["result"]["entries"][-1]["title"] == "limited-cdp"
    for args in ({"tab": tab, "method": "Network.getCookies"},
                 {"tab": tab, "method": "DOM.getDocument"},
                 {"target": "limited", "method": "Browser.getVersion"}):
        error = await call_err(gw, "cdp_command", args, timeout=ERROR_BOUND)
        assert f"{args['method']} is not allowed on target 'limited'" in error
        assert "cdp_allow permits only Runtime.*, Page.*" in error
    await call_ok(gw, "close_tab", {"tab": tab})


async def test_allow_evaluate_false_blocks_every_way_to_run_page_javascript(gw: Client) -> None:
    tab = await _tab(gw, "locked", "locked-js")
    error = await call_err(gw, "evaluate", {"tab": tab, "expression": "document.title"},
                           timeout=ERROR_BOUND)
    assert "running JavaScript is turned off for target 'locked'" in error
    assert "allow_evaluate = false" in error and "browse_view" in error
    # Reading and acting on the page the regular way still works.
    view = await call_ok(gw, "browse_view", {"tab": tab})
    assert view["url"].startswith("data:text/html")
    await call_ok(gw, "close_tab", {"tab": tab})


async def test_cdp_methods_that_run_javascript_follow_allow_evaluate(
    topology: Topology, tmp_path: Path
) -> None:
    """With raw CDP allowed but page JavaScript not, Runtime.evaluate & co. are refused
    too — otherwise allow_evaluate would be one cdp_command away from meaningless."""
    path = write_targets(tmp_path / "targets.toml",
                         {"nojs": {"ssh": "h1", "allow_evaluate": False}})
    async with open_gateway(topology.client_env(), ["--config", str(path)]) as gw:
        await wait_for_targets(gw, {"nojs": "up"})
        tab = await _tab(gw, "nojs", "nojs")
        for method, params in (
            ("Runtime.evaluate", {"expression": "1"}),
            ("Runtime.callFunctionOn", {"functionDeclaration": "() => 1"}),
            ("Page.addScriptToEvaluateOnNewDocument", {"source": "1"}),
        ):
            error = await call_err(gw, "cdp_command", {"tab": tab, "method": method,
                                                       "params": params}, timeout=ERROR_BOUND)
            assert "running JavaScript is turned off for target 'nojs'" in error, method
        # Other CDP still works on the same tab.
        history = await call_ok(gw, "cdp_command", {"tab": tab,
                                                    "method": "Page.getNavigationHistory"})
        assert history["result"]["entries"][-1]["title"] == "nojs"
        await call_ok(gw, "close_tab", {"tab": tab})


async def test_file_urls_only_where_the_target_allows_them(gw: Client) -> None:
    # /etc/hostname exists on every Linux host; Chromium renders it as text.
    url = "file:///etc/hostname"
    tab = await _tab(gw, "open", "file-refused")
    for tool, args in (("navigate", {"tab": tab}), ("navigate", {"target": "open"}),
                       ("new_tab", {"target": "open"}), ("browse", {"tab": tab})):
        error = await call_err(gw, tool, {**args, "url": url}, timeout=ERROR_BOUND)
        assert "url scheme 'file' is not allowed on this target" in error, tool
        assert 'allow_schemes = ["file"]' in error
    # cdp_command cannot go around it: the same check for Page.navigate / createTarget.
    for args in ({"tab": tab, "method": "Page.navigate", "params": {"url": url}},
                 {"target": "open", "method": "Target.createTarget", "params": {"url": url}}):
        error = await call_err(gw, "cdp_command", args, timeout=ERROR_BOUND)
        assert "url scheme 'file' is not allowed" in error
    listing = await call_ok(gw, "list_tabs")
    assert not [t for t in listing["tabs"] if t["url"].startswith("file:")]
    await call_ok(gw, "close_tab", {"tab": tab})

    allowed = await call_ok(gw, "navigate", {"target": "limited", "url": url})
    assert allowed["url"] == url
    view = await call_ok(gw, "browse_view", {"tab": allowed["tab"]})
    assert view["url"] == url
    # chrome: stays refused on the target that opted into file: only.
    error = await call_err(gw, "navigate", {"tab": allowed["tab"], "url": "chrome://version"},
                           timeout=ERROR_BOUND)
    assert "url scheme 'chrome' is not allowed on this target" in error
    await call_ok(gw, "close_tab", {"tab": allowed["tab"]})


async def _tool_names(gw: Client) -> set[str]:
    return {tool.name for tool in (await gw.list_tools()).tools}


@pytest.mark.parametrize("how", ["flag", "env", "file"])
async def test_read_only_offers_only_tools_that_change_nothing(
    topology: Topology, tmp_path: Path, how: str
) -> None:
    gateway_table = {"read_only": True} if how == "file" else None
    path = write_targets(tmp_path / "targets.toml", {"ro": {"ssh": "h1"}}, gateway_table)
    args = ["--config", str(path)] + (["--read-only"] if how == "flag" else [])
    env = topology.client_env() | ({"CHROME_SSH_GATEWAY_READ_ONLY": "1"} if how == "env" else {})
    async with open_gateway(env, args) as gw:
        await wait_for_targets(gw, {"ro": "up"})
        names = await _tool_names(gw)
        assert names == READ_ONLY_TOOLS
        for tool in CHANGING_TOOLS:
            error = await call_err(gw, tool, {"tab": 1, "url": "about:blank",
                                              "expression": "1", "method": "Page.reload"},
                                   timeout=ERROR_BOUND)
            # Not offered, and the answer says which flag withholds it (issue 12).
            assert f"{tool} is not offered" in error and "--read-only" in error, (tool, error)
        # What is left works.
        listing = await call_ok(gw, "list_tabs")
        assert isinstance(listing["tabs"], list)
        assert (await call_ok(gw, "ping"))["connected"] is True


async def test_without_read_only_every_tool_is_offered(gw: Client) -> None:
    """Every tool but those off by default (``emulate``: ``--tools +emulation``;
    ``network_route``: ``+routes``)."""
    assert await _tool_names(gw) == READ_ONLY_TOOLS | CHANGING_TOOLS - {"emulate",
                                                                        "network_route"}


CORE_TOOLS = {"list_tabs", "browse", "browse_view", "browse_act", "evaluate", "close_tab"}


@pytest.mark.parametrize("how", ["flag", "env", "file"])
async def test_tools_core_drives_a_page_and_names_the_flag_for_the_rest(
    topology: Topology, tmp_path: Path, how: str
) -> None:
    """Issue 12: ``--tools core,+network`` from each source offers exactly those tools, they
    do the whole job on a page, and a call to another one says how to offer it."""
    spec = "core,+network"
    gateway_table = {"tools": spec} if how == "file" else None
    path = write_targets(tmp_path / "targets.toml", {"t": {"ssh": "h1"}}, gateway_table)
    args = ["--config", str(path)] + (["--tools", spec] if how == "flag" else [])
    env = topology.client_env() | ({"CHROME_SSH_GATEWAY_TOOLS": spec} if how == "env" else {})
    async with open_gateway(env, args) as gw:
        assert await _tool_names(gw) == CORE_TOOLS | {"network_requests", "network_request"}
        page = await call_ok(gw, "browse", {"url": data_url("core", "<button>Go</button>")})
        try:
            ref = int(page["view"].split('button#')[1].split(" ")[0])
            acted = await call_ok(gw, "browse_act", {"tab": page["tab"], "actions": [
                {"do": "click", "ref": ref}]})
            assert acted["steps"] == [{"do": "click", "ok": True}]
            assert (await call_ok(gw, "evaluate", {"tab": page["tab"],
                                                   "expression": "6*7"}))["value"] == 42
            error = await call_err(gw, "cdp_command", {"method": "Browser.getVersion"},
                                   timeout=ERROR_BOUND)
            assert f"--tools '{spec},+cdp_command'" in error, error
        finally:
            await call_ok(gw, "close_tab", {"tab": page["tab"]})


async def test_an_unknown_tool_set_stops_the_gateway_at_start(
    topology: Topology, tmp_path: Path
) -> None:
    path = write_targets(tmp_path / "targets.toml", {"t": {"ssh": "h1"}})
    proc = await anyio.run_process(
        [sys.executable, "-m", "gateway", "serve", "--config", str(path), "--tools", "core,+nope"],
        env=topology.client_env(), check=False, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2
    err = proc.stderr.decode()
    assert "--tools: unknown tool or set '+nope'" in err and "network" in err, err
