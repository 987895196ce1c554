"""``downloads``: what a served browser downloads is saved on its own host, listed, and
copied back over the target's SSH connection byte for byte — or refused, saying why.

h1's Chromium downloads from its page server (``/downloads.html``: links to
attachments of known bytes, ``download_bytes``, and one the server breaks off), with
``max_capture_mb = 40`` so one file is over the size bound without a test of
gigabytes. h1's browser is not one the gateway launched: its page is in a context of
the gateway's (``context``), whose downloads are saved where the gateway fetches them;
its default context keeps its own. The directory on the host is
``/tmp/csgw-downloads-*`` (the namespaces share the machine's /tmp, and so do other
test runs: a gateway's own directory is known by its holder, the sshd process of the
gateway's connection in that host's namespace): removed when the gateway exits, and —
for a gateway killed with SIGKILL — by the next gateway that connects to that host
(h2). The local target (no SSH; a browser the gateway launched: its default context
saves there) gets the same by a plain copy, its holder the gateway itself.
"""

from __future__ import annotations

import glob
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.helpers import (
    call_err,
    call_ok,
    eventually,
    local_default_env,
    open_gateway,
    present,
    wait_for_targets,
    write_targets,
)
from tests.e2e.page_server import download_bytes
from tests.e2e.pages import DevtoolsEnv, devtools_gateway, file_mode, js, open_page
from tests.e2e.test_progress import call_hearing, strictly_increasing
from tests.topology import Topology

pytestmark = pytest.mark.anyio

SIZES = {"blob.bin": 300_000, "large.bin": 30_000_000, "huge.bin": 41 * 2**20 + 1}


