"""``browse_act`` answers with what changed since the whole view the model holds.

Every step here checks the change set's one promise: the view the model held, with the
hunks applied as a model reads them (``tests/view_changes.py``), is exactly the view a
fresh ``browse_view`` gives — line for line, refs included. On a real documentation site
(MkDocs Material: a search whose results a web worker makes) and on the fixture page of
controls; a navigation, a change bigger than half the page, and a view the model saw only
part of give the whole view instead.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.helpers import call_ok
from tests.e2e.pages import (
    DevtoolsEnv,
    Model,
    browse,
    js,
    open_view,
    page_fixtures,
    ref_of,
    serve_directory,
)
from tests.e2e.real_apps import build_docs_site
from tests.topology import Topology

pytestmark = pytest.mark.anyio

env, tabs = page_fixtures("browse-changes")


@pytest.fixture(scope="module")
def docs_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_docs_site(tmp_path_factory.mktemp("docs-site"))


def _shorter(result: dict[str, Any], whole: str) -> None:
    assert "changes" in result, result
    assert 0 < len(result["view"]) < len(whole) // 2, result["view"]


async def test_a_documentation_sites_search_and_a_click_to_another_page(
        topology: Topology, env: DevtoolsEnv, tabs: list[int], docs_site: Path) -> None:
    with serve_directory(topology.host("h1"), docs_site) as origin:
        opened = await browse(env.client, origin + "/", target="h1")
        tabs.append(opened["tab"])
        model = Model(env, opened["tab"], opened["view"])
        search = ref_of(model.view, "Search", "textbox")
        typed = await model.act({"do": "type", "ref": search, "text": "worker"},
                                {"do": "press", "key": "End"},
                                {"do": "wait_for", "text": "1 matching document"})
        _shorter(typed, model.view)
        assert "+" in typed["view"] and "1 matching document" in typed["view"]
        assert ref_of(model.view, "Search", "textbox") == search  # the same element
        # The result is a link around its title and summary: labelled by that text.
        found = ref_of(model.view, "Workers A web worker runs scripts off the main thread.")
        moved = await model.act({"do": "click", "ref": found},
                                {"do": "wait_for", "url": "/workers/"})
        assert "changes" not in moved, "another document: the whole view"
        assert moved["url"].startswith(origin + "/workers/")


async def test_each_step_on_a_page_of_controls(env: DevtoolsEnv, tabs: list[int]) -> None:
    tab, view = await open_view(env, tabs, "/browse/controls.html")
    model = Model(env, tab, view)
    after = ref_of(view, "After action", "button")
    _shorter(await model.act({"do": "click", "ref": after}), model.view)
    _shorter(await model.act({"do": "click", "ref": ref_of(view, "I agree", "checkbox")}),
             model.view)
    _shorter(await model.act({"do": "select", "ref": ref_of(view, "Fruit", "combobox"),
                              "label": "Cherry pie"}), model.view)
    _shorter(await model.act({"do": "click", "ref": after}, {"do": "click", "ref": after}),
             model.view)
    assert "after: 3" in model.view and "fruit=cherry agree=yes" in model.view
    still = await model.act({"do": "scroll", "by": 200})
    assert still["view"] == "" and still["changes"].startswith("no change since the last view")


async def test_a_change_bigger_than_half_the_page_is_the_whole_view(
        env: DevtoolsEnv, tabs: list[int]) -> None:
    tab, _ = await open_view(env, tabs, "/browse/controls.html")
    assert await js(env.client, tab, """(() => {
        const button = document.createElement('button');
        button.textContent = 'Rewrite';
        button.onclick = () => { document.body.innerHTML = Array.from({length: 40},
            (_, i) => `<p><button>Made ${i}</button> line ${i}</p>`).join(''); };
        document.body.prepend(button); return true; })()""")
    whole = await call_ok(env.client, "browse_view", {"tab": tab})
    model = Model(env, tab, whole["view"])
    rewritten = await model.act({"do": "click", "ref": ref_of(whole["view"], "Rewrite")})
    assert "changes" not in rewritten and "Made 39" in rewritten["view"]


async def test_after_a_narrowed_view_the_next_act_gives_the_whole_view(
        env: DevtoolsEnv, tabs: list[int]) -> None:
    tab, view = await open_view(env, tabs, "/browse/controls.html")
    part = await call_ok(env.client, "browse_view", {"tab": tab, "find": "after"})
    assert part["narrowed"]
    model = Model(env, tab, part["view"])  # all the model has seen of the page
    clicked = await model.act({"do": "click", "ref": ref_of(view, "After action", "button")})
    assert "changes" not in clicked and "after: 1" in clicked["view"]
    _shorter(await model.act({"do": "click", "ref": ref_of(view, "After action", "button")}),
             model.view)  # now it holds the whole view again
