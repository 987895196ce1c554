"""Browsers started on a test host the way test frameworks start them (issue 10).

The real ``chromium`` binary with the flags and profile paths Puppeteer,
chromedriver, Karma and Playwright use (see the issue's table), run as the
host's login user inside its network namespace — no test framework needed. A
``--remote-debugging-pipe`` browser gets its two pipes on fds 3 and 4, as
Playwright gives them; ``own_netns`` puts a browser in a network namespace of
its own (a container's situation). Everything started is stopped by pid, and
its profile removed, when the ``BrowserFarm`` closes.
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

__all__ = ["BrowserFarm", "Started"]


class Started:
    """One browser this farm started."""

    def __init__(self, pid: int, profile: Path, flags: tuple[str, ...]) -> None:
        self.pid = pid
        self.profile = profile
        self.flags = flags

    @property
    def port(self) -> int:
        """The port it listens on (from its DevToolsActivePort, waited for)."""
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                return int((self.profile / "DevToolsActivePort").read_text().split("\n")[0])
            except (OSError, ValueError):
                time.sleep(0.05)
        raise AssertionError(f"browser {self.pid} wrote no DevToolsActivePort in 15 s")


class BrowserFarm:
    def __init__(self, host: RemoteHost) -> None:
        self.host = host
        self.started: list[Started] = []
        self._pipes: list[int] = []

    def start(self, profile_prefix: str, *flags: str, own_netns: bool = False,
              pipe: bool = False, url: str = "about:blank") -> Started:
        """Start one browser with ``--user-data-dir`` a fresh ``/tmp/<prefix>XXXXXX``."""
        profile = Path(tempfile.mkdtemp(prefix=profile_prefix, dir="/tmp"))
        os.chown(profile, self.host.uid, self.host.uid)
        scratch = profile / "tmp"
        scratch.mkdir()
        os.chown(scratch, self.host.uid, self.host.uid)
        argv = self.host.netns_exec(
            *(("unshare", "--net") if own_netns else ()),
            # Playwright's pipe: the browser reads fd 3 and writes fd 4 (here: the pipes
            # handed in as stdin and stdout).
            *(("sh", "-c", 'exec "$@" 3<&0 4>&1', "sh") if pipe else ()),
            "setpriv", f"--reuid={self.host.uid}", f"--regid={self.host.uid}",
            "--clear-groups", "env", "-i", f"HOME={self.host.home}", "PATH=/usr/bin:/bin",
            "LANG=C.UTF-8", f"TMPDIR={scratch}", f"CHROME_CONFIG_HOME={profile}",
            CHROMIUM, *CHROME_FLAGS, *flags, f"--user-data-dir={profile}", url)
        stdin: int = subprocess.DEVNULL
        stdout: int = subprocess.DEVNULL
        if pipe:
            stdin, self_writes = os.pipe()
            self_reads, stdout = os.pipe()
            self._pipes += [self_writes, self_reads]
        process = subprocess.Popen(argv, stdin=stdin, stdout=stdout, stderr=subprocess.DEVNULL,
                                   start_new_session=True, cwd="/")
        if pipe:
            os.close(stdin)
            os.close(stdout)
        started = Started(process.pid, profile, flags)
        self.started.append(started)
        _await_exec(process.pid)
        return started

    def kill(self, browser: Started) -> None:
        """SIGKILL the browser (a test framework's worker dying)."""
        os.killpg(browser.pid, signal.SIGKILL)
        _reap(browser.pid)

    def open_page(self, browser: Started, url: str) -> dict[str, Any]:
        """Open a page the way a framework does, over the browser's own DevTools (``PUT
        /json/new``) from inside the host — not through the gateway."""
        port = browser.port

        def put() -> dict[str, Any]:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            try:
                conn.request("PUT", f"/json/new?{url}")
                answer: dict[str, Any] = json.loads(conn.getresponse().read())
                return answer
            finally:
                conn.close()

        return self.host.run_in_netns(put)

    def close(self) -> None:
        for browser in self.started:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(browser.pid, signal.SIGTERM)
        deadline = time.monotonic() + 5
        for browser in self.started:
            while time.monotonic() < deadline and _alive(browser.pid):
                time.sleep(0.05)
            if _alive(browser.pid):
                os.killpg(browser.pid, signal.SIGKILL)
            _reap(browser.pid)
            shutil.rmtree(browser.profile, ignore_errors=True)
        for fd in self._pipes:
            os.close(fd)
        self.started.clear()
        self._pipes.clear()


def _await_exec(pid: int, timeout: float = 10.0) -> None:
    """Until ``pid`` is Chromium itself (``ip netns exec``, ``setpriv`` and ``env`` exec
    one another first): a scan of the host must find a browser, not its launcher."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() == "chromium":
                return
        except OSError:
            break
        time.sleep(0.01)
    raise AssertionError(f"process {pid} did not become chromium within {timeout:g} s")


def _alive(pid: int) -> bool:
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return Path(f"/proc/{pid}").exists()
    return done == 0


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)
