"""The video writer and the recording's timeline, on real screencast frames
(``fixtures/screencast``, captured by ``fixtures/capture_screencast.py``), each video
read back by FFmpeg's own decoder (PyAV)."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from fractions import Fraction
from pathlib import Path
from typing import BinaryIO

import anyio
import av
import pytest

from gateway.browsers.session import TabSession
from gateway.errors import InvalidArgument
from gateway.page.capture import video
from gateway.page.capture.recording import MAX_RECORDINGS, Recording, Recordings, Timeline
from gateway.page.capture.screencast import Frame, Mailbox
from gateway.page.capture.video import VideoWriter
from gateway.tabs.tab import Tab

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "screencast"
METADATA = json.loads((FIXTURES / "frames.json").read_text())
JPEGS = [(FIXTURES / f"frame-{i}.jpeg").read_bytes() for i in range(len(METADATA))]
FIRST = METADATA[0]["timestamp"]


def _decoded(path: Path) -> tuple[list[float], tuple[int, int], str]:
    """Every frame's time (seconds), the picture size and the codec, as a player sees them."""
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        times = [float(frame.time) for frame in container.decode(stream)]
        return times, (stream.width, stream.height), stream.codec_context.name


def _record(path: Path, frames: list[tuple[bytes, float]], stop: float, **bounds: float
            ) -> VideoWriter:
    with path.open("wb") as file:
        writer = VideoWriter(file, max_seconds=bounds.get("max_seconds", 60),
                             max_bytes=int(bounds.get("max_bytes", 10_000_000)))
        for jpeg, seconds in frames:
            if not writer.add(jpeg, seconds):
                break
        writer.close(stop)
    return writer


def _reencoded(jpeg: bytes, width: int, height: int) -> bytes:
    """The same picture as a JPEG of another size (a window resized mid-recording)."""
    picture = av.CodecContext.create("mjpeg", "r").decode(av.Packet(jpeg))[0]
    encoder = av.CodecContext.create("mjpeg", "w")
    encoder.width, encoder.height, encoder.pix_fmt = width, height, "yuvj420p"
    encoder.time_base = Fraction(1, 25)
    scaled = picture.reformat(width=width, height=height, format="yuvj420p")
    return b"".join(bytes(p) for p in [*encoder.encode(scaled), *encoder.encode(None)])


def test_frames_keep_their_times_and_the_last_lasts_until_the_stop(tmp_path: Path) -> None:
    path = tmp_path / "v.webm"
    frames = [(jpeg, meta["timestamp"] - FIRST) for jpeg, meta in zip(JPEGS, METADATA, strict=True)]
    writer = _record(path, frames, stop=3.0)
    times, size, codec = _decoded(path)
    assert codec == "vp8"
    assert size == (320, 178)   # the frames' own 320 x 179, rounded down to even
    assert len(times) == writer.frames == len(JPEGS) + 1
    assert times[:-1] == pytest.approx([s for _, s in frames], abs=0.0011)
    assert times[-1] == pytest.approx(3.0)
    assert writer.duration_s == pytest.approx(3.0)
    assert path.read_bytes()[:4] == b"\x1a\x45\xdf\xa3"   # EBML: a Matroska/WebM file


def test_frames_in_the_same_millisecond_or_out_of_order_stay_increasing(
        tmp_path: Path) -> None:
    path = tmp_path / "v.webm"
    _record(path, [(JPEGS[0], 0.5), (JPEGS[1], 0.5), (JPEGS[2], 0.2)], stop=1.0)
    times, _, _ = _decoded(path)
    assert times == pytest.approx([0.5, 0.501, 0.502, 1.0])


def test_a_frame_of_another_size_is_scaled_to_the_first(tmp_path: Path) -> None:
    path = tmp_path / "v.webm"
    other = _reencoded(JPEGS[1], 200, 120)
    writer = _record(path, [(JPEGS[0], 0.0), (other, 0.1)], stop=0.2)
    times, size, _ = _decoded(path)
    assert (size, len(times), writer.frames) == ((320, 178), 3, 3)


