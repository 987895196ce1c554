"""The live view and handoff in a real browser (issue 20): a person's Chromium on this
machine opens the URL the gateway hands out for a tab of a Chromium behind SSH (h1),
sees its frames change, and acts on it — a click and typed text read back from the
remote page; a link without its token, from another site or under another Host name
opens nothing; ``handoff`` refuses the agent's changes while held, Done and the
timeout release it; two viewers at once; a viewer that stops reading does not grow the
gateway's memory. The gateway runs in this process (so its memory can be read), driven
through the MCP client like any agent's."""

from __future__ import annotations

import http.client
import json
import logging
import os
import socket
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import pytest
from mcp import Client
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from gateway.config import load_config
from gateway.live.hold import held
from gateway.live.hub import Live
from gateway.mcp.start import running_server
from tests.e2e.helpers import (
    STRUCTURED,
    call_err,
    call_ok,
    eventually,
    present,
    proc_status_kb,
    wait_for_targets,
)
from tests.e2e.pages import js
from tests.e2e.person import Person, PersonPage, person_browser
from tests.topology import Topology

pytestmark = pytest.mark.anyio

PAGE = ("data:text/html,<title>live</title><input id=i>"
        "<script>window.clicks=[];document.addEventListener('mousedown',"
        "e=>clicks.push([e.clientX,e.clientY]))</script>")
ANIMATED = ("data:text/html,<title>busy</title><canvas id=c width=800 height=600></canvas>"
            "<script>const x=c.getContext('2d'),d=x.createImageData(800,600),"
            "w=new Uint32Array(d.data.buffer);(function f(){for(let i=0;i<w.length;i++)"
            "w[i]=Math.random()*4294967295;x.putImageData(d,0,0);requestAnimationFrame(f)})()"
            "</script>")
"""Noise on every frame: JPEGs of ~100 kB or more, which fill a stalled viewer's socket
buffers within seconds (a calm page's frames would all fit in them)."""


@dataclass
class Env:
    client: Client
    person: Person
    live: Live
    call_log: Path

    @property
    def calls(self) -> Sequence[dict[str, Any]]:
        """The call log's records in memory."""
        return self.live.recent

    def watching(self, tab: int) -> int:
        return self.live.screencasts.watched().get(tab, 0)


@pytest.fixture(scope="module")
async def env(topology: Topology,
              tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Env]:
    saved = dict(os.environ)
    os.environ.update(topology.client_env())
    os.environ.pop("SSH_AUTH_SOCK", None)
    call_log = tmp_path_factory.mktemp("calls") / "calls.jsonl"
    try:
        config = load_config({**os.environ, "SSH_PROXY_TO": "h1", "MCP_DEBUG_LOG": str(call_log),
                              "CHROME_SSH_GATEWAY_TOOLS": "all"})
        async with running_server(config) as (server, _), Client(server) as client, \
                person_browser(tmp_path_factory.mktemp("person")) as person:
            await wait_for_targets(client, {"default": "up"})
            assert server.live is not None
            yield Env(client, person, server.live, call_log)
    finally:
        os.environ.clear()
        os.environ.update(saved)


async def _tab(env: Env, url: str = PAGE) -> int:
    """A new tab with ``url`` loaded: navigate waits for the load, new_tab does not (an
    evaluate right after new_tab can run in the blank page still there)."""
    return int((await call_ok(env.client, "navigate", {"url": url}))["tab"])


async def raw_value(env: Env, tab: int, expression: str) -> Any:
    """The expression's value, or None while the tab cannot answer (its dialog open)."""
    result = await env.client.call_tool("evaluate", {"tab": tab, "expression": expression},
                                        meta=STRUCTURED)
    return None if result.is_error else (result.structured_content or {}).get("value")


async def _frames(page: PersonPage) -> int:
    return int(await page.eval("+(document.getElementById('frame')?.dataset.frames || 0)"))


async def _sees_frames(page: PersonPage, more_than: int = 0) -> int:
    async def seen() -> int | None:
        n = await _frames(page)
        return n if n > more_than else None
    return await eventually(seen, until=present,
                            timeout=20, what=f"more than {more_than} frames on the page")


