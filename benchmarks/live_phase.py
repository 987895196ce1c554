"""The ``live`` phase: the live view of a tab on h1, over SSH, as a person's
browser would use it — its websocket, opened with the URL ``live_view`` answers.

* frame latency: the page changes (raw ``Runtime.evaluate`` on the tab, which returns
  once the style is set) → the next frame at the viewer's websocket; the floor is the
  same change → ``Page.screencastFrame`` on a raw CDP session of the same tab over the
  same kind of SSH forward (the two measured in turn, not at once: two screencasts of
  one tab would share its paints);
* input latency: a click sent on the websocket → the page's ``mousedown`` (its
  ``performance.timeOrigin + event.timeStamp``: one kernel clock, the namespaces share
  it); the floor is raw ``Input.dispatchMouseEvent`` → the same event;
* the gateway's CPU per watched tab: its process's on-CPU time over ``WATCH_S`` while
  one viewer reads every frame of a page that repaints on every animation frame (the
  screencast's natural rate), as % of one core;
* the same for ``record`` of that page (no viewer), and the frames a second its video got;
* memory with a stalled viewer: the gateway's RSS after ``WATCH_S`` of a viewer that
  stops reading (a 4 KB receive buffer) on a page of noise (~100 kB frames), less
  before.
"""

from __future__ import annotations

import json
import socket
import statistics
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import anyio
import httpx2
from websockets.asyncio.client import ClientConnection, connect

from benchmarks.bench import Bench
from benchmarks.clients import call, child_pid_with, cpu_ns
from benchmarks.raw_cdp import RawCdp
from benchmarks.results import RowMaker, progress
from tests.e2e.helpers import proc_status_kb

__all__ = ["ROW_KEYS", "define_rows", "run"]

TARGET_FRAME_MS = 150.0   # a page change reaches the person's screen within this
TARGET_INPUT_MS = 100.0
TARGET_CPU_PCT = 10.0
SAMPLES = 30
WATCH_S = 10.0
SETTLE_S = 0.15           # between samples: the last change's frames are all in
WAIT_S = 5.0              # one sample's bound
ROW_KEYS = ("raw_frame", "live_frame", "raw_input", "live_input", "live_cpu", "live_fps",
            "record_cpu", "record_fps", "live_stalled")

CALM = ("<body style='margin:0'><div id=d style='width:100vw;height:100vh'></div><script>"
        "window.events=[];addEventListener('mousedown',"
        "e=>events.push(performance.timeOrigin+e.timeStamp))</script>")
COUNTER = ("<div id=d style='font:80px sans-serif'></div><script>let n=0;"
           "(function f(){d.textContent=n++;requestAnimationFrame(f)})()</script>")
NOISE = ("<canvas id=c width=800 height=600></canvas><script>const x=c.getContext('2d'),"
         "d=x.createImageData(800,600),w=new Uint32Array(d.data.buffer);(function f(){"
         "for(let i=0;i<w.length;i++)w[i]=Math.random()*4294967295;x.putImageData(d,0,0);"
         "requestAnimationFrame(f)})()</script>")


def define_rows(row: RowMaker) -> None:
    row("raw_frame", "raw CDP screencast: page change → `Page.screencastFrame`, same forward",
        target="floor")
    row("live_frame", "live view: page change → frame at the viewer's websocket, over SSH",
        target=f"≤ {TARGET_FRAME_MS:.0f} ms")
    row("raw_input", "raw CDP `Input.dispatchMouseEvent` → the page's `mousedown`",
        target="floor")
    row("live_input", "live view: click sent on the websocket → the page's `mousedown`",
        target=f"≤ {TARGET_INPUT_MS:.0f} ms")
    row("live_cpu", f"gateway CPU, one viewer reading every frame for {WATCH_S:.0f} s "
        "(a page repainting each animation frame)", unit="%",
        target=f"≤ {TARGET_CPU_PCT:.0f} % of a core", show_p90=False)
    row("live_fps", "↳ frames the viewer got per second", unit="fps", show_p90=False)
    row("record_cpu", f"gateway CPU recording that page for {WATCH_S:.0f} s (`record`, "
        "VP8 WebM)", unit="%", show_p90=False, target="≤ one core: 25 fps at most")
    row("record_fps", "↳ frames encoded per second", unit="fps", show_p90=False)
    row("live_stalled", f"gateway RSS growth, a viewer not reading for {WATCH_S:.0f} s "
        "(~100 kB frames)", unit="MB", show_p90=False)


def _data(body: str) -> str:
    return "data:text/html," + quote(body)


