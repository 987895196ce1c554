"""``--tools``: which tools a gateway offers, read off the tool definitions, and what a
client hears when it calls one that is left out (through the MCP client)."""

from __future__ import annotations

import pytest
from mcp import Client

from gateway.config import load_config
from gateway.errors import ConfigError
from gateway.fleet.registry import Registry
from gateway.mcp.app import build_server
from gateway.mcp.call_log import CallLog
from gateway.tools.sets import CORE, OFF_BY_DEFAULT, catalogue, select

TOOLS = catalogue()
NAMES = [t.name for t in TOOLS]
DEFAULT = [t.name for t in TOOLS if t.category not in OFF_BY_DEFAULT]


def test_catalogue_is_every_tool_with_its_family() -> None:
    assert len(NAMES) == len(set(NAMES)) >= 16
    categories = {t.name: t.category for t in TOOLS}
    assert categories["cdp_command"] == "cdp"
    assert categories["network_request"] == categories["network_requests"] == "network"
    assert set(CORE) <= set(NAMES)


@pytest.mark.parametrize(("spec", "expected"), [
    ("all", set(NAMES)),
    ("core", set(CORE)),
    ("core,+network", set(CORE) | {"network_requests", "network_request"}),
    ("core,network", set(CORE) | {"network_requests", "network_request"}),
    ("all,-cdp", set(NAMES) - {"cdp_command"}),
    ("-cdp", set(DEFAULT) - {"cdp_command"}),
    ("default", set(DEFAULT)),
    ("default,+emulation", set(DEFAULT) | {"emulate"}),
    ("+emulation", set(DEFAULT) | {"emulate"}),
    (",".join(f"+{category}" for category in OFF_BY_DEFAULT), set(NAMES)),
    ("core,-evaluate,+screenshot", set(CORE) - {"evaluate"} | {"screenshot"}),
    ("browse, browse_act", {"browse", "browse_act"}),
])
def test_specs(spec: str, expected: set[str]) -> None:
    assert select(spec, TOOLS).offered == expected


def test_read_only_applies_on_top() -> None:
    selection = select("core", TOOLS, read_only=True)
    read_only = {t.name for t in TOOLS if t.hints.read_only}
    assert selection.offered == set(CORE) & read_only
    assert "browse_act" not in selection.offered
    assert "--read-only" in selection.withheld["browse_act"]
    # adding it with --tools would not offer it: what to change is --read-only
    assert "--read-only" in selection.withheld["cdp_command"]
    assert "+network_requests" in selection.withheld["network_requests"]


@pytest.mark.parametrize("spec", ["cor", "all,-nope", "core,+", ""])
def test_an_unknown_name_lists_the_valid_ones(spec: str) -> None:
    with pytest.raises(ConfigError) as info:
        select(spec, TOOLS, source="CHROME_SSH_GATEWAY_TOOLS")
    text = str(info.value)
    assert text.startswith("CHROME_SSH_GATEWAY_TOOLS: unknown tool or set")
    for word in ("all", "core", "network", "cdp_command", "browse_act"):
        assert word in text


def test_a_spec_that_leaves_nothing_is_refused() -> None:
    with pytest.raises(ConfigError, match="offers no tools"):
        select("core,-core", TOOLS)


@pytest.mark.anyio
async def test_a_withheld_tool_answers_which_flag_offers_it() -> None:
    config = load_config({"CDP_URL": "127.0.0.1:9"}, tools="core")
    server = build_server(Registry(config), CallLog.open(None))
    async with Client(server) as client:
        listed = {t.name for t in (await client.list_tools()).tools}
        result = await client.call_tool("cdp_command", {"method": "Browser.getVersion"})
        unknown = await client.call_tool("no_such_tool", {})
    assert listed == set(CORE)
    text = result.content[0].text  # type: ignore[union-attr]
    assert result.is_error and "cdp_command is not offered" in text
    assert "--tools 'core,+cdp_command'" in text
    assert unknown.is_error and "not offered" not in unknown.content[0].text  # type: ignore[union-attr]


def test_the_default_leaves_out_what_is_off_by_default_and_the_instructions_say_so() -> None:
    assert OFF_BY_DEFAULT and set(DEFAULT) < set(NAMES)
    left_out = [t.name for t in TOOLS if t.category in OFF_BY_DEFAULT]
    note = select("default", TOOLS).note
    assert all(name in note for name in left_out) and "CHROME_SSH_GATEWAY_TOOLS=+" in note
    assert select("all", TOOLS).note == ""
    read_only_left_out = [t.name for t in TOOLS if t.category in OFF_BY_DEFAULT
                          and not t.hints.read_only]  # not offered read-only, whatever the flag
    note = select("default", TOOLS, read_only=True).note
    assert not any(name in note for name in read_only_left_out)


@pytest.mark.anyio
async def test_a_default_gateway_tells_the_agent_what_it_leaves_out() -> None:
    config = load_config({"CDP_URL": "127.0.0.1:9"})
    async with Client(build_server(Registry(config), CallLog.open(None))) as client:
        listed = {t.name for t in (await client.list_tools()).tools}
        instructions = client.instructions or ""
        result = await client.call_tool("emulate", {"tab": 1})
    assert listed == set(DEFAULT) and "emulate" not in listed
    assert "emulate (--tools +emulation)" in instructions
    assert result.is_error and "+emulate" in result.content[0].text  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_target_beside_a_tab_hears_why_it_is_not_taken() -> None:
    """Tools whose tab is required took ``target`` before issue 19: a call that still
    passes one hears that the tab names it, before anything happens."""
    config = load_config({"CDP_URL": "127.0.0.1:9"})
    async with Client(build_server(Registry(config), CallLog.open(None))) as client:
        result = await client.call_tool("close_tab", {"tab": 1, "target": "default"})
        typo = await client.call_tool("close_tab", {"tab": 1, "tba": 2})
    assert result.is_error and result.content[0].text == (  # type: ignore[union-attr]
        "unknown argument for close_tab: 'target' (a tab id names its target: leave target "
        "out); it takes tab")
    assert "'tba' (did you mean 'tab'?)" in typo.content[0].text  # type: ignore[union-attr]
