"""The live view's pure parts: link tokens (used once, idle expiry, per link), the Host
and Origin rules, input events validated and mapped through a frame's metadata, and
the one-slot mailbox that keeps a slow viewer from holding frames."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import anyio
import pytest
from starlette.websockets import WebSocketDisconnect

from gateway.errors import InvalidArgument
from gateway.live.hold import HOLD, Hold, held
from gateway.live.hub import open_live
from gateway.live.links import LINK_IDLE_S, Links, host_allowed, origin_allowed
from gateway.page.act.live_input import input_command, parse_input
from gateway.page.capture.screencast import Frame, Mailbox
from gateway.tabs.tab import TabIds

pytestmark = pytest.mark.anyio

META = {"deviceWidth": 800, "deviceHeight": 600, "offsetTop": 0, "pageScaleFactor": 1}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_token_opens_once_and_its_session_only_its_link() -> None:
    links = Links()
    view = links.issue(3, control=False)
    control = links.issue(3, control=True, handoff=Hold("sign in", 2e9))
    assert view != control
    opened = links.exchange(view)
    assert opened is not None
    link, secret = opened
    assert (link.tab, link.control) == (3, False)
    assert links.exchange(view) is None, "a token is spent by its first use"
    assert links.exchange("made-up") is None
    assert links.session(link.id, secret) is link
    other = links.exchange(control)
    assert other is not None and other[0].control
    assert links.session(other[0].id, secret) is None, "a session opens its own link only"
    assert links.session(link.id, None) is None
    assert link.allows(3) and not link.allows(4)


def test_links_expire_when_idle_and_use_keeps_them() -> None:
    clock = Clock()
    links = Links(clock)
    unused = links.issue(None, control=False)
    used = links.issue(None, control=False)
    opened = links.exchange(used)
    assert opened is not None
    link, secret = opened
    clock.now += LINK_IDLE_S - 1
    assert links.session(link.id, secret) is link  # used: alive again for a full period
    clock.now += 2
    assert links.exchange(unused) is None, "an unused token expires too"
    assert links.session(link.id, secret) is link
    clock.now += LINK_IDLE_S + 1
    assert links.session(link.id, secret) is None
    links.issue(1, control=True)
    links.clear()
    assert links.session(link.id, secret) is None


def test_host_and_origin_rules() -> None:
    assert host_allowed("127.0.0.1:8000", 8000) and host_allowed("localhost:8000", 8000)
    assert host_allowed("[::1]:8000", 8000)
    for host in ("evil.example:8000", "127.0.0.1:8001", "127.0.0.1", None, "localhost"):
        assert not host_allowed(host, 8000), host
    assert origin_allowed(None, "127.0.0.1:8000")
    assert origin_allowed("http://127.0.0.1:8000", "127.0.0.1:8000")
    for origin in ("http://evil.example", "http://localhost:8000", "null",
                   "https://127.0.0.1:8000"):
        assert not origin_allowed(origin, "127.0.0.1:8000"), origin


def test_pointer_events_map_through_the_frame_metadata() -> None:
    # A frame 400 px wide of an 800 px viewport: zoom 0.5, so image px times 2.
    click = parse_input('{"kind":"mouse","type":"mousePressed","x":100,"y":50,"w":400,'
                        '"button":"left","clickCount":1}')
    method, params = input_command(click, META)
    assert method == "Input.dispatchMouseEvent"
    assert params == {"type": "mousePressed", "x": 200, "y": 100, "button": "left",
                      "clickCount": 1, "modifiers": 0}
    top = {**META, "offsetTop": 30}
    assert input_command(click, top)[1]["y"] == 70  # browser chrome above the page
    pinched = {**META, "pageScaleFactor": 2}  # the frame shows half the page, twice as big
    assert (input_command(click, pinched)[1]["x"], input_command(click, pinched)[1]["y"]) == (
        100, 50)
    far = parse_input('{"kind":"wheel","x":400,"y":400,"w":400,"dy":120}')
    assert input_command(far, META)[1] == {"type": "mouseWheel", "x": 800, "y": 600,
                                           "deltaX": 0, "deltaY": 120, "modifiers": 0}
    with pytest.raises(InvalidArgument, match="no frame shown yet"):
        input_command(click, {})


@pytest.mark.parametrize("metadata", [
    {**META, "deviceWidth": 1e-300}, {**META, "deviceHeight": 1e-300},
    {**META, "deviceWidth": float("inf")}, {**META, "deviceHeight": float("nan")},
    {**META, "deviceWidth": 1e308}, {**META, "deviceHeight": -600},
    {"deviceWidth": 800},  # no height: no bound for y
    {**META, "deviceWidth": True},
])
def test_a_frame_without_finite_sizes_takes_no_pointer(metadata: dict[str, object]) -> None:
    click = parse_input('{"kind":"mouse","type":"mousePressed","x":100,"y":50,"w":400}')
    with pytest.raises(InvalidArgument, match="no frame shown yet"):
        input_command(click, metadata)


@pytest.mark.parametrize("metadata", [
    {**META, "pageScaleFactor": 1e-300}, {**META, "pageScaleFactor": float("inf")},
    {**META, "pageScaleFactor": float("nan")}, {**META, "pageScaleFactor": -2},
    {**META, "offsetTop": 1e308}, {**META, "offsetTop": float("-inf")},
    {**META, "offsetTop": -1e308},
])
@pytest.mark.parametrize("x, y, w", [(1e5, 1e5, 1), (0, 0, 1e5), (1e5, 0, 1.0), (3, 1e5, 7)])
def test_hostile_numbers_still_point_inside_the_viewport(
        metadata: dict[str, object], x: float, y: float, w: float) -> None:
    for kind in ('"kind":"mouse","type":"mouseMoved"', '"kind":"wheel","dy":1'):
        event = parse_input(f'{{{kind},"x":{x},"y":{y},"w":{w}}}')
        params = input_command(event, metadata)[1]
        assert 0 <= params["x"] <= 800 * 100 and 0 <= params["y"] <= 600 * 100, params


@pytest.mark.parametrize("raw", [
    '{"kind":"mouse","type":"mouseMoved","x":1,"y":1,"w":1e-300}',  # a frame too small
    '{"kind":"mouse","type":"mouseMoved","x":1,"y":1,"w":0.5}',
    '{"kind":"mouse","type":"mouseMoved","x":1e308,"y":1,"w":1}',
    '{"kind":"mouse","type":"mouseMoved","x":Infinity,"y":1,"w":1}',
    '{"kind":"mouse","type":"mouseMoved","x":NaN,"y":1,"w":1}',
    '{"kind":"mouse","type":"mouseMoved","x":1,"y":-1e-300,"w":1}',
    '{"kind":"wheel","x":1,"y":1,"w":1,"dy":NaN}',
    '{"kind":"wheel","x":1,"y":1,"w":1,"dx":-Infinity}',
])
def test_hostile_pointer_numbers_are_refused(raw: str) -> None:
    with pytest.raises(InvalidArgument, match="not an input event"):
        parse_input(raw)


def test_keys_and_text() -> None:
    down = parse_input('{"kind":"key","type":"keyDown","key":"a","code":"KeyA",'
                       '"keyCode":65,"text":"a"}')
    assert input_command(down, {}) == ("Input.dispatchKeyEvent", {
        "type": "keyDown", "key": "a", "code": "KeyA", "windowsVirtualKeyCode": 65,
        "modifiers": 0, "text": "a", "unmodifiedText": "a"})
    arrow = parse_input('{"kind":"key","type":"keyDown","key":"ArrowLeft","keyCode":37}')
    assert input_command(arrow, {})[1]["type"] == "rawKeyDown"
    up = parse_input('{"kind":"key","type":"keyUp","key":"a","text":"a"}')
    assert "text" not in input_command(up, {})[1]
    assert input_command(parse_input('{"kind":"text","text":"héllo"}'), {}) == (
        "Input.insertText", {"text": "héllo"})
    assert input_command(parse_input('{"kind":"dialog","accept":false}'), {}) == (
        "Page.handleJavaScriptDialog", {"accept": False})
    assert input_command(parse_input('{"kind":"dialog","accept":true,"text":"Ann"}'), {}) == (
        "Page.handleJavaScriptDialog", {"accept": True, "promptText": "Ann"})


@pytest.mark.parametrize("raw", [
    '{"kind":"cdp","method":"Runtime.evaluate"}',           # no raw CDP, ever
    '{"kind":"mouse","type":"mousePressed","x":1,"y":1}',  # no image width
    '{"kind":"mouse","type":"dragEnter","x":1,"y":1,"w":1}',
    '{"kind":"mouse","type":"mouseMoved","x":-1,"y":1,"w":1}',
    '{"kind":"key","type":"keyDown","key":""}',
    '{"kind":"key","type":"char","key":"a"}',
    '{"kind":"text","text":"a","method":"Runtime.evaluate"}',  # no extra fields
    '{"kind":"text","text":""}', '{"kind":"dialog","accept":"yes"}', "[]", "not json",
])
def test_anything_else_is_refused(raw: str) -> None:
    with pytest.raises(InvalidArgument, match="not an input event"):
        parse_input(raw)


async def test_a_mailbox_keeps_only_the_newest_frame() -> None:
    mailbox = Mailbox()
    for n in range(1000):  # a viewer that reads nothing
        mailbox.put(Frame(bytes(1000), {"n": n}))
    assert mailbox.dropped == 999
    frame = await mailbox.get()
    assert frame is not None and frame.metadata == {"n": 999}
    with anyio.move_on_after(0.05) as waited:
        await mailbox.get()
    assert waited.cancelled_caught, "nothing left: the next get waits"

    async def close_soon() -> None:
        await anyio.sleep(0.01)
        mailbox.close()

    async with anyio.create_task_group() as tg:
        tg.start_soon(close_soon)
        assert await mailbox.get() is None


def test_the_live_views_call_outlines_keep_no_arguments_and_are_bounded() -> None:
    from gateway.mcp.call_log import RECENT, CallLog

    log = CallLog(None, None)  # no file: the outlines are kept all the same
    for n in range(RECENT + 10):
        log.write({"ts": 1.0, "tool": "evaluate", "tab": 3, "call_id": n,
                   "arguments": {"expression": "secret()"}, "duration_ms": 1.5,
                   "outcome": "error", "error": "x" * 10_000, "result_bytes": 9})
    assert len(log.recent) == RECENT
    outline = log.recent[-1]
    assert set(outline) == {"ts", "tool", "tab", "duration_ms", "outcome", "error"}
    assert len(str(outline["error"])) < 600  # cut, and said so


def test_the_live_views_call_outlines_are_redacted_like_the_log() -> None:
    from gateway.mcp.call_log import RECENT_FIELDS, CallLog, bounded
    from gateway.output.redact import redact

    log = CallLog(None, None)
    record = {"ts": 2.5, "tool": "cdp_command", "target": "h1", "tab": None,
              "duration_ms": 3, "outcome": "error", "held_s": True,
              "error": "sent headers:\nCookie: sid=hunter2\nAccept: */*",
              "reason": ["Authorization: Bearer abc", {"Cookie": "sid=1"}]}
    log.remember(record)
    outline = log.recent[-1]
    assert "hunter2" not in str(outline) and "Bearer abc" not in str(outline)
    assert "sid=1" not in str(outline)
    assert outline == bounded(redact({k: record[k] for k in RECENT_FIELDS if k in record}),
                              500)


def test_a_watched_live_view_keeps_an_idle_server_up() -> None:
    from gateway.mcp.idle import Idle

    idle = Idle(60)
    watching = [True]
    idle.busy_while(lambda: watching[0])
    idle._last -= 3600  # an hour without requests (the test reaches in), but someone watches
    assert idle.idle_for() == 0.0
    watching[0] = False
    assert 0 <= idle.idle_for() < 1.0  # idle from when the watching ended


class _GoneViewer:
    """A websocket whose viewer left: every send fails as Starlette's does."""

    def __init__(self, error: Exception) -> None:
        self.error = error
        self.sent = 0

    async def send_bytes(self, _data: bytes) -> None:
        self.sent += 1
        raise self.error

    send_text = send_bytes

    async def close(self, _code: int = 1000) -> None:
        raise self.error


