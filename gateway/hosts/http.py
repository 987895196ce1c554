"""One HTTP/1.1 request over an already-open byte stream, with h11 doing the protocol.

DevTools discovery sends ``GET /json/version``; a WebDriver endpoint (chromedriver,
a Selenium Grid router) also takes ``POST /session`` and ``DELETE /session/<id>``
with JSON bodies — the same few lines of protocol, so one client serves both.

The stream is a TCP socket to this machine's loopback, or a bare SSH
``direct-tcpip`` channel to the remote one's (no listening port anywhere).
Chrome keeps the connection open after it answers (it ignores
``Connection: close``), so the end of the response is h11's end of message,
never EOF. Bodies are capped: a DevTools listing is a few kilobytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from gateway.config import host_port

__all__ = ["MAX_RESPONSE_BYTES", "HttpResponse", "host_header", "request_over"]

MAX_RESPONSE_BYTES = 1024 * 1024


@dataclass(frozen=True)
class HttpResponse:
    status: int
    body: bytes


class _Reader(Protocol):
    async def read(self, n: int = -1) -> bytes: ...


class _Writer(Protocol):
    def write(self, data: bytes) -> None: ...

    def close(self) -> None: ...


def host_header(host: str, port: int) -> str:
    """Chrome refuses ``/json`` requests whose Host is not an IP or ``localhost``: the
    address asked for is both."""
    return host_port(host, port)


async def request_over(reader: _Reader, writer: _Writer, host: str, port: int, path: str,
                       *, method: str = "GET", body: bytes | None = None) -> HttpResponse:
    """Send ``method path`` (with a JSON ``body``, if any) and read the whole response;
    ``ValueError`` when it is not HTTP, too large, or cut short."""
    import h11  # ~12 ms: only discovery and WebDriver need it, not every start

    conn = h11.Connection(h11.CLIENT, max_incomplete_event_size=64 * 1024)
    headers = [("Host", host_header(host, port)), ("Connection", "close"),
               ("Accept", "application/json")]
    if body is not None:
        headers += [("Content-Type", "application/json; charset=utf-8"),
                    ("Content-Length", str(len(body)))]
    request = h11.Request(method=method, target=path, headers=headers)
    try:
        writer.write(conn.send(request) + (conn.send(h11.Data(data=body)) if body else b"")
                     + (conn.send(h11.EndOfMessage()) or b""))
        status, got = 0, bytearray()
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(await reader.read(65536))
            elif isinstance(event, h11.Response):
                status = event.status_code
            elif isinstance(event, h11.Data):
                got += event.data
                if len(got) > MAX_RESPONSE_BYTES:
                    raise ValueError("response too large")
            elif isinstance(event, h11.EndOfMessage):
                return HttpResponse(status, bytes(got))
            elif isinstance(event, h11.ConnectionClosed):
                raise ValueError("connection closed before the response ended")
    except h11.ProtocolError as exc:
        # h11 quotes the offending line (up to 64 KB of whatever answered): keep the gist.
        said = str(exc)
        raise ValueError("not an HTTP response ("
                         + (said if len(said) <= 160 else said[:160] + "…") + ")") from None
    finally:
        writer.close()
