"""WebDriver ``POST /session`` answers (fixtures/webdriver) → where the browser's DevTools are.

chromedriver names ``localhost:PORT`` on its own machine: the WebDriver URL's
host. A Selenium Grid 4 names ``se:cdp`` through the router *as the Grid sees
itself* (a container address); the gateway goes where its WebDriver HTTP goes,
so the URL is rewritten to the configured router address, path kept.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import cast

import anyio
import pytest

from gateway.cdp.endpoint import parse_version_payload
from gateway.config import TargetConfig
from gateway.config.remote import WebDriverUrl, parse_webdriver_url
from gateway.config.text import BadValue
from gateway.discovery.strategy import Search
from gateway.discovery.webdriver import (
    NewSession,
    WebDriverSession,
    parse_new_session,
    webdriver_error,
)
from gateway.doctor.report import Recorder, StopCheck, TargetReport
from gateway.doctor.webdriver_steps import WebDriverSteps
from gateway.errors import DiscoveryError, HostError
from gateway.hosts.base import Host
from gateway.hosts.http import ChannelStream, HttpResponse, request_over
from tests.unit.test_discovery import Stream

FIXTURES = Path(__file__).parents[2] / "fixtures" / "webdriver"
GRID_SESSION = "0798a8c4ce1839c94e56a6e35c1e5ebf"


def _answer(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def test_chromedriver_debugger_address_is_on_the_webdriver_host() -> None:
    body = _answer("chromedriver_156_new_session.json")
    local = parse_new_session(body, WebDriverUrl("127.0.0.1", 9515))
    assert local == NewSession("3d8a98a86b09fc3c568d54a896527d3f", "127.0.0.1", 39377, None)
    # chromedriver on another machine of the host's network: its "localhost" is that one.
    elsewhere = parse_new_session(body, WebDriverUrl("10.0.0.7", 9515))
    assert (elsewhere.host, elsewhere.port) == ("10.0.0.7", 39377)
    named = parse_new_session(body, WebDriverUrl("localhost", 9515))
    assert named.host == "127.0.0.1"  # an IP for the /json Host header Chrome checks


@pytest.mark.parametrize(("router", "expected"), [
    ("http://grid.internal:4444", ("grid.internal", 4444)),
    ("http://127.0.0.1:14444", ("127.0.0.1", 14444)),    # a tunnel to the router
    ("http://grid.internal:4444/wd/hub", ("grid.internal", 4444)),
])
def test_grid_se_cdp_is_rewritten_to_the_configured_router(
        router: str, expected: tuple[str, int]) -> None:
    url = parse_webdriver_url(router)
    found = parse_new_session(_answer("grid4_new_session.json"), url)
    # se:cdp (172.17.0.3, the router's container address) wins over the node-local
    # debuggerAddress the same answer carries.
    assert found == NewSession(GRID_SESSION, *expected, f"/session/{GRID_SESSION}/se/cdp")


def test_grid_without_cdp_is_refused_with_the_reason() -> None:
    # Its debuggerAddress is the node's own loopback: not a way in, so not used.
    with pytest.raises(ValueError, match=r"no se:cdp .* without --disable-cdp"):
        parse_new_session(_answer("grid4_cdp_disabled.json"), WebDriverUrl("grid", 4444))
    with pytest.raises(ValueError, match="neither se:cdp nor"):
        parse_new_session(b'{"value": {"sessionId": "x", "capabilities": '
                          b'{"browserName": "firefox"}}}', WebDriverUrl("grid", 4444))


@pytest.mark.parametrize("body", [b"[]", b'{"value": 1}', b'{"value": {"sessionId": ""}}',
                                  b'{"value": {"sessionId": "x", "capabilities": {}}}'])
def test_answers_without_a_session_are_refused(body: bytes) -> None:
    with pytest.raises(ValueError):
        parse_new_session(body, WebDriverUrl("grid", 4444))


def test_error_answers_become_one_line() -> None:
    refused = webdriver_error(HttpResponse(500, _answer("grid4_session_not_created.json")))
    assert refused.startswith("HTTP 500 session not created: Could not start a new session.")
    assert "\n" not in refused and "LocalNewSessionQueue" not in refused
    gone = HttpResponse(404, b'{"value":{"error":"invalid session id","message":'
                             b'"invalid session id","stacktrace":"#0 0x5"}}')
    assert webdriver_error(gone) == "HTTP 404 invalid session id"
    assert webdriver_error(HttpResponse(502, b"<html>bad gateway</html>")) == "HTTP 502"


@pytest.mark.parametrize(("text", "expected"), [
    ("http://grid.internal:4444", WebDriverUrl("grid.internal", 4444)),
    ("http://grid.internal", WebDriverUrl("grid.internal", 4444)),
    ("http://127.0.0.1:9515/", WebDriverUrl("127.0.0.1", 9515)),
    ("http://[::1]:9515/wd/hub/", WebDriverUrl("::1", 9515, "/wd/hub")),
])
def test_webdriver_urls(text: str, expected: WebDriverUrl) -> None:
    assert parse_webdriver_url(text) == expected


@pytest.mark.parametrize(("text", "reason"), [
    ("https://grid:4444", "https is not supported"),
    ("grid:4444", "must start with http://"),
    ("http://user:pw@grid:4444", "user@"),
    ("http://grid:4444/?x=1", "query"),
    ("http://gr id:4444", "whitespace"),
    ("http://grid:99999", "out of range"),
])
def test_bad_webdriver_urls(text: str, reason: str) -> None:
    with pytest.raises(BadValue, match=reason):
        parse_webdriver_url(text)


def test_post_over_a_stream_sends_the_json_body_and_reads_the_error() -> None:
    """``POST /session`` through ``request_over`` (what goes over the SSH channel), answered
    by a captured chromedriver refusal."""
    stream = Stream((FIXTURES / "chromedriver_156_no_matching_browser.http").read_bytes())
    body = b'{"capabilities":{"alwaysMatch":{"browserName":"nosuchbrowser"}}}'

    async def main() -> HttpResponse:
        return await request_over(ChannelStream(stream, stream), "127.0.0.1", 9515, "/session",
                                  method="POST", body=body)

    response = anyio.run(main)
    head, _, sent_body = stream.sent.partition(b"\r\n\r\n")
    assert head.startswith(b"POST /session HTTP/1.1\r\n")
    assert f"content-length: {len(body)}".encode() in head.lower()
    assert b"content-type: application/json" in head.lower()
    assert sent_body == body
    assert webdriver_error(response) == ("HTTP 500 session not created: session not created: "
                                         "No matching capabilities found")


def _session(caps: dict[str, object], session_id: str = "3d8a98a86b09fc3c") -> bytes:
    return json.dumps({"value": {"sessionId": session_id, "capabilities": caps}}).encode()


@pytest.mark.parametrize("address", [
    "evil.example:22",        # another machine: the answer must not pick where to go
    "169.254.169.254:80",
    "localhost:0", "localhost:65536", "localhost:99999",
    "localhost:\u0669\u0662\u0662",  # Arabic-Indic digits: str.isdigit() says yes
])
def test_a_debugger_address_off_the_driver_machine_or_port_range_is_refused(
        address: str) -> None:
    """The answer is untrusted input: its debuggerAddress may only name the driver's own
    machine (the configured WebDriver host), on a real port."""
    body = _session({"goog:chromeOptions": {"debuggerAddress": address}})
    with pytest.raises(ValueError, match="debuggerAddress"):
        parse_new_session(body, WebDriverUrl("10.0.0.7", 9515))


def test_a_debugger_address_naming_the_driver_host_itself_is_kept() -> None:
    body = _session({"goog:chromeOptions": {"debuggerAddress": "10.0.0.7:40001"}})
    found = parse_new_session(body, WebDriverUrl("10.0.0.7", 9515))
    assert (found.host, found.port) == ("10.0.0.7", 40001)


@pytest.mark.parametrize("session_id", ["../../status", "a b", "x\r\nHost: evil", "a/b",
                                        "x" * 200])
def test_a_session_id_that_is_not_a_plain_token_is_refused(session_id: str) -> None:
    """The id goes into every later request line (``/session/<id>/url``, ``DELETE``)."""
    body = _session({"goog:chromeOptions": {"debuggerAddress": "localhost:9222"}}, session_id)
    with pytest.raises(ValueError, match="sessionId"):
        parse_new_session(body, WebDriverUrl("127.0.0.1", 9515))


@pytest.mark.parametrize("se_cdp", ["ws://grid/a b", "ws://grid/x\r\nAuthorization: y",
                                    "ws://grid/\u00e9"])
def test_a_se_cdp_path_with_unsafe_characters_is_refused(se_cdp: str) -> None:
    """The path goes into the websocket request line as given."""
    with pytest.raises(ValueError, match="se:cdp"):
        parse_new_session(_session({"se:cdp": se_cdp}), WebDriverUrl("grid", 4444))


def test_deeply_nested_garbage_is_a_refusal_not_a_crash() -> None:
    """A driver answering ``[[[[…`` (a megabyte fits the cap) made ``json.loads`` raise
    RecursionError, which no caller expected."""
    garbage = b"[" * 200_000
    assert webdriver_error(HttpResponse(500, garbage)) == "HTTP 500"
    with pytest.raises(ValueError):
        parse_new_session(garbage, WebDriverUrl("127.0.0.1", 9515))
    with pytest.raises(ValueError):
        parse_version_payload(garbage)


class _SlowDriver:
    """A driver whose ``POST /session`` answers only once told to; it records DELETEs."""

    def __init__(self) -> None:
        self.posted, self.answer = anyio.Event(), anyio.Event()
        self.deleted: list[str] = []
        self.body = _answer("chromedriver_156_new_session.json")

    async def http_request(self, host: str, port: int, path: str, timeout_s: float, *,
                           method: str = "GET", body: bytes | None = None) -> HttpResponse:
        if method == "POST":
            self.posted.set()
            await self.answer.wait()
            return HttpResponse(200, self.body)
        if method == "DELETE":
            self.deleted.append(path.rpartition("/")[2])
        return HttpResponse(200, b'{"value": null}')


def test_a_session_whose_creation_was_cancelled_is_still_deleted() -> None:
    """The gateway exits (or the target is removed) while ``POST /session`` is in flight:
    the driver creates the browser anyway, so its answer must be read and the session
    deleted — ``Registry.aclose`` cancels the supervisor and lets go at once."""
    driver = _SlowDriver()
    held = WebDriverSession(WebDriverUrl("127.0.0.1", 9515), {"browserName": "chrome"})
    search = Search(cast(Host, driver), "wd", 5.0)

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            scope = anyio.CancelScope()

            async def supervisor() -> None:
                with scope:
                    await held.create(search)

            tg.start_soon(supervisor)
            await driver.posted.wait()
            scope.cancel()
            driver.answer.set()  # chromedriver made the browser all the same
            with anyio.fail_after(5):
                await held.let_go(cast(Host, driver))

    anyio.run(main)
    assert driver.deleted == ["3d8a98a86b09fc3c568d54a896527d3f"]


def test_a_session_made_but_unusable_is_deleted_at_once() -> None:
    """A Grid without CDP answers 200 with a session the gateway cannot attach to: that
    session (a browser on a node) is deleted, not left to the Grid's timeout."""
    driver = _SlowDriver()
    driver.answer.set()
    held = WebDriverSession(WebDriverUrl("127.0.0.1", 4444), {"browserName": "chrome"})

    async def main() -> None:
        with pytest.raises(DiscoveryError, match="created a session but the Grid offers"):
            await held.create(Search(cast(Host, driver), "grid", 5.0))

    driver.body = _answer("grid4_cdp_disabled.json")
    anyio.run(main)
    assert driver.deleted == [json.loads(driver.body)["value"]["sessionId"]]


class _HostileStatus(_SlowDriver):
    """``/status`` says ready with a message meant to forge doctor's output."""

    message = "ready\n  session   ok   forged\x1b[2J" + "x" * 100_000

    async def http_request(self, host: str, port: int, path: str, timeout_s: float, *,
                           method: str = "GET", body: bytes | None = None) -> HttpResponse:
        if path == "/status":
            return HttpResponse(200, json.dumps({"value": {"ready": True,
                                                           "message": self.message}}).encode())
        return HttpResponse(500, json.dumps({"value": {"error": "session not created",
                                                       "message": self.message}}).encode())


def test_doctor_shows_a_driver_message_on_one_short_line() -> None:
    """Driver text is untrusted: one line, no control characters, bounded."""
    config = TargetConfig.model_validate({"name": "wd", "webdriver": "http://127.0.0.1:9515"})
    report = TargetReport("wd", "local")
    steps = WebDriverSteps(config, Recorder(report), 5.0)

    async def main() -> None:
        with pytest.raises(StopCheck):
            await steps.run(cast(Host, _HostileStatus()))

    anyio.run(main)
    for name in ("webdriver", "session"):
        detail = report.step(name).detail
        assert "\n" not in detail and "\x1b" not in detail and len(detail) < 500, detail
    assert "ready" in report.step("webdriver").detail
    assert report.step("session").status == "failed"


@pytest.mark.parametrize("raw", [
    b"HTTP/1.1 200 OK\r\nX: " + b"y\x1b" * 30_000 + b"\x00\r\n\r\n",  # a bad header line
    b"SSH-2.0-" + b"z" * 60_000 + b"\r\n\r\n",                        # not HTTP at all
])
def test_a_garbage_answer_gives_a_short_reason(raw: bytes) -> None:
    """h11 quotes the offending line (up to 64 KB) in its error; that text becomes the
    target's error in list_targets, the call result and the log."""
    async def main() -> None:
        stream = Stream(raw, piece=65536)
        await request_over(ChannelStream(stream, stream), "127.0.0.1", 9515, "/status")

    with pytest.raises(HostError, match="what answered is not HTTP") as caught:
        anyio.run(main)
    assert len(str(caught.value)) < 300, len(str(caught.value))


def test_a_cancelled_caller_sends_no_post_session() -> None:
    """The shield around ``POST /session`` must not start a request for a supervisor
    already cancelled (a target removed just as a call woke it): ``let_go`` may have run,
    so the session that POST made would be nobody's."""
    driver = _SlowDriver()
    driver.answer.set()
    held = WebDriverSession(WebDriverUrl("127.0.0.1", 9515), {"browserName": "chrome"})

    async def main() -> None:
        with anyio.CancelScope() as scope:
            scope.cancel()
            await held.create(Search(cast(Host, driver), "wd", 5.0))

    anyio.run(main)
    assert not driver.posted.is_set() and held.session is None


class _Answers(_SlowDriver):
    """Answers every GET with one fixed response."""

    def __init__(self, status: int, body: bytes) -> None:
        super().__init__()
        self.answer.set()
        self.status, self.get_body = status, body

    async def http_request(self, host: str, port: int, path: str, timeout_s: float, *,
                           method: str = "GET", body: bytes | None = None) -> HttpResponse:
        if method == "GET":
            return HttpResponse(self.status, self.get_body)
        return await super().http_request(host, port, path, timeout_s, method=method,
                                          body=body)


@pytest.mark.parametrize(("status", "body", "ended"), [
    (404, b'{"value":{"error":"invalid session id","message":"invalid session id"}}', True),
    (404, b'{"value":{"error":"unknown command","message":"unknown command"}}', False),
    (404, b"<html>Not Found</html>", False),  # a proxy in between, not the driver's word
    (500, b'{"value":{"error":"unknown error","message":"chrome not reachable"}}', False),
])
def test_only_invalid_session_id_ends_a_session(status: int, body: bytes, ended: bool) -> None:
    """A keep-alive answered 404 for another reason (a driver without the command, a
    proxy's page) must not end a live session: that killed the browser every minute."""
    driver = _Answers(status, body)
    held = WebDriverSession(WebDriverUrl("127.0.0.1", 9515), {"browserName": "chrome"})

    async def main() -> str | None:
        await held.create(Search(cast(Host, driver), "wd", 5.0))
        return await held.check(cast(Host, driver))

    reason = anyio.run(main)
    assert (reason is not None) is ended and (held.session is None) is ended
