"""Test pages served *inside* a remote host, and a gateway set up to look at them.

``serve_pages(host)`` starts ``tests/e2e/page_server.py`` in the host's network
namespace (``ip netns exec``), so the remote Chromium loads its pages from its own
loopback — the gateway and the test process cannot reach them except through the
browser. The server's process is ours: it is ended by its PID when the context
exits (stdin closed first, then SIGTERM, then SIGKILL).

``devtools_gateway(...)`` runs one gateway over stdio with a targets file naming the
hosts (one target per host, named like the host), the call log on, and its stderr in
a file, and yields everything a DevTools test needs.

The rest are small readers used by the ``test_devtools_*`` modules: image headers
(PNG / JPEG / WEBP size without an imaging library), a recursive walk over tool
results (field names beyond the issue's table are the implementation's choice, so
tests look for values, not paths), and raw calls that keep the whole MCP result;
and, for the ``test_browse_*`` modules, readers of page views (``view_refs``,
``ref_of``: refs are always read from the view text, never assumed) and thin calls
of ``browse`` / ``browse_view`` / ``browse_act`` / ``evaluate``.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import secrets
import select
import struct
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.types import CallToolResult, ImageContent

from tests.e2e.helpers import (
    DEFAULT_CALL_TIMEOUT,
    ERROR_BOUND,
    STRUCTURED,
    call_ok,
    open_gateway,
    text_of,
    wait_for_targets,
    write_targets,
)
from tests.topology import RemoteHost, Topology
from tests.view_changes import apply_changes

__all__ = [
    "SERVER",
    "DevtoolsEnv",
    "PageSite",
    "ViewRef",
    "act",
    "blocked_error",
    "browse",
    "close_tabs",
    "devtools_gateway",
    "dump",
    "file_mode",
    "header_values",
    "image_of",
    "image_size",
    "ints_in",
    "js",
    "keys_in",
    "open_page",
    "page_fixtures",
    "raw_call",
    "ref_of",
    "serve_directory",
    "serve_pages",
    "settle",
    "strings_in",
    "view_refs",
]

SERVER = Path(__file__).with_name("page_server.py")
_START_TIMEOUT = 15.0


# ------------------------------------------------------------------------ page server


@dataclass
class PageSite:
    """One running page server: its ports inside the host, and the secrets it uses."""

    host: RemoteHost
    ports: dict[str, int]
    auth_secret: str
    cookie_secret: str
    pid: int

    def url(self, path: str, origin: str = "a") -> str:
        """``http://127.0.0.1:<port><path>`` as the remote browser sees it."""
        return f"http://127.0.0.1:{self.ports[origin]}{path}"

    @property
    def origin(self) -> str:
        return self.url("")

    @property
    def secrets(self) -> tuple[str, str]:
        return (self.auth_secret, self.cookie_secret)


def _read_line(proc: subprocess.Popen[bytes], timeout: float) -> bytes:
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    if not ready:
        raise TimeoutError(f"page server (pid {proc.pid}) printed no ports in {timeout:g} s")
    return proc.stdout.readline()


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.stdin is not None:
        with contextlib.suppress(OSError):
            proc.stdin.close()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()


