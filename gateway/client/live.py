"""``chrome-ssh-gateway live``: a live-view URL from the daemon ``call`` uses.

Asked over the daemon's private Unix socket (``POST /live-link``, which only its owner
can reach), so no MCP session and no tool are involved: the link comes whether or not
the daemon offers ``live_view`` (``--tools``). Standard library only, like ``call``.
"""

from __future__ import annotations

import html
import http.client
import json
import os
import sys
import tempfile
import time
import webbrowser
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from gateway.errors import DaemonError

from .call import UnixConnection

__all__ = ["live_link", "redirect_page", "show_live_link"]

TIMEOUT_S = 30.0
REDIRECT_S = 5.0
"""How long the local page that opens the link is kept for the browser to read it
(the link's token is spent once it opens)."""


def live_link(socket_path: Path, tab: int | None, *, control: bool) -> dict[str, Any]:
    """``{"url": …, "control": …}`` from the daemon at ``socket_path``; ``DaemonError``
    with the daemon's reason (an unknown tab) or the lost connection."""
    conn = UnixConnection(socket_path, TIMEOUT_S)
    try:
        conn.request("POST", "/live-link", body=json.dumps({"tab": tab, "control": control}),
                     headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        answer: dict[str, Any] = json.loads(response.read(65_536) or b"{}")
    except (OSError, http.client.HTTPException, ValueError) as exc:
        raise DaemonError(f"lost the gateway daemon at {socket_path} ({exc}); run the "
                          "command again") from None
    finally:
        conn.close()
    if response.status != 200 or "url" not in answer:
        raise DaemonError(str(answer.get("error") or f"the daemon answered HTTP "
                                                     f"{response.status}"))
    return answer


def show_live_link(socket_path: Path, tab: int | None) -> int:
    """Print a new link's URL (with control, unless the daemon is read-only); in a
    terminal on a desktop, open it in the browser too — piped, the URL is the caller's
    to use (it opens once)."""
    answer = live_link(socket_path, tab, control=True)
    print(answer["url"])
    if not answer["control"]:
        print("chrome-ssh-gateway: view only: the daemon runs read-only", file=sys.stderr)
    desktop = sys.platform == "darwin" or bool(os.environ.get("DISPLAY")
                                               or os.environ.get("WAYLAND_DISPLAY"))
    if desktop and sys.stdout.isatty():
        with redirect_page(answer["url"]) as page:
            if webbrowser.open(page):
                print("chrome-ssh-gateway: opened in your browser (the link opens once; run "
                      "this again for another)", file=sys.stderr)
                time.sleep(REDIRECT_S)  # the browser reads the page meanwhile
    return 0


@contextmanager
def redirect_page(url: str) -> Iterator[str]:
    """A ``file:`` URL to open instead of ``url``: ``webbrowser`` starts the browser
    with its URL as an argument, which every local user can read in ``/proc/*/cmdline``
    — and this one carries an unspent token. So the browser gets a private (0600) local
    page that goes on to ``url`` at once, removed when the block ends."""
    quoted, script = html.escape(url), json.dumps(url).replace("<", "\\u003c")
    page = ("<!doctype html><meta charset=utf-8><meta name=referrer content=no-referrer>"
            f'<meta http-equiv=refresh content="0;url={quoted}">'
            f"<script>location.replace({script})</script>"
            f'<a href="{quoted}">open the live view</a>\n')
    fd, name = tempfile.mkstemp(prefix="csgw-live-", suffix=".html")  # 0600, ours alone
    path = Path(name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(page)
        yield path.as_uri()
    finally:
        path.unlink(missing_ok=True)