def test_a_picture_ffmpeg_cannot_decode_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "v.webm"
    writer = _record(path, [(JPEGS[0], 0.0), (b"not a jpeg" * 20, 0.1), (JPEGS[1], 0.2)],
                     stop=0.3)
    times, _, _ = _decoded(path)
    assert (writer.skipped, len(times)) == (1, 3)


def test_the_duration_bound_ends_the_recording_at_the_bound(tmp_path: Path) -> None:
    path = tmp_path / "v.webm"
    writer = _record(path, [(jpeg, i * 0.4) for i, jpeg in enumerate(JPEGS)], stop=9.0,
                     max_seconds=1.0)
    times, _, _ = _decoded(path)
    assert writer.full == "duration"
    assert times == pytest.approx([0.0, 0.4, 0.8, 1.0])


def test_the_size_bound_ends_the_recording(tmp_path: Path) -> None:
    path = tmp_path / "v.webm"
    frames = [(JPEGS[i % len(JPEGS)], i * 0.05) for i in range(200)]
    writer = _record(path, frames, stop=20.0, max_bytes=4_000)
    times, _, _ = _decoded(path)
    assert writer.full == "size"
    assert 0 < len(times) == writer.frames < 200
    assert path.stat().st_size < 4_000 + 20_000   # the bound, one frame and the trailer


def test_no_frame_no_video(tmp_path: Path) -> None:
    path = tmp_path / "v.webm"
    writer = _record(path, [], stop=1.0)
    assert (writer.frames, path.stat().st_size) == (0, 0)


def test_without_pyav_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "av", None)
    with pytest.raises(InvalidArgument, match=r"chrome-ssh-gateway\[video\]"):
        video.load_av()


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_timeline_spaces_frames_by_chrome_and_anchors_them_here(
        monkeypatch: pytest.MonkeyPatch) -> None:
    clock = _Clock()
    monkeypatch.setattr("gateway.page.capture.recording.time.monotonic", clock)
    timeline = Timeline()
    # the screencast's last frame, painted a minute ago on a clock 3 h off, arrives first
    assert timeline.place(FIRST - 60) == 0.0
    clock.now += 0.08          # a fresh frame: it moves the anchor (painted after arrival)
    assert timeline.place(FIRST) == pytest.approx(0.08)
    clock.now += 0.5           # the next, painted 0.1 s later, arrives late over SSH
    assert timeline.place(FIRST + 0.1) == pytest.approx(0.18)
    clock.now += 0.01
    assert timeline.place(None) == pytest.approx(0.59)   # no timestamp: when it came
    assert timeline.now() == pytest.approx(0.59)


# ------------------------------------------------------------------ Recordings


class _Screencast:
    """Stands in for ``Screencasts``: a mailbox the test feeds with the captured frames."""

    def __init__(self) -> None:
        self.mailbox = Mailbox()
        self.watching = 0

    @asynccontextmanager
    async def watch(self, _browser: object, _tab: object) -> AsyncIterator[Mailbox]:
        self.watching += 1
        try:
            yield self.mailbox
        finally:
            self.watching -= 1


def _tab() -> Tab:
    return Tab(7, "vm", "T7")


async def _until(condition: Callable[[], object], timeout_s: float = 10) -> None:
    """Wait for ``condition`` (the recorder's worker thread and pacing take their time)."""
    with anyio.fail_after(timeout_s):
        while not condition():
            await anyio.sleep(0.005)


async def _start(recordings: Recordings, tab: Tab, path: Path, *, max_seconds: float = 60,
                 max_bytes: int = 10_000_000) -> Recording:
    session = TabSession(None, 60, tab)  # type: ignore[arg-type]
    return await recordings.start(session, path, max_seconds=max_seconds, max_bytes=max_bytes)