@contextlib.contextmanager
def serve_pages(host: RemoteHost, log: Path | None = None,
                like: PageSite | None = None) -> Iterator[PageSite]:
    """Run the page server inside ``host``'s network namespace for the duration; ``like``
    another host's: the same secrets, and its origin ``a`` (the same port) — the same
    site on two hosts, for state carried from one browser to another."""
    auth_secret = like.auth_secret if like else f"AUTHSECRET{secrets.token_hex(12)}"
    cookie_secret = like.cookie_secret if like else f"COOKIESECRET{secrets.token_hex(12)}"
    env = {
        **({"CSGW_PAGE_PORT_A": str(like.ports["a"])} if like else {}),
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "CSGW_PAGE_AUTH_SECRET": auth_secret,
        "CSGW_PAGE_COOKIE_SECRET": cookie_secret,
    }
    with contextlib.ExitStack() as stack:
        err = stack.enter_context(open(log, "ab")) if log is not None else subprocess.DEVNULL
        # `ip netns exec` execs the command, so proc.pid is the server's own PID.
        proc = subprocess.Popen(
            host.netns_exec(sys.executable, str(SERVER)),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
            env=env, close_fds=True, start_new_session=True, cwd="/",
        )
        try:
            line = _read_line(proc, _START_TIMEOUT)
            if not line:
                raise RuntimeError(f"page server in {host.netns} exited with {proc.wait()}")
            ports = {k: int(v) for k, v in json.loads(line).items()}
            yield PageSite(host, ports, auth_secret, cookie_secret, proc.pid)
        finally:
            stop(proc)


@contextlib.contextmanager
def serve_directory(host: RemoteHost, directory: Path) -> Iterator[str]:
    """Serve ``directory`` as static files inside ``host`` (Python's ``http.server`` on
    the host's loopback, as a built documentation site is previewed); its origin."""
    proc = subprocess.Popen(
        host.netns_exec(sys.executable, "-u", "-m", "http.server", "--bind", "127.0.0.1",
                        "--directory", str(directory), "0"),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        close_fds=True, start_new_session=True, cwd="/")
    try:
        line = _read_line(proc, _START_TIMEOUT).decode()
        found = re.search(r"port (\d+)", line)
        if found is None:
            raise RuntimeError(f"http.server in {host.netns} said {line!r}")
        yield f"http://127.0.0.1:{found.group(1)}"
    finally:
        proc.terminate()
        stop(proc)


# ----------------------------------------------------------------------------- gateway


@dataclass
class DevtoolsEnv:
    """A gateway with one target per host (named like the host) and its page sites."""

    client: Client
    sites: dict[str, PageSite]
    call_log: Path
    stderr_log: Path
    tmp: Path
    targets_file: Path
    extra: dict[str, Any] = field(default_factory=dict)

    def site(self, target: str) -> PageSite:
        return self.sites[target]

    def all_secrets(self) -> list[str]:
        return [s for site in self.sites.values() for s in site.secrets]


@asynccontextmanager
async def devtools_gateway(
    topology: Topology,
    tmp: Path,
    hosts: Sequence[str] = ("h1", "h2"),
    target_options: Mapping[str, object] | None = None,
    gateway_options: Mapping[str, object] | None = None,
) -> AsyncIterator[DevtoolsEnv]:
    """Page servers on ``hosts``, and a gateway whose targets are those hosts' browsers."""
    call_log = tmp / "calls.jsonl"
    stderr_log = tmp / "gateway.stderr"
    targets_file = write_targets(
        tmp / "targets.toml",
        {name: {"ssh": name, **(target_options or {})} for name in hosts},
        gateway_options,
    )
    env = topology.client_env() | {"MCP_DEBUG_LOG": str(call_log)}
    with contextlib.ExitStack() as stack:
        sites = {name: stack.enter_context(serve_pages(topology.host(name),
                                                       tmp / f"pages-{name}.log"))
                 for name in hosts}
        errlog = stack.enter_context(open(stderr_log, "w"))
        async with open_gateway(env, ["--config", str(targets_file), "--tools", "all"],
                                errlog=errlog) as client:
            await wait_for_targets(client, dict.fromkeys(hosts, "up"))
            yield DevtoolsEnv(client, sites, call_log, stderr_log, tmp, targets_file)


# -------------------------------------------------------------------------- page helpers


