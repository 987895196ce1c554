"""At exit the registry lets every browser go at once, not one after another.

Letting a browser go can wait on its far side: a WebDriver session's ``DELETE``
(up to 10 s on a dead link), a session still being created. One after another,
``sessions = 16`` on an unreachable Grid held the gateway's exit for minutes —
past any MCP client's patience, which then kills it and leaves the rest undeleted.
"""

from __future__ import annotations

from typing import Any, cast

import anyio

from gateway.config import GatewayConfig
from gateway.fleet.registry import Registry


class _SlowToLetGo:
    """A browser whose ``aclose`` ends only once every other one has started its own."""

    def __init__(self, started: list[str], name: str, everyone: anyio.Event) -> None:
        self.started, self.name, self.everyone = started, name, everyone

    async def aclose(self, gone: str | None = None) -> None:
        self.started.append(self.name)
        if len(self.started) == 3:
            self.everyone.set()
        with anyio.fail_after(3):
            await self.everyone.wait()


def test_exit_lets_every_browser_go_concurrently() -> None:
    registry = Registry(GatewayConfig(targets=(), call_log=None, source="test"))
    started: list[str] = []
    everyone = anyio.Event()
    registry.browsers = cast(dict[str, Any], {
        name: _SlowToLetGo(started, name, everyone) for name in ("wd-1", "wd-2", "wd-3")})
    anyio.run(registry.aclose)
    assert sorted(started) == ["wd-1", "wd-2", "wd-3"]
