"""Refs in every frame the view shows — same-origin and cross-site iframes — and in
shadow roots: read in the view, and acted on with real input at the right place.

The cross-site frames come from the page server's second port under another site name
(``http://localhost:<b>``), so Chromium runs them out of process: each is a CDP target
of its own (checked with ``Target.getTargets``, not assumed). ``evaluate`` runs in the
top document only, so what happened inside a cross-site frame is read from a fresh
``browse_view``; inside a same-origin frame, through ``contentDocument``.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.helpers import call_ok
from tests.e2e.pages import (
    DevtoolsEnv,
    act,
    act_failing,
    browse,
    js,
    open_view,
    page_fixtures,
    ref_of,
)

pytestmark = pytest.mark.anyio

OK = {"ok": True}  # a step that worked has no "error" at all
ROUNDS = 5  # fresh loads for a click that races a scroll (see the below-the-fold test)
SAME_OUT = "document.getElementById('same').contentDocument.getElementById('same-out').textContent"


env, tabs = page_fixtures("browse-frames")


def cross_site(env: DevtoolsEnv, path: str) -> str:
    """A URL on the page server's second port, under another site (an OOPIF when framed)."""
    return f"http://localhost:{env.site('h1').ports['b']}{path}"


async def fits_viewport(env: DevtoolsEnv, tab: int) -> None:
    """The page needs no scrolling: what a test clicks is reached without a scroll (the
    below-the-fold test is the one about scrolling to a frame)."""
    assert await js(env.client, tab, "document.scrollingElement.scrollHeight <= innerHeight")


async def view_of(env: DevtoolsEnv, tab: int) -> str:
    return str((await call_ok(env.client, "browse_view", {"tab": tab}))["view"])


def block_after(view: str, header: str) -> str:
    """The indented lines under a ``frame …`` (or other block) line of the view."""
    lines = view.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == header)
    indent = len(lines[start]) - len(lines[start].lstrip())
    block = []
    for line in lines[start + 1:]:
        if line.strip() and len(line) - len(line.lstrip()) <= indent:
            break
        block.append(line)
    return "\n".join(block)


def all_ok(result: dict[str, Any], *kinds: str) -> None:
    assert result["steps"] == [{"do": kind, **OK} for kind in kinds], result["steps"]


# ------------------------------------------------------------------------------- reading


async def test_cross_site_iframe_is_out_of_process_and_in_the_view(
    env: DevtoolsEnv, tabs: list[int]
) -> None:
    _, view = await open_view(env, tabs, "/browse/frames.html")
    frame_url = cross_site(env, "/browse/frame-cross.html")
    targets = await call_ok(env.client, "cdp_command",
                            {"method": "Target.getTargets", "target": "h1"})
    kinds = [t["type"] for t in targets["result"]["targetInfos"] if t["url"] == frame_url]
    assert kinds == ["iframe"], f"the cross-site frame should be a target of its own: {kinds}"

    cross = block_after(view, f'frame "Cross site frame" {frame_url}')
    assert "Payment pending" in cross
    for name in ("Decline payment", "Confirm payment"):
        assert f'button#{ref_of(view, name)} "{name}"' in cross
    assert f'textbox#{ref_of(view, "Card holder")} "Card holder"' in cross
    same = block_after(view, 'frame "Same origin frame" /browse/frame-same.html')
    assert "Same origin content." in same
    assert f'button#{ref_of(view, "Same frame button")} "Same frame button"' in same
    # Document order: the main page's button, then the frames where their iframes sit.
    assert view.index("Main button") < view.index("Same frame button") < view.index(
        "Confirm payment")


# ------------------------------------------------------------------------------- acting


