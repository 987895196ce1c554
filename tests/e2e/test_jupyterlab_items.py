"""A real JupyterLab's file browser, driven through its items' refs.

JupyterLab (installed from PyPI with the dev group) builds its file list from ``<li>``s
named by a ``title`` ("Name: draft.txt Size: 6 B …") that its scripts make clickable,
double-clickable and draggable — no role of a control, no link. Before item refs the view
gave them none, and an agent fell back on arrow keys and scripts. Here the server runs on
the test host's loopback, as on a dev VM, over a few seeded files; through the real MCP
client the file browser is viewed, an item clicked (selected), a file dragged onto a
folder (moved: read back from JupyterLab's own REST API inside the host) and a file
double-clicked (opened in a tab of its own).

JupyterLab gives the one item that has the keyboard focus a ``role=button`` name (a
roving tabindex), so that item's ref is its name's button; every other file is an item.
"""

from __future__ import annotations

import json
import re
import secrets
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.e2e.helpers import call_ok, eventually, present
from tests.e2e.pages import (
    DevtoolsEnv,
    ViewRef,
    act,
    browse,
    js,
    page_fixtures,
    stop,
    view_refs,
    whole_view,
)
from tests.topology import RemoteHost, Topology

pytestmark = pytest.mark.anyio

env, tabs = page_fixtures("jupyterlab")

FILES = {"draft.txt": "draft\n", "notes.md": "# Notes\n", "report.csv": "a,b\n1,2\n",
         "old.log": "started\n"}
"""Seeded beside the folder ``FOLDER``; ``old.log`` is the one the drag test moves."""
FOLDER = "data"
START_S = 60.0  # a cold JupyterLab server takes a few seconds on a busy machine
SETTINGS = {
    # No request leaves the host: no news feed, no update check, no extension index.
    "LabApp": {"news_url": None, "check_for_updates_class": "jupyterlab.NeverCheckForUpdate",
               "extension_manager": "readonly"},
}


@dataclass(frozen=True)
class Lab:
    """A JupyterLab server inside a test host: where the browser finds it, and its API."""

    host: RemoteHost
    port: int
    token: str
    root: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/lab?token={self.token}"

    def contents(self, path: str) -> dict[str, Any] | None:
        """``GET /api/contents/<path>`` from inside the host; None when it is not there."""

        def get() -> dict[str, Any] | None:
            request = urllib.request.Request(
                f"http://127.0.0.1:{self.port}/api/contents/{path}?content=1",
                headers={"Authorization": f"token {self.token}"})
            try:
                with urllib.request.urlopen(request, timeout=5) as answer:
                    found: dict[str, Any] = json.load(answer)
                    return found
            except urllib.error.HTTPError as error:
                if error.code == 404:
                    return None
                raise

        return self.host.run_in_netns(get)


@pytest.fixture(scope="module")
async def lab(topology: Topology, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Lab]:
    """JupyterLab on h1's loopback (port picked by the OS), serving seeded files."""
    base = tmp_path_factory.mktemp("jupyterlab")
    root, home = base / "root", base / "home"
    (root / FOLDER).mkdir(parents=True)
    for name, text in FILES.items():
        (root / name).write_text(text)
    (home / "config").mkdir(parents=True)
    (home / "config" / "jupyter_lab_config.json").write_text(json.dumps(SETTINGS))
    runtime = home / "runtime"
    token = secrets.token_hex(16)
    host = topology.host("h1")
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": str(home),
           "JUPYTER_CONFIG_DIR": str(home / "config"), "JUPYTER_DATA_DIR": str(home / "data"),
           "JUPYTER_RUNTIME_DIR": str(runtime), "JUPYTER_PLATFORM_DIRS": "1"}
    with open(base / "jupyterlab.log", "wb") as log:
        # `ip netns exec` execs the command, so proc.pid is the server's own PID.
        proc = subprocess.Popen(
            host.netns_exec(sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root",
                            "--ServerApp.ip=127.0.0.1", "--ServerApp.port=0",
                            "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
                            f"--ServerApp.root_dir={root}"),
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env, close_fds=True,
            start_new_session=True, cwd="/")
    try:
        async def answering() -> Lab | None:
            if proc.poll() is not None:
                raise RuntimeError(f"jupyter lab exited with {proc.returncode}: see {log.name}")
            info = runtime / f"jpserver-{proc.pid}.json"  # written once the port is bound
            if not info.is_file():
                return None
            started = Lab(host, int(json.loads(info.read_text())["port"]), token, root)
            try:
                await anyio.to_thread.run_sync(started.contents, "")
            except OSError:
                return None
            return started

        yield await eventually(answering, until=present, timeout=START_S,
                               what="JupyterLab answering on h1's loopback")
    finally:
        proc.terminate()
        stop(proc)


