"""What a closed tab leaves behind: nothing (issue 9, defect 4).

Every tab is a flattened CDP session whose event listener holds the tab, and the
tab up to 1,000 console and 1,000 network entries. When the remover of that
listener was dropped, every closed tab (and every cross-site frame's session)
stayed alive until the next reconnect. Here 300 tabs, each logging 200 messages,
are opened and closed through the real MCP client against a real Chromium over
SSH; the gateway runs in this process so its objects can be counted: live tabs,
``Tab`` instances, the connection's listeners — all back to where they started —
and the resident memory stays within 10 MB of where it was after the first 30.
"""

from __future__ import annotations

import gc
import os

import pytest
from mcp import Client

from gateway.config import load_config
from gateway.mcp.start import running_server
from gateway.tabs.tab import Tab
from tests.e2e.helpers import call_ok, eventually, proc_status_kb, wait_for_targets
from tests.topology import Topology

pytestmark = pytest.mark.anyio

TABS = 300
MESSAGES = 200
PAGE = ("data:text/html,<title>chatty</title><script>"
        f"for (let i = 0; i < {MESSAGES}; i++) console.log('message ' + i + ' ' + 'x'.repeat(200))"
        "</script>")


def _tab_objects() -> int:
    gc.collect()
    return sum(isinstance(o, Tab) for o in gc.get_objects())


async def test_closed_tabs_release_their_sessions_and_logs(
    topology: Topology, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in topology.client_env().items():
        monkeypatch.setenv(key, value)  # asyncssh reads ~/.ssh/config of this process
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    config = load_config({**os.environ, "SSH_PROXY_TO": "h1"})
    async with running_server(config) as (server, registry), Client(server) as client:
        await wait_for_targets(client, {"default": "up"})
        browser = registry.browser("default")
        cdp = await browser.connection()
        start = (len(browser.tabs), _tab_objects(), cdp.listener_count)
        rss_after_30 = 0
        for i in range(TABS):
            tab = (await call_ok(client, "new_tab", {"url": PAGE}))["tab"]

            async def logged(tab: int = tab) -> bool:
                got = await call_ok(client, "console_messages", {"tab": tab, "limit": 1})
                return bool(got["last_id"] >= MESSAGES)

            await eventually(logged, timeout=20, what=f"tab {tab} to log {MESSAGES} messages")
            await call_ok(client, "close_tab", {"tab": tab})
            if i == 29:
                gc.collect()
                rss_after_30 = proc_status_kb(os.getpid())

        async def settled() -> bool:
            return len(browser.tabs) == start[0] and cdp.listener_count == start[2]

        await eventually(settled, timeout=20, what="closed tabs and their listeners to go")
        end = (len(browser.tabs), _tab_objects(), cdp.listener_count)
        assert end == start, f"(live tabs, Tab objects, listeners) {start} → {end}"
        gc.collect()
        grown_kb = proc_status_kb(os.getpid()) - rss_after_30
        assert grown_kb < 10 * 1024, f"RSS grew {grown_kb} KB over {TABS - 30} closed tabs"
        assert cdp is await browser.connection(), "the browser reconnected during the test"
