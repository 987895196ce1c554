"""gateway.tabs.console_flood: a console flood metered, shed and sampled.

The frames are real: ``fixtures/frames/console.jsonl`` (see ``test_frames``), a burst of
200 ``console.log`` calls among them, fed through the real ``CdpConnection`` to a real
``Tab`` whose console taker the guard watches. The session's commands go to a fake
that records them and, on ``Runtime.enable``, sends the burst again, as V8 replays
what it kept while ``Runtime`` was off.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import anyio
import pytest

from gateway.cdp.connection import CdpConnection
from gateway.errors import DialogOpen
from gateway.tabs.console_flood import QUIET_RATE, FloodGuard, FloodMeter, timestamp
from gateway.tabs.console_log import ConsoleLog
from gateway.tabs.tab import Tab
from tests.unit.test_frames import BURST, captured, session_of_capture

pytestmark = pytest.mark.anyio

SAMPLE_S = 0.01
QUIET = int(QUIET_RATE * SAMPLE_S)  # a sample of fewer messages: the flood is over


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def burst(later_ms: float = 0.0) -> list[str]:
    """The capture's console.log burst, frame by frame as Chrome sent it; ``later_ms``
    after it was logged (as a later burst of the same page)."""
    frames = [f for f in captured() if '"Runtime.consoleAPICalled"' in f][-BURST:]
    return [_TIMESTAMP.sub(lambda m: f'"timestamp":{float(m[1]) + later_ms!r}', f)
            for f in frames] if later_ms else frames


_TIMESTAMP = re.compile(r'"timestamp":([0-9.e+]+)')


class Session:
    """The flooding tab's session: a real connection and tab, and the commands the guard
    sends there; ``replays`` says what each ``Runtime.enable`` replays (frames, or an
    error to raise)."""

    def __init__(self, replays: list[list[str] | Exception]) -> None:
        self.cdp = CdpConnection(object(), name="capture")  # type: ignore[arg-type]
        self.tab = Tab(1, "capture", "T", console=ConsoleLog(50))
        self.replays = replays
        self.commands: list[str] = []
        self.live = True

    async def send(self, method: str) -> dict[str, Any]:
        self.commands.append(method)
        if method == "Runtime.enable":
            replay = self.replays.pop(0) if self.replays else []
            if isinstance(replay, Exception):
                raise replay
            for frame in replay:
                self.cdp.receive(frame)
        await anyio.lowlevel.checkpoint()
        return {}

    def guard(self, tasks: anyio.abc.TaskGroup, meter: FloodMeter) -> FloodGuard:
        guard = FloodGuard(self.tab.console, self.send, lambda: self.live, tasks,
                           meter=meter, sample_s=SAMPLE_S)
        self.cdp.listen(session_of_capture(), self.tab.on_event,
                        take=guard.watch(self.tab.take_frame))
        return guard

    def flood(self, frames: list[str], clock: Clock | None = None, step: float = 0.0) -> None:
        for frame in frames:
            if clock is not None:
                clock.now += step
            self.cdp.receive(frame)


async def until(done: Callable[[], bool]) -> None:
    with anyio.fail_after(5):
        while not done():
            await anyio.sleep(SAMPLE_S / 2)


# ------------------------------------------------------------------------ the meter


def test_the_meter_says_flood_once_the_rate_is_passed_within_the_window() -> None:
    clock = Clock()
    meter = FloodMeter(rate=100, window_s=0.5, clock=clock)  # 50 messages in 0.5 s
    assert not any(meter.count() for _ in range(49))
    clock.now = 0.4
    assert meter.count()


def test_the_meter_lets_a_steady_page_log_below_the_rate() -> None:
    clock = Clock()
    meter = FloodMeter(rate=100, window_s=0.5, clock=clock)
    said = []
    for _ in range(2_000):
        clock.now += 0.011  # 90 a second
        said.append(meter.count())
    assert not any(said)


# ------------------------------------------------------------------------ the guard


def test_the_burst_is_real() -> None:
    frames = burst()
    assert len(frames) == BURST and all('"Runtime.consoleAPICalled"' in f for f in frames)


async def test_a_flood_is_shed_sampled_and_runtime_left_on_once_it_is_over() -> None:
    session = Session(replays=[burst(1_000), burst(2_000)[:QUIET - 1]])
    async with anyio.create_task_group() as tg:
        guard = session.guard(tg, FloodMeter(rate=100, window_s=1.0, clock=Clock()))
        session.flood(burst())
        await until(lambda: not guard.shedding and session.commands != [])
    assert session.commands == ["Runtime.discardConsoleEntries", "Runtime.disable",
                                "Runtime.enable",   # a full sample: still flooding
                                "Runtime.discardConsoleEntries", "Runtime.disable",
                                "Runtime.enable"]   # a quiet one: over, Runtime on
    console = session.tab.console
    assert console.sampled and console.seen == 2 * BURST + QUIET - 1
    assert console.dropped == console.seen - 50  # exact for what was seen: a lower bound
    texts = [e.text for e in console.query(limit=50)]
    assert texts[-1] == burst_text(burst()[QUIET - 2])


async def test_a_page_logging_below_the_rate_is_never_shed() -> None:
    session = Session(replays=[])
    clock = Clock()
    async with anyio.create_task_group() as tg:
        guard = session.guard(tg, FloodMeter(rate=100, window_s=0.5, clock=clock))
        session.flood(burst(), clock, step=0.02)  # 50 a second
        await anyio.sleep(3 * SAMPLE_S)
        assert not guard.shedding
    assert session.commands == [] and not session.tab.console.sampled
    assert session.tab.console.seen == BURST


async def test_a_session_that_goes_ends_the_sampling() -> None:
    session = Session(replays=[burst(1_000 * n) for n in range(1, 100)])
    async with anyio.create_task_group() as tg:
        guard = session.guard(tg, FloodMeter(rate=100, window_s=1.0, clock=Clock()))
        session.flood(burst())
        await until(lambda: session.commands.count("Runtime.enable") >= 2)
        session.live = False  # the tab closed, or the connection went
        await until(lambda: not guard.shedding)
        sent = len(session.commands)
        await anyio.sleep(3 * SAMPLE_S)
    assert len(session.commands) == sent


async def test_a_refused_enable_on_a_live_session_is_tried_again() -> None:
    """A dialog holds the page: ``Runtime.enable`` fails, and Runtime must not stay off."""
    session = Session(replays=[DialogOpen(1, "alert", "hi"), []])
    async with anyio.create_task_group() as tg:
        guard = session.guard(tg, FloodMeter(rate=100, window_s=1.0, clock=Clock()))
        session.flood(burst())
        await until(lambda: not guard.shedding and "Runtime.enable" in session.commands)
    assert session.commands == ["Runtime.discardConsoleEntries", "Runtime.disable",
                                "Runtime.enable", "Runtime.enable"]


async def test_console_events_someone_taps_are_not_metered() -> None:
    """Console events another listener subscribed to (``Tab.subscribe``) are parsed, not
    taken: they are not metered, and so never shed away from the one reading them."""
    session = Session(replays=[])
    tapped: list[dict[str, Any]] = []
    async with anyio.create_task_group() as tg:
        guard = session.guard(tg, FloodMeter(rate=100, window_s=1.0, clock=Clock()))
        untap = session.tab.subscribe("Runtime.consoleAPICalled",
                                      lambda _method, params: tapped.append(params))
        session.flood(burst())
        await anyio.sleep(3 * SAMPLE_S)
        assert not guard.shedding
        untap()
    assert session.commands == [] and len(tapped) == BURST


async def test_what_came_live_and_is_replayed_is_not_kept_twice() -> None:
    """Messages logged between the clear and the off come live and are replayed at the
    next sample: kept once. The replay's new messages after them are kept."""
    live = burst()
    session = Session(replays=[live[-20:] + burst(1_000)[:30], []])
    async with anyio.create_task_group() as tg:
        guard = session.guard(tg, FloodMeter(rate=100, window_s=1.0, clock=Clock()))
        session.flood(live)
        await until(lambda: not guard.shedding and session.commands != [])
    texts = [e.text for e in session.tab.console.query(limit=50)]
    assert texts == [burst_text(f) for f in live[-20:]] + [
        burst_text(f) for f in burst(1_000)[:30]]
    assert session.tab.console.seen == BURST + 30


