"""``browse_act`` ``upload``: files of the gateway's machine into a page's file input.

Over SSH (target ``h1``) the files are copied into a private directory on the host
and removed when the tab closes; on a local target (a second gateway, nothing
configured, its own Chromium) the browser reads them where they are. What arrived is
read back from the page itself (``upload.html`` records every ``input``/``change``
event with each file's name, size and first bytes, read with the File API), and
what is left on the host is read with the host's own shell (``ip netns exec``).
"""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.e2e.helpers import (
    call_ok,
    eventually,
    local_default_env,
    open_gateway,
    present,
    wait_for_targets,
)
from tests.e2e.pages import (
    DevtoolsEnv,
    act,
    act_failing,
    browse,
    devtools_gateway,
    js,
    page_fixtures,
    raw_call,
    ref_of,
)
from tests.topology import RemoteHost, Topology

pytestmark = pytest.mark.anyio

PAGE = Path(__file__).with_name("browse_site") / "upload.html"
MAX_FILE = 100 * 1024 * 1024  # the documented per-file limit


env, tabs = page_fixtures("browse-upload")


def host_shell(host: RemoteHost, script: str) -> str:
    """Standard output of ``script`` run by the host's own shell."""
    return subprocess.run(host.netns_exec("/bin/sh", "-c", script), capture_output=True,
                          text=True, timeout=30, check=True).stdout


def staged(host: RemoteHost) -> set[str]:
    """The gateway's upload directories on the host now."""
    out = host_shell(host, 'for d in /tmp/csgw-upload-*; do [ -d "$d" ] && echo "$d"; done; :')
    return set(out.split())


def make_file(where: Path, name: str, size: int) -> tuple[Path, bytes]:
    """A file of ``size`` random bytes; (path, its bytes)."""
    where.mkdir(parents=True, exist_ok=True)
    data = os.urandom(size)
    path = where / name
    path.write_bytes(data)
    return path, data


def arrived(uploads: list[dict[str, Any]], input_id: str) -> list[tuple[str, list[Any]]]:
    """(event type, [(name, size, head)…]) of every event the page saw on ``input_id``."""
    return [(u["type"], [(f["name"], f["size"], f["head"]) for f in u["files"]])
            for u in uploads if u["input"] == input_id]


def step_error(result: dict[str, Any]) -> str:
    steps = result["steps"]
    assert len(steps) == 1 and steps[0]["ok"] is False, steps
    return str(steps[0]["error"])


async def open_upload_page(env: DevtoolsEnv, tabs: list[int]) -> tuple[int, str]:
    result = await browse(env.client, env.site("h1").url("/browse/upload.html"), target="h1")
    tabs.append(result["tab"])
    return result["tab"], result["view"]


async def test_a_file_arrives_over_ssh_and_is_gone_after_close_tab(
    env: DevtoolsEnv, tabs: list[int], tmp_path: Path
) -> None:
    host = env.site("h1").host
    before = staged(host)
    path, data = make_file(tmp_path, "report.bin", 70_000)
    tab, view = await open_upload_page(env, tabs)
    result = await act(env.client, tab,
                       {"do": "upload", "ref": ref_of(view, "Document"), "paths": [str(path)]})
    assert result["steps"] == [{"do": "upload", "ok": True}], result["steps"]
    expected = [("report.bin", len(data), data[:16].hex())]
    # DOM.setFileInputFiles fires both events a user's choice would, in this order.
    assert arrived(await js(env.client, tab, "await window.csgwRead()"), "doc") == [
        ("input", expected), ("change", expected)]
    assert "report.bin 70000" in result["view"]  # the fresh view shows what the page shows

    # On the host: one new private directory holding exactly these bytes.
    new = staged(host) - before
    assert len(new) == 1, new
    directory = new.pop()
    mode, uid = host_shell(host, f"stat -c '%a %u' {directory}").split()
    assert (mode, int(uid)) == ("700", host.uid)
    digest = host_shell(host, f"cat {directory}/*/report.bin | sha256sum").split()[0]
    assert digest == hashlib.sha256(data).hexdigest()
    assert host_shell(host, f"stat -c '%a' {directory}/*/report.bin").strip() == "600"

    await call_ok(env.client, "close_tab", {"tab": tab})
    tabs.remove(tab)
    assert directory not in staged(host), "the upload directory outlived its tab"