async def test_the_person_sees_the_tab_change_and_acts_on_it(
        env: Env, capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    tab = await _tab(env)
    view = await call_ok(env.client, "live_view", {"tab": tab, "control": True})
    assert view["url"].startswith("http://127.0.0.1:") and "/live/?t=" in view["url"]
    page = await env.person.open(view["url"])
    seen = await _sees_frames(page)
    await js(env.client, tab, "document.body.style.background = 'red'")
    await _sees_frames(page, seen)

    await js(env.client, tab, "document.getElementById('i').focus()")
    await page.eval("document.getElementById('text').value = 'hi there'; "
                    "document.getElementById('send').click()")

    async def typed(expected: str) -> bool:
        return bool(await js(env.client, tab, "document.getElementById('i').value")
                    == expected)

    await eventually(lambda: typed("hi there"), timeout=10, what="the text in the remote input")
    await page.eval("document.getElementById('frame').focus()")
    await page.key("a", "KeyA", 65)
    await eventually(lambda: typed("hi therea"), timeout=10, what="the key in the remote input")

    centre = await page.eval("(r => [r.left + r.width / 2, r.top + r.height / 2])"
                             "(document.getElementById('frame').getBoundingClientRect())")
    await page.click(*centre)

    async def clicked() -> list[list[float]] | None:
        return await js(env.client, tab, "clicks.length ? clicks : null")

    status = await page.eval("document.getElementById('status').textContent")
    clicks = await eventually(clicked, until=present, timeout=10,
                              what=f"the click on the remote page (page said {status!r})")
    width, height = await js(env.client, tab, "[innerWidth, innerHeight]")
    assert abs(clicks[0][0] - width / 2) <= 3 and abs(clicks[0][1] - height / 2) <= 3, (
        clicks, width, height)
    # Pinch-zoomed twice: the frame shows the page's top-left quarter, magnified. The
    # count is taken before the zoom: its one frame may come before the call's answer.
    before = await _frames(page)
    await call_ok(env.client, "cdp_command", {
        "tab": tab, "method": "Emulation.setPageScaleFactor", "params": {"pageScaleFactor": 2}})
    await _sees_frames(page, before)
    await js(env.client, tab, "clicks.length = 0")
    await page.click(*centre)
    clicks = await eventually(clicked, until=present,
                              timeout=10, what="the click on the zoomed page")
    assert abs(clicks[0][0] - width / 4) <= 3 and abs(clicks[0][1] - height / 4) <= 3, (
        clicks, width, height)
    # A dialog no frame shows: the page offers OK / Cancel, and the answer reaches the tab.
    await js(env.client, tab, "setTimeout(() => { window.answer = confirm('sure?') }, 10); 1")
    await eventually(lambda: page.eval("!document.getElementById('dialog').hidden && "
                                       "document.getElementById('dialog-message')"
                                       ".textContent === 'sure?'"),
                     timeout=10, what="the page to show the dialog")
    await page.eval("document.getElementById('dialog-ok').click()")

    async def answered() -> bool:
        return await raw_value(env, tab, "window.answer") is True

    await eventually(answered, timeout=10, what="the dialog answered OK")
    await eventually(lambda: page.eval("document.getElementById('calls').textContent"
                                       ".includes('evaluate')"),
                     timeout=10, what="the agent's calls on the tab listed on the page")
    token = view["url"].split("?t=")[1]
    logged = env.call_log.read_text()
    assert '"tool": "live_view"' in logged or '"tool":"live_view"' in logged, logged[-2000:]
    printed = capfd.readouterr()   # the gateway's stderr (and stdout): it runs in this process
    for where, text in [("the call log's outlines", json.dumps(list(env.calls))),
                        ("the call log file", logged), ("stderr", printed.err),
                        ("stdout", printed.out), ("the logging records", caplog.text)]:
        assert token not in text, f"the link's token is in {where}"


async def _get(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], str]:
    """A plain request (in a worker thread: the gateway answers in this process's loop)."""
    return await anyio.to_thread.run_sync(_request, url, headers)


