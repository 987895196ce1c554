"""A Chrome trace, fed in pieces as it streams in, split into its events one at a time.

A trace saved by ``Tracing.end`` is JSON: ``{"traceEvents": [event, …], "metadata": …}``
(or a bare ``[event, …]``), gzip-compressed when asked (``streamCompression``). A page
load gives a few MB of text, a long recording hundreds, so the text is never held
whole: the gzip stream is inflated in bounded steps, and each complete event is decoded
as soon as its closing brace has arrived. What is held at any time is one inflate step
plus the one event that is still incomplete (``MAX_EVENT_CHARS`` bounds it).

No streaming JSON library is installed here (ijson and the like are not in the
environment), and none is needed: a trace is an array of small objects, and
``json.JSONDecoder.raw_decode`` decodes one object at an offset.

Pure: no I/O; tested on a captured trace (``fixtures/profiles/perf.trace.json.gz``).
"""

from __future__ import annotations

import codecs
import json
import re
import zlib
from collections.abc import Iterator
from typing import Any

__all__ = ["MAX_EVENT_CHARS", "TraceEventStream", "TraceFormatError"]

MAX_EVENT_CHARS = 16 * 1024 * 1024
"""The largest single event accepted (a screenshot event is ~100 kB); past it the text is
taken for something that is not a trace."""

INFLATE_STEP = 4 * 1024 * 1024  # text produced per inflate step, however well it compressed

_SKIP = re.compile(r"[\s,]*")
_START = re.compile(r'\s*(\[|\{\s*"traceEvents"\s*:\s*\[)')


class TraceFormatError(ValueError):
    """The stream is not a Chrome JSON trace (or it was cut off)."""


class TraceEventStream:
    """Feed ``feed()`` the stream's bytes as they come, take the events it yields, then
    call ``close()``; ``gzip``: the bytes are gzip-compressed."""

    def __init__(self, *, gzip: bool) -> None:
        self._inflater = zlib.decompressobj(wbits=31) if gzip else None
        # a character split between two reads is decoded whole
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._decoder = json.JSONDecoder()
        self._text = ""
        self._started = False
        self._ended = False
        self.events = 0

    def feed(self, data: bytes) -> Iterator[dict[str, Any]]:
        """The events completed by ``data``."""
        if self._inflater is None:
            yield from self._take(self._utf8.decode(data))
            return
        try:
            while data:
                text = self._inflater.decompress(data, INFLATE_STEP)
                data = self._inflater.unconsumed_tail
                yield from self._take(self._utf8.decode(text))
        except zlib.error as exc:
            raise TraceFormatError(f"the trace stream is not valid gzip ({exc})") from None

    def close(self) -> None:
        """The stream has ended: ``TraceFormatError`` if the events array never closed."""
        if not self._ended:
            raise TraceFormatError("the trace stream ended before its events array closed "
                                   f"(after {self.events} events)")

    def _take(self, text: str) -> Iterator[dict[str, Any]]:
        if self._ended:
            return
        buffer, pos = self._text + text, 0
        if not self._started:
            start = _START.match(buffer)
            if start is None:
                if len(buffer.lstrip()) > 64 or buffer.lstrip()[:1] not in ("", "[", "{"):
                    raise TraceFormatError(f"not a Chrome trace: starts {buffer[:40]!r}")
                self._text = buffer
                return
            self._started, pos = True, start.end()
        while True:
            pos = _SKIP.match(buffer, pos).end()  # type: ignore[union-attr]  # matches empty
            if pos == len(buffer):
                break
            if buffer[pos] == "]":
                self._ended = True  # the metadata after the events is not needed
                buffer, pos = "", 0
                break
            try:
                event, end = self._decoder.raw_decode(buffer, pos)
            except json.JSONDecodeError:
                if len(buffer) - pos > MAX_EVENT_CHARS:
                    raise TraceFormatError(f"a trace event is longer than {MAX_EVENT_CHARS} "
                                           "characters, or the trace is malformed") from None
                break  # the rest of this event is still to come
            pos = end
            if isinstance(event, dict):
                self.events += 1
                yield event
        self._text = buffer[pos:]