async def test_several_files_even_with_one_name_reach_a_multiple_input(
    env: DevtoolsEnv, tabs: list[int], tmp_path: Path
) -> None:
    first, one = make_file(tmp_path / "a", "notes.txt", 10)
    second, two = make_file(tmp_path / "b", "notes.txt", 20)
    third, _ = make_file(tmp_path, "empty.dat", 0)
    tab, view = await open_upload_page(env, tabs)
    result = await act(env.client, tab, {"do": "upload", "ref": ref_of(view, "Attachments"),
                                         "paths": [str(first), str(second), str(third)]})
    assert result["steps"] == [{"do": "upload", "ok": True}], result["steps"]
    files = [("notes.txt", 10, one.hex()), ("notes.txt", 20, two[:16].hex()),
             ("empty.dat", 0, "")]
    assert arrived(await js(env.client, tab, "await window.csgwRead()"), "many") == [
        ("input", files), ("change", files)]


async def test_a_button_that_opens_a_file_chooser_takes_the_file(
    env: DevtoolsEnv, tabs: list[int], tmp_path: Path
) -> None:
    path, data = make_file(tmp_path, "photo.jpg", 5000)
    tab, view = await open_upload_page(env, tabs)
    result = await act(env.client, tab, {"do": "upload", "ref": ref_of(view, "Choose photo"),
                                         "paths": [str(path)]})
    assert result["steps"] == [{"do": "upload", "ok": True}], result["steps"]
    expected = [("photo.jpg", 5000, data[:16].hex())]
    assert arrived(await js(env.client, tab, "await window.csgwRead()"), "photo") == [
        ("input", expected), ("change", expected)]
    # Interception is set up for each step (and turned off after it): a second upload
    # through the same button works the same way, and replaces the first file.
    again = await act(env.client, tab, {"do": "upload", "ref": ref_of(result["view"],
                                                                      "Choose photo"),
                                        "paths": [str(path)]})
    assert again["steps"] == [{"do": "upload", "ok": True}], again["steps"]


async def test_upload_into_a_cross_site_frame_and_through_its_chooser(
    env: DevtoolsEnv, tabs: list[int], tmp_path: Path
) -> None:
    """The frame runs in its own process and session: the file input's node, and the
    chooser interception, are that session's."""
    path, data = make_file(tmp_path, "framed.txt", 321)
    result = await browse(env.client, env.site("h1").url("/browse/upload-frame.html"),
                          target="h1")
    tabs.append(result["tab"])
    view = result["view"]
    result = await act(env.client, result["tab"],
                       {"do": "upload", "ref": ref_of(view, "Document"), "paths": [str(path)]})
    assert result["steps"] == [{"do": "upload", "ok": True}], result["steps"]
    assert f"doc change: framed.txt 321 {data[:16].hex()}" in result["view"], result["view"]
    result = await act(env.client, result["tab"], {"do": "upload",
                                                   "ref": ref_of(result["view"], "Choose photo"),
                                                   "paths": [str(path)]})
    assert result["steps"] == [{"do": "upload", "ok": True}], result["steps"]
    assert f"photo change: framed.txt 321 {data[:16].hex()}" in result["view"], result["view"]


async def test_refused_uploads_say_why_and_copy_nothing(
    env: DevtoolsEnv, tabs: list[int], tmp_path: Path
) -> None:
    host = env.site("h1").host
    ok, _ = make_file(tmp_path, "fine.txt", 3)
    big = tmp_path / "big.iso"
    with open(big, "wb") as f:
        f.truncate(MAX_FILE + 1)  # sparse: the size is what counts
    link = tmp_path / "passwd-link"
    link.symlink_to("/etc/passwd")
    tab, view = await open_upload_page(env, tabs)
    before = staged(host)
    # (the control, by name — every browse_act answers with a fresh view and new refs)
    cases: list[tuple[str, list[str], list[str]]] = [
        ("Document", ["/etc/passwd"], ["outside the allowed directories", "allowed:",
                                       "allow_any_path = true"]),
        ("Document", [str(link)], ["outside the allowed directories",
                                   "resolves to /etc/passwd"]),
        ("Document", [str(tmp_path / "missing.txt")], ["No such file"]),
        ("Document", [str(tmp_path)], ["not a regular file"]),
        ("Document", ["fine.txt"], ["must be absolute"]),
        ("Document", [str(big)], [f"{MAX_FILE + 1:,} bytes", f"{MAX_FILE:,} bytes per file"]),
        ("Attachments", [str(big)] * 3, ["per file"]),
        ("Document", [str(ok), str(ok)], ["takes one file, not 2"]),
        ("Locked", [str(ok)], ["is disabled"]),
        ("Plain button", [str(ok)], ["not a file input", "opened no file chooser"]),
    ]
    for control, paths, needles in cases:
        result = await act_failing(env.client, tab, {"do": "upload",
                                                     "ref": ref_of(view, control),
                                                     "paths": paths})
        error, view = step_error(result), result["view"]
        for needle in needles:
            assert needle in error, (control, paths, error)
    assert await js(env.client, tab, "window.csgwUploads.length") == 0
    assert staged(host) == before, "a refused upload copied files to the host"


