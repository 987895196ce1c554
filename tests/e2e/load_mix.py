"""The mixed load of many agents on one gateway, shared by ``test_load.py`` and
``benchmarks/run.py`` (``--phases load,flood``).

Each ``Caller`` is one simulated agent with a tab of its own on one target; its page's
title is the caller's token. ``call_checked`` makes one call of a kind and asserts that
the reply belongs to that very call: ``evaluate`` and tab-level ``Runtime.evaluate``
echo a token made for the call (the evaluate also writes it into the page), the
browser-level ``Target.getTargetInfo`` asks about the caller's own page (nothing else
at browser level can echo a value), ``list_tabs`` must list the caller's tab as it is,
and ``browse_view`` must show the caller's title and the text its last ``evaluate``
wrote. ``flood_js`` is a page script that logs console messages at a given rate.
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

import anyio
from mcp import Client

from tests.e2e.helpers import call_ok, data_url

__all__ = ["KINDS", "TOOL_OF", "Caller", "call_checked", "caller_page", "flood_js",
           "open_callers", "run_callers", "shared_browser_targets"]

# The mix each caller cycles through (shifted per caller, so all kinds run at once):
# 4 evaluate, 2 tab-level and 2 browser-level cdp_command, 1 list_tabs, 1 browse_view.
KINDS = ("evaluate", "cdp_tab", "evaluate", "cdp_browser", "browse_view",
         "evaluate", "cdp_tab", "list_tabs", "evaluate", "cdp_browser")
TOOL_OF = {"evaluate": "evaluate", "cdp_tab": "cdp_command", "cdp_browser": "cdp_command",
           "list_tabs": "list_tabs", "browse_view": "browse_view"}


@dataclass
class Caller:
    """One simulated agent: a target, a tab of its own showing a page with its token."""

    number: int
    target: str
    tab: int
    token: str
    target_id: str = ""
    last_written: str = "none"   # what the caller's last evaluate wrote into the page


def caller_page(token: str) -> str:
    return data_url(token, "<p id=last>none</p>")


def shared_browser_targets(hosts: list[str], count: int = 8) -> dict[str, dict[str, object]]:
    """``count`` targets spread over ``hosts`` (``h1-1`` … ``h2-4``): several targets per
    browser, each with its own websocket, targets of one host sharing its SSH connection."""
    per_host = math.ceil(count / len(hosts))
    names = [f"{host}-{j + 1}" for host in hosts for j in range(per_host)][:count]
    return {name: {"ssh": name.rsplit("-", 1)[0]} for name in names}


async def open_callers(client: Client, targets: list[str], per_target: int,
                       callers: list[Caller]) -> None:
    """``per_target`` callers on each target, each on a freshly loaded tab of its own,
    appended to ``callers`` one by one: it names every tab opened (to close them) even
    when this fails half-way."""
    for target in targets:
        for _ in range(per_target):
            token = f"load{len(callers)}x{uuid.uuid4().hex[:8]}"
            nav = await call_ok(client, "navigate", {"url": caller_page(token), "target": target})
            info = await call_ok(client, "cdp_command", {"tab": nav["tab"],
                                                         "method": "Target.getTargetInfo"})
            callers.append(Caller(len(callers), target, nav["tab"], token,
                                  info["result"]["targetInfo"]["targetId"]))


async def call_checked(client: Client, caller: Caller, kind: str) -> None:
    """One call of ``kind`` by ``caller``; asserts the reply is this call's."""
    token = uuid.uuid4().hex[:12]
    echo = f"{caller.token} {token}"
    where = f"caller {caller.number} (tab {caller.tab} on {caller.target})"
    if kind == "evaluate":
        expression = (f"document.getElementById('last').textContent = '{token}', "
                      f"document.title + ' {token}'")
        reply = await call_ok(client, "evaluate", {"tab": caller.tab, "expression": expression})
        assert (reply["tab"], reply["target"], reply["value"]) == (
            caller.tab, caller.target, echo), f"{where}: evaluate got {reply}"
        caller.last_written = token
    elif kind == "cdp_tab":
        reply = await call_ok(client, "cdp_command", {
            "tab": caller.tab, "method": "Runtime.evaluate",
            "params": {"expression": f"document.title + ' {token}'", "returnByValue": True}})
        assert (reply["tab"], reply["target"], reply["result"]["result"].get("value")) == (
            caller.tab, caller.target, echo), f"{where}: cdp_command got {reply}"
    elif kind == "cdp_browser":
        reply = await call_ok(client, "cdp_command", {
            "target": caller.target, "method": "Target.getTargetInfo",
            "params": {"targetId": caller.target_id}})
        info = reply["result"]["targetInfo"]
        assert (reply["tab"], reply["target"], info["targetId"], info["title"]) == (
            None, caller.target, caller.target_id, caller.token), f"{where}: got {reply}"
    elif kind == "list_tabs":
        reply = await call_ok(client, "list_tabs", {"target": caller.target})
        assert {t["target"] for t in reply["tabs"]} == {caller.target}, f"{where}: {reply}"
        mine = [t for t in reply["tabs"] if t["tab"] == caller.tab]
        assert mine == [{"tab": caller.tab, "target": caller.target, "title": caller.token,
                         "url": caller_page(caller.token)}], f"{where}: list_tabs got {reply}"
    else:
        assert kind == "browse_view", kind
        reply = await call_ok(client, "browse_view", {"tab": caller.tab})
        lines = reply["view"].splitlines()
        assert (reply["tab"], reply["target"]) == (caller.tab, caller.target), f"{where}: {reply}"
        assert f"title: {caller.token}" in lines and caller.last_written in lines, (
            f"{where}: browse_view shows another page or an old text (expected title "
            f"{caller.token} and text {caller.last_written}): {reply['view']!r}")


async def run_callers(client: Client, callers: list[Caller], calls_each: int, start: int,
                      answered: Callable[[str, float], None]) -> None:
    """Every caller makes ``calls_each`` calls one after the other (its kinds
    ``KINDS[start + caller.number ...]``), all callers at once; ``answered(kind,
    seconds)`` is told of each checked reply."""

    async def work(caller: Caller) -> None:
        for i in range(start, start + calls_each):
            kind = KINDS[(i + caller.number) % len(KINDS)]
            t0 = time.perf_counter()
            await call_checked(client, caller, kind)
            answered(kind, time.perf_counter() - t0)

    async with anyio.create_task_group() as tg:
        for caller in callers:
            tg.start_soon(work, caller)


def flood_js(seconds: float, per_second: int) -> str:
    """A page script that logs ``per_second`` console messages a second for ``seconds``
    and then stops by itself.

    It catches up with the schedule on every 10 ms tick (at most 1,000 messages a
    tick); ``window.floodLogged`` counts the messages, ``window.floodDone`` says it is
    over, and the expression's value is ``'started'``. Chrome itself manages about
    8-10k messages a second here with one DevTools session attached, less on a busy
    machine.
    """
    return f"""
window.floodLogged = 0; window.floodDone = false;
const floodStart = performance.now();
const floodTimer = setInterval(() => {{
  const elapsed = performance.now() - floodStart;
  if (elapsed >= {seconds * 1000:.0f}) {{
    clearInterval(floodTimer); window.floodDone = true; return;
  }}
  const due = Math.min(Math.floor(elapsed * {per_second / 1000:g}), window.floodLogged + 1000);
  while (window.floodLogged < due) console.log('flood', ++window.floodLogged);
}}, 10);
'started'
"""
