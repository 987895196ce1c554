"""``fixtures/pages`` over HTTP on the loopback of a host's network namespace.

That is the loopback the host's Chromium sees, so its tabs load the pages from
``http://127.0.0.73:<port>/`` (PAGE_HOST) while nothing listens outside the
namespace.  The server (``python -m http.server`` on port 0, run with
``ip netns exec``) is our own child; ``aclose`` ends it by its PID.
"""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
from anyio.abc import Process

from tests.topology import RemoteHost

__all__ = ["PAGES", "PAGE_HOST", "PageServer", "page_server"]

PAGES = Path(__file__).resolve().parent.parent / "fixtures" / "pages"
# A loopback address of our own (the namespace's lo is 127.0.0.1/8): a site of its own, so
# Chromium gives our pages a renderer process of their own, not the one running the
# 127.0.0.1 pages of tests on the same browser (a test's busy page would stall ours).
PAGE_HOST = "127.0.0.73"


class PageServer:
    """One ``http.server`` of ``directory`` inside ``host``'s namespace."""

    def __init__(self, host: RemoteHost, directory: Path = PAGES) -> None:
        self.host = host
        self.directory = directory
        self.proc: Process | None = None
        self.base = ""

    async def start(self) -> str:
        argv = self.host.netns_exec(sys.executable, "-u", "-m", "http.server", "0",
                                    "--bind", PAGE_HOST, "--directory", str(self.directory))
        self.proc = await anyio.open_process(argv, stdin=subprocess.DEVNULL,
                                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        assert self.proc.stdout is not None
        banner = b""
        with anyio.fail_after(20):  # "Serving HTTP on 127.0.0.73 port 41234 (http://…) ..."
            while b"\n" not in banner and len(banner) < 4096:
                banner += await self.proc.stdout.receive()
        found = re.search(rb"port (\d+)", banner)
        if found is None:
            raise RuntimeError(f"http.server in {self.host.netns} said {banner!r}")
        self.base = f"http://{PAGE_HOST}:{int(found.group(1))}/"
        return self.base

    async def aclose(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        with anyio.CancelScope(shield=True):
            if proc.returncode is None:
                proc.terminate()
                with anyio.move_on_after(5):
                    await proc.wait()
            if proc.returncode is None:
                proc.kill()
                with anyio.move_on_after(5):
                    await proc.wait()
            with contextlib.suppress(Exception):
                await proc.aclose()


@asynccontextmanager
async def page_server(host: RemoteHost, directory: Path = PAGES) -> AsyncIterator[str]:
    """The base URL of a running PageServer on ``host``, stopped on exit."""
    server = PageServer(host, directory)
    try:
        yield await server.start()
    finally:
        await server.aclose()
