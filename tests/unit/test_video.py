"""The video writer and the recording's timeline, on real screencast frames
(``fixtures/screencast``, captured by ``fixtures/capture_screencast.py``), each video
read back by FFmpeg's own decoder (PyAV)."""

from __future__ import annotations

import json
import sys
from fractions import Fraction
from pathlib import Path

import av
import pytest

from gateway.errors import InvalidArgument
from gateway.page import video
from gateway.page.recording import Timeline
from gateway.page.video import VideoWriter

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
    monkeypatch.setattr("gateway.page.recording.time.monotonic", clock)
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
