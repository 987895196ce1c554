"""``browse`` / ``browse_view``: the page as text, with refs that each name one element.

One gateway for the module, with both hosts as targets and a page server inside each
(``tests/e2e/browse_site/`` and the renderer's captured pages, ``fixtures/pages/``).
Every test opens its own tabs and closes them: other sessions may use the same
browsers at the same time, so a test only counts tabs that show its own server's URLs.

Refs are always read from the view text (``ref_of``): an element keeps its ref across
views of its document and a new one gets a number no view of the tab gave, so a view's
first ref is not necessarily ``#1``.
"""

from __future__ import annotations

import re
from collections import Counter

import pytest

from tests.e2e.helpers import call_err, call_ok, eventually, remote_pages
from tests.e2e.pages import (
    DevtoolsEnv,
    PageSite,
    act,
    act_failing,
    browse,
    js,
    open_page,
    page_fixtures,
    ref_of,
    view_refs,
)
from tests.topology import Topology

pytestmark = pytest.mark.anyio

HOSTS = ("h1", "h2")


env, tabs = page_fixtures("browse-view", HOSTS)


def site(env: DevtoolsEnv, target: str = "h1") -> PageSite:
    return env.site(target)


def numbers(view: str) -> list[int]:
    return [r.number for r in view_refs(view)]


def own_pages(env: DevtoolsEnv, topology: Topology, target: str) -> list[str]:
    """URLs of the pages ``target``'s browser really has that come from our server
    (its ``/json/list``, read inside the host: not the gateway's idea of it)."""
    origin = site(env, target).origin + "/"
    return [p["url"] for p in remote_pages(topology.host(target)) if p["url"].startswith(origin)]


# ------------------------------------------------------------------------- new / existing


async def test_browse_opens_a_new_tab_then_reuses_a_given_one(
    env: DevtoolsEnv, topology: Topology, tabs: list[int]
) -> None:
    links, second = site(env).url("/browse/links.html"), site(env).url("/browse/second.html")
    before = {t["tab"] for t in (await call_ok(env.client, "list_tabs", {"target": "h1"}))["tabs"]}

    first = await browse(env.client, links, target="h1")
    tabs.append(first["tab"])
    assert first["tab"] not in before, "browse without a tab must open a new one"
    assert first["target"] == "h1"
    assert first["url"] == links
    assert "truncated" not in first
    assert "title: csgw-links" in first["view"]
    assert own_pages(env, topology, "h1") == [links]

    again = await browse(env.client, second, tab=first["tab"])
    assert again["tab"] == first["tab"], "browse with a tab must load the URL in that tab"
    assert again["target"] == "h1"
    assert again["url"] == second
    assert "title: csgw-second" in again["view"]
    assert "# Second page" in again["view"]
    # The browser really has the second page where the first was, and no other page.
    await eventually(lambda: _now(own_pages(env, topology, "h1") == [second]),
                     timeout=10, what="the tab to show the second page instead of the first")
    listing = await call_ok(env.client, "list_tabs", {"target": "h1"})
    assert [t["url"] for t in listing["tabs"] if t["tab"] == first["tab"]] == [second]

    # Another browse without a tab is another new tab, next to the first.
    third = await browse(env.client, links, target="h1")
    tabs.append(third["tab"])
    assert third["tab"] not in (first["tab"], *before)
    assert sorted(own_pages(env, topology, "h1")) == sorted([links, second])


async def test_list_tabs_has_the_title_of_the_page_a_view_showed(
    env: DevtoolsEnv, tabs: list[int]
) -> None:
    """Chrome announces a tab's URL at commit, titled with the URL, and then not always
    its document's title: list_tabs showed '127.0.0.1:PORT/browse/links.html' after
    browse, and after a click to another page, the old page's title."""
    first = await browse(env.client, site(env).url("/browse/links.html"), target="h1")
    tabs.append(first["tab"])

    async def title() -> str:
        listing = await call_ok(env.client, "list_tabs", {"target": "h1"})
        return str(next(t["title"] for t in listing["tabs"] if t["tab"] == first["tab"]))

    assert await title() == "csgw-links"
    ref = ref_of(first["view"], "Second page")
    clicked = await act(env.client, first["tab"], {"do": "click", "ref": ref})
    assert "title: csgw-second" in clicked["view"], clicked["view"]
    assert await title() == "csgw-second"


async def _now(value: bool) -> bool:
    return value


