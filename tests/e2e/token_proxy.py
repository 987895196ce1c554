"""A hosted browser pool in miniature: a token-checking TLS websocket proxy (issue 15).

Run inside a test host's namespace, in front of that host's real Chromium::

    python -m tests.e2e.token_proxy LISTEN_HOST PORT CHROME_PORT TOKEN CERT KEY

It serves ``wss://LISTEN_HOST:PORT/<any path>`` with CERT/KEY, and accepts a
handshake only when both the ``token`` query parameter and the ``Authorization:
Bearer`` header carry TOKEN (as browserless and Browserbase check theirs) —
anything else is answered 401 before any websocket exists. An accepted
connection is relayed frame by frame to the browser websocket Chromium's
``/json/version`` names. Prints ``ready`` once listening.
"""

from __future__ import annotations

import asyncio
import http
import json
import ssl
import sys
import urllib.request
from urllib.parse import parse_qs, urlsplit

from websockets.asyncio.client import ClientConnection, connect
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

__all__ = ["main"]


def _allowed(request: Request, token: str) -> bool:
    query = parse_qs(urlsplit(request.path).query)
    return (query.get("token") == [token]
            and request.headers.get("Authorization") == f"Bearer {token}")


Side = ServerConnection | ClientConnection


async def _pipe(source: Side, sink: Side) -> None:
    try:
        async for message in source:
            await sink.send(message)
    except ConnectionClosed:
        pass
    finally:
        await sink.close()


async def _serve(listen: str, port: int, chrome_port: int, token: str, cert: str,
                 key: str) -> None:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)

    def check(connection: ServerConnection, request: Request) -> Response | None:
        if _allowed(request, token):
            return None
        return connection.respond(http.HTTPStatus.UNAUTHORIZED, "bad token\n")

    async def relay(client: ServerConnection) -> None:
        with urllib.request.urlopen(f"http://127.0.0.1:{chrome_port}/json/version",
                                    timeout=5) as answer:
            upstream_url = json.loads(answer.read())["webSocketDebuggerUrl"]
        async with connect(upstream_url, max_size=None, compression=None,
                           ping_interval=None) as upstream:
            await asyncio.gather(_pipe(client, upstream), _pipe(upstream, client))

    async with serve(relay, listen, port, ssl=context, process_request=check,
                     max_size=None, compression=None, ping_interval=None):
        print("ready", flush=True)
        await asyncio.get_running_loop().create_future()


def main(argv: list[str]) -> None:
    listen, port, chrome_port, token, cert, key = argv
    asyncio.run(_serve(listen, int(port), int(chrome_port), token, cert, key))


if __name__ == "__main__":
    main(sys.argv[1:])
