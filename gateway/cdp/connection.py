"""One browser-level CDP websocket: request ids → replies awaited, events → listeners.

A target holds exactly one ``CdpConnection``. Tabs do not get websockets of
their own: they are flattened sessions (``Target.attachToTarget`` with
``flatten: true``) multiplexed on this one socket by ``sessionId``, so a tab
call costs one websocket frame each way and nothing else.

A command's reply is a ``OneShot`` the reader sets: waiting for it is bounded by
the command's timeout and never mistakes the caller's cancellation for anything else.

The reader loop runs inside the caller's task group (``run()``), so a crash in
it is seen by whoever supervises the target — there is no stray task. When the
socket closes, every pending command fails with ``BrowserClosed`` at once
rather than waiting for its timeout.

A session's owner may take its event frames unparsed (``frames``): a tab
flooding its console then costs a few string operations a frame, not a parse.

The reader is total: no frame content can raise out of it. A frame the gateway
cannot use (not JSON, not an object, an id or method of the wrong type, params
that are not an object, …) is counted by kind (``dropped_frames``), logged the
first time its kind is seen, and dropped; the connection stays up. A reply of
the wrong shape whose id is a command in flight fails that command at once with
``MalformedReply`` instead of leaving it to run into its timeout.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import ssl
from collections.abc import Callable, Sequence
from typing import Any

import anyio
import structlog
from websockets.asyncio.client import ClientConnection, connect, unix_connect
from websockets.exceptions import (
    ConnectionClosed,
    InvalidHandshake,
    InvalidStatus,
    InvalidURI,
    PayloadTooBig,
    ProtocolError,
    WebSocketException,
)

from gateway.cdp import consent
from gateway.cdp.frames import FrameTaker, FrameTakers, parse_message
from gateway.concurrency import OneShot
from gateway.errors import (
    BrowserClosed,
    CdpError,
    CdpTimeout,
    ConsentNotGiven,
    DiscoveryError,
    ExceptionMap,
    GatewayError,
    MalformedReply,
    map_exceptions,
)
from gateway.hosts.os_words import os_reason

__all__ = ["CdpConnection", "EventListener", "open_websocket", "websocket_errors",
           "websocket_reason"]

log = structlog.get_logger("gateway.cdp")

EventListener = Callable[[str, dict[str, Any]], None]
"""Called with (method, params) for each event of a session; must not block."""

# Chrome sends whole messages; a 5 MB evaluate result is one frame. The cap is
# only a guard against a runaway page filling our memory.
MAX_MESSAGE_BYTES = 256 * 1024 * 1024

SAMPLE_CHARS = 120
"""How much of a dropped frame its log line shows: enough to recognise it, little
enough that a runaway frame (or a secret inside one) does not flood the log."""


async def open_websocket(
    url: str, *, unix_path: str | None, target: str, timeout_s: float,
    headers: Sequence[tuple[str, str]] = (), ca_file: str | None = None, shown: str = "",
    person_at: str | None = None,
) -> ClientConnection:
    """Open the browser websocket, directly or through a forwarded Unix socket.

    No ``Origin`` header is sent (Chrome answers 403 to one it was not told to
    allow) and per-message compression is off (Chrome does not use it and it
    costs CPU on every frame). ``headers`` go into the handshake (a hosted pool's
    ``Authorization``); ``wss://`` verifies against the system trust store, or
    ``ca_file``. Messages name the URL as ``shown`` (its secrets redacted).
    ``person_at``: a person's own Chrome on that machine, which asks them (``consent``):
    its refusal and a dialog nobody answers in ``timeout_s`` are said as such.
    """
    shown = shown or url
    extra: dict[str, Any] = {"additional_headers": list(headers)} if headers else {}
    if url.startswith("wss://"):
        extra["ssl"] = _tls_context(ca_file, target)
    with map_exceptions(websocket_errors(target, shown, timeout_s, person_at)), \
            anyio.fail_after(timeout_s):
        if unix_path is not None:
            return await unix_connect(
                unix_path, url, compression=None, max_size=MAX_MESSAGE_BYTES,
                ping_interval=None, open_timeout=None, **extra,
            )
        return await connect(
            url, compression=None, max_size=MAX_MESSAGE_BYTES,
            ping_interval=None, open_timeout=None, proxy=None, **extra,
        )


def websocket_errors(target: str, shown: str, timeout_s: float,
                     person_at: str | None = None) -> ExceptionMap:
    """websockets' failures to open (and the socket's under them) as ``DiscoveryError``:
    the one table of this module, in the gateway's words (``websocket_reason``) — never
    the library's text, which may quote the URL and its secrets (``shown`` hides them).
    A person's own Chrome (``person_at``): a 403 or no answer is ``ConsentNotGiven``."""

    def refused(exc: Exception) -> DiscoveryError:
        return DiscoveryError(target, f"DevTools websocket {shown} refused: "
                                      f"{websocket_reason(exc)}")

    def status(exc: InvalidStatus) -> DiscoveryError:
        code = exc.response.status_code
        if person_at is not None and code == 403:
            return ConsentNotGiven(target, consent.declined(person_at))
        hint = (" — the credentials (token or headers) were refused; check them"
                if code in (401, 403) else "")
        return DiscoveryError(target, f"DevTools websocket {shown} refused: HTTP {code}{hint}")

    def timed_out(_: TimeoutError) -> DiscoveryError:
        if person_at is not None:
            return ConsentNotGiven(target, consent.unanswered(person_at, timeout_s))
        return DiscoveryError(target, f"DevTools websocket {shown} did not open within "
                                      f"{timeout_s:g} s")

    return {TimeoutError: timed_out,
            InvalidStatus: status,
            (OSError, WebSocketException): refused}


