"""Another DevTools client of a test host's browser, beside the gateway.

What a test framework's or a person's own tools do: open a page through the browser's
HTTP endpoint (``PUT /json/new``) and talk to it over the page's own websocket
(``/devtools/page/<id>``), from inside the host's network namespace. Nothing here goes
through the gateway, so what such a page does is what the gateway let it do.
"""

from __future__ import annotations

import http.client
import itertools
import json
import time
from typing import Any
from urllib.parse import quote

from websockets.sync.client import connect

from tests.topology import RemoteHost

__all__ = ["OtherClient"]

_TIMEOUT_S = 15.0
_LOADED = "location.href !== 'about:blank' && document.readyState === 'complete'"


class OtherClient:
    """Pages of ``host``'s browser opened and read over their own DevTools connections.

    Each method is blocking and enters the host's namespace for its sockets: call it from
    a worker thread (``anyio.to_thread.run_sync``)."""

    def __init__(self, host: RemoteHost) -> None:
        self.host = host

    def _http(self, method: str, path: str) -> Any:
        port = self.host.chrome_port(timeout=5)

        def send() -> Any:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=_TIMEOUT_S)
            try:
                conn.request(method, path)
                response = conn.getresponse()
                body = response.read()
                assert response.status == 200, (response.status, body)
                return json.loads(body) if body.startswith((b"{", b"[")) else body.decode()
            finally:
                conn.close()

        return self.host.run_in_netns(send)

    def open(self, url: str) -> str:
        """Open ``url`` in a new tab of the browser; its target id."""
        return str(self._http("PUT", "/json/new?" + quote(url, safe=":/?=&%#"))["id"])

    def close(self, target_id: str) -> None:
        self._http("GET", f"/json/close/{target_id}")

    def evaluate(self, target_id: str, *expressions: str) -> list[Any]:
        """Each expression's value (promises awaited) in the page, in order, over one
        connection to the page's own websocket — once the page has loaded.

        ``PUT /json/new`` answers while the new tab still shows ``about:blank``: an
        expression sent then runs in that document, or fails when the navigation
        destroys its context. So the loaded page is waited for first."""
        port = self.host.chrome_port(timeout=5)

        def run() -> list[Any]:
            ids = itertools.count(1)
            with connect(f"ws://127.0.0.1:{port}/devtools/page/{target_id}",
                         open_timeout=_TIMEOUT_S, max_size=None) as ws:

                def send(expression: str) -> dict[str, Any]:
                    call = next(ids)
                    ws.send(json.dumps({"id": call, "method": "Runtime.evaluate", "params": {
                        "expression": expression, "awaitPromise": True,
                        "returnByValue": True}}))
                    while True:
                        message: dict[str, Any] = json.loads(ws.recv(timeout=_TIMEOUT_S))
                        if message.get("id") == call:
                            return message

                deadline = time.monotonic() + _TIMEOUT_S
                while True:
                    loaded = send(_LOADED).get("result", {}).get("result", {}).get("value")
                    if loaded is True:
                        break
                    assert time.monotonic() < deadline, f"tab {target_id} never loaded"
                    time.sleep(0.05)
                values = []
                for expression in expressions:
                    message = send(expression)
                    assert "result" in message, message  # a CDP error, said as Chrome said it
                    result = message["result"]
                    assert "exceptionDetails" not in result, result["exceptionDetails"]
                    values.append(result["result"].get("value"))
            return values

        return self.host.run_in_netns(run)
