"""The peers, chrome-devtools-mcp and Playwright MCP, pinned and pointed at h1's Chromium.

Installed with npm into NPM_DIR (``~/.cache/chrome-ssh-gateway-bench/npm``), once; a run
that finds them installed at the pinned versions does not touch the network. Each is
started over stdio with its telemetry and update checks off and connected to h1's
browser through a local TCP port that an asyncssh connection forwards to h1's DevTools
port (their documented way to reach a remote browser: ``ssh -L`` and ``--browserUrl`` /
``--cdp-endpoint``). ``PEERS`` says, per peer, which of its tools does what ours do.

Used by the ``model`` phase (what a model is shown) and the ``peers`` phase (time).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import urllib.request
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import asyncssh
from mcp import Client, StdioServerParameters
from mcp.types import CallToolResult

from benchmarks.clients import CALL_TIMEOUT_S
from tests.topology import Topology

__all__ = ["NPM_DIR", "PEERS", "Peer", "browser_version", "call_peer", "close_pages",
           "forward", "installed", "npm_install", "open_page", "page_ids", "text_of"]

NPM_DIR = Path.home() / ".cache" / "chrome-ssh-gateway-bench" / "npm"
NPM_TIMEOUT_S = 240.0
EVALUATE_1_PLUS_1 = {"function": "() => 1+1"}


@dataclass(frozen=True)
class Peer:
    """One peer: its npm package (pinned), its command, and its tools for our jobs.

    ``open``: the calls that open the news page (``{url}`` is replaced) in a tab of its
    own; ``snapshot`` / ``evaluate`` / ``list_tabs``: its page view, its ``evaluate
    1+1`` and its tab list, each one call."""

    name: str
    label: str
    spec: str
    command: str
    args: tuple[str, ...]
    open: tuple[tuple[str, dict[str, Any]], ...]
    snapshot: str
    evaluate: tuple[str, dict[str, Any]]
    list_tabs: tuple[str, dict[str, Any]]
    by_page: bool = False           # its page tools take the tab's ``pageId``
    env: dict[str, str] = field(default_factory=dict)

    def params(self, port: int, home: Path) -> StdioServerParameters:
        """Started from NPM_DIR, in ``home``, against the forward on ``port``."""
        env = {"HOME": str(home), "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
               "LANG": "C.UTF-8", "CI": "1", **self.env}
        args = [a.format(port=port) for a in self.args]
        return StdioServerParameters(command=str(NPM_DIR / "node_modules" / ".bin" /
                                                 self.command),
                                     args=args, env=env, cwd=str(home))


PEERS = {
    "chrome-devtools-mcp": Peer(
        name="chrome-devtools-mcp", label="chrome-devtools-mcp 1.11.0",
        spec="chrome-devtools-mcp@1.11.0", command="chrome-devtools-mcp",
        args=("--browserUrl", "http://127.0.0.1:{port}", "--no-usage-statistics",
              "--no-performance-crux"),
        env={"CHROME_DEVTOOLS_MCP_NO_USAGE_STATISTICS": "1",
             "CHROME_DEVTOOLS_MCP_NO_UPDATE_CHECKS": "1",
             "CHROME_DEVTOOLS_MCP_NO_CONFIG_DISCOVERY": "1"},
        open=(("new_page", {"url": "{url}"}),), snapshot="take_snapshot",
        evaluate=("evaluate_script", EVALUATE_1_PLUS_1), list_tabs=("list_pages", {}),
        by_page=True),
    "playwright-mcp": Peer(
        name="playwright-mcp", label="Playwright MCP 0.0.83", spec="@playwright/mcp@0.0.83",
        command="playwright-mcp", args=("--cdp-endpoint", "http://127.0.0.1:{port}"),
        open=(("browser_tabs", {"action": "new"}), ("browser_navigate", {"url": "{url}"})),
        snapshot="browser_snapshot", evaluate=("browser_evaluate", EVALUATE_1_PLUS_1),
        list_tabs=("browser_tabs", {"action": "list"})),
}


def npm_install(specs: list[str], progress: Callable[[str], None]) -> str | None:
    """Install ``specs`` (pinned npm packages) into NPM_DIR; None, or why not."""
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        return "npm/node absent"
    if all(installed(spec) for spec in specs):
        return None
    NPM_DIR.mkdir(parents=True, exist_ok=True)
    progress(f"npm install {' '.join(specs)} into {NPM_DIR}")
    try:
        done = subprocess.run([npm, "install", "--no-audit", "--no-fund", "--prefix",
                               str(NPM_DIR), *specs], capture_output=True, text=True,
                              timeout=NPM_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"npm install failed: {exc}"
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        return f"npm install failed (offline?): {' / '.join(tail)}"
    return None


def installed(spec: str) -> bool:
    """Is the npm package ``name@version`` in NPM_DIR at that version?"""
    name, _, version = spec.rpartition("@")
    package = NPM_DIR / "node_modules" / name / "package.json"
    try:
        return bool(json.loads(package.read_text()).get("version") == version)
    except (OSError, ValueError):
        return False


@asynccontextmanager
async def forward(topo: Topology, connect: Callable[[], Awaitable[asyncssh.SSHClientConnection]]
                  ) -> AsyncIterator[int]:
    """A local TCP port on 127.0.0.1 forwarded over SSH to h1's DevTools port."""
    host = topo.host("h1")
    remote_port = int(host.devtools_active_port_file.read_text().split("\n")[0])
    conn = await connect()
    try:
        listener = await conn.forward_local_port("127.0.0.1", 0, "127.0.0.1", remote_port)
        try:
            yield listener.get_port()
        finally:
            listener.close()
    finally:
        conn.close()
        with contextlib.suppress(Exception), anyio.move_on_after(2):
            await conn.wait_closed()


