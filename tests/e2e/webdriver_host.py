"""Debian's chromedriver on a test host, as a CI machine runs it (issue 15).

``chromedriver --port=9515 --allowed-ips=127.0.0.1`` as the host's login user
inside its network namespace: it listens on that host's loopback only, so the
gateway can reach it only through SSH. The test side talks to it from inside
the namespace with a plain HTTP client (``GET /sessions``, ``DELETE
/session/<id>``) — the "host side" a test compares the gateway against — and
reads the process table for the browsers it started. Stopped by pid.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.topology import CHROME_FLAGS, CHROMIUM, RemoteHost

__all__ = ["CAPABILITIES", "CHROMEDRIVER", "PORT", "Chromedriver"]

CHROMEDRIVER = "/usr/bin/chromedriver"
PORT = 9515
# What a test framework asks for: Debian's Chromium binary, headless, no sandbox.
CAPABILITIES: dict[str, Any] = {
    "browserName": "chrome",
    "goog:chromeOptions": {"binary": CHROMIUM,
                           "args": [f for f in CHROME_FLAGS if f != "--headless"]
                           + ["--headless=new"]},
}
_SCOPED_DIR = "--user-data-dir=/tmp/org.chromium.Chromium.scoped_dir"


class Chromedriver:
    def __init__(self, host: RemoteHost, port: int = PORT) -> None:
        self.host = host
        self.port = port
        self._scratch = scratch = Path(tempfile.mkdtemp(prefix="csgw-chromedriver-"))
        os.chown(scratch, host.uid, host.uid)
        self.log = scratch / "chromedriver.log"
        self.commands_log = scratch / "commands.log"  # chromedriver's own: one line a command
        argv = host.netns_exec(
            "setpriv", f"--reuid={host.uid}", f"--regid={host.uid}", "--clear-groups",
            "env", "-i", f"HOME={host.home}", "PATH=/usr/bin:/bin", "LANG=C.UTF-8",
            CHROMEDRIVER, f"--port={port}", "--allowed-ips=127.0.0.1",
            f"--log-path={self.commands_log}", "--log-level=INFO")
        with open(self.log, "ab", buffering=0) as out:
            self._process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out,
                                             stderr=subprocess.STDOUT, close_fds=True,
                                             start_new_session=True, cwd="/")
        deadline = time.monotonic() + 15
        while not self._ready():
            if time.monotonic() > deadline or self._process.poll() is not None:
                self.close()
                raise AssertionError(f"chromedriver did not start; see {self.log}")
            time.sleep(0.05)

    def request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        """One request to chromedriver from inside the host (its loopback)."""

        def send() -> tuple[int, Any]:
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=15)
            try:
                data = json.dumps(body).encode() if body is not None else None
                conn.request(method, path, body=data,
                             headers={"Content-Type": "application/json"} if data else {})
                response = conn.getresponse()
                return response.status, json.loads(response.read() or b"null")
            finally:
                conn.close()

        return self.host.run_in_netns(send)

    def _ready(self) -> bool:
        try:
            status, answer = self.request("GET", "/status")
        except OSError:
            return False
        return status == 200 and bool(answer["value"]["ready"])

    def commands(self, name: str, session_id: str) -> int:
        """How often chromedriver ran command ``name`` (``GetUrl``) on a session."""
        text = self.commands_log.read_text(errors="replace")
        return sum(1 for line in text.splitlines()
                   if f"[{session_id}] COMMAND {name}" in line)

    def sessions(self) -> list[str]:
        """The ids of the sessions chromedriver has open (``GET /sessions``)."""
        _, answer = self.request("GET", "/sessions")
        return [s["id"] for s in answer["value"]]

    def delete(self, session_id: str) -> None:
        """End a session from the host side, as a Grid's timeout would."""
        status, answer = self.request("DELETE", f"/session/{session_id}")
        assert status == 200, answer

    def browser_pids(self) -> list[int]:
        """Chromium browser processes this chromedriver started (its scoped profile dirs,
        run as this host's login user: a chromedriver of another topology slot on the same
        machine uses the same directory names)."""
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                if entry.stat().st_uid != self.host.uid:
                    continue
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            args = [a.decode(errors="replace") for a in argv]
            if any(a.startswith(_SCOPED_DIR) for a in args) and not any(
                    a.startswith("--type=") for a in args):
                found.append(int(entry.name))
        return found

    def close(self) -> None:
        """Stop chromedriver (and any browser it still runs) by pid; remove its logs."""
        browsers = self.browser_pids()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self._process.pid, signal.SIGTERM)
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self._process.pid, signal.SIGKILL)
            self._process.wait()
        for pid in browsers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(self._scratch, ignore_errors=True)
