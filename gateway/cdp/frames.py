"""A CDP frame's text: parsed (``parse_message``), or an event's method and session read
off it before — or instead of — parsing it (``peek_event``).

A page logging 10,000 console messages a second sends as many frames on the
browser's one websocket, and the reply to a call on another tab queues behind
them: every frame the gateway parses and turns into a console entry (≈ 20 µs
each here) delays it. Most of those entries are pushed out of the tab's ring
before anyone reads them. So the connection asks the session's owner whether it
takes the frame as it is (``CdpConnection.listen(take=…)``, kept in
``FrameTakers``), and a console keeps the text, parsed only if it is still there
when read.

Chrome writes an event of a flattened session as
``{"method":"M","params":{…},"sessionId":"S"}`` — method first, session last, no
spaces. Only a frame of exactly that outline is peeked; anything else (a reply,
a browser-level event, other spacing or key order, an escape in the method or
session) gives ``None`` and is parsed as before. Inside a JSON string every
quote is escaped, so the unescaped ``,"sessionId":"`` before the closing ``"}``
can only be the top-level key.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import orjson

__all__ = ["FrameTaker", "FrameTakers", "parse_message", "peek_event"]

FrameTaker = Callable[[str, str], bool]
"""Offered (method, frame text) of a session's event before it is parsed; True: taken
as it is (the frame goes no further), False: parse it and call the listeners."""


def parse_message(raw: str | bytes) -> Any:
    """One CDP message from its JSON text.

    orjson parses CDP messages in about half the time ``json.loads`` takes (and
    ~15% less than pydantic_core's ``from_json``): it counts when a page floods the
    socket with events (every one is parsed on the gateway's event loop) and in
    every page view, whose accessibility tree is ~670 kB of JSON on a news page.
    It refuses lone UTF-16 surrogates (``"\\ud800"``), which JavaScript strings
    may hold and Chrome sends escaped as such, and integers beyond 64 bits. Those
    messages go through ``json.loads`` instead, and each lone surrogate becomes
    U+FFFD: no tool result could carry it (the MCP channel is UTF-8), so left in,
    one ``console.log`` of such a string would break every later
    ``console_messages`` of the tab. Text that is not JSON raises ``ValueError``.
    """
    try:
        return orjson.loads(raw)
    except ValueError:  # orjson.JSONDecodeError is one
        return _without_lone_surrogates(json.loads(raw))


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")  # json.loads has joined the valid pairs


def _without_lone_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {_without_lone_surrogates(k): _without_lone_surrogates(v)
                for k, v in value.items()}
    if isinstance(value, list):
        return [_without_lone_surrogates(item) for item in value]
    return value


_HEAD = '{"method":"'
_PARAMS = '","params":{'
_SESSION = '},"sessionId":"'
_TAIL = '"}'


def peek_event(frame: str) -> tuple[str, str] | None:
    """``(method, sessionId)`` of a session event's frame text, or None if it is not one
    in Chrome's outline (then parse it)."""
    if not frame.startswith(_HEAD) or not frame.endswith(_TAIL):
        return None
    end = frame.find('"', len(_HEAD))
    method = frame[len(_HEAD):end]
    if "\\" in method or not frame.startswith(_PARAMS, end):
        return None
    at = frame.rfind(_SESSION, end + len(_PARAMS) - 1)
    if at < 0:
        return None
    session = frame[at + len(_SESSION):-len(_TAIL)]
    if not session or '"' in session or "\\" in session:
        return None
    return method, session


class FrameTakers:
    """The takers of a connection's sessions, one per session (its owner's), and the offer
    of each frame to its session's taker."""

    def __init__(self) -> None:
        self._by_session: dict[str, FrameTaker] = {}

    def add(self, session_id: str | None, take: FrameTaker | None) -> Callable[[], None]:
        """Offer ``session_id``'s events to ``take`` (none, or a browser-level listener:
        nothing to offer); returns its remover."""
        if take is None or session_id is None:
            return lambda: None
        self._by_session[session_id] = take

        def remove() -> None:
            if self._by_session.get(session_id) is take:
                del self._by_session[session_id]

        return remove

    def offer(self, frame: str | bytes) -> bool:
        """True when the frame's session's taker took it (it must not be parsed then)."""
        if not self._by_session or type(frame) is not str:
            return False
        peeked = peek_event(frame)
        if peeked is None:
            return False
        take = self._by_session.get(peeked[1])
        return take is not None and take(peeked[0], frame)
