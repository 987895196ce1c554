"""``browse_act``: every action type, with real input, checked against the page's own state.

One gateway for the module (target ``h1``) and a page server inside the host
(``tests/e2e/browse_site/``). What an action did is read back from the page itself —
``evaluate`` on the DOM, or what the page's scripts wrote — and from the fresh view
``browse_act`` returns. Refs are read from the view text every time (``ref_of``).

Timeouts here only bound how long a test may wait; nothing asserts how fast anything was.
"""

from __future__ import annotations

import json
import re
from typing import Any

import anyio
import pytest
from mcp.types import TextContent

from tests.e2e.helpers import DEFAULT_CALL_TIMEOUT, call_err, eventually, present
from tests.e2e.pages import (
    DevtoolsEnv,
    act,
    act_failing,
    js,
    open_view,
    page_fixtures,
    ref_of,
)

pytestmark = pytest.mark.anyio

OK = {"ok": True}  # a step that worked has no "error" at all


env, tabs = page_fixtures("browse-act")


def all_ok(result: dict[str, Any], *kinds: str) -> None:
    assert result["steps"] == [{"do": kind, **OK} for kind in kinds], result["steps"]


def failed(result: dict[str, Any], ran: int) -> str:
    """The error of the last step, after checking that exactly ``ran`` steps ran and only
    the last failed."""
    steps = result["steps"]
    assert len(steps) == ran, f"expected the batch to stop after step {ran}: {steps}"
    assert all(s["ok"] for s in steps[:-1]), steps
    assert steps[-1]["ok"] is False, steps
    assert steps[-1]["error"], steps
    return str(steps[-1]["error"])


# ---------------------------------------------------------------------------------- forms


async def test_form_filled_and_submitted_reaches_the_server(
    env: DevtoolsEnv, tabs: list[int]
) -> None:
    tab, view = await open_view(env, tabs, "/browse/form.html")
    result = await act(
        env.client, tab,
        {"do": "type", "ref": ref_of(view, "Full name", "textbox"), "text": "Ada Lovelace"},
        {"do": "type", "ref": ref_of(view, "Email", "textbox"), "text": "ada@example.org"},
        {"do": "type", "ref": ref_of(view, "About you", "textbox"),
         "text": "Wrote the first program"},
        {"do": "select", "ref": ref_of(view, "Plan", "combobox"), "label": "Team"},
        {"do": "check", "ref": ref_of(view, "I accept the terms", "checkbox")},
        {"do": "click", "ref": ref_of(view, "Phone", "radio")},
        {"do": "click", "ref": ref_of(view, "Create account", "button")},
    )
    all_ok(result, "type", "type", "type", "select", "check", "click", "click")
    # The click submitted the form: the view returned is the next page, showing what the
    # server received, in form order.
    assert result["url"].startswith(env.site("h1").url("/browse/echo?"))
    assert "title: csgw-echo" in result["view"]
    lines = [line.strip() for line in result["view"].splitlines()]
    received = [line[2:] for line in lines if line.startswith("- ")]
    assert received == ["fullname = Ada Lovelace", "email = ada@example.org",
                        "about = Wrote the first program", "plan = team", "terms = accepted",
                        "contact = phone"]


async def test_type_with_submit_presses_enter_in_the_field(
    env: DevtoolsEnv, tabs: list[int]
) -> None:
    tab, view = await open_view(env, tabs, "/browse/form.html")
    result = await act(env.client, tab, {"do": "type", "ref": ref_of(view, "Full name"),
                                         "text": "Grace Hopper", "submit": True})
    all_ok(result, "type")
    lines = [line.strip() for line in result["view"].splitlines()]
    # Enter submits with the defaults: nothing else typed, box unchecked, first radio.
    assert [line[2:] for line in lines if line.startswith("- ")] == [
        "fullname = Grace Hopper", "email =", "about =", "plan = free", "contact = mail"]


# ------------------------------------------------------------------- select / check state