def websocket_reason(exc: BaseException) -> str:
    """What a websocket failure means, read off its kind (a closed connection: off its
    close code), in the gateway's words."""
    if isinstance(exc, ConnectionClosed):
        code = exc.rcvd.code if exc.rcvd is not None else None
        return _CLOSE_CODES.get(code, f"the browser closed the websocket (code {code})")
    if isinstance(exc, InvalidURI):
        return "the websocket URL is not valid"
    if isinstance(exc, InvalidHandshake):
        return "what answered is not a DevTools websocket (the opening handshake failed)"
    if isinstance(exc, PayloadTooBig):
        return "the browser sent a message over the size limit"
    if isinstance(exc, ProtocolError):
        return "the browser broke the websocket protocol"
    if isinstance(exc, WebSocketException):
        return "the websocket failed"
    return os_reason(exc)


_CLOSE_CODES: dict[int | None, str] = {
    None: "the connection was cut off without a closing handshake (the browser or the "
          "link went away)",
    1000: "the browser closed the websocket",
    1001: "the browser is shutting down",
    1009: "the gateway sent a message over the browser's size limit",
    1011: "the browser hit an internal error",
}


def _tls_context(ca_file: str | None, target: str) -> ssl.SSLContext:
    """Certificates checked against the system trust store, or ``ca_file`` (a path on
    this machine, ``~/`` its home); a file that cannot serve is the target's failure."""
    path = os.path.expanduser(ca_file) if ca_file else None
    named = f"ca_file {ca_file}" + (f" ({path})" if path != ca_file else "")
    with map_exceptions({
        ssl.SSLError: lambda exc: DiscoveryError(
            target, f"{named} holds no PEM certificate ({exc.reason}); give the PEM file of "
            "the CA that signed the endpoint's certificate"),
        OSError: lambda exc: DiscoveryError(
            target, f"{named} cannot be read ({exc.strerror}); fix ca_file or drop it to "
            "use the system trust store"),
    }):
        return ssl.create_default_context(cafile=path)