def page_fixtures(label: str, hosts: tuple[str, ...] = ("h1",)) -> tuple[Any, Any]:
    """The two fixtures a page test module starts with, for ``env, tabs =
    page_fixtures(...)`` at its top: ``env``, one gateway (and page servers) on
    ``hosts`` for the module, and ``tabs``, a list a test appends the tabs it opened to,
    closed after it whatever happened."""

    @pytest.fixture(scope="module")
    async def env(
        topology: Topology, tmp_path_factory: pytest.TempPathFactory
    ) -> AsyncIterator[DevtoolsEnv]:
        async with devtools_gateway(topology, tmp_path_factory.mktemp(label),
                                    hosts=hosts) as e:
            yield e

    @pytest.fixture
    async def tabs(env: DevtoolsEnv) -> AsyncIterator[list[int]]:
        opened: list[int] = []
        yield opened
        await close_tabs(env.client, opened)

    return env, tabs


async def open_page(client: Client, site: PageSite, path: str, target: str,
                    tab: int | None = None) -> int:
    """Navigate (a new tab unless ``tab``) to ``path`` on ``site`` and wait for load."""
    args: dict[str, Any] = {"url": site.url(path), "wait": "load"}
    args |= {"tab": tab} if tab is not None else {"target": target}
    nav = await call_ok(client, "navigate", args)
    return int(nav["tab"])


async def settle(client: Client, tab: int) -> Any:
    """Wait for the page's ``window.csgwDone`` promise (its scripted requests) and return it."""
    result = await call_ok(client, "evaluate", {"tab": tab, "expression": "await window.csgwDone"})
    return result["value"]


async def raw_call(client: Client, tool: str, args: Mapping[str, Any],
                   timeout: float = DEFAULT_CALL_TIMEOUT) -> tuple[CallToolResult, str]:
    """The whole MCP result, and all of it as JSON text (for "never appears" checks)."""
    with anyio.fail_after(timeout):
        result = await client.call_tool(tool, dict(args), meta=STRUCTURED)
    return result, result.model_dump_json()


async def blocked_error(client: Client, tab: int, expression: str = "1") -> str:
    """Call ``evaluate`` until it fails (a dialog opened), and return the error text.

    Each call is bounded by ERROR_BOUND: an evaluate stuck behind a dialog must come
    back as an error, not hang. Calls made before the dialog opens simply succeed.
    """
    with anyio.fail_after(ERROR_BOUND * 2):
        while True:
            result, _ = await raw_call(client, "evaluate", {"tab": tab, "expression": expression},
                                       timeout=ERROR_BOUND)
            if result.is_error:
                return text_of(result)
            await anyio.sleep(0.05)


# --------------------------------------------------------------------------- page views


@dataclass(frozen=True)
class ViewRef:
    """One ``role#N "name"`` (or link ``#N "name"->target``) of a page view."""

    role: str           # "" for a link: the arrow says what it is
    number: int
    name: str           # decoded; ``[unnamed]`` / ``[name=q]`` labels as printed
    link: str | None    # a link's destination as printed after ``->``


_VIEW_REF = re.compile(r'(?:\b([a-z]+))?#(\d+) ("(?:[^"\\]|\\.)*"|\[[^\]\n]*\])(?:->(\S+))?')


def view_refs(view: str) -> list[ViewRef]:
    """Every ref of a view in the order printed (select options in braces are not read)."""
    found = []
    for m in _VIEW_REF.finditer(view):
        raw = m.group(3)
        name = json.loads(raw) if raw.startswith('"') else raw
        found.append(ViewRef(m.group(1) or "", int(m.group(2)), name, m.group(4)))
    return found


def ref_of(view: str, name: str, role: str | None = None) -> int:
    """The number of the one ref called ``name`` (and of ``role``, "" for links)."""
    numbers = [r.number for r in view_refs(view)
               if r.name == name and (role is None or r.role == role)]
    assert len(numbers) == 1, (
        f"expected one ref named {name!r} (role {role!r}) in the view, found {numbers}:\n{view}")
    return numbers[0]


async def browse(client: Client, url: str, *, target: str | None = None,
                 tab: int | None = None, **extra: Any) -> dict[str, Any]:
    """``browse`` (a new tab on ``target`` unless ``tab``); its structured result."""
    args: dict[str, Any] = {"url": url, **extra}
    args |= {"tab": tab} if tab is not None else {"target": target} if target else {}
    return await call_ok(client, "browse", args)