async def test_select_check_and_uncheck_change_the_page_state(
    env: DevtoolsEnv, tabs: list[int]
) -> None:
    tab, view = await open_view(env, tabs, "/browse/controls.html")
    state = "[fruit.value, fruit.selectedOptions[0].label, agree.checked, letters.checked]"
    assert await js(env.client, tab, state) == ["apple", "Apple", False, True]

    result = await act(
        env.client, tab,
        {"do": "select", "ref": ref_of(view, "Fruit", "combobox"), "label": "Cherry pie"},
        {"do": "check", "ref": ref_of(view, "I agree", "checkbox")},
        {"do": "uncheck", "ref": ref_of(view, "Newsletter", "checkbox")},
    )
    all_ok(result, "select", "check", "uncheck")
    assert await js(env.client, tab, state) == ["cherry", "Cherry pie", True, False]
    # The page's own listeners saw it: select fires input + change; the boxes were clicked
    # (a real, trusted click, so their change events are trusted).
    assert await js(env.client, tab, "csgwEvents") == [
        "fruit:input", "fruit:change:false", "agree:change:true", "letters:change:true"]
    assert "state: fruit=cherry agree=yes letters=no" in result["view"]
    assert "*Cherry pie" in result["view"]
    assert f'checkbox#{ref_of(result["view"], "I agree")} "I agree" (checked)' in result["view"]
    assert "(checked)" not in next(line for line in result["view"].splitlines()
                                   if '"Newsletter"' in line)

    # By value this time; and check / uncheck of a box already in that state change nothing.
    view = result["view"]
    again = await act(
        env.client, tab,
        {"do": "select", "ref": ref_of(view, "Fruit"), "value": "banana"},
        {"do": "check", "ref": ref_of(view, "I agree")},
        {"do": "uncheck", "ref": ref_of(view, "Newsletter")},
    )
    all_ok(again, "select", "check", "uncheck")
    assert await js(env.client, tab, state) == ["banana", "Banana", True, False]
    assert (await js(env.client, tab, "csgwEvents"))[4:] == ["fruit:input", "fruit:change:false"]


async def test_select_of_a_missing_option_fails_and_names_the_options(
    env: DevtoolsEnv, tabs: list[int]
) -> None:
    tab, view = await open_view(env, tabs, "/browse/controls.html")
    result = await act_failing(
        env.client, tab, {"do": "select", "ref": ref_of(view, "Fruit"), "label": "Durian"},
        {"do": "check", "ref": ref_of(view, "I agree")})
    error = failed(result, 1)
    assert "Durian" in error and "Apple" in error and "Cherry pie" in error, error
    assert await js(env.client, tab, "[fruit.value, agree.checked]") == ["apple", False]


# -------------------------------------------------------------- clicks that must not happen


async def test_click_on_a_disabled_button_fails_and_stops_the_batch(
    env: DevtoolsEnv, tabs: list[int]
) -> None:
    tab, view = await open_view(env, tabs, "/browse/controls.html")
    result = await act_failing(
        env.client, tab, {"do": "click", "ref": ref_of(view, "Disabled action", "button")},
        {"do": "click", "ref": ref_of(view, "After action", "button")})
    error = failed(result, 1)
    assert "disabled" in error
    assert "Disabled action" in error
    assert await js(env.client, tab, "document.getElementById('after-out').textContent") == (
        "after: 0"), "the step after the failure must not run"
    assert "after: 0" in result["view"]


async def test_click_on_a_covered_button_fails_and_names_the_cover(
    env: DevtoolsEnv, tabs: list[int]
) -> None:
    tab, view = await open_view(env, tabs, "/browse/controls.html")
    result = await act_failing(
        env.client, tab, {"do": "click", "ref": ref_of(view, "Covered action", "button")},
        {"do": "click", "ref": ref_of(view, "After action", "button")})
    error = failed(result, 1)
    assert "covered" in error
    assert "overlay" in error, "the error should say what covers the button"
    # Nothing was clicked: neither the button nor the overlay on top of it.
    assert await js(env.client, tab, "[document.getElementById('covered-out').textContent, "
                                     "document.getElementById('after-out').textContent, "
                                     "csgwEvents]") == ["covered: 0", "after: 0", []]