def _request(url: str, headers: dict[str, str] | None) -> tuple[int, dict[str, str], str]:
    where = urlsplit(url)
    connection = http.client.HTTPConnection(where.hostname or "", where.port, timeout=10)
    path = where.path + (f"?{where.query}" if where.query else "")
    connection.request("GET", path, headers=headers or {})
    reply = connection.getresponse()
    return reply.status, {k.lower(): v for k, v in reply.getheaders()}, reply.read().decode()


async def test_no_token_foreign_origin_or_host_gets_nothing(env: Env) -> None:
    tab = await _tab(env)
    url = (await call_ok(env.client, "live_view", {"tab": tab}))["url"]
    base = url.split("/live/")[0]
    port = urlsplit(url).port
    assert (await _get(f"{base}/live/"))[0] == 403
    assert (await _get(f"{base}/live/?t=not-a-token"))[0] == 403
    assert (await _get(url, {"Host": f"evil.example:{port}"}))[0] == 403  # DNS rebinding
    assert (await _get(url, {"Origin": "http://evil.example"}))[0] == 403
    status, headers, _ = await _get(url)  # the token is still unspent: the checks came first
    assert status == 303
    cookie = headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict")
    assert (await _get(url))[0] == 403, "a token opens once"
    page_url = base + headers["location"]
    secret = cookie.split(";")[0]
    status, headers, body = await _get(page_url, {"Cookie": secret})
    assert status == 200 and "frame" in body
    assert "default-src 'none'" in headers["content-security-policy"]
    assert (await _get(page_url))[0] == 403, "no cookie, no page"
    ws_url = page_url.replace("http://", "ws://") + f"ws?tab={tab}"
    with pytest.raises(InvalidStatus):
        async with connect(ws_url, additional_headers={"Cookie": secret},
                           origin="http://evil.example"):  # type: ignore[arg-type]
            pass
    with pytest.raises(InvalidStatus):
        async with connect(ws_url):
            pass
    upgrade = {"Cookie": secret, "Upgrade": "websocket", "Connection": "Upgrade",
               "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version": "13"}
    ws_path = ws_url.replace("ws://", "http://")
    assert (await _get(ws_path, {**upgrade, "Host": f"evil.example:{port}"}))[0] == 403
    assert (await _get(ws_path, upgrade))[0] == 101  # the same, from this server's Host
    async with connect(ws_url, additional_headers={"Cookie": secret}) as ws:
        await ws.send('{"kind":"text","text":"x"}')
        reply = await ws.recv()
        while isinstance(reply, bytes):
            reply = await ws.recv()
        assert "view-only" in reply