async def test_click_inside_a_cross_site_iframe(env: DevtoolsEnv, tabs: list[int]) -> None:
    tab, view = await open_view(env, tabs, "/browse/frames.html")
    await fits_viewport(env, tab)
    result = await act(env.client, tab, {"do": "click", "ref": ref_of(view, "Confirm payment")})
    all_ok(result, "click")
    fresh = await view_of(env, tab)
    cross = block_after(fresh, f'frame "Cross site frame" '
                               f'{cross_site(env, "/browse/frame-cross.html")}')
    # The frame's own click handler ran, for a trusted click ...
    assert "Payment confirmed (trusted true)" in cross
    assert "Payment pending" not in cross
    # ... and only there: not its neighbour, not the main page, not the other frame.
    assert "declined" not in fresh
    assert await js(env.client, tab, "document.getElementById('main-out').textContent") == (
        "main: 0")
    assert await js(env.client, tab, SAME_OUT) == "same: 0"

    # Its neighbour, with the refs of the fresh view.
    result = await act(env.client, tab, {"do": "click", "ref": ref_of(fresh, "Decline payment")})
    all_ok(result, "click")
    assert "Payment declined" in result["view"]


async def test_type_inside_a_cross_site_iframe(env: DevtoolsEnv, tabs: list[int]) -> None:
    tab, view = await open_view(env, tabs, "/browse/frames.html")
    await fits_viewport(env, tab)
    result = await act(env.client, tab,
                       {"do": "type", "ref": ref_of(view, "Card holder"), "text": "Ada L."})
    all_ok(result, "type")
    assert f'textbox#{ref_of(result["view"], "Card holder")} "Card holder" = "Ada L."' in (
        result["view"])


async def test_click_inside_a_same_origin_iframe(env: DevtoolsEnv, tabs: list[int]) -> None:
    tab, view = await open_view(env, tabs, "/browse/frames.html")
    await fits_viewport(env, tab)
    result = await act(env.client, tab,
                       {"do": "click", "ref": ref_of(view, "Same frame button")},
                       {"do": "click", "ref": ref_of(view, "Main button")})
    all_ok(result, "click", "click")
    assert await js(env.client, tab, SAME_OUT) == "same: 1 trusted true"
    assert await js(env.client, tab, "document.getElementById('main-out').textContent") == (
        "main: 1")
    assert "Payment pending" in result["view"]
    assert await js(env.client, tab, "scrollY") == 0


async def test_click_in_a_cross_site_iframe_below_the_fold(
    env: DevtoolsEnv, tabs: list[int]
) -> None:
    """The frame starts out of sight: the page has to be scrolled to it, and the click
    point translated with the frame's position after that scroll. Done a few times on
    fresh loads, since a click sent too early after the scroll can be lost on the way
    into the frame's process (the parent page then sees it on the <iframe> element)."""
    tab: int | None = None
    for round_ in range(ROUNDS):
        path = f"/browse/frames-far.html?round={round_}"
        result = await browse(env.client, env.site("h1").url(path), target="h1", tab=tab)
        if tab is None:
            tab = int(result["tab"])
            tabs.append(tab)
        assert await js(env.client, tab, """(() => {
            const r = document.getElementById('cross').getBoundingClientRect();
            return r.top > innerHeight; })()""")
        done = await act(env.client, tab,
                         {"do": "click", "ref": ref_of(result["view"], "Confirm payment")})
        all_ok(done, "click")
        parent = await js(env.client, tab, "[scrollY, csgwParentDowns]")
        assert "Payment confirmed (trusted true)" in done["view"], (
            f"round {round_}: the click reported ok but never reached the button; "
            f"the parent page saw [scrollY, its mousedowns] = {parent}")
        assert parent[0] > 0


