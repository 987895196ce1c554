"""Real applications nobody here wrote, built for the e2e tests from what PyPI installed
(the dev group): they have what our fixture pages do not — a search in a web worker,
script-made results, pages that navigate."""

from __future__ import annotations

import contextlib
import os
import re
import select
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from tests.e2e.pages import stop
from tests.topology import RemoteHost

__all__ = ["TRIPS", "build_docs_site", "seed_trips", "serve_datasette"]

TRIPS = 2_000
"""Rows of the bike-trips table ``seed_trips`` makes."""
START_S = 30.0


def build_docs_site(root: Path) -> Path:
    """A documentation site built by MkDocs Material under ``root``: two pages, and a
    search that runs in a web worker ("1 matching document" once typed into). Returns
    the folder to serve."""
    (root / "docs").mkdir()
    (root / "mkdocs.yml").write_text(
        "site_name: csgw docs\ntheme:\n  name: material\n  font: false\nplugins:\n  - search\n")
    (root / "docs" / "index.md").write_text(
        "# Home\n\nThe gateway drives browsers.\n\n## Tunnels\n\n"
        "SSH forwards carry the DevTools socket.\n")
    (root / "docs" / "workers.md").write_text(
        "# Workers\n\nA web worker runs scripts off the main thread.\n")
    subprocess.run([sys.executable, "-m", "mkdocs", "build", "--quiet", "--site-dir",
                    str(root / "site")], cwd=root, check=True, timeout=120,
                   env={"PATH": "/usr/bin:/bin", "NO_MKDOCS_2_WARNING": "1"})
    assert any((root / "site" / "assets" / "javascripts" / "workers").glob("search.*.js"))
    return root / "site"


def seed_trips(path: Path) -> Path:
    """A SQLite database of ``TRIPS`` bike trips, the same every time: ``trips(id, day,
    station, minutes)`` with station ``Station 0`` … ``Station 16``."""
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute("create table trips (id integer primary key, day text, station text, "
                   "minutes integer)")
        db.executemany("insert into trips values (?, ?, ?, ?)",
                       [(i, f"2026-05-{1 + i % 28:02d}", f"Station {i % 17}", 5 + i % 40)
                        for i in range(1, TRIPS + 1)])
        db.commit()
    path.chmod(0o644)
    return path


@contextlib.contextmanager
def serve_datasette(host: RemoteHost, database: Path) -> Iterator[str]:
    """Datasette (from PyPI) over ``database``, on ``host``'s loopback; its origin."""
    datasette = Path(sys.executable).with_name("datasette")
    proc = subprocess.Popen(
        host.netns_exec(str(datasette), "serve", str(database), "--host", "127.0.0.1",
                        "--port", "0"),
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        close_fds=True, start_new_session=True, cwd="/")
    try:
        yield f"http://127.0.0.1:{_port_said(proc, START_S)}"
    finally:
        proc.terminate()
        stop(proc)


def _port_said(proc: subprocess.Popen[bytes], timeout: float) -> int:
    """The port in uvicorn's "running on http://127.0.0.1:PORT" line on stderr. Read off
    the pipe itself: its start lines can come in one write, which a buffered readline
    would take whole while ``select`` then waits on an empty pipe."""
    assert proc.stderr is not None
    said, deadline = b"", time.monotonic() + timeout
    while (found := re.search(rb"running on http://127\.0\.0\.1:(\d+)", said)) is None:
        left = deadline - time.monotonic()
        ready, _, _ = select.select([proc.stderr], [], [], max(left, 0))
        chunk = os.read(proc.stderr.fileno(), 4096) if ready else b""
        if not chunk:
            raise TimeoutError(f"datasette (pid {proc.pid}) said no port in {timeout:g} s: "
                               f"{said.decode(errors='replace')[-500:]}")
        said += chunk
    return int(found[1])