async def test_handoff_holds_the_tab_until_done_or_timeout(env: Env) -> None:
    tab = await _tab(env)
    held = await call_ok(env.client, "handoff", {"tab": tab,
                                                 "reason": "sign in, then press Done"})
    assert held["state"] == "held" and held["left_s"] > 200
    refused = await call_err(env.client, "evaluate", {"tab": tab, "expression": "1"})
    assert refused.endswith(f"tab {tab} is with a person (asked: 'sign in, then press Done'); "
                            "call handoff with wait: true to wait for them to press Done"), refused
    await call_err(env.client, "close_tab", {"tab": tab})
    [target] = [t["target"] for t in (await call_ok(env.client, "list_tabs", {}))["tabs"]
                if t["tab"] == tab]
    browser_wide = await call_err(env.client, "cdp_command", {   # could close any tab
        "target": target, "method": "Target.getTargets"})
    assert f"tab {tab} is with a person" in browser_wide, browser_wide
    await call_ok(env.client, "console_messages", {"tab": tab})  # reading goes on
    page = await env.person.open(held["url"])
    await _sees_frames(page)

    async def waiting() -> dict[str, Any]:
        return await call_ok(env.client, "handoff",
                             {"tab": tab, "reason": "sign in", "wait": True}, timeout=60)

    async with anyio.create_task_group() as tg:
        results: list[dict[str, Any]] = []

        async def wait_for_done() -> None:
            results.append(await waiting())

        tg.start_soon(wait_for_done)
        await eventually(lambda: page.eval("!document.getElementById('done').hidden"),
                         timeout=10, what="the Done button")
        await page.eval("document.getElementById('done').click()")
    assert results[0]["state"] == "done"
    assert await js(env.client, tab, "1 + 1") == 2

    short = await call_ok(env.client, "handoff", {"tab": tab, "reason": "2FA",
                                                  "timeout_s": 1})
    assert short["state"] == "held"
    await call_err(env.client, "evaluate", {"tab": tab, "expression": "1"})
    await anyio.sleep(1.3)
    assert await js(env.client, tab, "2 + 2") == 4
    heard: list[tuple[float, str | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        heard.append((done, message))

    waited = await env.client.call_tool("handoff", {"tab": tab, "reason": "captcha",
                                                    "wait": True, "timeout_s": 2.5},
                                        progress_callback=progress, meta=STRUCTURED)
    assert not waited.is_error and waited.structured_content == {"tab": tab,
                                                                 "state": "expired"}
    assert len(heard) >= 2 and heard[0][0] < heard[-1][0], heard
    assert f"waiting for a person on tab {tab} (asked: 'captcha'): open http://127.0.0.1:" in str(
        heard[0][1])  # the first says where: a client that shows progress shows the link
    assert all(message == f"waiting for a person on tab {tab} (asked: 'captcha')"
               for _, message in heard[1:]), heard
    ends = [(r["reason"], r["ended"]) for r in env.calls
            if r.get("event") == "handoff_end" and r["tab"] == tab]
    assert ends == [("sign in, then press Done", "done"), ("2FA", "expired"),
                    ("captcha", "expired")]
    assert [r["reason"] for r in env.calls if r.get("event") == "handoff" and r["tab"] == tab
            ] == ["sign in, then press Done", "2FA", "captcha"]


async def test_two_viewers_and_a_stalled_one(env: Env) -> None:
    tab = await _tab(env, ANIMATED)
    first = await env.person.open((await call_ok(env.client, "live_view", {"tab": tab}))["url"])
    second = await env.person.open((await call_ok(env.client, "live_view", {}))["url"])
    await _sees_frames(first, 3)
    await _sees_frames(second)  # a link to every tab shows the first listed: choose ours
    await second.eval(f"choose({tab})")
    await _sees_frames(second, await _frames(second) + 3)

    url = (await call_ok(env.client, "live_view", {"tab": tab}))["url"]
    _, headers, _ = await _get(url)
    base = url.split("/live/")[0]
    ws_url = (base + headers["location"]).replace("http://", "ws://") + f"ws?tab={tab}"
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # a viewer on a slow link
    sock.connect(("127.0.0.1", urlsplit(url).port))
    async with connect(ws_url, additional_headers={"Cookie": headers["set-cookie"].split(";")[0]},
                       max_queue=1, sock=sock, max_size=None) as stalled:
        await stalled.recv()  # it works; now it reads nothing more for 8 s
        before = proc_status_kb(os.getpid())
        watched = await _frames(first)
        await anyio.sleep(8)
        grown = proc_status_kb(os.getpid()) - before
        assert await _frames(first) > watched + 10, "the other viewer kept getting frames"
        dropped = []
        for _ in range(100):  # what the socket buffers held, then frames sent since
            message = await stalled.recv()
            assert isinstance(message, bytes)
            dropped.append(json.loads(message[4:4 + int.from_bytes(message[:4], "big")])
                           ["dropped"])
        assert max(dropped) > 10, f"frames for the stalled viewer were queued: {dropped}"
    assert grown < 15 * 1024, f"the gateway grew {grown} KB while a viewer stalled"


async def test_the_screencast_runs_while_watched_and_ends_with_the_tab(env: Env) -> None:
    tab = await _tab(env, ANIMATED)
    assert env.watching(tab) == 0
    page = await env.person.open((await call_ok(env.client, "live_view", {"tab": tab}))["url"])
    await _sees_frames(page, 3)
    assert env.watching(tab) == 1
    await call_ok(env.client, "navigate", {"tab": tab, "url": ANIMATED + "<!-- again -->"})
    await _sees_frames(page, await _frames(page) + 3)  # a new document: still watched
    assert env.watching(tab) == 1
    await page.eval("location.href = 'about:blank'")  # the person leaves

    async def unwatched() -> bool:
        return env.watching(tab) == 0

    await eventually(unwatched, timeout=10, what="the screencast to stop with its viewer")
    page = await env.person.open((await call_ok(env.client, "live_view", {"tab": tab}))["url"])
    await _sees_frames(page, 3)
    await call_ok(env.client, "close_tab", {"tab": tab})
    await eventually(lambda: page.eval("document.getElementById('status').textContent"
                                       f" === 'tab {tab} was closed by close_tab'"),
                     timeout=10, what="the page to say the tab was closed, and how")
    assert env.watching(tab) == 0 and tab not in env.live.screencasts.watched()


async def _until(test: Callable[[], bool], what: str) -> None:
    """Wait (bounded) until ``test()`` holds: for the gateway's state in this process."""
    async def probe() -> bool:
        return test()
    await eventually(probe, timeout=10, what=what)


BUSY = "(() => { const t = Date.now(); while (Date.now() - t < SECONDS * 1000); return 1 })()"
"""A call that holds the tab (its lock) for SECONDS: the page's own thread is busy."""


async def test_a_call_queued_when_the_handoff_starts_is_refused_when_its_turn_comes(
        env: Env) -> None:
    tab = await _tab(env)
    lock = env.live.registry.tabs.get(tab).lock
    finished: list[str] = []
    results: dict[str, Any] = {}

    async def running() -> None:
        expression = BUSY.replace("SECONDS", "3")
        results["running"] = await call_ok(env.client, "evaluate",
                                           {"tab": tab, "expression": expression})
        finished.append("running")

    async def queued() -> None:
        results["queued"] = await call_err(env.client, "evaluate",
                                           {"tab": tab, "expression": "document.title = 'x'"})
        finished.append("queued")

    async with anyio.create_task_group() as tg:
        tg.start_soon(running)
        await _until(lock.locked, "the first call on the tab")
        tg.start_soon(queued)
        await _until(lambda: lock.statistics().tasks_waiting == 1,
                     "the second call waiting for the tab")
        handed = await call_ok(env.client, "handoff", {"tab": tab, "reason": "sign in"})
        finished.append("handoff")
    assert results["running"]["value"] == 1
    assert finished.index("running") < finished.index("handoff"), (
        "the call already running on the tab finishes before the person gets it", finished)
    assert f"tab {tab} is with a person (asked: 'sign in')" in results["queued"], results["queued"]
    assert handed["state"] == "held" and "busy" not in handed, handed
    held(env.live.registry.tabs.get(tab)).end("done")  # type: ignore[union-attr]
    assert await js(env.client, tab, "document.title") == "live", "the queued call did nothing"

    other = await _tab(env)
    async with anyio.create_task_group() as tg:
        tg.start_soon(js, env.client, other, BUSY.replace("SECONDS", "4"))
        await _until(env.live.registry.tabs.get(other).lock.locked, "the long call on the tab")
        short = await call_ok(env.client, "handoff",
                              {"tab": other, "reason": "2FA", "timeout_s": 1})
    assert short["busy"] == (f"a call on tab {other} was still running after 1 s; it may act "
                             "while the person does"), short


async def test_a_held_tab_refuses_changes_to_its_context_and_reads_go_on(
        env: Env, tmp_path: Any) -> None:
    tab = await _tab(env)  # in the default context
    in_context = {"context": "a-person-signs-in"}
    other = int((await call_ok(env.client, "new_tab", {"url": PAGE, **in_context}))["tab"])
    await call_ok(env.client, "handoff", {"tab": tab, "reason": "sign in"})
    await call_ok(env.client, "handoff", {"tab": other, "reason": "2FA"})
    try:
        refusals: list[tuple[str, dict[str, Any]]] = [
            ("storage_state", {"action": "clear"}),  # the default context: the tab's
            ("storage_state", {"action": "clear", "tab": tab}),
            ("storage_state", {"action": "load", "path": str(tmp_path / "none.json")}),
            ("storage_state", {"action": "clear", **in_context}),
            ("network_route", {"action": "block", "pattern": "**/x", "tab": tab}),
            ("network_route", {"action": "block", "pattern": "**/x", **in_context}),
            ("network_route", {"action": "remove", **in_context}),
            ("performance_trace", {"tab": tab, "reload": True, "duration_s": 1}),
            ("screenshot", {"tab": tab, "full_page": True})]
        for tool, args in refusals:
            refused = await call_err(env.client, tool, args)
            says = (f"tab {other} is with a person (asked: '2FA')" if "context" in args
                    else f"tab {tab} is with a person (asked: 'sign in')")
            assert says in refused, (tool, args, refused)
        saved = await call_ok(env.client, "storage_state", {
            "action": "save", "tab": tab, "path": str(tmp_path / "state.json")})
        assert saved["path"] == str(tmp_path / "state.json")
        await call_ok(env.client, "storage_state", {
            "action": "save", "path": str(tmp_path / "other.json"), **in_context})
        for where in ({"tab": tab}, in_context):
            listed = await call_ok(env.client, "network_route", {"action": "list", **where})
            assert listed["routes"] == []
        await call_ok(env.client, "screenshot", {"tab": tab})
        elsewhere = {"context": "not-the-persons"}
        await call_ok(env.client, "network_route",
                      {"action": "block", "pattern": "**/x", **elsewhere})
        await call_ok(env.client, "network_route", {"action": "remove", **elsewhere})
    finally:
        for held_tab in (tab, other):
            held(env.live.registry.tabs.get(held_tab)).end("done")  # type: ignore[union-attr]
        await call_ok(env.client, "close_tab", {"tab": other})


async def test_a_handoff_link_stops_acting_when_its_hold_ends(env: Env) -> None:
    tab = await _tab(env)
    await js(env.client, tab, "document.getElementById('i').focus()")
    for_page = await call_ok(env.client, "handoff", {"tab": tab, "reason": "type"})
    for_socket = await call_ok(env.client, "handoff", {"tab": tab, "reason": "type"})
    page = await env.person.open(for_page["url"])
    await _sees_frames(page)
    base = for_socket["url"].split("/live/")[0]
    status, headers, _ = await _get(for_socket["url"])
    assert status == 303
    ws_url = (base + headers["location"]).replace("http://", "ws://") + f"ws?tab={tab}"
    async with connect(ws_url, additional_headers={
            "Cookie": headers["set-cookie"].split(";")[0]}) as ws:
        await ws.send('{"kind":"text","text":"ab"}')  # while held: it reaches the tab
        await eventually(lambda: page.eval("!document.getElementById('done').hidden"),
                         timeout=10, what="the Done button")
        await page.eval("document.getElementById('done').click()")
        await _until(lambda: held(env.live.registry.tabs.get(tab)) is None,
                     "the hold to end with Done")
        await ws.send('{"kind":"text","text":"cd"}')
        reply = await ws.recv()
        while isinstance(reply, bytes):
            reply = await ws.recv()
    assert "this handoff has ended" in reply, reply
    assert await js(env.client, tab, "document.getElementById('i').value") == "ab"


async def test_a_hold_ends_when_its_tab_closes(env: Env) -> None:
    opener = await _tab(env)
    before = {t["tab"] for t in (await call_ok(env.client, "list_tabs", {}))["tabs"]}
    assert await js(env.client, opener, "(window.w = window.open('about:blank')) !== null")

    async def popup() -> int | None:
        now = {t["tab"] for t in (await call_ok(env.client, "list_tabs", {}))["tabs"]}
        return next(iter(now - before), None)

    tab = await eventually(popup, until=present, timeout=10, what="the popup tab")
    await call_ok(env.client, "handoff", {"tab": tab, "reason": "sign in"})
    await call_err(env.client, "close_tab", {"tab": tab})  # not the agent's to close
    results: list[dict[str, Any]] = []

    async def waiting() -> None:
        results.append(await call_ok(env.client, "handoff",
                                     {"tab": tab, "reason": "sign in", "wait": True},
                                     timeout=60))

    async with anyio.create_task_group() as tg:
        tg.start_soon(waiting)
        await anyio.sleep(0.5)
        await js(env.client, opener, "w.close(), 1")  # the page closes it, not the agent
        with anyio.fail_after(20):  # at once: the hold's own time is 300 s
            while not results:
                await anyio.sleep(0.05)
    assert results == [{"tab": tab, "state": "closed"}]
    assert [r["ended"] for r in env.calls
            if r.get("event") == "handoff_end" and r["tab"] == tab] == ["tab closed"]
