"""``record``: a remote tab (h1's real headless Chromium, over SSH) recorded while it
animates, the WebM read back by FFmpeg's decoder (PyAV): the frames and duration it
reports are the file's, within 10 %; the bounds, a second start, a stop with nothing
recording and an existing file are refused or reported as they should be."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import av
import pytest
from mcp.types import ResourceLink

from tests.e2e.helpers import call_err, call_ok, data_url
from tests.e2e.pages import DevtoolsEnv, file_mode, page_fixtures, raw_call

pytestmark = pytest.mark.anyio

env, tabs = page_fixtures("record")

# A counter repainted every 50 ms: the screencast sends a frame each time it paints.
ANIMATED = data_url("ticking", "<h1 id=n>0</h1><script>let n=0;setInterval(()=>"
                    "{document.getElementById('n').textContent=++n;document.body.style."
                    "background='hsl('+n*7%360+',70%,70%)'},50)</script>")


def decoded(path: Path) -> tuple[int, float]:
    """Frames a player decodes, and the time of the last one (seconds)."""
    with av.open(str(path)) as container:
        times = [float(frame.time) for frame in container.decode(container.streams.video[0])]
    return len(times), times[-1]


async def ticking_tab(env: DevtoolsEnv, tabs: list[int]) -> int:
    nav = await call_ok(env.client, "navigate", {"url": ANIMATED, "target": "h1",
                                                 "wait": "load"})
    tabs.append(nav["tab"])
    return int(nav["tab"])


async def test_a_recording_decodes_with_the_frames_and_duration_it_reports(
        env: DevtoolsEnv, tabs: list[int]) -> None:
    tab = await ticking_tab(env, tabs)
    path = env.tmp / "ticking.webm"
    started = await call_ok(env.client, "record", {"tab": tab, "action": "start",
                                                   "save_to": str(path)})
    assert started["recording"] is True and started["path"] == str(path)
    t0 = time.monotonic()
    await anyio.sleep(2.5)
    result, _ = await raw_call(env.client, "record", {"tab": tab, "action": "stop"})
    wall = time.monotonic() - t0
    assert not result.is_error, result
    info = result.structured_content
    assert info is not None and "ended" not in info and "recording" not in info
    frames, last = decoded(path)
    assert frames == pytest.approx(info["frames"], rel=0.1)
    assert last == pytest.approx(info["seconds"], rel=0.1)
    assert info["seconds"] == pytest.approx(wall, rel=0.1)
    assert frames >= 10   # a page painting 20 times a second, for 2.5 s
    assert info["bytes"] == path.stat().st_size and file_mode(path) == 0o600
    [link] = [b for b in result.content if isinstance(b, ResourceLink)]
    assert link.uri == path.as_uri()


async def test_the_duration_bound_ends_a_recording_by_itself(
        env: DevtoolsEnv, tabs: list[int]) -> None:
    tab = await ticking_tab(env, tabs)
    path = env.tmp / "bounded.webm"
    await call_ok(env.client, "record", {"tab": tab, "action": "start",
                                         "save_to": str(path), "max_seconds": 1})
    await anyio.sleep(2.5)
    info = await call_ok(env.client, "record", {"tab": tab, "action": "stop"})
    assert info["ended"] == "the recording reached its duration bound", info
    _, last = decoded(path)
    assert last == pytest.approx(1.0, abs=0.05) and info["seconds"] == pytest.approx(1.0)


async def test_one_recording_per_tab_and_a_stop_needs_one(
        env: DevtoolsEnv, tabs: list[int]) -> None:
    tab = await ticking_tab(env, tabs)
    error = await call_err(env.client, "record", {"tab": tab, "action": "stop"})
    assert error.endswith(f"tab {tab} is not being recorded; start a recording with "
                          "action: start"), error
    started = await call_ok(env.client, "record", {"tab": tab, "action": "start"})
    assert Path(started["path"]).name.startswith("csgw-video-")
    error = await call_err(env.client, "record", {"tab": tab, "action": "start"})
    assert f"tab {tab} is being recorded already" in error, error
    info = await call_ok(env.client, "record", {"tab": tab, "action": "stop"})
    assert decoded(Path(info["path"]))[0] == pytest.approx(info["frames"], rel=0.1)
    Path(info["path"]).unlink()


async def test_an_existing_file_is_never_replaced(env: DevtoolsEnv, tabs: list[int]) -> None:
    tab = await ticking_tab(env, tabs)
    path = env.tmp / "mine.webm"
    path.write_bytes(b"the user's own file")
    error = await call_err(env.client, "record", {"tab": tab, "action": "start",
                                                  "save_to": str(path)})
    assert "exists already" in error, error
    assert path.read_bytes() == b"the user's own file"
    error = await call_err(env.client, "record", {"tab": tab, "action": "start",
                                                  "save_to": "/etc/csgw-video.webm"})
    assert "save_to" in error and not Path("/etc/csgw-video.webm").exists(), error


async def test_a_tab_closed_while_recording_leaves_a_video_that_plays(
        env: DevtoolsEnv, tabs: list[int]) -> None:
    tab = await ticking_tab(env, tabs)
    path = env.tmp / "closed.webm"
    await call_ok(env.client, "record", {"tab": tab, "action": "start", "save_to": str(path)})
    await anyio.sleep(1.0)
    await call_ok(env.client, "close_tab", {"tab": tab})
    tabs.remove(tab)
    with anyio.fail_after(10):
        while True:   # the file is finished once the screencast notices its tab went
            try:
                frames, last = decoded(path)
                break
            except (av.FFmpegError, IndexError):
                await anyio.sleep(0.2)
    assert frames >= 5 and last > 0.5