async def run(bench: Bench) -> None:
    r = bench.r
    raw = bench.raw("h1")
    tabs: list[Any] = []
    try:
        async with bench.gateway(bench.env("h1"), ["--tools", "all,+live"]) as gw:
            pid = child_pid_with("all,+live")
            assert pid is not None, "the gateway process was not found"
            tab = await bench.live_tab(gw, _data(CALM), tabs)
            await bench.attach_raw(raw, gw, tab)
            r.rows["raw_frame"].samples = await _raw_frames(raw)
            r.rows["raw_input"].samples = await _raw_inputs(raw)
            async with _viewer(gw, tab) as viewer:
                r.rows["live_frame"].samples = await _live_frames(raw, viewer)
                r.rows["live_input"].samples = await _live_inputs(raw, viewer)
                await call(gw, "navigate", {"tab": tab, "url": _data(COUNTER)})
                cpu, fps = await _watch(pid, viewer)
            r.rows["live_cpu"].samples, r.rows["live_fps"].samples = [cpu], [fps]
            r.rows["record_cpu"].samples, r.rows["record_fps"].samples = await _record(
                gw, tab, pid)
            await call(gw, "navigate", {"tab": tab, "url": _data(NOISE)})
            r.rows["live_stalled"].samples = [await _stalled(gw, tab, pid)]
            await bench.close_tabs([(gw, tab)])
    finally:
        await raw.aclose()
    for key, target in (("live_frame", TARGET_FRAME_MS), ("live_input", TARGET_INPUT_MS)):
        median = r.rows[key].median
        r.rows[key].ok = median is not None and median <= target
    r.rows["live_cpu"].ok = cpu <= TARGET_CPU_PCT
    progress(f"live: frame {r.rows['live_frame'].median:.0f} ms, input "
             f"{r.rows['live_input'].median:.0f} ms, cpu {cpu:.1f} %, {fps:.0f} fps")


_COLOURS = iter(f"#{n * 2654435 % 16777216:06x}" for n in range(1, 10**9))


async def _change(raw: RawCdp) -> tuple[float, bool]:
    """Repaint the page: when the change was made (perf_counter), and whether a frame of
    the raw screencast came before the command's reply (acknowledged here)."""
    frames: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    await raw.send("Runtime.evaluate", {"expression": f"d.style.background='{next(_COLOURS)}'"},
                   events=lambda m: frames.append(m)
                   if m.get("method") == "Page.screencastFrame" else None)
    for frame in frames:
        await _ack(raw, frame["params"]["sessionId"])
    return t0, bool(frames)


async def _raw_frames(raw: RawCdp) -> list[float]:
    assert raw.ws is not None
    await raw.send("Page.startScreencast", {"format": "jpeg", "quality": 70,
                                            "maxWidth": 1280, "maxHeight": 1280})
    samples: list[float] = []
    try:
        for _ in range(SAMPLES):
            await _drain_raw(raw, SETTLE_S)
            t0, seen = await _change(raw)
            with anyio.fail_after(WAIT_S):
                while not seen:
                    seen = await _raw_frame(raw)
            samples.append((time.perf_counter() - t0) * 1000)
    finally:
        await raw.send("Page.stopScreencast")
        await _drain_raw(raw, SETTLE_S)
    return samples


async def _raw_frame(raw: RawCdp) -> bool:
    """Read one message; a frame is acknowledged (as the gateway does) and says True."""
    assert raw.ws is not None
    message = json.loads(await raw.ws.recv())
    if message.get("method") != "Page.screencastFrame":
        return False
    await _ack(raw, message["params"]["sessionId"])
    return True


async def _ack(raw: RawCdp, frame: int) -> None:
    """Acknowledge a frame without waiting for the reply (as the gateway does)."""
    assert raw.ws is not None
    await raw.ws.send(json.dumps({"id": 10**9 + frame, "sessionId": raw.session_id,
                                  "method": "Page.screencastFrameAck",
                                  "params": {"sessionId": frame}}))


async def _drain_raw(raw: RawCdp, seconds: float) -> None:
    with anyio.move_on_after(seconds):
        while True:
            await _raw_frame(raw)


async def _mousedowns(raw: RawCdp) -> list[float]:
    got = await raw.send("Runtime.evaluate", {
        "expression": "events.splice(0)", "returnByValue": True})
    return list(got["result"]["value"])


async def _one_input(raw: RawCdp, t0: float) -> float:
    with anyio.fail_after(WAIT_S):
        while not (seen := await _mousedowns(raw)):
            await anyio.sleep(0.001)
    return seen[0] - t0