async def test_browse_on_another_target_uses_that_browser(
    env: DevtoolsEnv, topology: Topology, tabs: list[int]
) -> None:
    url = site(env, "h2").url("/browse/links.html")
    result = await browse(env.client, url, target="h2")
    tabs.append(result["tab"])
    assert result["target"] == "h2"
    assert "# Links and headings" in result["view"]
    assert own_pages(env, topology, "h2") == [url]
    h1_tabs = (await call_ok(env.client, "list_tabs", {"target": "h1"}))["tabs"]
    assert result["tab"] not in [t["tab"] for t in h1_tabs]
    # The tab id names the h2 tab from then on: browse_view needs no target.
    view = await call_ok(env.client, "browse_view", {"tab": result["tab"]})
    assert view["target"] == "h2"
    assert view["url"] == url
    # Naming the wrong target for the tab is refused, not silently redirected.
    error = await call_err(env.client, "browse", {"url": url, "tab": result["tab"],
                                                  "target": "h1"})
    assert f"tab {result['tab']} belongs to target 'h2'" in error


# ----------------------------------------------------------------------- what a view shows


async def test_view_has_headings_landmarks_and_links_with_destinations(
    env: DevtoolsEnv, tabs: list[int]
) -> None:
    s = site(env)
    result = await browse(env.client, s.url("/browse/links.html"), target="h1")
    tabs.append(result["tab"])
    view = result["view"]
    lines = view.splitlines()
    assert lines[0] == f"url: {s.url('/browse/links.html')}"
    assert lines[1] == "title: csgw-links"
    for heading in ("# Links and headings", "## Details section", "### Deeper heading"):
        assert any(line.strip() == heading for line in lines), (heading, view)
    assert any(line.strip() == 'nav "Site"' for line in lines), view
    assert any(line.strip() == "main" for line in lines), view
    assert "Intro paragraph with a" in view

    links = {r.name: r.link for r in view_refs(view) if r.role == ""}
    cross = f"http://localhost:{s.ports['b']}/browse/second.html?from=links"
    assert links == {
        "Second page": "/browse/second.html",          # same origin: the path
        "Jump to details": "#details",                  # same document: the fragment
        "Elsewhere": cross,                             # another origin: the whole URL
        "topic link": "/browse/echo?topic=inline",      # a query string is kept
    }
    assert ref_of(view, "Count clicks", "button")
    # Document order: the nav comes before the main content, headings in order.
    assert view.index("Second page") < view.index("# Links and headings") < view.index(
        "## Details section") < view.index("### Deeper heading") < view.index("Count clicks")

    # `refs` counts the refs printed, and they count up by one in document order.
    printed = numbers(view)
    assert result["refs"] == len(printed) == 5
    assert printed == list(range(printed[0], printed[0] + len(printed)))


async def test_news_page_every_link_has_a_ref_and_its_destination(
    env: DevtoolsEnv, tabs: list[int]
) -> None:
    """The captured news front page, live: each visible link of the DOM is in the view,
    with a ref and the destination the renderer's rules give for it."""
    s = site(env)
    result = await browse(env.client, s.url("/fixture/news.html"), target="h1")
    tabs.append(result["tab"])
    assert "truncated" not in result
    expected = await js(env.client, result["tab"], r"""
        Array.from(document.querySelectorAll('a[href]'))
          .filter(a => a.getClientRects().length > 0)
          .map(a => {
            const url = a.href, same = url.startsWith(location.origin + '/');
            const shown = same ? url.slice(location.origin.length) : url;
            return shown.length <= 80 ? shown : shown.slice(0, 79) + '\u2026';
          })""")
    assert len(expected) > 200, "the news page should have a big link table"
    wanted = set(expected)
    # Inline text runs on after a link's target: "(… ->/from?site=x)" ends in ")".
    shown = [r.link if r.link in wanted else r.link.rstrip(").,")
             for r in view_refs(result["view"]) if r.link is not None]
    assert Counter(shown) == Counter(expected)
    assert result["refs"] >= len(expected)


# ---------------------------------------------------------------------------- ref lifetime


async def test_browse_view_keeps_the_refs_of_a_documents_elements(
    env: DevtoolsEnv, tabs: list[int]
) -> None:
    result = await browse(env.client, site(env).url("/browse/links.html"), target="h1")
    tab = result["tab"]
    tabs.append(tab)
    first = await call_ok(env.client, "browse_view", {"tab": tab})
    second = await call_ok(env.client, "browse_view", {"tab": tab})
    assert first["url"] == second["url"] == result["url"]
    assert result["view"] == first["view"] == second["view"]  # the same refs, too
    assert first["refs"] == second["refs"] == result["refs"]
    # A new document: every element is new, and so is every number.
    await call_ok(env.client, "navigate", {"tab": tab, "url": result["url"]})
    reloaded = await call_ok(env.client, "browse_view", {"tab": tab})
    assert re.sub(r"#\d+", "#N", reloaded["view"]) == re.sub(r"#\d+", "#N", first["view"])
    assert min(numbers(reloaded["view"])) > max(numbers(first["view"]))