@pytest.fixture(scope="module")
async def env(topology: Topology,
              tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[DevtoolsEnv]:
    async with devtools_gateway(topology, tmp_path_factory.mktemp("downloads"), hosts=("h1",),
                                target_options={"max_capture_mb": 40}) as e:
        yield e


def _holders() -> dict[str, int]:
    """Every download directory on this machine with a holder written: its holder's pid."""
    found = {}
    for directory in glob.glob("/tmp/csgw-downloads-*"):
        try:
            found[directory] = int(Path(directory, "holder").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue
    return found


def _held_in(topology: Topology, host: str) -> dict[str, int]:
    """The directories whose holder runs in ``host``'s network namespace (its sshd: a
    gateway's connection there)."""
    inode = os.stat(f"/run/netns/{topology.host(host).netns}").st_ino
    found = {}
    for directory, pid in _holders().items():
        try:
            if os.stat(f"/proc/{pid}/ns/net").st_ino == inode:
                found[directory] = pid
        except OSError:
            continue
    return found


def _held_by_children() -> set[str]:
    """The directories whose holder is a child of this process (a local gateway)."""
    found = set()
    for directory, pid in _holders().items():
        try:
            parent = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if parent == os.getpid():
            found.add(directory)
    return found


def _files(directories: Iterable[str]) -> set[str]:
    return {f for d in directories for f in os.listdir(f"{d}/files")}


async def _click(env: DevtoolsEnv, tab: int, name: str) -> None:
    await js(env.client, tab, f"[...document.links].find(a => a.textContent === '{name}')"
                              ".click(), 1")


async def _download(env: DevtoolsEnv, tab: int, name: str, state: str) -> dict[str, Any]:
    """Click the link to ``name`` and wait until ``downloads`` lists it in ``state``."""
    await _click(env, tab, name)

    async def listed() -> dict[str, Any] | None:
        found = (await call_ok(env.client, "downloads", {"tab": tab}))["downloads"]
        return next((d for d in found if d["name"] == name and d["state"] == state), None)

    return await eventually(listed, until=present, timeout=60, what=f"{name} listed as {state}")


_QUERY = "&".join(f"{name}={size}" for name, size in SIZES.items())


@pytest.fixture(scope="module")
async def page(env: DevtoolsEnv) -> int:
    nav = await call_ok(env.client, "navigate", {
        "url": env.site("h1").url(f"/downloads.html?{_QUERY}"), "wait": "load",
        "target": "h1", "context": "downloads"})
    return int(nav["tab"])


async def test_a_browser_not_launched_keeps_its_default_contexts_downloads(
        env: DevtoolsEnv, topology: Topology) -> None:
    """Listed, never redirected into the gateway's directory; a fetch says what to do."""
    before = _files(_held_in(topology, "h1"))
    tab = await open_page(env.client, env.site("h1"), f"/downloads.html?{_QUERY}", "h1")
    try:
        await _click(env, tab, "blob.bin")

        async def listed() -> dict[str, Any] | None:
            found = (await call_ok(env.client, "downloads", {"tab": tab}))["downloads"]
            return found[0] if found else None

        item = await eventually(listed, until=present,
                                timeout=60, what="the default context's download")
        assert "did not launch this browser" in item["why"], item
        error = await call_err(env.client, "downloads", {"tab": tab, "fetch": item["id"]})
        assert "isolated context" in error and "launch = true" in error, error
        assert _files(_held_in(topology, "h1")) == before  # not saved there
    finally:
        await call_ok(env.client, "close_tab", {"tab": tab})


async def test_a_binary_file_is_brought_back_identical(env: DevtoolsEnv, page: int,
                                                       tmp_path: Path) -> None:
    item = await _download(env, page, "blob.bin", "completed")
    site = env.site("h1")
    assert item["bytes"] == SIZES["blob.bin"] and "total" not in item
    assert item["tab"] == page and item["url"] == site.url("/download/blob.bin?bytes=300000")
    save = tmp_path / "blob.bin"
    fetched = await call_ok(env.client, "downloads", {"target": "h1", "fetch": item["id"],
                                                      "save_to": str(save)})
    assert fetched == {"target": "h1", "id": item["id"], "path": str(save),
                       "bytes": SIZES["blob.bin"]}
    assert save.read_bytes() == download_bytes(SIZES["blob.bin"])
    assert file_mode(save) == 0o600

    again = await call_err(env.client, "downloads", {"tab": page, "fetch": item["id"],
                                                     "save_to": str(save)})
    assert "exists already" in again
    temp = await call_ok(env.client, "downloads", {"tab": page, "fetch": item["id"]})
    assert temp["path"].endswith(".bin") and "csgw-download-" in temp["path"]
    try:
        assert Path(temp["path"]).read_bytes() == download_bytes(SIZES["blob.bin"])
    finally:
        os.unlink(temp["path"])


async def test_what_cannot_be_fetched_is_refused_saying_why(env: DevtoolsEnv, page: int,
                                                           tmp_path: Path) -> None:
    huge = await _download(env, page, "huge.bin", "completed")
    save = tmp_path / "huge.bin"
    error = await call_err(env.client, "downloads", {"tab": page, "fetch": huge["id"],
                                                     "save_to": str(save)})
    assert f"{SIZES['huge.bin']:,} bytes, over the 40 MB limit" in error, error
    assert "max_capture_mb" in error and not save.exists()

    broken = await _download(env, page, "broken.bin", "failed")
    error = await call_err(env.client, "downloads", {"tab": page, "fetch": broken["id"]})
    assert "failed in the browser" in error and "download it again" in error, error

    error = await call_err(env.client, "downloads", {"tab": page, "fetch": 999})
    assert "no download 999" in error and "without fetch to list them" in error, error

    outside = "/var/lib/csgw-download-test.bin"
    blob = (await call_ok(env.client, "downloads", {"tab": page}))["downloads"][0]
    error = await call_err(env.client, "downloads", {"tab": page, "fetch": blob["id"],
                                                     "save_to": outside})
    assert "outside the allowed directories" in error and not os.path.exists(outside)

    error = await call_err(env.client, "downloads", {"tab": page, "save_to": str(save)})
    assert "save_to needs fetch" in error


async def test_a_large_fetch_reports_its_bytes(env: DevtoolsEnv, page: int,
                                               tmp_path: Path) -> None:
    large = await _download(env, page, "large.bin", "completed")
    save = tmp_path / "large.bin"
    result, heard = await call_hearing(env, "downloads", {
        "tab": page, "fetch": large["id"], "save_to": str(save)})
    assert result.structured_content is not None
    assert result.structured_content["bytes"] == SIZES["large.bin"]
    assert save.read_bytes() == download_bytes(SIZES["large.bin"])
    notes = heard.notes
    assert len(notes) >= 2 and strictly_increasing(heard.values), notes
    done, total, message, _ = notes[-1]
    assert done == total == SIZES["large.bin"], notes[-1]
    assert str(message).startswith("copying back: "), message


async def test_the_host_directory_goes_when_the_gateway_does(topology: Topology,
                                                             tmp_path: Path) -> None:
    """On exit; and after a SIGKILL, at the next gateway's connect to that host."""
    targets = write_targets(tmp_path / "targets.toml", {"h2": {"ssh": "h2"}})
    assert not _held_in(topology, "h2"), "no gateway of these tests on h2 yet"
    killed = subprocess.Popen(
        [sys.executable, "-m", "gateway", "serve", "--config", str(targets)],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env=topology.client_env(), close_fds=True)
    try:
        async def made() -> dict[str, int] | None:  # with its holder written: set up
            return _held_in(topology, "h2") or None

        held = await eventually(made, until=present,
                                timeout=60, what="the killed gateway's directory")
    finally:
        killed.send_signal(signal.SIGKILL)
        killed.wait(timeout=10)
    (left, holder), = held.items()

    async def holder_gone() -> bool:  # its sshd session notices the connection gone
        return not os.path.exists(f"/proc/{holder}")

    await eventually(holder_gone, timeout=30, what=f"the killed gateway's sshd ({holder})")
    assert os.path.isdir(left), "a SIGKILL leaves the directory (it cannot remove it)"

    with open(tmp_path / "gateway.stderr", "w") as errlog:
        async with open_gateway(topology.client_env(), ["--config", str(targets)],
                                errlog=errlog) as client:
            await wait_for_targets(client, {"h2": "up"})
            ours = _held_in(topology, "h2")
            assert not os.path.exists(left), f"the next gateway's connect swept {left}"
            assert len(ours) == 1 and file_mode(Path(next(iter(ours)))) == 0o700, ours
    stderr = (tmp_path / "gateway.stderr").read_text()
    assert not any(map(os.path.exists, ours)), f"the directory went with its gateway: {stderr}"


async def test_a_local_target_copies_from_its_own_directory(tmp_path: Path) -> None:
    data = bytes(range(256)) * 40
    with open(tmp_path / "gateway.stderr", "w") as errlog:
        async with open_gateway(local_default_env(tmp_path / "home"), errlog=errlog) as client:
            await wait_for_targets(client, {"local": "up"}, timeout=60)
            nav = await call_ok(client, "navigate", {"url": "about:blank", "target": "local"})
            await call_ok(client, "evaluate", {"tab": nav["tab"], "expression": (
                "const a = document.createElement('a');"
                f"a.href = URL.createObjectURL(new Blob([new Uint8Array({list(data)})]));"
                "a.download = 'local.bin'; document.body.append(a); a.click(); 1")})

            async def listed() -> dict[str, Any] | None:
                found = (await call_ok(client, "downloads", {"target": "local"}))["downloads"]
                return next((d for d in found if d["state"] == "completed"), None)

            item = await eventually(listed, until=present, timeout=30, what="the local download")
            assert item["name"] == "local.bin" and item["url"].startswith("blob:")
            save = tmp_path / "local.bin"
            await call_ok(client, "downloads", {"target": "local", "fetch": item["id"],
                                                "save_to": str(save)})
            assert save.read_bytes() == data and file_mode(save) == 0o600
            ours = _held_by_children()  # held by the gateway itself
            assert len(ours) == 1, ours
    assert not any(map(os.path.exists, ours)), "the local directory went with its gateway"
