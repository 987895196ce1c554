"""Launching a headless Chromium for the embedded ``local`` default.

Used only when nothing is configured and no Chrome already runs here: the
gateway then still does its job with a browser of its own, in a temporary
profile (0700) that is removed, with the process, when the gateway exits.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import anyio
import structlog

from gateway.browsers.endpoint import parse_active_port
from gateway.errors import DiscoveryError

__all__ = ["ChromeLauncher", "find_chrome"]

log = structlog.get_logger("gateway.launcher")

_CANDIDATES = (
    "/usr/lib/chromium/chromium",  # Debian: the real binary behind the /usr/bin wrapper
    "chromium",
    "chromium-browser",
    "google-chrome",
    "google-chrome-stable",
    "chrome",
    "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
    "/Applications/Chromium.app/Contents/MacOS/Chromium",
)
_FLAGS = (
    "--headless", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--remote-debugging-port=0",
)


def find_chrome() -> str | None:
    """The first Chrome/Chromium binary found: $CHROME_PATH, then the usual names."""
    explicit = os.environ.get("CHROME_PATH")
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    for name in _CANDIDATES:
        path = name if os.path.isabs(name) else shutil.which(name)
        if path and os.access(path, os.X_OK):
            return path
    return None


# Chrome keeps its SingletonSocket under TMPDIR (set to <profile>/tmp below), and a
# Unix socket path must fit in 107 bytes: "<tmp>/csgw-chrome-<8 random>/tmp/
# org.chromium.Chromium.<6 random>/SingletonSocket" leaves 38 for the temp dir.
_MAX_TMP_CHARS = 38


def _profile_parent() -> str | None:
    """The user's temp dir, or /tmp when that is too long for Chrome's socket path
    (macOS: /var/folders/…/T/, 49 characters) — else the launch aborts."""
    if len(tempfile.gettempdir()) <= _MAX_TMP_CHARS or not os.path.isdir("/tmp"):
        return None
    return "/tmp"


class ChromeLauncher:
    """One headless browser process owned by the gateway."""

    def __init__(self, target: str) -> None:
        self._target = target
        self._process: subprocess.Popen[bytes] | None = None
        self._profile: str | None = None

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    async def start(self, timeout_s: float = 20.0) -> str:
        """Start the browser (again, if it died) and return its profile directory."""
        if self.running and self._profile is not None:
            return self._profile
        await self.aclose()
        binary = find_chrome()
        if binary is None:
            raise DiscoveryError(self._target, "no Chrome running here and no Chrome/Chromium "
                                 "binary found to launch; install chromium or set CHROME_PATH")
        self._profile = tempfile.mkdtemp(prefix="csgw-chrome-", dir=_profile_parent())
        args = [binary, *_FLAGS, f"--user-data-dir={self._profile}"]
        if os.geteuid() == 0:
            args.append("--no-sandbox")  # Chrome refuses to run as root with its sandbox
        args.append("about:blank")
        # Chrome's scratch files (org.chromium.Chromium.*) go inside the profile,
        # so removing the profile leaves nothing behind in /tmp.
        scratch = os.path.join(self._profile, "tmp")
        os.mkdir(scratch, 0o700)
        self._process = subprocess.Popen(
            args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, close_fds=True, start_new_session=True,
            env={**os.environ, "TMPDIR": scratch},
        )
        log.info("launched headless browser", binary=binary, pid=self._process.pid,
                 profile=self._profile)
        active_port = Path(self._profile) / "DevToolsActivePort"
        with anyio.move_on_after(timeout_s):
            while self.running:
                try:
                    if parse_active_port(active_port.read_text()) is not None:
                        return self._profile
                except OSError:
                    pass
                await anyio.sleep(0.02)
        code = self._process.poll()
        await self.aclose()
        raise DiscoveryError(self._target, f"launched {binary} but it "
                             + (f"exited with status {code}" if code is not None else
                                f"wrote no DevToolsActivePort within {timeout_s:g} s"))

    async def aclose(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            with anyio.move_on_after(5, shield=True):
                while process.poll() is None:
                    await anyio.sleep(0.05)
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        if self._profile is not None:
            shutil.rmtree(self._profile, ignore_errors=True)
            self._profile = None
