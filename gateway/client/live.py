"""``chrome-ssh-gateway live``: a live-view URL from the daemon ``call`` uses.

Asked over the daemon's private Unix socket (``POST /live-link``, which only its owner
can reach), so no MCP session and no tool are involved: the link comes whether or not
the daemon offers ``live_view`` (``--tools``). Standard library only, like ``call``.
"""

from __future__ import annotations

import http.client
import json
from pathlib import Path
from typing import Any

from gateway.errors import DaemonError

from .call import UnixConnection

__all__ = ["live_link"]

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
