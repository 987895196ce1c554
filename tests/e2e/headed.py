"""A headed Chromium needs a screen: an Xvfb display of this run's own, and — for a
person's own Chrome — the person at it, answering "Allow remote debugging?" with real X
input (``xdotool``). The dialog is drawn inside the browser window (no window of its own
to find), with Cancel focused: Tab moves to Allow, Return presses it; Escape cancels.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
from collections.abc import Iterator

from tests.topology import SLOT

__all__ = ["DISPLAY", "press", "xvfb"]

DISPLAY = f":{87 + SLOT}"
"""One display per topology slot, so runs in separate slots never share a screen."""


@contextlib.contextmanager
def xvfb() -> Iterator[str]:
    """An Xvfb server on ``DISPLAY`` (a Unix socket only) while the block runs."""
    if shutil.which("Xvfb") is None or shutil.which("xdotool") is None:
        raise RuntimeError("Xvfb or xdotool is not installed (scripts/setup installs both)")
    server = subprocess.Popen(["Xvfb", DISPLAY, "-nolisten", "tcp", "-screen", "0",
                               "1280x800x24"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        yield DISPLAY
    finally:
        server.terminate()
        server.wait(timeout=10)


def press(*keys: str) -> None:
    """The person presses ``keys`` on the display (to the window that has the focus)."""
    subprocess.run(["xdotool", "key", *keys], env={"DISPLAY": DISPLAY}, check=True,
                   timeout=10)