async def test_a_failed_step_reaches_a_model_as_an_error_holding_the_steps_and_the_view(
    env: DevtoolsEnv, tabs: list[int]
) -> None:
    """As a client asks (no ``_meta``): a tool error, one text block — what Claude Code
    hands the model for an error (it ignores structured content then), and what a
    text-first client shows — saying which step failed, then the steps line and what
    changed on the page since the view the model holds; the refs of that view still
    name the elements that are there."""
    tab, view = await open_view(env, tabs, "/browse/controls.html")
    with anyio.fail_after(DEFAULT_CALL_TIMEOUT):
        result = await env.client.call_tool("browse_act", {"tab": tab, "actions": [
            {"do": "click", "ref": ref_of(view, "After action", "button")},
            {"do": "click", "ref": ref_of(view, "Disabled action", "button")},
            {"do": "click", "ref": ref_of(view, "After action", "button")}]})
    assert result.is_error
    assert result.structured_content is None, "a view reaches the model as text"
    [block] = result.content
    assert isinstance(block, TextContent)
    first, header, steps, *page = block.text.split("\n")
    assert first.startswith('step 2 of 3 (click) failed: button #'), first
    assert first.endswith("; the 1 after it did not run. What changed on the page since "
                          "the last view follows"), first
    assert re.fullmatch(rf"tab {tab} on h1 \(\d+ refs; changes since the last view: "
                        r"\+1 -1 of \d+ lines; browse_view for the whole\)", header), header
    assert steps.startswith("steps: click; click failed: button #") and "disabled" in steps
    assert page[0].startswith("@@ -"), page
    [removed] = [line for line in page if line.startswith("-")]
    [added] = [line for line in page if line.startswith("+")]
    assert "after: 0" in removed and "after: 1" in added, page
    again = ref_of(view, "After action", "button")  # unchanged: its ref is the same
    all_ok(await act(env.client, tab, {"do": "click", "ref": again}), "click")
    # The call log says error, with what failed; the next call, ok.
    logged = [json.loads(line) for line in env.call_log.read_text().splitlines()]
    acted = [line for line in logged if line["tool"] == "browse_act" and line["tab"] == tab]
    assert [line["outcome"] for line in acted] == ["error", "ok"], acted
    assert acted[0]["error"] == first, acted[0]


# ------------------------------------------------------------------------ real mouse input


async def test_click_is_a_trusted_event_on_the_element(env: DevtoolsEnv, tabs: list[int]) -> None:
    tab, view = await open_view(env, tabs, "/browse/controls.html")
    result = await act(env.client, tab, {"do": "click", "ref": ref_of(view, "Trusted check")})
    all_ok(result, "click")
    assert await js(env.client, tab, "csgwTrusted") == [
        {"trusted": True, "inside": True, "button": 0, "detail": 1}]
    assert "trusted: true" in result["view"]


async def test_double_click_and_right_click(env: DevtoolsEnv, tabs: list[int]) -> None:
    tab, view = await open_view(env, tabs, "/browse/controls.html")
    result = await act(
        env.client, tab,
        {"do": "click", "ref": ref_of(view, "Double me"), "count": 2},
        {"do": "click", "ref": ref_of(view, "Right me"), "button": "right"},
    )
    all_ok(result, "click", "click")
    assert "dblclick: 1" in result["view"]
    assert "contextmenu: 1 button 2" in result["view"]


async def test_hover_moves_the_mouse_onto_the_element(env: DevtoolsEnv, tabs: list[int]) -> None:
    tab, view = await open_view(env, tabs, "/browse/controls.html")
    probe = ("[document.getElementById('hover').matches(':hover'), "
             "getComputedStyle(document.getElementById('hover')).backgroundColor]")
    assert await js(env.client, tab, probe) == [False, "rgb(200, 200, 200)"]
    result = await act(env.client, tab, {"do": "hover", "ref": ref_of(view, "Hover me")})
    all_ok(result, "hover")
    assert "hover: yes (trusted true)" in result["view"]  # mouseenter fired, trusted
    assert await js(env.client, tab, probe) == [True, "rgb(0, 128, 0)"]  # and :hover applies
    assert await js(env.client, tab, "csgwTrusted") == [], "hovering must not click"


# ------------------------------------------------------------------------------- keyboard


