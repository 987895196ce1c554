"""``browse_act`` ``drag``: one gesture that HTML5 drag and drop and pointer-event code
both accept, on real Chromium over SSH.

``drag.html`` has a sortable list (draggable items, dragstart/dragover/drop), a
slider and a card-and-bin built on pointer events only. What the drag did is read
back from the page: its list order, the slider's value, where the card landed, and
the events its handlers counted.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.e2e.helpers import call_err
from tests.e2e.pages import (
    DevtoolsEnv,
    act,
    act_failing,
    browse,
    close_tabs,
    devtools_gateway,
    js,
    ref_of,
)
from tests.topology import Topology

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
async def env(
    topology: Topology, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[DevtoolsEnv]:
    async with devtools_gateway(topology, tmp_path_factory.mktemp("browse-drag"),
                                hosts=("h1",)) as e:
        yield e


@pytest.fixture
async def page(env: DevtoolsEnv) -> AsyncIterator[tuple[int, str]]:
    """A tab on drag.html: (tab, view); closed afterwards."""
    result = await browse(env.client, env.site("h1").url("/browse/drag.html"), target="h1")
    yield result["tab"], result["view"]
    await close_tabs(env.client, [result["tab"]])


def ok(result: dict[str, Any]) -> None:
    assert result["steps"] == [{"do": "drag", "ok": True}], result["steps"]


async def test_html5_drag_and_drop_reorders_a_sortable_list(
    env: DevtoolsEnv, page: tuple[int, str]
) -> None:
    tab, view = page
    result = await act(env.client, tab, {"do": "drag", "ref": ref_of(view, "Alpha"),
                                         "to": ref_of(view, "Gamma")})
    ok(result)
    assert "order: Beta Gamma Alpha" in result["view"]
    events = (await js(env.client, tab, "window.csgwDrag.html5"))
    assert events[0] == "dragstart" and "drop:Alpha" in events and events[-1] == "dragend"
    assert events.count("dragover") >= 2, events  # the pointer passed over on its way


async def test_a_pointer_event_slider_follows_the_drag(
    env: DevtoolsEnv, page: tuple[int, str]
) -> None:
    tab, view = page
    # The track is 400 px, the thumb 24 px: 188 px to the right is the middle (50).
    result = await act(env.client, tab, {"do": "drag", "ref": ref_of(view, "Volume"),
                                         "by": [188, 0]})
    ok(result)
    assert "volume: 50" in result["view"], result["view"]
    pointer = await js(env.client, tab, "window.csgwDrag.pointer")
    assert pointer["downs"] == 1 and pointer["ups"] == 1, pointer
    assert pointer["moves"] >= 5, pointer  # moved in steps, not one jump
    assert await js(env.client, tab, "window.csgwDrag.html5") == []  # no HTML5 drag began


async def test_a_pointer_event_card_drops_onto_another_ref(
    env: DevtoolsEnv, page: tuple[int, str]
) -> None:
    tab, view = page
    result = await act(env.client, tab, {"do": "drag", "ref": ref_of(view, "Card"),
                                         "to": ref_of(view, "Bin")})
    ok(result)
    assert "card: dropped in bin" in result["view"], result["view"]


async def test_drag_arguments_are_checked(env: DevtoolsEnv, page: tuple[int, str]) -> None:
    tab, view = page
    field = ref_of(view, "Name")
    for extra in ({}, {"to": ref_of(view, "Bin"), "by": [5, 5]}):
        # The whole batch is refused before its first step: nothing is typed.
        error = await call_err(env.client, "browse_act", {"tab": tab, "actions": [
            {"do": "type", "ref": field, "text": "typed"},
            {"do": "drag", "ref": ref_of(view, "Card"), **extra}]})
        assert error.startswith("invalid arguments for browse_act: actions.1.drag: "), error
        assert "drag needs exactly one of to (a ref) or by ([dx, dy])" in error, error
        assert await js(env.client, tab, "document.getElementById('name').value") == ""
    result = await act_failing(env.client, tab, {"do": "drag", "ref": ref_of(view, "Card"),
                                                 "by": [0, -5000]})
    assert "off screen" in result["steps"][0]["error"], result["steps"]
    assert "card: not dropped" in result["view"]