async def test_nested_cross_site_frames_of_the_captured_checkout_page(
    env: DevtoolsEnv, tabs: list[int]
) -> None:
    """fixtures/pages/frames.html, live: a cross-site frame with a frame of its own."""
    tab, view = await open_view(env, tabs, "/fixture/frames.html")
    payment = block_after(view, f'frame "Payment provider" '
                                f'{cross_site(env, "/fixture/frame-cross.html")}')
    assert "(checked)" in next(line for line in payment.splitlines()
                               if "Save card for next time" in line)
    assert "Verify" in block_after(view, f'frame "3-D Secure" '
                                         f'{cross_site(env, "/fixture/frame-nested.html")}')
    result = await act(
        env.client, tab,
        {"do": "uncheck", "ref": ref_of(view, "Save card for next time", "checkbox")},
        {"do": "type", "ref": ref_of(view, "Card number", "textbox"), "text": "4242"},
        {"do": "click", "ref": ref_of(view, "Verify", "button")},
        {"do": "type", "ref": ref_of(view, "Promo code", "textbox"), "text": "SPRING10"},
    )
    all_ok(result, "uncheck", "type", "click", "type")
    fresh = result["view"]
    line = next(x for x in fresh.splitlines() if "Save card for next time" in x)
    assert "(checked)" not in line, line
    assert f'textbox#{ref_of(fresh, "Card number")} "Card number" = "4242"' in fresh
    assert f'textbox#{ref_of(fresh, "Promo code")} "Promo code" = "SPRING10"' in fresh


@pytest.mark.parametrize("name", ["Same frame button", "Confirm payment"],
                         ids=["same-origin", "cross-site"])
async def test_element_in_a_frame_covered_by_the_parent_page_is_not_clicked(
    env: DevtoolsEnv, tabs: list[int], name: str
) -> None:
    """A veil in the top document lies over each iframe: a person's click at the button
    lands on the veil, so the action must fail as covered — in a same-origin frame and
    in a cross-site one alike — and never report ok while the veil gets the click."""
    tab, view = await open_view(env, tabs, "/browse/frames-covered.html")
    await fits_viewport(env, tab)
    result = await act_failing(env.client, tab, {"do": "click", "ref": ref_of(view, name)},
                               {"do": "click", "ref": ref_of(view, "Decline payment")})
    veiled = await js(env.client, tab, "csgwVeil")
    step = result["steps"][0]
    assert step["ok"] is False and "covered" in (step["error"] or ""), (
        f"click on {name!r} under the parent's veil: {step}; the veil got clicks: {veiled}")
    assert len(result["steps"]) == 1, "the batch stops at the failed click"
    assert veiled == []


async def test_refs_inside_open_shadow_roots(env: DevtoolsEnv, tabs: list[int]) -> None:
    """fixtures/pages/shadow.html, live: controls inside open shadow roots, one nested."""
    tab, view = await open_view(env, tabs, "/fixture/shadow.html")
    await js(env.client, tab, """
        window.csgwShadow = [];
        const search = document.querySelector('search-box').shadowRoot;
        search.querySelector('inner-clear').shadowRoot.querySelector('button')
          .addEventListener('click', (e) => csgwShadow.push('clear:' + e.isTrusted));
        document.querySelectorAll('user-card')[1].shadowRoot.querySelector('.follow')
          .addEventListener('click', (e) => csgwShadow.push('follow:' + e.isTrusted));
        true""")
    result = await act(
        env.client, tab,
        {"do": "type", "ref": ref_of(view, "Search components", "searchbox"), "text": "moths"},
        {"do": "click", "ref": ref_of(view, "Clear search", "button")},
        {"do": "click", "ref": ref_of(view, "Follow grace", "button")},
    )
    all_ok(result, "type", "click", "click")
    assert await js(env.client, tab, "csgwShadow") == ["clear:true", "follow:true"]
    assert await js(env.client, tab, "document.querySelector('search-box').shadowRoot"
                                     ".querySelector('input').value") == "moths"
    assert '"Search components" = "moths"' in result["view"]


async def test_refs_inside_a_closed_shadow_root(env: DevtoolsEnv, tabs: list[int]) -> None:
    """The view shows the closed root's field with a ref, so typing into it must work
    (a person can click it; the page's script just cannot reach into the root)."""
    tab, view = await open_view(env, tabs, "/fixture/shadow.html")
    assert '"Secret field" = "42"' in view
    result = await act(env.client, tab, {"do": "type", "ref": ref_of(view, "Secret field"),
                                         "text": "43", "clear": True})
    all_ok(result, "type")
    assert '"Secret field" = "43"' in result["view"]