@pytest.mark.parametrize("error", [
    WebSocketDisconnect(1006), RuntimeError('Cannot call "send" once a close message has '
                                            "been sent.")])
@pytest.mark.parametrize("closed", [False, True])
async def test_a_viewer_gone_mid_send_ends_only_its_sender(error: Exception,
                                                           closed: bool) -> None:
    from gateway.live.app import _send_frames

    mailbox = Mailbox()
    if closed:
        mailbox.close("tab 3 was closed")
    else:
        mailbox.put(Frame(b"jpeg", {"deviceWidth": 800}))
    viewer = _GoneViewer(error)
    with anyio.fail_after(5):
        await _send_frames(viewer, mailbox, {})  # type: ignore[arg-type]
    assert viewer.sent == 1


def test_a_hold_ends_once_and_as_expired_once_its_time_passed() -> None:
    hold = Hold("sign in", time.monotonic() + 60)
    assert hold.active() and hold.end("done") and hold.ended == "done"
    assert not hold.end("tab closed") and hold.ended == "done", "ended once, as it was"
    late = Hold("2FA", time.monotonic() - 1)
    assert not late.end("done") and late.ended == "expired" and late.released.is_set()


def test_a_retired_tab_ends_its_hold() -> None:
    tabs = TabIds()
    tab = tabs.add("default", "T1")
    tab.put(HOLD, hold := Hold("sign in", time.monotonic() + 60))
    tabs.remove(tab, "was closed")
    assert hold.ended == "tab closed" and hold.released.is_set() and held(tab) is None


async def test_a_gateway_that_exits_ends_its_holds_and_says_so() -> None:
    tabs = TabIds()
    tab = tabs.add("default", "T1")
    registry = SimpleNamespace(browsers={"default": SimpleNamespace(tabs={"T1": tab})},
                               tabs=tabs)
    notes: list[dict[str, Any]] = []
    async with open_live(registry, [], notes.append) as live:  # type: ignore[arg-type]
        hold = live.hold(tab, "sign in", 60)
    assert hold.ended == "gateway exiting"
    assert [(n["event"], n.get("ended")) for n in notes] == [
        ("handoff", None), ("handoff_end", "gateway exiting")]