async def test_page_events_go_to_the_tab_while_its_console_is_sampled() -> None:
    """A page event's timestamp (seconds of another clock) is no console replay: the load
    events of the capture reach the tab while its console is shed."""
    session = Session(replays=[burst(1_000)] * 3)
    loads = [f for f in captured() if '"method":"Page.' in f and '"timestamp"' in f]
    assert loads, "the capture has its page's load events"
    async with anyio.create_task_group() as tg:
        guard = session.guard(tg, FloodMeter(rate=100, window_s=1.0, clock=Clock()))
        session.tab.loader_id = "L"
        session.flood(burst())
        assert guard.shedding
        session.flood(loads)
        session.live = False
    assert set(session.tab.loaded) == {json.loads(f)["method"] for f in loads}


def test_a_console_events_timestamp_is_read_off_its_text() -> None:
    for frame in burst():
        assert timestamp(frame) == json.loads(frame)["params"]["timestamp"]
    tricky = ('{"method":"Runtime.consoleAPICalled","params":{"type":"log","args":[{"type":'
              '"string","value":"\\"timestamp\\":1"}],"timestamp":5.5},"sessionId":"S"}')
    assert json.loads(tricky)["params"]["args"][0]["value"] == '"timestamp":1'
    assert timestamp(tricky) == 5.5
    assert timestamp('{"method":"Runtime.consoleAPICalled","params":{}}') is None


def burst_text(frame: str) -> str:
    log = ConsoleLog()
    log.keep_frame(frame)
    return log.query()[0].text