async def test_upload_total_over_the_step_limit_is_refused(
    env: DevtoolsEnv, tabs: list[int], tmp_path: Path
) -> None:
    parts = []
    for n in range(3):  # each under the per-file limit, together over 250 MB
        part = tmp_path / f"part{n}.bin"
        with open(part, "wb") as f:
            f.truncate(90 * 1024 * 1024)
        parts.append(str(part))
    tab, view = await open_upload_page(env, tabs)
    error = step_error(await act_failing(env.client, tab, {"do": "upload",
                                                           "ref": ref_of(view, "Attachments"),
                                                           "paths": parts}))
    assert f"{3 * 90 * 1024 * 1024:,} bytes together" in error, error
    assert f"{250 * 1024 * 1024:,} bytes per upload step" in error, error


async def test_close_tab_during_an_upload_leaves_nothing_behind(
    env: DevtoolsEnv, tabs: list[int], tmp_path: Path
) -> None:
    """close_tab does not wait for the tab's lock: the directory being filled while the
    tab closes is removed too, once its copy has ended."""
    host = env.site("h1").host
    big = tmp_path / "large.bin"
    with open(big, "wb") as f:
        f.truncate(MAX_FILE)  # 100 MB (sparse here, real bytes on the host)
    tab, view = await open_upload_page(env, tabs)
    before = staged(host)
    outcome: dict[str, Any] = {}

    async def upload() -> None:
        outcome["result"], _ = await raw_call(env.client, "browse_act", {
            "tab": tab, "timeout_s": 120,
            "actions": [{"do": "upload", "ref": ref_of(view, "Document"),
                         "paths": [str(big)]}]}, timeout=150)

    async def copying() -> set[str] | None:
        return (staged(host) - before) or None

    async with anyio.create_task_group() as tg:
        tg.start_soon(upload)
        new = await eventually(copying, until=present,
                               timeout=60, what="the upload directory on h1",
                               interval=0.02)
        await call_ok(env.client, "close_tab", {"tab": tab})
        tabs.remove(tab)
    assert "result" in outcome  # the upload call came back (an error or not), no hang
    await eventually(lambda: _all_gone(host, new), timeout=30,
                     what=f"{new} removed after close_tab during the upload")


async def _all_gone(host: RemoteHost, directories: set[str]) -> bool:
    return not directories & staged(host)


async def upload_one(env: DevtoolsEnv, tmp_path: Path, name: str) -> tuple[int, str]:
    """A new tab with ``name`` uploaded over SSH: (tab, the host directory it went to)."""
    host = env.site("h1").host
    before = staged(host)
    path, _ = make_file(tmp_path, name, 100)
    tab, view = await open_upload_page(env, [])
    result = await act(env.client, tab, {"do": "upload", "ref": ref_of(view, "Document"),
                                         "paths": [str(path)]})
    assert result["steps"] == [{"do": "upload", "ok": True}], result["steps"]
    (directory,) = staged(host) - before
    return tab, directory


async def test_uploaded_files_go_with_a_browser_restart_and_the_gateway_exit(
    topology: Topology, tmp_path: Path
) -> None:
    """Its own gateway (it exits here) and a restarted Chromium on h1."""
    host = topology.host("h1")
    (tmp_path / "gw").mkdir()
    async with devtools_gateway(topology, tmp_path / "gw", hosts=("h1",)) as env:
        _, first = await upload_one(env, tmp_path, "before-restart.txt")
        host.restart_chrome()
        await eventually(lambda: _all_gone(host, {first}), timeout=60,
                         what=f"{first} removed after the browser restarted")
        await wait_for_targets(env.client, {"h1": "up"})
        _, second = await upload_one(env, tmp_path, "before-exit.txt")
    assert second not in staged(host), "the upload directory outlived the gateway"


async def test_upload_on_a_local_target_reads_the_file_in_place(tmp_path: Path) -> None:
    path, data = make_file(tmp_path / "files", "local.txt", 1234)
    page = "data:text/html;base64," + base64.b64encode(PAGE.read_bytes()).decode()
    before = set(Path("/tmp").glob("csgw-upload-*"))
    async with open_gateway(local_default_env(tmp_path / "home")) as gw:
        await wait_for_targets(gw, {"local": "up"})
        opened = await call_ok(gw, "browse", {"url": page, "target": "local"})
        result = await act(gw, opened["tab"], {"do": "upload",
                                               "ref": ref_of(opened["view"], "Document"),
                                               "paths": [str(path)]})
        assert result["steps"] == [{"do": "upload", "ok": True}], result["steps"]
        expected = [("local.txt", 1234, data[:16].hex())]
        assert arrived(await js(gw, opened["tab"], "await window.csgwRead()"), "doc") == [
            ("input", expected), ("change", expected)]
        assert set(Path("/tmp").glob("csgw-upload-*")) == before, "a local upload copied"
