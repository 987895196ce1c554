"""``browse_view`` narrowed: ``find`` (only the lines that match, under their headings)
and ``within`` (only the part of the page holding a ref), on h1's real Chromium.

The shop page (``browse_site/shop.html``) is long: eight departments of products, each
with an "Add to cart" button that writes what was added into the page's status line.
"""

from __future__ import annotations

import re

import pytest

from tests.e2e.helpers import call_err, call_ok
from tests.e2e.pages import DevtoolsEnv, act, js, open_page, page_fixtures, view_refs

pytestmark = pytest.mark.anyio

env, tabs = page_fixtures("browse-find")


async def shop(env: DevtoolsEnv, tabs: list[int]) -> tuple[int, str]:
    """A tab on the shop page, and its whole view."""
    tab = await open_page(env.client, env.site("h1"), "/browse/shop.html", "h1")
    tabs.append(tab)
    whole = await call_ok(env.client, "browse_view", {"tab": tab})
    assert "narrowed" not in whole
    return tab, whole["view"]


def body(view: str) -> list[str]:
    return view.partition("\n\n")[2].split("\n")


async def test_find_returns_only_matching_lines_under_their_heading(
    env: DevtoolsEnv, tabs: list[int]
) -> None:
    tab, whole = await shop(env, tabs)
    found = await call_ok(env.client, "browse_view", {"tab": tab, "find": "GIFT card"})
    lines = body(found["view"])
    assert found["view"].startswith("url: " + env.site("h1").url("/browse/shop.html"))
    matching = [line for line in lines if "gift card" in line.lower()]
    assert len(matching) == 1 and "£" in matching[0] and '"Add to cart"' in matching[0]
    # placed: under main, the page's heading and its department's heading, nothing else
    assert [line.strip() for line in lines] == [
        "main", "# Household shop", "## Vouchers", matching[0].strip()]
    total = sum(1 for line in body(whole) if line.strip())
    assert found["narrowed"] == f"1 of {total} lines match 'GIFT card'"
    assert len(found["view"]) * 10 < len(whole)
    assert found["refs"] == len(view_refs(whole))  # the refs kept are the whole view's


async def test_a_ref_from_a_found_line_acts(env: DevtoolsEnv, tabs: list[int]) -> None:
    tab, _ = await shop(env, tabs)
    found = await call_ok(env.client, "browse_view", {"tab": tab, "find": "kettle"})
    [button] = [r for r in view_refs(found["view"]) if r.name == "Add to cart"]
    done = await act(env.client, tab, {"do": "click", "ref": button.number})
    assert done["steps"][0]["ok"], done["steps"]
    assert await js(env.client, tab, "document.getElementById('status').textContent") == \
        "Added: Kettle"


async def test_find_a_regex_and_a_bad_one(env: DevtoolsEnv, tabs: list[int]) -> None:
    tab, _ = await shop(env, tabs)
    found = await call_ok(env.client, "browse_view", {"tab": tab, "find": "/^- (Kite|Hose) /"})
    items = [line.strip() for line in body(found["view"]) if line.strip().startswith("- ")]
    assert [item.split(" — ")[0] for item in items] == ["- Hose", "- Kite"]
    assert "## Garden" in found["view"] and "## Toys" in found["view"]
    assert "## Kitchen" not in found["view"]
    error = await call_err(env.client, "browse_view", {"tab": tab, "find": r"/(a)\1/"})
    assert "RE2" in error and "backreferences" in error, error


async def test_within_a_ref_returns_only_that_part(env: DevtoolsEnv, tabs: list[int]) -> None:
    tab, whole = await shop(env, tabs)
    [email] = [r for r in view_refs(whole) if r.name == "Email"]
    part = await call_ok(env.client, "browse_view", {"tab": tab, "within": email.number})
    lines = body(part["view"])
    assert lines[0] == 'form "Newsletter"', part["view"]
    assert any("Subscribe" in line for line in lines)
    assert "Gift card" not in part["view"] and "# Household shop" not in part["view"]
    assert part["narrowed"] == f"within the form holding #{email.number}"
    # its refs act: typed into the field the part shows
    [field] = [r for r in view_refs(part["view"]) if r.name == "Email"]
    await act(env.client, tab, {"do": "type", "ref": field.number, "text": "a@b.example"})
    assert await js(env.client, tab, "document.querySelector('input').value") == "a@b.example"


async def test_within_and_find_together(env: DevtoolsEnv, tabs: list[int]) -> None:
    tab, whole = await shop(env, tabs)
    [lamp] = [line for line in body(whole) if "Desk lamp" in line]
    number = next(r.number for r in view_refs(lamp))
    part = await call_ok(env.client, "browse_view",
                         {"tab": tab, "within": number, "find": "desk"})
    [line] = body(part["view"])  # the list item alone (refs count on across views)
    assert re.sub(r"#\d+", "#N", line) == re.sub(r"#\d+", "#N", lamp.strip())
    assert part["narrowed"] == (f"within the list item holding #{number}, "
                                "1 of 1 lines match 'desk'")


async def test_within_a_stale_ref_is_the_stale_ref_error(
    env: DevtoolsEnv, tabs: list[int]
) -> None:
    tab, whole = await shop(env, tabs)
    old = view_refs(whole)[0].number
    again = env.site("h1").url("/browse/shop.html")
    await call_ok(env.client, "navigate", {"tab": tab, "url": again})
    await call_ok(env.client, "browse_view", {"tab": tab})  # a new document: new refs
    error = await call_err(env.client, "browse_view", {"tab": tab, "within": old})
    assert f"ref #{old} is not in the current view" in error, error