async def open_view(env: DevtoolsEnv, tabs: list[int], path: str) -> tuple[int, str]:
    """A new tab on h1's page ``path``, appended to ``tabs``: (tab, its view)."""
    result = await browse(env.client, env.site("h1").url(path), target="h1")
    tabs.append(result["tab"])
    return result["tab"], result["view"]


class Model:
    """What a model holds of one tab: the last whole view, kept as it reads the answers
    (a change set applied to it as ``tests/view_changes.py`` reads one)."""

    def __init__(self, env: DevtoolsEnv, tab: int, view: str) -> None:
        self.env, self.tab, self.view = env, tab, view

    async def act(self, *actions: dict[str, Any]) -> dict[str, Any]:
        """One ``browse_act``; the view it leaves the model with must be a fresh one."""
        result = await call_ok(self.env.client, "browse_act",
                               {"tab": self.tab, "actions": list(actions)})
        assert all(step["ok"] for step in result["steps"]), result["steps"]
        held = apply_changes(self.view, result["view"]) if "changes" in result \
            else result["view"]
        fresh = await call_ok(self.env.client, "browse_view", {"tab": self.tab})
        assert held == fresh["view"], (result.get("changes"), result["view"])
        self.view = held
        return result


async def act(client: Client, tab: int, *actions: Mapping[str, Any]) -> dict[str, Any]:
    """``browse_act`` with these steps; its structured result, steps and the whole view
    (``whole_view``: a change set's ``view`` is in ``changes_view``)."""
    result = await call_ok(client, "browse_act", {"tab": tab, "actions": list(actions)})
    assert len(result["steps"]) <= len(actions), result["steps"]
    return await whole_view(client, result)


async def whole_view(client: Client, result: dict[str, Any]) -> dict[str, Any]:
    """An act's result with the whole page as its ``view``: when it answered with what
    changed, its hunks move to ``changes_view`` and ``view`` is a fresh ``browse_view``'s
    (refs of a document stay, so the refs read from it are the act's). The check that
    the last view plus the hunks is that fresh view is ``test_browse_changes``'s."""
    if "changes" not in result:
        return result
    whole = await call_ok(client, "browse_view", {"tab": result["tab"]})
    return {**result, "changes_view": result["view"], "view": whole["view"],
            "refs": whole["refs"]}


async def act_failing(client: Client, tab: int, *actions: Mapping[str, Any]) -> dict[str, Any]:
    """``browse_act`` whose batch stops at a step that fails: a tool error that still
    carries where the page stands. Its one text block — all a client hands the model for
    an error — opens with the step that failed and holds the steps line and the fresh
    view; its structured result (asked for, as ``call --json`` does) is returned."""
    result, _ = await raw_call(client, "browse_act", {"tab": tab, "actions": list(actions)})
    text = text_of(result)
    assert result.is_error, f"a failed step must make the call a tool error: {text}"
    assert len(result.content) == 1, result.content
    done = result.structured_content
    assert isinstance(done, dict), f"no structured result with the error: {result!r}"
    failed = len(done["steps"])
    assert 1 <= failed <= len(actions) and done["steps"][-1]["ok"] is False, done["steps"]
    assert text.startswith(f"step {failed} of {len(actions)} ({done['steps'][-1]['do']}) "
                           "failed: "), text
    assert "\nsteps: " in text and " failed: " in text.split("\nsteps: ", 1)[1], text
    assert text.endswith(done["view"]), "the fresh view (or what changed) is in the text"
    return await whole_view(client, done)


async def js(client: Client, tab: int, expression: str) -> Any:
    """The value of ``expression`` evaluated in the tab's page (its main frame)."""
    return (await call_ok(client, "evaluate", {"tab": tab, "expression": expression}))["value"]