async def _recorded(tmp_path: Path, frames: int, *, max_seconds: float = 60
                    ) -> tuple[Recording, _Screencast]:
    screencast = _Screencast()
    tab = _tab()
    async with anyio.create_task_group() as tasks:
        recordings = Recordings(tasks, screencast)  # type: ignore[arg-type]
        started = await _start(recordings, tab, tmp_path / "r.webm", max_seconds=max_seconds)
        for n, (jpeg, meta) in enumerate(list(zip(JPEGS, METADATA, strict=True))[:frames]):
            screencast.mailbox.put(Frame(jpeg, meta))
            await _until(lambda n=n: started.writer.frames > n)  # each encoded, none skipped
        with pytest.raises(InvalidArgument, match="being recorded already"):
            await _start(recordings, tab, tmp_path / "again.webm")
        assert not (tmp_path / "again.webm").exists()
        stopped = await recordings.stop(tab)  # type: ignore[arg-type]
        assert stopped is started and screencast.watching == 0
        with pytest.raises(InvalidArgument, match="not being recorded"):
            await recordings.stop(tab)  # type: ignore[arg-type]
    return stopped, screencast


@pytest.mark.anyio
async def test_a_recording_watches_until_stopped_and_finishes_its_file(tmp_path: Path) -> None:
    recording, _ = await _recorded(tmp_path, frames=4)
    times, _, _ = _decoded(recording.path)
    assert len(times) == recording.writer.frames == 5   # 4 frames, the last shown to the stop
    assert recording.why_ended == "" and oct(recording.path.stat().st_mode)[-3:] == "600"


@pytest.mark.anyio
async def test_a_recording_without_a_frame_keeps_no_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("gateway.page.capture.recording.FIRST_FRAME_S", 0.2)
    recording, _ = await _recorded(tmp_path, frames=0)
    assert not recording.path.exists()
    assert recording.why_ended == ("no frame came from the tab (a page that never painted); "
                                   "no file was kept")


@pytest.mark.anyio
async def test_stop_reports_a_recording_that_ended_by_itself(tmp_path: Path) -> None:
    screencast = _Screencast()
    tab = _tab()
    async with anyio.create_task_group() as tasks:
        recordings = Recordings(tasks, screencast)  # type: ignore[arg-type]
        started = await _start(recordings, tab, tmp_path / "r.webm")
        screencast.mailbox.put(Frame(JPEGS[0], METADATA[0]))
        await _until(lambda: started.writer.frames)
        screencast.mailbox.close("tab 7 crashed (killed)")   # the tab went
        with anyio.fail_after(10):
            await started.ended.wait()
        assert screencast.watching == 0
        ended = await recordings.stop(tab)  # type: ignore[arg-type]
    assert ended is started
    assert ended.why_ended == "tab 7 crashed (killed)" and _decoded(ended.path)[0]


@pytest.mark.anyio
async def test_recordings_at_once_are_bounded(tmp_path: Path) -> None:
    async with anyio.create_task_group() as tasks:
        recordings = Recordings(tasks, _Screencast())  # type: ignore[arg-type]
        tabs = [_tab() for _ in range(MAX_RECORDINGS + 1)]
        for i, tab in enumerate(tabs[:-1]):
            await _start(recordings, tab, tmp_path / f"{i}.webm")
        with pytest.raises(InvalidArgument, match=f"{MAX_RECORDINGS} recordings are running"):
            await _start(recordings, tabs[-1], tmp_path / "x.webm")
        tasks.cancel_scope.cancel()


@pytest.mark.anyio
async def test_a_recording_that_fails_ends_alone(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_args: object) -> bool:
        raise RuntimeError("encoder bug")

    monkeypatch.setattr(VideoWriter, "add", broken)
    screencast = _Screencast()
    tab = _tab()
    async with anyio.create_task_group() as tasks:   # the gateway's: it must not end
        recordings = Recordings(tasks, screencast)  # type: ignore[arg-type]
        started = await _start(recordings, tab, tmp_path / "r.webm")
        screencast.mailbox.put(Frame(JPEGS[0], METADATA[0]))
        with anyio.fail_after(10):
            await started.ended.wait()
        ended = await recordings.stop(tab)  # type: ignore[arg-type]
    assert ended.why_ended == ("the recording failed (RuntimeError: encoder bug); no file "
                               "was kept")


