"""A data browser's long table in the view: its first rows, how many more, and every row
still reachable — Datasette (from PyPI) over 2,000 bike trips, on the test host.

The whole view shortens a run of more than 30 rows to its first 20 and a line saying how
many more and how to see them (``gateway.page.view.compact``); ``find`` reads the whole
page, a ref of a row the view left out still acts, and a change set after an act is
taken against the shortened view the model holds.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from tests.e2e.helpers import call_ok
from tests.e2e.pages import DevtoolsEnv, Model, act, browse, page_fixtures, view_refs
from tests.e2e.real_apps import seed_trips, serve_datasette
from tests.topology import Topology

pytestmark = pytest.mark.anyio

env, tabs = page_fixtures("long-tables")


@pytest.fixture(scope="module")
def datasette(topology: Topology, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("datasette")
    root.chmod(0o755)
    with serve_datasette(topology.host("h1"), seed_trips(root / "trips.db")) as origin:
        yield origin


async def test_a_hundred_rows_show_twenty_and_the_rest_are_found_and_acted_on(
        env: DevtoolsEnv, tabs: list[int], datasette: str) -> None:
    opened = await browse(env.client, f"{datasette}/trips/trips?_size=100", target="h1")
    tab = opened["tab"]
    tabs.append(tab)
    view = opened["view"]
    assert "/trips/trips/18 |" in view and "/trips/trips/19 |" not in view  # head + 18 rows
    assert "… 82 more rows like these: browse_view find (their text) shows them" in view

    # An act on the shortened page: what changed, against the view the model holds.
    model = Model(env, tab, view)
    value = next(r.number for r in view_refs(view) if r.name == "[name=_filter_value]")
    typed = await model.act({"do": "type", "ref": value, "text": "Station 16"})
    assert "changes" in typed and typed["view"].count("\n+") == 1, typed["view"]

    every = await call_ok(env.client, "browse_view", {"tab": tab, "find": "/./"})
    assert "/trips/trips/100 |" in every["view"], "find reads the whole page"
    assert len(view) < 0.45 * len(every["view"]), (len(view), len(every["view"]))
    # A row the view left out: found by its text, and its ref acts.
    found = await call_ok(env.client, "browse_view", {"tab": tab, "find": "Station 16"})
    [row] = [line for line in found["view"].split("\n") if "/trips/trips/84 |" in line]
    ref = int(re.search(r"#(\d+)", row)[1])  # type: ignore[index]
    assert f"#{ref} " not in view, "the row was not in the whole view"
    moved = await act(env.client, tab, {"do": "click", "ref": ref})
    assert moved["url"] == f"{datasette}/trips/trips/84"
    assert "Station 16" in moved["view"] and "changes" not in moved