def page_ids(port: int) -> set[str]:
    """The target ids of the browser's tabs (``/json/list`` through the forward)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=5) as reply:
        return {t["id"] for t in json.load(reply) if t.get("type") == "page"}


def browser_version(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/version", timeout=5) as reply:
        return str(json.load(reply).get("Browser", ""))


def close_pages(port: int, ids: set[str]) -> None:
    """Close the tabs ``ids`` (those a peer opened), ignoring any already gone."""
    for target_id in ids:
        with contextlib.suppress(Exception), urllib.request.urlopen(
                f"http://127.0.0.1:{port}/json/close/{target_id}", timeout=5):
            pass


def text_of(result: CallToolResult) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


async def call_peer(client: Client, peer: Peer, tool: str,
                    args: dict[str, Any]) -> CallToolResult:
    """One call of a peer's tool that must succeed (bounded by CALL_TIMEOUT_S)."""
    with anyio.fail_after(CALL_TIMEOUT_S):
        result = await client.call_tool(tool, args)
    if result.is_error:
        raise RuntimeError(f"{peer.name} {tool}: {text_of(result)[:300]}")
    return result


async def open_page(client: Client, peer: Peer, url: str) -> dict[str, Any]:
    """Open ``url`` in a new tab of the peer's; the arguments that address that tab.

    chrome-devtools-mcp 1.11 routes its page tools by ``pageId`` and lists the pages
    after ``new_page`` ("## Pages\\n1: …\\n2: <url> [selected]"); Playwright MCP acts on
    its current tab, the one it just opened."""
    result: CallToolResult | None = None
    for tool, args in peer.open:
        result = await call_peer(client, peer, tool, {
            k: v.format(url=url) if isinstance(v, str) else v for k, v in args.items()})
    assert result is not None
    selected = re.search(r"^(\d+): .*\[selected\]$", text_of(result), re.MULTILINE)
    return {"pageId": int(selected.group(1))} if peer.by_page and selected else {}