@pytest.mark.anyio
async def test_stop_stops_the_running_recording_not_the_last_that_ended(
        tmp_path: Path) -> None:
    screencast = _Screencast()
    tab = _tab()
    async with anyio.create_task_group() as tasks:
        recordings = Recordings(tasks, screencast)  # type: ignore[arg-type]
        first = await _start(recordings, tab, tmp_path / "1.webm", max_bytes=1)
        screencast.mailbox.put(Frame(JPEGS[0], METADATA[0]))
        with anyio.fail_after(10):
            await first.ended.wait()                # its size bound: it ended by itself
        second = await _start(recordings, tab, tmp_path / "2.webm")
        screencast.mailbox.put(Frame(JPEGS[1], METADATA[1]))
        stopped = await recordings.stop(tab)  # type: ignore[arg-type]
        assert stopped is second and second.ended.is_set()
        with pytest.raises(InvalidArgument, match="not being recorded"):
            await recordings.stop(tab)  # type: ignore[arg-type]
    assert first.why_ended == "the recording reached its size bound"


@pytest.mark.anyio
async def test_stop_right_after_start_returns_when_the_recording_ends_meanwhile(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("gateway.page.capture.recording.FIRST_FRAME_S", 600)
    screencast = _Screencast()
    tab = _tab()
    stopped: list[Recording] = []
    async with anyio.create_task_group() as tasks:
        recordings = Recordings(tasks, screencast)  # type: ignore[arg-type]
        started = await _start(recordings, tab, tmp_path / "r.webm")

        async def stop() -> None:
            stopped.append(await recordings.stop(tab))  # type: ignore[arg-type]

        with anyio.fail_after(10):   # not the 600 s a first frame would be waited for
            tasks.start_soon(stop)
            await _until(lambda: started.stopping)
            screencast.mailbox.close("tab 7 was closed")
            await _until(lambda: stopped)
    assert stopped == [started] and not started.path.exists()
    assert started.why_ended == "tab 7 was closed; no file was kept"


class _FullDisk:
    """The recording's file on a disk that fills up: the last flush, at close, fails."""

    def __init__(self, file: BinaryIO) -> None:
        self._file = file

    def __getattr__(self, name: str) -> object:
        return getattr(self._file, name)

    def close(self) -> None:
        self._file.close()
        raise OSError(28, "No space left on device")


@pytest.mark.anyio
@pytest.mark.parametrize("frames", [1, 0])
async def test_a_file_that_fails_to_close_or_go_ends_only_its_recording(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, frames: int) -> None:
    monkeypatch.setattr("gateway.page.capture.recording.FIRST_FRAME_S", 0.01)

    def stuck(_path: Path, missing_ok: bool = False) -> None:
        raise PermissionError(13, "Permission denied")

    screencast = _Screencast()
    tab = _tab()
    async with anyio.create_task_group() as tasks:   # the gateway's: it must not end
        recordings = Recordings(tasks, screencast)  # type: ignore[arg-type]
        started = await _start(recordings, tab, tmp_path / "r.webm")
        started.file = _FullDisk(started.file)  # type: ignore[assignment]
        monkeypatch.setattr(Path, "unlink", stuck)
        if frames:
            screencast.mailbox.put(Frame(JPEGS[0], METADATA[0]))
            await _until(lambda: started.writer.frames)
        ended = await recordings.stop(tab)  # type: ignore[arg-type]
    assert "could not be written to the end ([Errno 28] No space left on device)" in \
        ended.why_ended
    assert ("its empty file could not be removed" in ended.why_ended) == (not frames)