async def close_tabs(client: Client, tabs: Sequence[int]) -> None:
    """Close these tabs, tolerating ones already gone (a test may have closed them)."""
    for tab in tabs:
        await raw_call(client, "close_tab", {"tab": tab}, timeout=ERROR_BOUND)


# ---------------------------------------------------------------------- result readers


def _walk(value: Any) -> Iterator[tuple[str | None, Any]]:
    """Every (key, value) in a JSON-like value, depth first; list items have key None."""
    stack: list[tuple[str | None, Any]] = [(None, value)]
    while stack:
        key, item = stack.pop()
        yield key, item
        if isinstance(item, dict):
            stack.extend(item.items())
        elif isinstance(item, list):
            stack.extend((None, v) for v in item)


def strings_in(value: Any) -> list[str]:
    return [v for _, v in _walk(value) if isinstance(v, str)]


def ints_in(value: Any) -> list[int]:
    return [v for _, v in _walk(value) if isinstance(v, int) and not isinstance(v, bool)]


def keys_in(value: Any) -> list[tuple[str, Any]]:
    """Every (key, value) pair of every dict inside ``value``."""
    return [(k, v) for k, v in _walk(value) if k is not None]


def dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def header_values(value: Any, name: str) -> list[Any]:
    """Values of header ``name`` (any case) anywhere in ``value``: ``{"Name": v}`` maps
    and ``{"name": "Name", "value": v}`` entries both count."""
    wanted = name.lower()
    found: list[Any] = []
    for _, item in _walk(value):
        if not isinstance(item, dict):
            continue
        for key, v in item.items():
            if isinstance(key, str) and key.lower() == wanted:
                found.append(v)
        if str(item.get("name", "")).lower() == wanted and "value" in item:
            found.append(item["value"])
    return found


# ------------------------------------------------------------------------------- images


def image_size(data: bytes) -> tuple[str, int, int]:
    """(format, width, height) read from the header of a PNG, JPEG or WEBP image."""
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        assert data[12:16] == b"IHDR", "PNG without IHDR first"
        width, height = struct.unpack(">II", data[16:24])
        return "png", width, height
    if data[:3] == b"\xff\xd8\xff":
        return ("jpeg", *_jpeg_size(data))
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return ("webp", *_webp_size(data))
    raise AssertionError(f"not a PNG, JPEG or WEBP image: {data[:16]!r}")


def _jpeg_size(data: bytes) -> tuple[int, int]:
    i = 2
    while i + 4 <= len(data):
        if data[i] != 0xFF:
            raise AssertionError(f"bad JPEG marker at {i}")
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            i += 2
            continue
        length = struct.unpack(">H", data[i + 2:i + 4])[0]
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height, width = struct.unpack(">HH", data[i + 5:i + 9])
            return width, height
        i += 2 + length
    raise AssertionError("JPEG without a SOF marker")


def _webp_size(data: bytes) -> tuple[int, int]:
    kind = data[12:16]
    if kind == b"VP8 ":
        assert data[23:26] == b"\x9d\x01\x2a", "VP8 frame without start code"
        width, height = struct.unpack("<HH", data[26:30])
        return width & 0x3FFF, height & 0x3FFF
    if kind == b"VP8L":
        assert data[20] == 0x2F, "VP8L without signature"
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if kind == b"VP8X":
        width = int.from_bytes(data[24:27], "little") + 1
        height = int.from_bytes(data[27:30], "little") + 1
        return width, height
    raise AssertionError(f"unknown WEBP chunk {kind!r}")


def image_of(result: CallToolResult) -> tuple[bytes, str]:
    """The one image block of a tool result: (decoded bytes, mime type)."""
    images = [block for block in result.content if isinstance(block, ImageContent)]
    assert len(images) == 1, f"expected one image block, got {result.content!r}"[:500]
    return base64.b64decode(images[0].data, validate=True), images[0].mime_type


def file_mode(path: Path) -> int:
    return os.stat(path, follow_symlinks=False).st_mode & 0o777