class CdpConnection:
    """Commands and events over one browser websocket."""

    def __init__(self, ws: ClientConnection, *, name: str) -> None:
        self._ws = ws
        self._name = name
        self._ids = itertools.count(1)
        self._pending: dict[int, tuple[OneShot[dict[str, Any]], str, str | None]] = {}
        self._listeners: dict[str | None, list[EventListener]] = {}
        self._takers = FrameTakers()
        self._closed_reason: str | None = None
        self._dropped: dict[str, int] = {}
        self.closed = anyio.Event()

    @property
    def is_open(self) -> bool:
        return self._closed_reason is None

    @property
    def listener_count(self) -> int:
        """Event listeners registered now: one per live session plus the browser's
        own — a count that grows with closed tabs is a leak."""
        return sum(len(listeners) for listeners in self._listeners.values())

    def listen(self, session_id: str | None, listener: EventListener,
               take: FrameTaker | None = None) -> Callable[[], None]:
        """Route events of ``session_id`` (None: browser-level) to ``listener``, offering
        them to ``take`` unparsed first. Returns a function that removes both again.
        """
        self._listeners.setdefault(session_id, []).append(listener)
        untake = self._takers.add(session_id, take)

        def remove() -> None:
            untake()
            listeners = self._listeners.get(session_id, [])
            if listener in listeners:
                listeners.remove(listener)
            if not listeners:
                self._listeners.pop(session_id, None)

        return remove

    async def send(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        session_id: str | None = None,
        timeout_s: float,
        timeout_hint: str = "",
    ) -> dict[str, Any]:
        """Send one command and wait for its result, at most ``timeout_s``."""
        if self._closed_reason is not None:
            raise BrowserClosed(f"browser connection of {self._name!r} is closed "
                                f"({self._closed_reason}); retry — the gateway reconnects")
        call_id = next(self._ids)
        reply: OneShot[dict[str, Any]] = OneShot()
        self._pending[call_id] = (reply, method, session_id)
        message: dict[str, Any] = {"id": call_id, "method": method, "params": params or {}}
        if session_id is not None:
            message["sessionId"] = session_id
        try:
            await self._ws.send(json.dumps(message))
            if not await reply.wait(timeout_s):
                raise CdpTimeout(method, timeout_s, timeout_hint)
            return reply.result()
        except ConnectionClosed as exc:
            raise BrowserClosed(f"browser connection of {self._name!r} closed while "
                                f"sending {method} ({websocket_reason(exc)}); retry — the "
                                "gateway reconnects") from None
        finally:
            self._pending.pop(call_id, None)

    async def notify(
        self, method: str, params: dict[str, Any] | None = None, *, session_id: str | None = None
    ) -> None:
        """Send a command whose answer nobody waits for (clean-up such as releaseObject)."""
        if self._closed_reason is not None:
            return
        message: dict[str, Any] = {"id": next(self._ids), "method": method,
                                   "params": params or {}}
        if session_id is not None:
            message["sessionId"] = session_id
        with contextlib.suppress(ConnectionClosed):
            await self._ws.send(json.dumps(message))

    async def run(self) -> None:
        """Read frames until the socket closes; run this in the supervisor's task group."""
        try:
            async for raw in self._ws:
                self.receive(raw)
            reason = "the browser closed the DevTools connection"
        except (ConnectionClosed, OSError) as exc:
            reason = f"DevTools connection lost ({websocket_reason(exc)})"
        self._fail_pending(reason)

    async def aclose(self) -> None:
        self._fail_pending("closed by the gateway")
        with anyio.move_on_after(2, shield=True):
            await self._ws.close()

    @property
    def dropped_frames(self) -> dict[str, int]:
        """Frames dropped as unusable on this connection, by kind (a copy), for operators."""
        return dict(self._dropped)

    def receive(self, raw: str | bytes) -> None:
        """Take one frame from the browser; never raises, whatever the frame holds.

        A binary frame is parsed like a text one: Chrome sends text, but proxies in
        front of it may not, and a client that reads both loses nothing. The checks
        on the hot path (an event) are a few ``type() is`` tests; an event its session's
        owner takes as text is not parsed at all.
        """
        if self._takers.offer(raw):
            return
        try:
            message = parse_message(raw)
        except (ValueError, RecursionError):  # RecursionError: nesting beyond json's depth
            self._drop("not JSON", raw)
            return
        if type(message) is not dict:
            self._drop("not a JSON object", raw)
            return
        call_id = message.get("id")
        if call_id is not None:
            self._reply(call_id, message, raw)
            return
        event = message.get("method")
        if type(event) is not str:
            self._drop("no method name" if event is None else "method not a string", raw)
            return
        params = message.get("params", {})
        session_id = message.get("sessionId")
        if type(params) is not dict:
            self._drop("event params not an object", raw)
            return
        if session_id is not None and type(session_id) is not str:
            self._drop("sessionId not a string", raw)
            return
        for listener in tuple(self._listeners.get(session_id, ())):
            try:
                listener(event, params)
            except Exception:  # one odd event must not take the connection down
                log.exception("event listener failed", cdp_event=event, target=self._name)

    def _reply(self, call_id: object, message: dict[str, Any], raw: str | bytes) -> None:
        if type(call_id) is not int:  # bool too: True would answer command 1
            self._drop("id not an integer", raw)
            return
        entry = self._pending.get(call_id)
        if entry is None:  # a notify() answer, or one that already timed out
            return
        reply, method, _ = entry
        if reply.done:
            return
        error = message.get("error")
        if error is None:
            result = message.get("result", {})
            if type(result) is dict:
                reply.set(result)
                return
            detail = f"its result is {_json_type(result)}, not an object"
        elif type(error) is dict:
            code, text = error.get("code", 0), error.get("message", "")
            if type(code) is int and type(text) is str:
                reply.fail(CdpError(method, code, text))
                return
            detail = (f"its error has code {_json_type(code)} and message {_json_type(text)}, "
                      "not an integer and a string")
        else:
            detail = f"its error is {_json_type(error)}, not an object"
        self._drop("malformed reply", raw, cdp_method=method)
        reply.fail(MalformedReply(method, self._name, detail))

    def _drop(self, kind: str, raw: str | bytes, **context: object) -> None:
        """Count an unusable frame; log the first of each kind (a flood logs once)."""
        seen = self._dropped.get(kind, 0)
        self._dropped[kind] = seen + 1
        if seen:
            return
        log.warning("dropped a CDP frame the gateway cannot use", kind=kind,
                    target=self._name, frame=_sample(raw), frame_length=len(raw),
                    binary=isinstance(raw, bytes), **context,
                    note="later frames of this kind are only counted")

    def fail_session(self, session_id: str, error: GatewayError, keep: frozenset[str]) -> None:
        """Fail the commands in flight on one session (except ``keep`` methods) at once.

        Used when a JavaScript dialog opens (the page is blocked) and when Chrome
        detaches the session (it answers nothing more there): whatever was waiting
        would only run into its timeout.
        """
        for reply, method, sid in self._pending.values():
            if sid == session_id and method not in keep:
                reply.fail(error)

    def _fail_pending(self, reason: str) -> None:
        if self._closed_reason is None:
            self._closed_reason = reason
        for reply, method, _ in self._pending.values():
            reply.fail(BrowserClosed(f"{method} interrupted: {reason} on target {self._name!r}; "
                                     "the gateway reconnects — retry the call"))
        self._pending.clear()
        self.closed.set()


def _sample(raw: str | bytes) -> str:
    """The start of a frame, printable and bounded, for a log line."""
    head = raw[:SAMPLE_CHARS]
    if isinstance(head, bytes):
        text = repr(head)[2:-1]
    else:
        text = head if head.isprintable() else repr(head)[1:-1]
    cut = len(raw) > SAMPLE_CHARS or len(text) > SAMPLE_CHARS
    return text[:SAMPLE_CHARS] + ("…" if cut else "")


def _json_type(value: object) -> str:
    """How a JSON value of the wrong kind is named in an error text."""
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
             int: "an integer", float: "a number", type(None): "null"}
    return names.get(type(value), type(value).__name__)
