"""A watched tab's screencast across a reconnect: started again on the tab's new
session however long the browser takes to come back, ended only with the tab, and its
watchers told the tab's own reason."""

from __future__ import annotations

import base64
from typing import Any

import anyio
import pytest

from gateway.errors import TargetUnavailable
from gateway.page.capture import screencast
from gateway.page.capture.screencast import Screencasts
from gateway.tabs.tab import Tab

pytestmark = pytest.mark.anyio


class _Link:
    def __init__(self) -> None:
        self.acks: list[int] = []

    async def notify(self, method: str, params: dict[str, Any], *, session_id: str) -> None:
        assert method == "Page.screencastFrameAck"
        self.acks.append(params["sessionId"])


class _Reconnecting:
    """A browser whose connection is down for ``down`` attempts (each a ``tab_call``
    that waited its whole timeout), then up again with a new session for the tab."""

    def __init__(self, tab: Tab, down: int) -> None:
        self.tab = tab
        self.down = down
        self.calls: list[str] = []
        self.link = _Link()

    async def tab_call(self, tab: Tab, method: str, params: dict[str, Any] | None = None,
                       **_kw: Any) -> dict[str, Any]:
        self.calls.append(method)
        if method == "Page.startScreencast":
            if self.down:
                self.down -= 1
                raise TargetUnavailable("vm", "SSH connection lost; still reconnecting "
                                              "after 10 s")
            tab.session_id = "after"
        return {}

    async def connection(self, _max_wait_s: float | None = None) -> _Link:
        return self.link


def _frame(tab: Tab, ack: int) -> None:
    tab.on_event("Page.screencastFrame", {
        "sessionId": ack, "data": base64.b64encode(b"jpeg").decode(),
        "metadata": {"deviceWidth": 800, "deviceHeight": 600}})


async def test_a_reconnect_longer_than_a_start_attempt_keeps_the_watch(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(screencast, "RETRY_S", 0.001)
    monkeypatch.setattr(screencast, "CHECK_S", 0.01)
    tab = Tab(id=7, target="vm", target_id="T7", session_id="before")
    browser = _Reconnecting(tab, down=5)
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tasks:
            casts = Screencasts(tasks)
            async with casts.watch(browser, tab) as mailbox:  # type: ignore[arg-type]
                while "Page.startScreencast" not in browser.calls or browser.down:
                    await anyio.sleep(0.001)
                while tab.session_id != "after":
                    await anyio.sleep(0.001)
                _frame(tab, 41)
                frame = await mailbox.get()
                assert frame is not None and frame.jpeg == b"jpeg"
                assert not mailbox.closed
                while browser.link.acks != [41]:
                    await anyio.sleep(0.001)
                tab.retired, tab.why_retired = True, "crashed (killed)"
                assert await mailbox.get() is None
                assert mailbox.reason == "tab 7 crashed (killed)"
            assert casts.watched() == {}
    assert browser.calls.count("Page.startScreencast") == 6
