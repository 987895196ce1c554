"""``chrome-ssh-gateway live [TAB]``: a live-view URL from the daemon ``call`` uses,
for a tab ``call`` opened — the URL works once, another link is another URL, an unknown
tab says so; and a stdio gateway's live page ends with it (issue 20)."""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import anyio
import pytest
from websockets.asyncio.client import connect

from gateway.daemon.runtime_dir import pid_alive
from tests.e2e.helpers import (
    call_ok,
    data_url,
    gateway_pid,
    marked_env,
    open_gateway,
    wait_for_targets,
)
from tests.topology import Topology

ROOT = Path(__file__).resolve().parents[2]


def _gw(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gateway", *argv], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL)


def _open(url: str) -> tuple[int, str, str]:
    """Status, Location and the cookie set of a GET of a live URL."""
    where = urlsplit(url)
    connection = http.client.HTTPConnection(where.hostname or "", where.port, timeout=10)
    connection.request("GET", f"{where.path}?{where.query}")
    reply = connection.getresponse()
    cookie = (reply.getheader("set-cookie") or "").split(";")[0]
    return reply.status, reply.getheader("location") or "", cookie


def test_live_prints_a_url_for_the_daemons_tab(topology: Topology, run_dir: Path) -> None:
    env = topology.client_env() | {"SSH_PROXY_TO": "h1", "XDG_RUNTIME_DIR": str(run_dir),
                                   "DISPLAY": ""}
    opened = _gw(env, "call", "--json", "new_tab", json.dumps({"url": data_url("cli")}))
    assert opened.returncode == 0, opened.stderr
    tab = json.loads(opened.stdout)["tab"]
    live = _gw(env, "live", str(tab))
    assert live.returncode == 0, live.stderr
    url = live.stdout.strip()
    assert url.startswith("http://127.0.0.1:") and "/live/?t=" in url, url
    status, location, _ = _open(url)
    assert status == 303 and location.startswith("/live/s/"), (status, location)
    assert _open(url)[0] == 403, "the link opens once"
    view = _gw(env, "live")
    assert view.returncode == 0 and view.stdout.strip() != url, view.stderr
    unknown = _gw(env, "live", "987654")
    assert unknown.returncode == 1 and "tab 987654 is not a known tab id" in unknown.stderr, (
        unknown.stderr)


@pytest.mark.anyio
async def test_a_stdio_gateways_live_page_ends_with_it(topology: Topology) -> None:
    """The page a stdio gateway serves for its first live URL stops with the gateway,
    a viewer still connected: the process exits and the port answers no more."""
    env, marker = marked_env(topology.client_env() | {"SSH_PROXY_TO": "h1"})
    async with open_gateway(env, ["--tools", "all"]) as client:
        await wait_for_targets(client, {"default": "up"})
        pid = gateway_pid(marker)
        tab = (await call_ok(client, "new_tab", {"url": data_url("ends")}))["tab"]
        url = (await call_ok(client, "live_view", {"tab": tab}))["url"]
        status, location, cookie = await anyio.to_thread.run_sync(_open, url)
        assert status == 303
        port = urlsplit(url).port
        viewer = await connect(f"ws://127.0.0.1:{port}{location}ws?tab={tab}",
                               additional_headers={"Cookie": cookie}, max_size=None)
        assert isinstance(await viewer.recv(), bytes)  # watching; held open past the end
    with anyio.fail_after(15):
        while pid_alive(pid):
            await anyio.sleep(0.05)
    await viewer.close()
    with pytest.raises(OSError):
        await anyio.connect_tcp("127.0.0.1", port or 0)
