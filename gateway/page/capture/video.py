"""A tab's screencast as a video file: JPEG frames in, VP8 in WebM out.

Why WebM/VP8: every browser plays it; Matroska writes no index at the end (MP4's
``moov`` box is written on close), so a file cut short by a crash still plays up to
its last cluster; and the VP8 encoder in real-time mode keeps up with a screencast on
one core. Why PyAV: its wheels bundle FFmpeg with libvpx, so a video needs no system
package; it is ~100 MB, so it is the optional extra ``chrome-ssh-gateway[video]``,
imported only when a recording starts.

Frames are irregular (Chrome sends one only when the page paints): each comes with
its time in the video (the recorder works it out), kept to the millisecond, which
Matroska keeps exactly. On ``close`` the last picture is shown again at the stop
time, so a page that stayed still for the last seconds still lasts until the stop.

The writer is synchronous (FFmpeg's work is CPU and blocking): the recorder calls it
from a worker thread. Bounded: ``max_seconds`` of video and ``max_bytes`` of file; a
frame past either ends the recording (``full`` says which).
"""

from __future__ import annotations

import importlib
from fractions import Fraction
from typing import TYPE_CHECKING, Any, BinaryIO

from gateway.errors import InvalidArgument

if TYPE_CHECKING:
    import av

__all__ = ["VIDEO_EXTRA", "VideoWriter", "load_av"]

VIDEO_EXTRA = "chrome-ssh-gateway[video]"
_MS = Fraction(1, 1000)
_BIT_RATE = 1_500_000
_KEYFRAME_EVERY = 60
_VP8_OPTIONS = {"deadline": "realtime", "cpu-used": "16", "lag-in-frames": "0", "threads": "1"}
"""libvpx's fastest real-time mode on one thread: ~10 ms of one core for a 1280 x 720
frame here (two threads cost more CPU in all on a busy 2-core machine, and the cores
are the gateway's and the browsers' too)."""


def load_av() -> Any:
    """PyAV, or ``InvalidArgument`` naming the extra that brings it."""
    try:
        return importlib.import_module("av")
    except ImportError:
        raise InvalidArgument(
            f"recording needs PyAV, which is not installed: install {VIDEO_EXTRA} "
            "(uvx --from 'chrome-ssh-gateway[video]' chrome-ssh-gateway, or "
            "pip install av) and restart the gateway") from None


class VideoWriter:
    """Writes frames into ``file`` (opened by the caller, closed by it after ``close``).

    The size of the video is the first frame's (rounded down to even: VP8's 4:2:0
    needs it); later frames of another size (a resized window) are scaled to it."""

    def __init__(self, file: BinaryIO, *, max_seconds: float, max_bytes: int) -> None:
        self._av = load_av()
        self._file = file
        self._max_ms = round(max_seconds * 1000)
        self._max_bytes = max_bytes
        self._last_pts = -1
        self._decoder = self._av.CodecContext.create("mjpeg", "r")
        self._container: Any = None
        self._stream: Any = None
        self._last: av.VideoFrame | None = None
        self.frames = 0
        self.skipped = 0
        self.full: str | None = None

    @property
    def duration_s(self) -> float:
        return max(self._last_pts, 0) / 1000

    def add(self, jpeg: bytes, seconds: float) -> bool:
        """Encode one screencast frame, shown from ``seconds`` into the video. False once
        the recording is full (the frame is not written). A picture FFmpeg cannot decode
        is skipped (``skipped``): it came from a browser, and one bad frame must not end
        the video."""
        if self.full:
            return False
        try:
            pictures = self._decoder.decode(self._av.Packet(jpeg))
        except self._av.FFmpegError:
            self.skipped += 1
            return True
        if not pictures:
            return True
        picture = pictures[-1]
        if self._container is None:
            self._open(picture.width, picture.height)
        pts = self._pts(seconds)
        if pts > self._max_ms:
            self.full = "duration"
            return False
        self._encode(picture, pts)
        if self._file.tell() > self._max_bytes:
            self.full = "size"
            return False
        return True

    def close(self, seconds: float) -> None:
        """Show the last picture until ``seconds`` into the video (the stop), flush the
        encoder and finish the container. A recording that got no frame leaves an empty
        file."""
        if self._container is None:
            return
        end = min(self._pts(seconds), self._max_ms)
        if self._last is not None and self.full != "size" and end > self._last_pts:
            self._encode(self._last, end)
        for packet in self._stream.encode(None):
            self._container.mux(packet)
        self._container.close()

    def _open(self, width: int, height: int) -> None:
        self._container = self._av.open(self._file, mode="w", format="webm")
        stream = self._container.add_stream(
            "libvpx", options=_VP8_OPTIONS)
        stream.width, stream.height = max(width // 2 * 2, 2), max(height // 2 * 2, 2)
        stream.pix_fmt = "yuv420p"
        stream.time_base = _MS
        stream.codec_context.time_base = _MS
        stream.bit_rate = _BIT_RATE
        stream.codec_context.gop_size = _KEYFRAME_EVERY
        self._stream = stream

    def _pts(self, seconds: float) -> int:
        """Milliseconds into the video, strictly after the last frame (two frames in the
        same millisecond, or a step back, are spread one apart)."""
        return max(round(seconds * 1000), self._last_pts + 1)

    def _encode(self, picture: av.VideoFrame, pts: int) -> None:
        frame = picture.reformat(width=self._stream.width, height=self._stream.height,
                                 format="yuv420p")
        frame.pts, frame.time_base = pts, _MS
        for packet in self._stream.encode(frame):
            self._container.mux(packet)
        self._last, self._last_pts = picture, pts
        self.frames += 1
