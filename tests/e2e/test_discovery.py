"""How the gateway finds each browser's DevTools endpoint on its host.

h1's Chromium uses ``~/.config/chromium`` and h2's ``~/.config/google-chrome`` (both
default profile directories), so plain ``ssh = "hN"`` targets find them through
DevToolsActivePort. Explicit ``cdp`` addresses go through ``/json/version`` (or the
given ``ws://…/devtools/browser/…`` path), an explicit ``profile`` reads that
directory only. Targets that cannot be found are down with a reason that says what
was tried — and the other targets are not affected.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from tests.e2e.helpers import (
    ERROR_BOUND,
    call_err,
    call_ok,
    data_url,
    open_gateway,
    remote_active_port,
    remote_pages,
    wait_for_targets,
    write_targets,
)
from tests.topology import Topology

pytestmark = pytest.mark.anyio

UP = ("auto1", "auto2", "bycdp", "byws", "byprofile", "bytilde")
DOWN = ("badport", "emptyprofile")


@pytest.fixture(scope="module")
async def setup(
    topology: Topology, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[tuple[Client, dict[str, Any]]]:
    h1, h2 = topology.host("h1"), topology.host("h2")
    (p1, path1), (p2, path2) = remote_active_port(h1), remote_active_port(h2)
    empty_profile = h1.home / "tmp"  # exists, holds no DevToolsActivePort
    facts = {"p1": p1, "path1": path1, "p2": p2, "path2": path2, "empty": str(empty_profile)}
    path = write_targets(
        tmp_path_factory.mktemp("discovery") / "targets.toml",
        {
            "auto1": {"ssh": "h1"},
            "auto2": {"ssh": "h2"},
            "bycdp": {"ssh": "h1", "cdp": f"127.0.0.1:{p1}"},
            "byws": {"ssh": "h2", "cdp": f"ws://127.0.0.1:{p2}{path2}"},
            "byprofile": {"ssh": "h2", "profile": str(h2.profile_dir)},
            "bytilde": {"ssh": "h1", "profile": "~/.config/chromium"},
            "badport": {"ssh": "h1", "cdp": "127.0.0.1:1"},
            "emptyprofile": {"ssh": "h1", "profile": str(empty_profile)},
        },
    )
    async with open_gateway(topology.client_env(), ["--config", str(path)]) as client:
        expected = {name: "up" for name in UP} | {name: "down" for name in DOWN}
        await wait_for_targets(client, expected)
        yield client, facts


@pytest.fixture
async def gw(setup: tuple[Client, dict[str, Any]]) -> Client:
    return setup[0]


@pytest.fixture
async def facts(setup: tuple[Client, dict[str, Any]]) -> dict[str, Any]:
    return setup[1]


async def _targets(gw: Client) -> dict[str, dict[str, Any]]:
    listing = await call_ok(gw, "list_targets")
    return {t["name"]: t for t in listing["targets"]}


async def test_devtools_active_port_in_default_profile_dirs(
    gw: Client, facts: dict[str, Any]
) -> None:
    targets = await _targets(gw)
    assert targets["auto1"]["cdp_endpoint"] == (
        f"127.0.0.1:{facts['p1']}{facts['path1']} (DevToolsActivePort in .config/chromium)"
    )
    assert targets["auto2"]["cdp_endpoint"] == (
        f"127.0.0.1:{facts['p2']}{facts['path2']} (DevToolsActivePort in .config/google-chrome)"
    )
    for name in ("auto1", "auto2"):
        assert targets[name]["state"] == "up" and "error" not in targets[name]
        assert targets[name]["browser"].startswith("Chrome/")


async def test_explicit_cdp_address_uses_json_version(
    gw: Client, facts: dict[str, Any], topology: Topology
) -> None:
    target = (await _targets(gw))["bycdp"]
    assert target["state"] == "up"
    assert target["cdp_endpoint"] == (
        f"127.0.0.1:{facts['p1']}{facts['path1']} (/json/version at 127.0.0.1:{facts['p1']})"
    )
    # It is h1's browser: a page opened through this target shows up there.
    url = data_url("via-explicit-cdp")
    nav = await call_ok(gw, "navigate", {"target": "bycdp", "url": url})
    assert nav["target"] == "bycdp" and nav["title"] == "via-explicit-cdp"
    assert url in [p["url"] for p in remote_pages(topology.host("h1"))]
    await call_ok(gw, "close_tab", {"tab": nav["tab"]})


async def test_explicit_websocket_url(gw: Client, facts: dict[str, Any]) -> None:
    target = (await _targets(gw))["byws"]
    assert target["state"] == "up"
    assert target["cdp_endpoint"].startswith(f"127.0.0.1:{facts['p2']}{facts['path2']} (")
    ping = await call_ok(gw, "ping", {"target": "byws"})
    assert ping["connected"] is True


async def test_explicit_profile(gw: Client, facts: dict[str, Any], topology: Topology) -> None:
    targets = await _targets(gw)
    profile = topology.host("h2").profile_dir
    assert targets["byprofile"]["cdp_endpoint"] == (
        f"127.0.0.1:{facts['p2']}{facts['path2']} (DevToolsActivePort in {profile})"
    )
    # "~/" is expanded by the remote shell: the endpoint names the real directory.
    assert targets["bytilde"]["cdp_endpoint"] == (
        f"127.0.0.1:{facts['p1']}{facts['path1']} "
        f"(DevToolsActivePort in {topology.host('h1').profile_dir})"
    )
    for name in ("byprofile", "bytilde"):
        nav = await call_ok(gw, "navigate", {"target": name, "url": data_url(f"via-{name}")})
        evaluated = await call_ok(gw, "evaluate", {"tab": nav["tab"], "expression": "1 + 1"})
        assert (evaluated["target"], evaluated["value"]) == (name, 2)
        await call_ok(gw, "close_tab", {"tab": nav["tab"]})


async def test_wrong_cdp_port_is_down_with_a_clear_error(gw: Client) -> None:
    target = (await _targets(gw))["badport"]
    assert target["state"] == "down"
    assert target["cdp_endpoint"] is None
    assert "/json/version at 127.0.0.1:1" in target["error"]
    assert "nothing listens there" in target["error"]

    ping = await call_ok(gw, "ping", {"target": "badport"}, timeout=ERROR_BOUND)
    assert ping["connected"] is False
    assert "/json/version at 127.0.0.1:1" in ping["error"]

    error = await call_err(gw, "new_tab", {"target": "badport"}, timeout=ERROR_BOUND)
    assert "target 'badport' unreachable" in error
    assert "/json/version at 127.0.0.1:1" in error
    assert "retry shortly, or check list_targets" in error


async def test_a_down_target_does_not_affect_the_others(gw: Client) -> None:
    listing = await call_ok(gw, "list_tabs")
    unavailable = {u["target"]: u["error"] for u in listing["unavailable"]}
    assert sorted(unavailable) == sorted(DOWN)
    assert "/json/version at 127.0.0.1:1" in unavailable["badport"]
    assert {t["target"] for t in listing["tabs"]} == set(UP)

    for name in UP:
        ping = await call_ok(gw, "ping", {"target": name})
        assert ping["connected"] is True, ping


async def test_down_reason_names_the_target_once(gw: Client) -> None:
    """The reason inside "target 'x' unreachable (…)" must not repeat that wrapper."""
    error = await call_err(gw, "new_tab", {"target": "badport"}, timeout=ERROR_BOUND)
    assert error.count("target 'badport' unreachable") == 1, error
    target = (await _targets(gw))["badport"]
    assert "target 'badport' unreachable" not in target["error"], target["error"]


async def test_profile_without_devtools_active_port(gw: Client, facts: dict[str, Any]) -> None:
    target = (await _targets(gw))["emptyprofile"]
    assert target["state"] == "down"
    assert f"no readable DevToolsActivePort in {facts['empty']}" in target["error"]
    assert "--remote-debugging-port" in target["error"]



async def test_a_down_target_stays_down_while_it_is_retried(
    topology: Topology, tmp_path: Path
) -> None:
    """Retries every 50 ms: list_targets must not flicker between down and connecting
    (a snapshot taken during a retry said ``connecting``), and the reason stays."""
    path = write_targets(tmp_path / "targets.toml", {"t": {
        "ssh": "h1", "cdp": "127.0.0.1:1",
        "reconnect": {"initial_delay_s": 0.05, "max_delay_s": 0.05}}})
    async with open_gateway(topology.client_env(), ["--config", str(path)]) as client:
        await wait_for_targets(client, {"t": "down"})
        seen = []
        for _ in range(60):
            target = (await _targets(client))["t"]
            seen.append(target["state"])
            assert "/json/version at 127.0.0.1:1" in target["error"]
            await anyio.sleep(0.02)
        assert set(seen) == {"down"}, seen
        # A call still waits for an attempt of its own and reports it.
        error = await call_err(client, "new_tab", {"target": "t"}, timeout=ERROR_BOUND)
        assert "target 't' unreachable (/json/version at 127.0.0.1:1" in error, error
