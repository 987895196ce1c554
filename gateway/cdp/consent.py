"""What a person's own Chrome asks before it lets a websocket in, in the person's terms.

With its remote-debugging setting on (chrome://inspect, Chrome 144+), Chrome holds each
new websocket in its opening handshake and shows the person "Allow remote debugging?"
(buttons "Turn off in settings", "Cancel", "Allow"): Allow completes the handshake,
Cancel answers it HTTP 403. Measured on Chromium 156: no ``Origin`` header is needed (one
naming another site gets that 403 at once, with no dialog: the gateway sends none, so
its 403 is the person's); a
handshake the client gives up on takes its dialog away; every new connection asks again,
so the gateway keeps its one websocket and never retries a refusal by itself.
"""

from __future__ import annotations

from gateway.cdp.endpoint import REMOTE_DEBUGGING_SETTING

__all__ = ["CONSENT_WAIT_S", "WAITING", "declined", "unanswered", "waiting"]

CONSENT_WAIT_S = 600.0
"""How long a handshake waits for the person to answer the dialog."""
WAITING = "waiting for the person to allow"
"""The start of a target's state while the dialog is up (``list_targets``' error)."""
_DIALOG = "\"Allow remote debugging?\""
_AGAIN = "nothing is retried by itself; the next call on this target asks once more"


def waiting(where: str, *, restarted: bool = False) -> str:
    """``restarted``: the Chrome the person allowed before has restarted (a new browser
    id), and a new browser asks anew."""
    again = " again (their Chrome restarted)" if restarted else ""
    return (f"{WAITING}: their Chrome on {where} shows {_DIALOG}{again} — once they click "
            "Allow the target is up, and stays so without asking again while the gateway "
            "keeps its connection")


def declined(where: str) -> str:
    return (f"the person declined remote debugging (Cancel in {_DIALOG} in their Chrome on "
            f"{where}); {_AGAIN} — ask them first, and to click Allow. To stop being asked, "
            f"they turn the setting off at {REMOTE_DEBUGGING_SETTING}")


def unanswered(where: str, waited_s: float) -> str:
    return (f"nobody answered {_DIALOG} in their Chrome on {where} within "
            f"{waited_s:g} s; {_AGAIN} — ask the person to watch for it and click "
            "Allow")
