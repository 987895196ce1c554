"""The embedded default: nothing configured, no Chrome running here.

With a fresh, empty HOME and no SSH_PROXY_TO / CDP_URL / targets file the gateway
serves one target ``local`` and launches a headless Chromium of its own, in a
temporary ``csgw-chrome-*`` profile. When the client goes away, that browser and its
profile go too.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import tempfile
import time
from pathlib import Path

import pytest

from tests.e2e.helpers import (
    call_ok,
    data_url,
    local_default_env,
    open_gateway,
    wait_for_targets,
)
from tests.topology import CHROMIUM

pytestmark = pytest.mark.anyio


def _pids_mentioning(text: str) -> list[int]:
    """Processes whose command line contains ``text``."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        state = ""
        try:
            state = Path(f"/proc/{name}/stat").read_text().rpartition(")")[2].split()[0]
        except (OSError, IndexError):
            continue
        if text in cmdline and state not in ("Z", "X"):
            found.append(int(name))
    return found


def _nothing_listens_on_9222() -> bool:
    try:
        socket.create_connection(("127.0.0.1", 9222), timeout=1).close()
    except OSError:
        return True
    return False


async def test_local_default_launches_and_cleans_up(tmp_path: Path) -> None:
    assert os.access(CHROMIUM, os.X_OK), f"{CHROMIUM} is needed for the local default"
    # The premise: no Chrome to discover here, so the gateway has to launch one.
    assert _nothing_listens_on_9222(), "something listens on 127.0.0.1:9222 on this machine"
    home = tmp_path / "home"
    env = local_default_env(home)

    async with open_gateway(env) as gw:
        targets = await wait_for_targets(gw, {"local": "up"})
        local = targets["local"]
        # Its own browser, and this machine's shares (none: nobody shares with it here).
        assert sorted(targets) == ["local", "shared"]
        assert (targets["shared"]["shared"], targets["shared"]["browsers"]) == (True, [])
        assert (local["transport"], local["host"], local.get("error")) == (
            "local", "this machine", None)
        assert local["browser"].startswith("Chrome/")
        match = re.search(r"\(DevToolsActivePort in (/\S*/csgw-chrome-[^)/\s]+)\)$",
                          local["cdp_endpoint"])
        assert match, local["cdp_endpoint"]
        profile = match.group(1)
        assert os.path.isdir(profile)
        assert os.stat(profile).st_mode & 0o077 == 0  # a private profile
        browsers = _pids_mentioning(f"--user-data-dir={profile}")
        assert browsers, f"no process runs with --user-data-dir={profile}"

        nav = await call_ok(gw, "navigate", {"url": data_url("local-page", "<p id=p>here</p>")})
        assert (nav["target"], nav["title"]) == ("local", "local-page")
        value = await call_ok(gw, "evaluate", {
            "tab": nav["tab"], "expression": "document.getElementById('p').textContent"})
        assert value["value"] == "here"
        version = await call_ok(gw, "cdp_command", {"method": "Browser.getVersion"})
        assert version["result"]["product"] == local["browser"]

    # The client went away: the launched browser (all its processes) and profile follow.
    deadline = time.monotonic() + 10
    while _pids_mentioning(profile) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _pids_mentioning(profile) == [], "the launched Chromium outlived the gateway"
    assert not os.path.exists(profile), "the temporary profile was left behind"
    assert _pids_mentioning(str(home)) == [], "a helper process (crashpad?) outlived the gateway"


async def test_local_default_launches_under_a_long_tmpdir(tmp_path: Path) -> None:
    """A TMPDIR as long as macOS's (/var/folders/xx/<28 chars>/T/, 49 characters) must not
    stop the launch: Chromium keeps its SingletonSocket under its TMPDIR, and a Unix
    socket path has to fit in 107 bytes."""
    assert _nothing_listens_on_9222(), "something listens on 127.0.0.1:9222 on this machine"
    scratch = Path(tempfile.mkdtemp(prefix="csgw-a-tmpdir-as-long-as-on-macos-", dir="/tmp"))
    try:
        long_tmpdir = scratch / "T"
        long_tmpdir.mkdir(mode=0o700)
        assert len(str(long_tmpdir)) >= 49
        env = local_default_env(tmp_path / "home") | {"TMPDIR": str(long_tmpdir)}
        before = set(Path("/tmp").glob("csgw-chrome-*"))
        async with open_gateway(env) as gw:
            targets = await wait_for_targets(gw)
            assert (targets["local"]["state"], targets["local"].get("error")) == ("up", None)
            nav = await call_ok(gw, "navigate", {"url": data_url("long-tmpdir")})
            assert nav["title"] == "long-tmpdir"
        assert list(long_tmpdir.iterdir()) == [], "the launched profile was left behind"
        # The profile went to /tmp instead (short enough for Chrome's socket path) and
        # was removed from there too (and the launch may have swept away older ones).
        assert set(Path("/tmp").glob("csgw-chrome-*")) <= before
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