async def test_ref_of_an_element_gone_from_the_page_is_rejected(
    env: DevtoolsEnv, tabs: list[int]
) -> None:
    result = await browse(env.client, site(env).url("/browse/links.html"), target="h1")
    tab = result["tab"]
    tabs.append(tab)
    old = ref_of(result["view"], "Count clicks", "button")
    second = ref_of(result["view"], "Second page")
    # A script makes the button again (as frameworks re-render): a new element.
    assert await js(env.client, tab, """(() => {
        const old = document.getElementById('count'), made = old.cloneNode(true);
        made.addEventListener('click', () => {
            document.getElementById('count-out').textContent = 'clicks: ' + ++clicks; });
        old.replaceWith(made); return true; })()""")
    current = await call_ok(env.client, "browse_view", {"tab": tab})
    made = ref_of(current["view"], "Count clicks", "button")
    assert made > max(numbers(result["view"])), "a new element, a number never given"
    assert ref_of(current["view"], "Second page") == second, "the link is the same element"

    refused = await act_failing(env.client, tab, {"do": "click", "ref": old})
    assert len(refused["steps"]) == 1
    step = refused["steps"][0]
    assert step["ok"] is False
    assert f"#{old}" in step["error"]
    assert "not in the current view" in step["error"]
    assert await js(env.client, tab, "document.getElementById('count-out').textContent") == (
        "clicks: 0"), "a ref of an element gone must not click anything"

    done = await act(env.client, tab, {"do": "click", "ref": made})
    assert done["steps"] == [{"do": "click", "ok": True}]
    assert "clicks: 1" in done["view"]


async def test_ref_from_before_a_navigation_is_stale(env: DevtoolsEnv, tabs: list[int]) -> None:
    s = site(env)
    result = await browse(env.client, s.url("/browse/links.html"), target="h1")
    tab = result["tab"]
    tabs.append(tab)
    count = ref_of(result["view"], "Count clicks", "button")

    # The page navigates (not through browse, so the tab's last view is still this one).
    await call_ok(env.client, "navigate", {"tab": tab, "url": s.url("/browse/second.html")})
    refused = await act_failing(env.client, tab, {"do": "click", "ref": count})
    [step] = refused["steps"]
    assert step["ok"] is False
    assert "stale" in step["error"] and f"#{count}" in step["error"], step
    assert refused["url"] == s.url("/browse/second.html")
    assert "# Second page" in refused["view"]


async def test_ref_is_stale_after_a_click_in_the_same_batch_navigated(
    env: DevtoolsEnv, tabs: list[int]
) -> None:
    s = site(env)
    result = await browse(env.client, s.url("/browse/links.html"), target="h1")
    tab = result["tab"]
    tabs.append(tab)
    view = result["view"]
    done = await act_failing(env.client, tab,
                             {"do": "click", "ref": ref_of(view, "Second page", "")},
                             {"do": "click", "ref": ref_of(view, "Count clicks", "button")},
                             {"do": "click", "ref": ref_of(view, "Jump to details", "")})
    assert len(done["steps"]) == 2, "the batch stops at the first failure"
    assert done["steps"][0] == {"do": "click", "ok": True}
    assert done["steps"][1]["ok"] is False
    assert "stale" in done["steps"][1]["error"]
    assert done["url"] == s.url("/browse/second.html")
    assert "# Second page" in done["view"]
    # Every ref of the pre-navigation view is refused now, also against the new page's
    # numbering: the new view's refs are all above the old ones.
    assert min(numbers(done["view"])) > max(numbers(view))


async def test_acting_on_a_tab_without_a_view_asks_for_one(
    env: DevtoolsEnv, tabs: list[int]
) -> None:
    tab = await open_page(env.client, site(env), "/browse/links.html", "h1")
    tabs.append(tab)
    refused = await act_failing(env.client, tab, {"do": "click", "ref": 1})
    [step] = refused["steps"]
    assert step["ok"] is False
    assert "browse_view" in step["error"]
    assert await js(env.client, tab, "document.getElementById('count-out').textContent") == (
        "clicks: 0")
