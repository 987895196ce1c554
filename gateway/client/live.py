"""``chrome-ssh-gateway live``: a live-view URL from the daemon ``call`` uses.

Asked over the daemon's private Unix socket (``POST /live-link``, which only its owner
can reach), so no MCP session and no tool are involved: the link comes whether or not
the daemon offers ``live_view`` (``--tools``). Standard library only, like ``call``.
"""

from __future__ import annotations

import http.client
import json
import os
import sys
import webbrowser
from pathlib import Path
from typing import Any

from gateway.errors import DaemonError

from .call import UnixConnection

__all__ = ["live_link", "show_live_link"]

TIMEOUT_S = 30.0


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
    if desktop and sys.stdout.isatty() and webbrowser.open(answer["url"]):
        print("chrome-ssh-gateway: opened in your browser (the link opens once; run this "
              "again for another)", file=sys.stderr)
    return 0