async def test_control_a_then_type_replaces_the_field(env: DevtoolsEnv, tabs: list[int]) -> None:
    tab, view = await open_view(env, tabs, "/browse/keys.html")
    edit = ref_of(view, "Editable", "textbox")
    result = await act(env.client, tab,
                       {"do": "click", "ref": edit},
                       {"do": "press", "key": "Control+A"},
                       {"do": "type", "ref": edit, "text": "brand new"})
    all_ok(result, "click", "press", "type")
    assert await js(env.client, tab, "document.getElementById('edit').value") == "brand new"
    assert '"Editable" = "brand new"' in result["view"]
    # The chord was real key events: Control held while A went down.
    keys = await js(env.client, tab, "csgwKeys")
    assert {"key": "a", "ctrl": True, "shift": False, "trusted": True} in keys, keys


async def test_shift_tab_moves_focus_backwards(env: DevtoolsEnv, tabs: list[int]) -> None:
    tab, view = await open_view(env, tabs, "/browse/keys.html")
    focused = "document.activeElement.id"
    result = await act(env.client, tab, {"do": "click", "ref": ref_of(view, "Third")},
                       {"do": "press", "key": "Shift+Tab"})
    all_ok(result, "click", "press")
    assert await js(env.client, tab, focused) == "second"
    all_ok(await act(env.client, tab, {"do": "press", "key": "Shift+Tab"}), "press")
    assert await js(env.client, tab, focused) == "first"
    all_ok(await act(env.client, tab, {"do": "press", "key": "Tab"}), "press")
    assert await js(env.client, tab, focused) == "second"
    keys = await js(env.client, tab, "csgwKeys")
    assert {"key": "Tab", "ctrl": False, "shift": True, "trusted": True} in keys, keys


async def test_type_clear_replaces_and_enter_reaches_the_page(
    env: DevtoolsEnv, tabs: list[int]
) -> None:
    tab, view = await open_view(env, tabs, "/browse/keys.html")
    result = await act(
        env.client, tab,
        {"do": "type", "ref": ref_of(view, "Notes"), "text": "replaced", "clear": True},
        {"do": "type", "ref": ref_of(view, "Search", "searchbox"), "text": "kittens",
         "submit": True},
        {"do": "type", "ref": ref_of(view, "First"), "text": "one"},
        {"do": "type", "ref": ref_of(view, "First"), "text": " two"},
    )
    all_ok(result, "type", "type", "type", "type")
    assert await js(env.client, tab, "[notes.value, search.value, first.value]") == [
        "replaced", "kittens", "one two"]
    assert "searched: kittens" in result["view"]  # the page's keydown saw a real Enter


# --------------------------------------------------------------------------------- scroll


async def scroll_y(env: DevtoolsEnv, tab: int, wanted: float) -> float:
    """scrollY once it is ``wanted`` (±1 px): a wheel scroll may animate."""

    async def probe() -> float | None:
        y = float(await js(env.client, tab, "scrollY"))
        return y if abs(y - wanted) <= 1 else None

    return await eventually(probe, until=present, timeout=10, what=f"scrollY to reach {wanted}")


async def test_scroll_by_to_and_ref(env: DevtoolsEnv, tabs: list[int]) -> None:
    tab, _ = await open_view(env, tabs, "/browse/scroll.html")
    assert await js(env.client, tab, "scrollY") == 0
    bottom = await js(env.client, tab,
                      "document.scrollingElement.scrollHeight - innerHeight")
    assert bottom > 3000

    all_ok(await act(env.client, tab, {"do": "scroll", "by": 700}), "scroll")
    await scroll_y(env, tab, 700)
    all_ok(await act(env.client, tab, {"do": "scroll", "by": -300}), "scroll")
    await scroll_y(env, tab, 400)
    all_ok(await act(env.client, tab, {"do": "scroll", "to": "bottom"}), "scroll")
    await scroll_y(env, tab, bottom)
    result = await act(env.client, tab, {"do": "scroll", "to": "top"})
    all_ok(result, "scroll")
    await scroll_y(env, tab, 0)

    result = await act(env.client, tab, {"do": "scroll", "ref": ref_of(result["view"],
                                                                        "Middle button")})
    all_ok(result, "scroll")
    in_view = await js(env.client, tab, """(() => {
        const r = document.getElementById('middle').getBoundingClientRect();
        return [scrollY > 2000, r.top >= 0 && r.bottom <= innerHeight]; })()""")
    assert in_view == [True, True]

    # Exactly one of ref / to / by: the batch is refused before its first step.
    error = await call_err(env.client, "browse_act", {"tab": tab, "actions": [
        {"do": "scroll", "to": "top"}, {"do": "scroll", "to": "top", "by": 10}]})
    assert ("invalid arguments for browse_act: actions.1.scroll: Value error, scroll "
            "needs exactly one of ref, to or by") in error, error
    assert await js(env.client, tab, "scrollY > 2000") is True  # not scrolled to the top


