"""The WebDriver steps of a ``webdriver`` target: WebDriver status → session created.

Then the DevTools endpoint its capabilities name and the websocket handshake,
as for any browser. The session is the gateway's own ``WebDriverSession``
(the same request and the same parsing ``serve`` uses), and it is deleted at
the end of the check whatever happened — doctor leaves no browser behind.
"""

from __future__ import annotations

import time

from websockets.asyncio.client import ClientConnection

from gateway.config import TargetConfig
from gateway.config.remote import redact_url
from gateway.discovery.strategy import Search
from gateway.discovery.webdriver import (
    WebDriverSession,
    one_line,
    webdriver_error,
    webdriver_value,
)
from gateway.doctor.report import Recorder
from gateway.errors import GatewayError, HostError
from gateway.hosts.base import Host

__all__ = ["WEBDRIVER_STEPS", "WebDriverSteps"]

WEBDRIVER_STEPS = ("webdriver", "session")


class WebDriverSteps:
    def __init__(self, config: TargetConfig, record: Recorder, timeout_s: float) -> None:
        assert config.webdriver is not None
        self.config = config
        self.record = record
        self.timeout_s = timeout_s
        self.session = WebDriverSession(config.webdriver, config.capabilities)

    async def run(self, host: Host) -> ClientConnection:
        """Status, session, endpoint, websocket; the open websocket of its browser."""
        record, since, where = self.record, Recorder.since, self.session.where
        start = time.monotonic()
        start_it = (f"start it there (chromedriver --port={self.session.url.port} "
                    "--allowed-ips=127.0.0.1, or the Grid), or fix `webdriver`")
        try:
            status = await host.http_request(self.session.url.host, self.session.url.port,
                                             self.session.url.base + "/status", self.timeout_s)
        except HostError as exc:
            record.fail("webdriver", since(start), f"{where}/status: {exc.reason}", start_it)
        value = webdriver_value(status.body)
        message = one_line(value.get("message"))
        if status.status != 200 or value.get("ready") is not True:
            record.fail("webdriver", since(start), f"{where}/status: "
                        f"{message or webdriver_error(status)} (not ready)",
                        "wait for it to be ready, or " + start_it)
        record.ok("webdriver", since(start), f"{where}: {message or 'ready'}")
        search = Search(host, self.config.name, self.timeout_s)
        start = time.monotonic()
        try:
            made = await self.session.create(search)
        except GatewayError as exc:
            record.fail("session", since(start), exc.cause,
                        "check capabilities (browserName, goog:chromeOptions) against what "
                        "the driver or Grid offers")
        record.ok("session", since(start), f"session {made.session_id}")
        start = time.monotonic()
        try:
            endpoint, ws = await self.session.attach(search, made)
        except GatewayError as exc:
            record.fail("endpoint", since(start), exc.cause,
                        "the session's browser does not answer where its capabilities say: "
                        "for a Grid, start it with CDP enabled; through ssh, check the "
                        "Grid's address from that host")
        record.ok("endpoint", since(start), f"{endpoint.found_by}: port {endpoint.port}")
        record.ok("websocket", 0.0, redact_url(endpoint.url))
        return ws

    async def end(self, host: Host) -> None:
        """Delete the session (bounded; also when a step failed)."""
        await self.session.let_go(host)

