"""One HTTP/1.1 request over an already-open byte stream, with h11 doing the protocol.

DevTools discovery sends ``GET /json/version``; a WebDriver endpoint (chromedriver,
a Selenium Grid router) also takes ``POST /session`` and ``DELETE /session/<id>``
with JSON bodies — the same few lines of protocol, so one client serves both.

The stream is an anyio socket stream to this machine's loopback, or a bare SSH
``direct-tcpip`` channel to the remote one's (no listening port anywhere), which
``ChannelStream`` makes look the same.
Chrome keeps the connection open after it answers (it ignores
``Connection: close``), so the end of the response is h11's end of message,
never EOF. Bodies are capped: a DevTools listing is a few kilobytes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

import anyio

from gateway.config import host_port
from gateway.errors import ExceptionMap, HostError, map_exceptions

__all__ = ["CLOSED_MIDWAY", "CLOSED_UNANSWERED", "MAX_RESPONSE_BYTES", "ByteStream",
           "ChannelStream", "HttpResponse", "host_header", "request", "request_over"]

MAX_RESPONSE_BYTES = 1024 * 1024


@dataclass(frozen=True)
class HttpResponse:
    status: int
    body: bytes


class ByteStream(Protocol):
    """What ``request_over`` needs of a stream: anyio's ``ByteStream`` methods."""

    async def send(self, item: bytes) -> None: ...

    async def receive(self, max_bytes: int = 65536) -> bytes:
        """The next bytes; ``anyio.EndOfStream`` once the peer closed its end."""

    async def aclose(self) -> None: ...


class _Reader(Protocol):
    async def read(self, n: int = -1) -> bytes: ...


class _Writer(Protocol):
    def write(self, data: bytes) -> None: ...

    async def drain(self) -> None: ...

    def close(self) -> None: ...


class ChannelStream:
    """A reader and writer in asyncio's style (asyncssh's channels) as a ``ByteStream``."""

    def __init__(self, reader: _Reader, writer: _Writer) -> None:
        self._reader, self._writer = reader, writer

    async def send(self, item: bytes) -> None:
        self._writer.write(item)
        await self._writer.drain()

    async def receive(self, max_bytes: int = 65536) -> bytes:
        data = await self._reader.read(max_bytes)
        if not data:
            raise anyio.EndOfStream
        return data

    async def aclose(self) -> None:
        self._writer.close()


def host_header(host: str, port: int) -> str:
    """Chrome refuses ``/json`` requests whose Host is not an IP or ``localhost``: the
    address asked for is both."""
    return host_port(host, port)


async def request(connect: Callable[[], Awaitable[ByteStream]], host: str, port: int,
                  path: str, timeout_s: float, errors: ExceptionMap, *, method: str = "GET",
                  body: bytes | None = None) -> HttpResponse:
    """``request_over`` a stream ``connect`` opens, all of it within ``timeout_s``: a host's
    ``http_request``, its connect failures mapped by ``errors`` (the host's table)."""
    with map_exceptions({TimeoutError: lambda _: HostError(f"no HTTP answer within "
                                                           f"{timeout_s:g} s"), **errors}):
        with anyio.fail_after(timeout_s):
            return await request_over(await connect(), host, port, path, method=method,
                                      body=body)


async def request_over(stream: ByteStream, host: str, port: int, path: str,
                       *, method: str = "GET", body: bytes | None = None) -> HttpResponse:
    """Send ``method path`` (with a JSON ``body``, if any) and read the whole response;
    ``HostError`` when it is not HTTP, too large, or cut short. Closes ``stream``."""
    import h11  # ~12 ms: only discovery and WebDriver need it, not every start

    conn = h11.Connection(h11.CLIENT, max_incomplete_event_size=64 * 1024)
    headers = [("Host", host_header(host, port)), ("Connection", "close"),
               ("Accept", "application/json")]
    if body is not None:
        headers += [("Content-Type", "application/json; charset=utf-8"),
                    ("Content-Length", str(len(body)))]
    heard = bytearray()  # the answer's first bytes: what is quoted when it is not HTTP
    ended = False
    try:
        request = h11.Request(method=method, target=path, headers=headers)
        await stream.send(conn.send(request) + (conn.send(h11.Data(data=body)) if body else b"")
                          + (conn.send(h11.EndOfMessage()) or b""))
        status, got = 0, bytearray()
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                data = await _receive(stream)
                ended = not data
                if ended and not status:  # h11 would say "can't handle event type …"
                    raise HostError(_not_http(heard) if heard else CLOSED_UNANSWERED)
                heard += data[:_QUOTED - len(heard)]
                conn.receive_data(data)
            elif isinstance(event, h11.Response):
                status = event.status_code
            elif isinstance(event, h11.Data):
                got += event.data
                if len(got) > MAX_RESPONSE_BYTES:
                    raise HostError("response too large")
            elif isinstance(event, h11.EndOfMessage):
                return HttpResponse(status, bytes(got))
            elif isinstance(event, h11.ConnectionClosed):
                raise HostError(CLOSED_MIDWAY)
    except h11.LocalProtocolError:  # our request: a path or header HTTP cannot carry
        raise HostError(f"{method} {path[:200]!r} cannot be sent as HTTP (a character a path "
                        "or header may not hold)") from None
    except h11.RemoteProtocolError:
        # h11's text names its own state machine ("can't handle event type …
        # role=SERVER"): what the peer sent says more, in words of ours around it.
        raise HostError(CLOSED_MIDWAY if ended else _not_http(heard)) from None
    finally:
        await stream.aclose()


CLOSED_UNANSWERED = ("the connection was taken, then closed with no answer: what listens "
                     "there is going away, or cannot reach what it serves")
CLOSED_MIDWAY = "the connection closed before the answer ended: retry"
_QUOTED = 40  # bytes of a non-HTTP answer quoted


def _not_http(heard: bytes | bytearray) -> str:
    """An answer that is not HTTP, quoting its first bytes (as printable ASCII), if any."""
    text = "".join(chr(b) if 32 <= b < 127 else "." for b in heard[:_QUOTED])
    began = f" (it began {text + ('…' if len(heard) >= _QUOTED else '')!r})" if text else ""
    return (f"what answered is not HTTP{began}: the address is another program's, not the "
            "one asked for")


async def _receive(stream: ByteStream) -> bytes:
    """The next bytes, ``b""`` at the end (h11's way of hearing it)."""
    try:
        return await stream.receive(65536)
    except anyio.EndOfStream:
        return b""