# ------------------------------------------------------------------------------- wait_for


async def test_wait_for_text_that_appears_after_a_delay(env: DevtoolsEnv, tabs: list[int]) -> None:
    tab, view = await open_view(env, tabs, "/browse/waits.html")
    assert "Delayed hello" not in view
    result = await act(env.client, tab,
                       {"do": "click", "ref": ref_of(view, "Show later")},
                       {"do": "wait_for", "text": "Delayed hello", "timeout": 10})
    all_ok(result, "click", "wait_for")
    # The page added it 500 ms after the click; the view taken after the wait has it.
    assert "Delayed hello arrived" in result["view"]


async def test_wait_for_text_gone_ref_gone_and_url(env: DevtoolsEnv, tabs: list[int]) -> None:
    tab, view = await open_view(env, tabs, "/browse/waits.html")
    vanish = ref_of(view, "Vanish later")
    result = await act(env.client, tab,
                       {"do": "click", "ref": ref_of(view, "Hide banner")},
                       {"do": "wait_for", "text_gone": "Banner text", "timeout": 10},
                       {"do": "click", "ref": vanish},
                       {"do": "wait_for", "ref_gone": vanish, "timeout": 10},
                       {"do": "click", "ref": ref_of(view, "Push state later")},
                       {"do": "wait_for", "url": "pushed=yes", "timeout": 10})
    all_ok(result, "click", "wait_for", "click", "wait_for", "click", "wait_for")
    assert "Banner text" not in result["view"]
    assert '"Vanish later"' not in result["view"]
    assert result["url"].endswith("/browse/waits.html?pushed=yes")
    assert await js(env.client, tab, "[!!document.getElementById('banner'), "
                                     "!!document.getElementById('vanish')]") == [False, False]

    # A navigation the page starts by itself, later: wait for its URL.
    view = result["view"]
    result = await act(env.client, tab,
                       {"do": "click", "ref": ref_of(view, "Navigate later")},
                       {"do": "wait_for", "url": "arrived=later", "timeout": 10})
    all_ok(result, "click", "wait_for")
    assert result["url"] == env.site("h1").url("/browse/echo?arrived=later")
    assert "- arrived = later" in result["view"]


@pytest.mark.parametrize(("condition", "named"), [
    ({"text": "Never shows up"}, "'Never shows up' to appear"),
    ({"text_gone": "Banner text"}, "'Banner text' to go away"),
    ({"url": "never-there"}, "'never-there'"),
    ({"ref_gone": "Show later"}, "to go away"),
])
async def test_wait_for_that_never_happens_times_out_naming_it(
    env: DevtoolsEnv, tabs: list[int], condition: dict[str, Any], named: str
) -> None:
    tab, view = await open_view(env, tabs, "/browse/waits.html")
    if "ref_gone" in condition:  # named by the button's name: its ref is read from the view
        ref = ref_of(view, condition["ref_gone"])
        condition = {"ref_gone": ref}
        named = f"ref #{ref} {named}"
    result = await act_failing(env.client, tab, {"do": "wait_for", **condition, "timeout": 1},
                               {"do": "click", "ref": ref_of(view, "Show later")})
    error = failed(result, 1)
    assert "timed out" in error, error
    assert named in error, error
    assert await js(env.client, tab, "csgwClicks") == [], "the step after it must not run"
