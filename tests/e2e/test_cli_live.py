"""``chrome-ssh-gateway live [TAB]``: a live-view URL from the daemon ``call`` uses,
for a tab ``call`` opened — the URL works once, another link is another URL, an unknown
tab says so (issue 20)."""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

from tests.e2e.helpers import data_url
from tests.topology import Topology

ROOT = Path(__file__).resolve().parents[2]


def _gw(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gateway", *argv], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL)


def _open(url: str) -> tuple[int, str]:
    where = urlsplit(url)
    connection = http.client.HTTPConnection(where.hostname or "", where.port, timeout=10)
    connection.request("GET", f"{where.path}?{where.query}")
    reply = connection.getresponse()
    return reply.status, reply.getheader("location") or ""


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
    status, location = _open(url)
    assert status == 303 and location.startswith("/live/s/"), (status, location)
    assert _open(url)[0] == 403, "the link opens once"
    view = _gw(env, "live")
    assert view.returncode == 0 and view.stdout.strip() != url, view.stderr
    unknown = _gw(env, "live", "987654")
    assert unknown.returncode == 1 and "tab 987654 is not a known tab id" in unknown.stderr, (
        unknown.stderr)