async def _raw_inputs(raw: RawCdp) -> list[float]:
    samples = []
    for _ in range(SAMPLES):
        t0 = time.time() * 1000
        for kind in ("mousePressed", "mouseReleased"):
            await raw.send("Input.dispatchMouseEvent", {"type": kind, "x": 20, "y": 20,
                                                        "button": "left", "clickCount": 1})
        samples.append(await _one_input(raw, t0))
    return samples


class _Viewer:
    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.metadata: dict[str, Any] = {}

    async def frame(self) -> bool:
        message = await self.ws.recv()
        if not isinstance(message, bytes):
            return False
        size = int.from_bytes(message[:4], "big")
        self.metadata = json.loads(message[4:4 + size])["metadata"]
        return True

    async def drain(self, seconds: float) -> int:
        frames = 0
        with anyio.move_on_after(seconds):
            while True:
                frames += await self.frame()
        return frames


@asynccontextmanager
async def _viewer(gw: Any, tab: int, rcvbuf: int | None = None) -> AsyncIterator[_Viewer]:
    """A viewer's websocket for ``tab``, opened as the page does (token → cookie), once
    its first frame came; ``rcvbuf``: a small receive buffer (a viewer that stalls)."""
    url = (await call(gw, "live_view", {"tab": tab, "control": True}))["url"]
    where = urlsplit(url)
    async with httpx2.AsyncClient(timeout=10) as http:
        opened = await http.get(url)
    assert opened.status_code == 303, opened.text
    cookie = opened.headers["set-cookie"].split(";")[0]
    ws_url = f"ws://{where.netloc}{opened.headers['location']}ws?tab={tab}"
    sock = None
    if rcvbuf is not None:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        sock.connect((where.hostname or "", where.port or 80))
    async with connect(ws_url, additional_headers={"Cookie": cookie}, sock=sock,
                       max_size=None, max_queue=1 if sock else 16) as ws:
        viewer = _Viewer(ws)
        with anyio.fail_after(WAIT_S):
            while not await viewer.frame():
                pass
        yield viewer


async def _live_frames(raw: RawCdp, viewer: _Viewer) -> list[float]:
    samples = []
    for _ in range(SAMPLES):
        await viewer.drain(SETTLE_S)
        t0, _ = await _change(raw)
        with anyio.fail_after(WAIT_S):
            while not await viewer.frame():
                pass
        samples.append((time.perf_counter() - t0) * 1000)
    return samples


async def _live_inputs(raw: RawCdp, viewer: _Viewer) -> list[float]:
    samples = []
    width = viewer.metadata["deviceWidth"]
    await _mousedowns(raw)
    for _ in range(SAMPLES):
        await viewer.drain(SETTLE_S)  # the page repaints nothing on a click: a short wait
        t0 = time.time() * 1000
        for kind in ("mousePressed", "mouseReleased"):
            await viewer.ws.send(json.dumps({"kind": "mouse", "type": kind, "x": 20, "y": 20,
                                             "w": width, "button": "left", "clickCount": 1}))
        samples.append(await _one_input(raw, t0))
    return samples


async def _watch(pid: int, viewer: _Viewer) -> tuple[float, float]:
    """The gateway's CPU (% of one core) and the frames a second the viewer read."""
    await viewer.drain(1.0)
    before, t0 = cpu_ns(pid), time.perf_counter()
    frames = await viewer.drain(WATCH_S)
    seconds = time.perf_counter() - t0
    return (cpu_ns(pid) - before) / 1e9 / seconds * 100, frames / seconds


async def _record(gw: Any, tab: int, pid: int) -> tuple[list[float], list[float]]:
    """The gateway's CPU (% of one core) while it records the tab, and the frames a
    second the video got; the video is removed."""
    await call(gw, "record", {"tab": tab, "action": "start"})
    before, t0 = cpu_ns(pid), time.perf_counter()
    await anyio.sleep(WATCH_S)
    video = await call(gw, "record", {"tab": tab, "action": "stop"})
    seconds = time.perf_counter() - t0
    Path(video["path"]).unlink(missing_ok=True)
    return ([(cpu_ns(pid) - before) / 1e9 / seconds * 100],
            [video["frames"] / max(video["seconds"], 1e-3)])


async def _stalled(gw: Any, tab: int, pid: int) -> float:
    """RSS growth (MB) of the gateway while a viewer reads nothing."""
    async with _viewer(gw, tab, rcvbuf=4096):
        await anyio.sleep(1.0)
        before = proc_status_kb(pid)
        rss = [before]
        for _ in range(int(WATCH_S)):
            await anyio.sleep(1.0)
            rss.append(proc_status_kb(pid))
    return (statistics.median(rss[-3:]) - before) / 1024