def file_ref(view: str, name: str) -> ViewRef:
    """The one ref of file ``name`` in the file browser: its item, or — for the item with
    the keyboard focus — the button of its name."""
    found = [r for r in view_refs(view)
             if (r.role == "item" and r.name.startswith(f"Name: {name} "))
             or (r.role == "button" and r.name == name)]
    assert len(found) == 1, f"expected one ref of {name!r}, found {found}:\n{view}"
    return found[0]


async def _open_file_browser(env: DevtoolsEnv, tabs: list[int], lab: Lab) -> tuple[int, str]:
    opened = await browse(env.client, lab.url, target="h1")
    tabs.append(opened["tab"])
    # The list is drawn by scripts after the load event: the last file is the sign.
    shown = await act(env.client, opened["tab"], {"do": "wait_for", "text": "report.csv"})
    return opened["tab"], (await whole_view(env.client, shown))["view"]


async def _selected(env: DevtoolsEnv, tab: int) -> Any:
    return await js(env.client, tab, "[...document.querySelectorAll("
                    "'.jp-DirListing-item.jp-mod-selected .jp-DirListing-itemText')]"
                    ".map(e => e.textContent)")


async def test_the_file_list_has_a_ref_for_every_file(
        env: DevtoolsEnv, tabs: list[int], lab: Lab) -> None:
    """Every entry JupyterLab's API lists at the root has one ref in the view, and all but
    the focused one are items labelled as JupyterLab labels them."""
    _, view = await _open_file_browser(env, tabs, lab)
    listed = await anyio.to_thread.run_sync(lab.contents, "")
    assert listed is not None
    names = {entry["name"] for entry in listed["content"]}
    assert {FOLDER, "draft.txt", "report.csv"} <= names
    refs = {name: file_ref(view, name) for name in names}
    assert [r.role for r in refs.values()].count("button") == 1, refs  # the keyboard focus
    assert refs["draft.txt"].name.startswith("Name: draft.txt Size: 6 B ")
    assert all(" Modified: " in r.name for r in refs.values() if r.role == "item"), refs


async def test_clicking_an_item_selects_it(env: DevtoolsEnv, tabs: list[int], lab: Lab) -> None:
    tab, view = await _open_file_browser(env, tabs, lab)
    draft = file_ref(view, "draft.txt")
    assert draft.role == "item", draft  # the first entry (the folder) has the focus
    clicked = await whole_view(env.client, await act(env.client, tab,
                                                     {"do": "click", "ref": draft.number}))
    assert clicked["steps"] == [{"do": "click", "ok": True}], clicked["steps"]
    assert await _selected(env, tab) == ["draft.txt"]
    # The focus moved with the click: draft.txt's name is the button now, the folder an item.
    assert file_ref(clicked["view"], "draft.txt").role == "button"
    assert file_ref(clicked["view"], FOLDER).role == "item"


async def test_dragging_a_file_onto_a_folder_moves_it(
        env: DevtoolsEnv, tabs: list[int], lab: Lab) -> None:
    tab, view = await _open_file_browser(env, tabs, lab)
    log, folder = file_ref(view, "old.log"), file_ref(view, FOLDER)
    assert log.role == "item", log
    dragged = await act(env.client, tab, {"do": "drag", "ref": log.number, "to": folder.number})
    assert dragged["steps"] == [{"do": "drag", "ok": True}], dragged["steps"]

    async def moved() -> bool:
        inside = await anyio.to_thread.run_sync(lab.contents, FOLDER)
        return inside is not None and "old.log" in {c["name"] for c in inside["content"]}

    await eventually(moved, timeout=10, what="old.log listed in data/ by /api/contents")
    assert await anyio.to_thread.run_sync(lab.contents, "old.log") is None
    assert (lab.root / FOLDER / "old.log").read_text() == FILES["old.log"]


async def test_double_clicking_a_file_opens_it(
        env: DevtoolsEnv, tabs: list[int], lab: Lab) -> None:
    tab, view = await _open_file_browser(env, tabs, lab)
    report = file_ref(view, "report.csv")
    assert report.role == "item", report
    opened = await act(env.client, tab, {"do": "click", "ref": report.number, "count": 2})
    assert opened["steps"] == [{"do": "click", "ok": True}], opened["steps"]

    async def document_tab() -> str | None:
        shown = (await call_ok(env.client, "browse_view", {"tab": tab}))["view"]
        return shown if any(r.role == "tab" and r.name == "report.csv"
                            for r in view_refs(shown)) else None

    shown = await eventually(document_tab, until=present, timeout=15,
                             what="a main-area tab for report.csv")
    assert re.search(r'^ *tab#\d+ "report\.csv" \(selected\)$', shown, re.MULTILINE), shown
