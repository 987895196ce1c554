"""A browser the gateway launched to stop with it never outlives it (issue 22).

The embedded ``local`` default launches a headless Chromium into a temporary
``csgw-chrome-*`` profile under the gateway's TMPDIR (a fresh one per test). Every
process the gateway starts inherits its environment, so a marker there finds the
launch script holding the browser, the browser and all its helpers. However the
gateway ends — SIGKILL while serving, SIGTERM at any moment of its start, its MCP
client killed — none of them may remain 5 s later, nor the profile; and when even
the holder was killed with the gateway (its whole process group), the next start
removes what was left.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.e2e.helpers import local_default_env, marked_env, marked_pids

REPO = Path(__file__).resolve().parents[2]
GONE_WITHIN_S = 5.0


@pytest.fixture
def scratch(tmp_path: Path) -> Iterator[tuple[dict[str, str], Path]]:
    """An environment for the local default and its TMPDIR (short: Chrome's socket path
    must fit, so profiles land in it rather than in /tmp)."""
    tmpdir = Path(tempfile.mkdtemp(prefix="csgw-o-", dir="/tmp"))
    env = local_default_env(tmp_path / "home") | {"TMPDIR": str(tmpdir)}
    try:
        yield env, tmpdir
    finally:
        subprocess.run(["rm", "-rf", str(tmpdir)], check=False)


def _profiles(tmpdir: Path) -> list[Path]:
    return sorted(tmpdir.glob("csgw-chrome-*"))


def _start(env: dict[str, str], log: Path, *, own_group: bool = False
           ) -> tuple[subprocess.Popen[bytes], str]:
    """``python -m gateway serve`` over a stdin pipe kept open (a silent client)."""
    env, marker = marked_env(env)
    process = subprocess.Popen([sys.executable, "-m", "gateway", "serve"], cwd=REPO, env=env,
                               stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                               stderr=log.open("ab"), start_new_session=own_group)
    return process, marker


def _browsers(marker: str) -> list[int]:
    """The processes the gateway started (all but itself, which may be gone already)."""
    return marked_pids(marker)


def _wait(what: str, check: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _serving(log: Path) -> bool:
    return "browser up" in log.read_text(errors="replace")


def _none_left(marker: str, tmpdir: Path, exited: subprocess.Popen[bytes]) -> None:
    """Within 5 s of the gateway's end, nothing it started runs and no profile is left."""
    exited.wait(30)
    deadline = time.monotonic() + GONE_WITHIN_S
    while (_browsers(marker) or _profiles(tmpdir)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _browsers(marker) == [], "processes the gateway started outlived it"
    assert _profiles(tmpdir) == [], "the temporary profile was left behind"


def test_a_gateway_killed_while_serving_takes_its_browser_along(
        scratch: tuple[dict[str, str], Path], tmp_path: Path) -> None:
    env, tmpdir = scratch
    log = tmp_path / "gateway.log"
    gateway, marker = _start(env, log)
    try:
        _wait("the launched browser to be served", lambda: _serving(log), 60)
        assert len(_browsers(marker)) > 3  # the holder, the browser and its helpers
        assert len(_profiles(tmpdir)) == 1
    finally:
        gateway.kill()
    _none_left(marker, tmpdir, gateway)


def test_a_gateway_stopped_at_any_moment_of_its_start_leaves_nothing(
        scratch: tuple[dict[str, str], Path], tmp_path: Path) -> None:
    env, tmpdir = scratch
    log = tmp_path / "gateway.log"
    # From before the browser is started, through its start, to serving.
    for delay in (0.3, 0.6, 0.9, 1.2, 1.5, 2.0, 3.0):
        gateway, marker = _start(env, log)
        time.sleep(delay)
        gateway.send_signal(signal.SIGTERM)
        _none_left(marker, tmpdir, gateway)
    assert "launched browser" in log.read_text(), "no stop came while a browser ran"


def test_a_killed_mcp_client_takes_the_gateway_and_its_browser_along(
        scratch: tuple[dict[str, str], Path], tmp_path: Path) -> None:
    env, tmpdir = scratch
    env, marker = marked_env(env)
    client = subprocess.Popen(
        [sys.executable, "-c", _CLIENT], cwd=REPO, env={**env, "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE, stderr=(tmp_path / "client.log").open("wb"))
    try:
        assert client.stdout is not None
        assert client.stdout.readline() == b"served\n", (tmp_path / "client.log").read_text()
        assert _browsers(marker) and _profiles(tmpdir)
    finally:
        client.kill()
    _none_left(marker, tmpdir, client)


_CLIENT = """
import sys, anyio
from tests.e2e.helpers import call_ok, open_gateway

async def main():
    async with open_gateway(dict(__import__("os").environ)) as gw:
        await call_ok(gw, "list_tabs", {"target": "local"}, timeout=60)
        print("served", flush=True)
        await anyio.sleep(600)

anyio.run(main)
"""


def test_what_a_killed_process_group_left_goes_at_the_next_start(
        scratch: tuple[dict[str, str], Path], tmp_path: Path) -> None:
    env, tmpdir = scratch
    log = tmp_path / "gateway.log"
    gateway, marker = _start(env, log, own_group=True)
    try:
        _wait("the launched browser to be served", lambda: _serving(log), 60)
        [left] = _profiles(tmpdir)
    finally:
        os.killpg(gateway.pid, signal.SIGKILL)  # the gateway and the script holding it
    gateway.wait(10)
    time.sleep(1)
    # The premise: the browser (its own session) survived, on its profile.
    assert _browsers(marker) and left.is_dir()
    log.write_text("")
    second, second_marker = _start(env, log)
    try:
        _wait("the next gateway to serve", lambda: _serving(log), 60)
        assert _browsers(marker) == [], "the orphaned browser still runs"
        assert not left.exists() and len(_profiles(tmpdir)) == 1
    finally:
        second.terminate()
    _none_left(second_marker, tmpdir, second)
