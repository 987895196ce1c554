"""Drive the gateway exactly as an agent does: an MCP client over stdio.

Plain helpers, not fixtures, so each test decides the gateway's environment
(``Topology.client_env()``) and command-line arguments::

    async with open_gateway(topology.client_env(), ["--config", str(path)]) as client:
        result = await call_ok(client, "list_targets", {})

Besides calling tools, this module holds what the e2e tests need to look at the
gateway from the outside: its process (found by a marker in its environment), the
sockets it listens on, targets files, and the pages a remote browser really has.
"""

from __future__ import annotations

import http.client
import ipaddress
import json
import os
import re
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TextIO, TypeVar, overload

import anyio
from anyio.abc import Process
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import CallToolResult, TextContent

from gateway.daemon.runtime_dir import pid_alive
from gateway.mcp import STRUCTURED_META
from tests.topology import RemoteHost

__all__ = [
    "DEFAULT_CALL_TIMEOUT",
    "ERROR_BOUND",
    "MARKER_ENV",
    "STRUCTURED",
    "RawJson",
    "RawRpc",
    "accepts",
    "call_err",
    "call_ok",
    "close_remote_pages",
    "data_url",
    "eventually",
    "gateway_pid",
    "listening_tcp",
    "listening_unix",
    "local_default_env",
    "marked_env",
    "marked_pids",
    "open_gateway",
    "open_http",
    "open_raw_stdio",
    "open_stdio",
    "pages_agree",
    "present",
    "proc_status_kb",
    "remote_active_port",
    "remote_pages",
    "stop_daemons",
    "targets_by_name",
    "terminated",
    "text_of",
    "wait_for_targets",
    "write_targets",
]

DEFAULT_CALL_TIMEOUT = 60.0
"""Upper bound on one tool call in tests: a hang fails the test instead of stalling CI."""

ERROR_BOUND = 20.0
"""Upper bound for a call that must fail: a refused input has to come back, not hang."""

MARKER_ENV = "CSGW_E2E_GATEWAY_ID"
"""Environment variable carrying a unique id, so a test can find its gateway's process."""

_T = TypeVar("_T")


@asynccontextmanager
async def open_stdio(
    command: str,
    args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    errlog: TextIO | None = None,
) -> AsyncIterator[Client]:
    """An ``mcp.Client`` connected over stdio to ``command *args``.

    Note: the SDK merges ``env`` over a small inherited set (HOME, LOGNAME, PATH, SHELL,
    TERM, USER); the keys given here win. ``errlog`` receives the server's stderr.
    """
    params = StdioServerParameters(
        command=command, args=list(args), env=dict(env) if env is not None else None, cwd=cwd
    )
    server = stdio_client(params, errlog=errlog) if errlog is not None else params
    async with Client(server) as client:
        yield client


@asynccontextmanager
async def open_gateway(
    env: Mapping[str, str],
    args: Sequence[str] = (),
    cwd: str | Path | None = None,
    errlog: TextIO | None = None,
) -> AsyncIterator[Client]:
    """An ``mcp.Client`` talking to ``python -m gateway serve *args`` over stdio."""
    argv = ["-m", "gateway", "serve", *args]
    async with open_stdio(sys.executable, argv, env, cwd, errlog) as client:
        yield client


class RawJson:
    """JSON text put verbatim into a ``RawRpc`` request, for values ``json.dumps``
    cannot write (it recurses, so 10,000 levels of nesting are out of its reach)."""

    def __init__(self, text: str) -> None:
        self.text = text


class RawRpc:
    """JSON-RPC lines straight to a gateway's stdin and back: what a broken or hostile
    MCP client sends, below what ``mcp.Client`` lets through."""

    def __init__(self, process: Process) -> None:
        self._process = process
        self._ids = iter(range(1, 1_000_000))
        self._buffer = b""

    async def send_line(self, line: str) -> None:
        assert self._process.stdin is not None
        await self._process.stdin.send(line.encode() + b"\n")

    async def _next_message(self) -> dict[str, Any]:
        assert self._process.stdout is not None
        while b"\n" not in self._buffer:
            self._buffer += await self._process.stdout.receive()
        line, _, self._buffer = self._buffer.partition(b"\n")
        message: dict[str, Any] = json.loads(line)
        return message

    async def request(self, method: str, params: Mapping[str, Any], *,
                      timeout: float = DEFAULT_CALL_TIMEOUT) -> dict[str, Any]:
        """Send a request and return the response carrying its id (bounded)."""
        request_id = next(self._ids)
        raw: list[str] = []

        def splice(value: object) -> str:
            if not isinstance(value, RawJson):
                raise TypeError(f"cannot send {type(value).__name__}")
            raw.append(value.text)
            return f"\x00raw{len(raw) - 1}\x00"

        line = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method,
                           "params": params}, default=splice)
        for index, text in enumerate(raw):
            line = line.replace(json.dumps(f"\x00raw{index}\x00"), text)
        await self.send_line(line)
        with anyio.fail_after(timeout):
            while True:
                message = await self._next_message()
                if message.get("id") == request_id:
                    return message


@asynccontextmanager
async def open_raw_stdio(env: Mapping[str, str], args: Sequence[str] = ()) -> AsyncIterator[RawRpc]:
    """``python -m gateway serve *args`` on pipes, initialized, as a ``RawRpc``."""
    argv = [sys.executable, "-m", "gateway", "serve", *args]
    async with await anyio.open_process(argv, env=dict(env), stderr=None) as process:
        rpc = RawRpc(process)
        try:
            init = await rpc.request("initialize", {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "raw-rpc", "version": "0"}}, timeout=ERROR_BOUND)
            assert "result" in init, init
            await rpc.send_line(json.dumps({"jsonrpc": "2.0",
                                            "method": "notifications/initialized"}))
            yield rpc
        finally:
            assert process.stdin is not None
            await process.stdin.aclose()  # the gateway exits when its stdin closes
            with anyio.move_on_after(10):
                await process.wait()
            if process.returncode is None:
                process.kill()


def text_of(result: CallToolResult) -> str:
    """The text blocks of a tool result, joined by newlines."""
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))


STRUCTURED: Any = {STRUCTURED_META: True}
"""Request ``_meta`` asking for a text result's structured form too, as ``call --json``
does: tests read fields; what a model is shown is ``tests/e2e/test_model_view.py``'s."""


async def _call(
    client: Client, tool: str, args: Mapping[str, Any] | None, timeout: float
) -> CallToolResult:
    with anyio.fail_after(timeout):
        return await client.call_tool(tool, dict(args or {}), meta=STRUCTURED)


async def call_ok(
    client: Client,
    tool: str,
    args: Mapping[str, Any] | None = None,
    *,
    timeout: float = DEFAULT_CALL_TIMEOUT,
) -> dict[str, Any]:
    """Call ``tool``; assert it succeeded; return its structured content."""
    result = await _call(client, tool, args, timeout)
    assert not result.is_error, f"{tool}({args!r}) failed: {text_of(result)}"
    content = result.structured_content
    assert isinstance(content, dict), f"{tool} returned no structured object: {content!r}"
    return content


async def call_err(
    client: Client,
    tool: str,
    args: Mapping[str, Any] | None = None,
    *,
    timeout: float = DEFAULT_CALL_TIMEOUT,
) -> str:
    """Call ``tool``; assert it failed as a tool error; return the error text."""
    result = await _call(client, tool, args, timeout)
    assert result.is_error, (
        f"{tool}({args!r}) unexpectedly succeeded: {result.structured_content!r}"
    )
    text = text_of(result)
    assert text, f"{tool} failed without an error message"
    return text


# ------------------------------------------------------------------------ waiting


class Present:
    """``until=present``: for a probe that returns None until what it looks for is there,
    then the thing itself (which may be empty or 0); typed so the result is not None."""

    def __call__(self, value: object) -> bool:
        return value is not None


present = Present()


@overload
async def eventually(probe: Callable[[], Awaitable[bool]], *, timeout: float, what: str,
                     interval: float = 0.2) -> None: ...


@overload
async def eventually(probe: Callable[[], Awaitable[_T | None]], *,
                     until: Present,
                     timeout: float, what: str, interval: float = 0.2) -> _T: ...


@overload
async def eventually(probe: Callable[[], Awaitable[_T]], *, until: Callable[[_T], bool],
                     timeout: float, what: str, interval: float = 0.2) -> _T: ...


async def eventually(
    probe: Callable[[], Awaitable[Any]],
    *,
    until: Callable[[Any], bool] | None = None,
    timeout: float,
    what: str,
    interval: float = 0.2,
) -> Any:
    """Call ``probe`` until the condition holds (bounded): ``probe`` itself is the
    condition and returns True or False, or ``until(value)`` decides on the value it
    returns, which is then handed back.

    A condition is a bool, never a value taken as one: an empty list, ``{}`` or ``0``
    that a probe returns is not "done", and a condition that returns anything but
    True or False fails the test at once, naming ``what``. On timeout the assertion
    names ``what`` and the last value seen, so a failure says what the test waited for.
    """
    last: Any = None
    with anyio.move_on_after(timeout):
        while True:
            last = await probe()
            held = last if until is None else until(last)
            if held is True:
                return None if until is None else last
            if held is not False:
                raise TypeError(f"the condition for {what} gave {held!r}, not True or False")
            await anyio.sleep(interval)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}; last: {last!r}")


async def targets_by_name(client: Client) -> dict[str, dict[str, Any]]:
    listing = await call_ok(client, "list_targets")
    return {t["name"]: t for t in listing["targets"]}


async def wait_for_targets(
    client: Client, expected: Mapping[str, str] | None = None, *, timeout: float = 30.0
) -> dict[str, dict[str, Any]]:
    """list_targets once nothing is ``connecting`` and each named target has its state.

    ``list_targets`` answers from memory and never waits, so right after start-up
    a target is usually still connecting; tests that look at states poll here.
    """

    async def settled() -> dict[str, dict[str, Any]] | None:
        targets = await targets_by_name(client)
        if any(t["state"] == "connecting" for t in targets.values()):
            return None
        if expected and any(
            targets.get(name, {}).get("state") != state for name, state in expected.items()
        ):
            return None
        return targets

    return await eventually(settled, until=present,
                            timeout=timeout, what=f"targets to settle as {expected}")


# -------------------------------------------------------------------- targets files


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a valid TOML basic string
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    if isinstance(value, Mapping):  # an inline table, e.g. reconnect = {call_wait_s = 0}
        return "{" + ", ".join(f"{_toml_key(k)} = {_toml_value(v)}"
                               for k, v in value.items()) + "}"
    raise TypeError(f"cannot write {value!r} to TOML")


def _toml_key(key: str) -> str:
    """A bare or dotted key (``reconnect.call_wait_s``) as is; any other
    (``"goog:chromeOptions"``) quoted."""
    return key if re.fullmatch(r"[A-Za-z0-9_.-]+", key) else json.dumps(key)


def _toml_table(header: str, table: Mapping[str, object]) -> list[str]:
    """``[header]`` with the plain keys, then a ``[header.key]`` table per mapping value."""
    lines = [f"[{header}]"]
    lines += [f"{_toml_key(key)} = {_toml_value(value)}" for key, value in table.items()
              if not isinstance(value, Mapping)]
    lines.append("")
    for key, value in table.items():
        if isinstance(value, Mapping):
            lines += _toml_table(f"{header}.{_toml_key(key)}", value)
    return lines


def write_targets(
    path: Path,
    targets: Mapping[str, Mapping[str, object]],
    gateway: Mapping[str, object] | None = None,
) -> Path:
    """Write a targets file (``[gateway]`` and ``[targets.<name>]`` tables; a mapping
    value such as ``"reconnect": {...}`` becomes a ``[targets.<name>.reconnect]`` table)."""
    lines: list[str] = []
    if gateway:
        lines += _toml_table("gateway", gateway)
    for name, table in targets.items():
        lines += _toml_table(f"targets.{name}", table)
    path.write_text("\n".join(lines))
    return path


def data_url(title: str, body: str = "") -> str:
    """A ``data:`` page with this title (no spaces needed: no web server, no escaping)."""
    return f"data:text/html,<title>{title}</title>{body}"


def local_default_env(home: Path) -> dict[str, str]:
    """Environment for a gateway with nothing configured: a fresh, empty HOME (created
    here), so it serves the embedded ``local`` target and launches a Chromium of its own."""
    home.mkdir(mode=0o700)
    return {"HOME": str(home), "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": "C.UTF-8"}


# ------------------------------------------------------------------- remote browsers


def remote_active_port(host: RemoteHost) -> tuple[int, str]:
    """(port, /devtools/browser/<id>) from the host's DevToolsActivePort, read directly."""
    port, path = host.devtools_active_port_file.read_text().split("\n")[:2]
    return int(port), path.strip()


def _devtools_http(host: RemoteHost, path: str) -> bytes:
    """GET ``path`` from the host's DevTools HTTP server, from inside its namespace."""
    port = host.chrome_port(timeout=5)

    def fetch() -> bytes:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        try:
            conn.request("GET", path)
            return conn.getresponse().read()
        finally:
            conn.close()

    return host.run_in_netns(fetch)


def remote_pages(host: RemoteHost) -> list[dict[str, Any]]:
    """The page targets the host's Chromium really has (``/json/list`` from inside)."""
    entries: list[dict[str, Any]] = json.loads(_devtools_http(host, "/json/list"))
    return [e for e in entries if e.get("type") == "page"]


def close_remote_pages(host: RemoteHost, url: str) -> int:
    """Close every page showing ``url`` in the host's browser, bypassing the gateway."""
    pages = [p for p in remote_pages(host) if p["url"] == url]
    for page in pages:
        _devtools_http(host, f"/json/close/{page['id']}")
    return len(pages)


async def pages_agree(
    client: Client, target: str, host: RemoteHost, *, timeout: float = 10.0
) -> list[dict[str, Any]]:
    """``list_tabs(target)`` once it shows exactly the pages ``host``'s browser has.

    Compared by URL, and retried: tabs are tracked from Chrome's events, which may
    trail a page opened or closed a moment ago (by this test or anyone else).
    """

    async def agree() -> list[dict[str, Any]] | None:
        listing = await call_ok(client, "list_tabs", {"target": target})
        ours = sorted(t["url"] for t in listing["tabs"])
        theirs = sorted(p["url"] for p in remote_pages(host))
        return listing["tabs"] if ours == theirs else None

    return await eventually(agree, until=present, timeout=timeout,
                            what=f"list_tabs of {target!r} to match {host.name}'s pages")


# ------------------------------------------------------------- the gateway process


def marked_env(env: Mapping[str, str]) -> tuple[dict[str, str], str]:
    """``env`` plus a unique marker, and the marker (see ``gateway_pid``)."""
    marker = uuid.uuid4().hex
    return {**env, MARKER_ENV: marker}, marker


def _environ_of(pid: int) -> dict[str, str]:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    pairs = (item.decode(errors="replace").partition("=") for item in raw.split(b"\0") if item)
    return {key: value for key, _, value in pairs}


def _cmdline_of(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def marked_pids(marker: str) -> list[int]:
    """Every live process carrying ``marker`` in its environment: the gateway and whatever
    it started (a launched Chromium and its helpers inherit the environment)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        pid = int(name)
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
        except (OSError, IndexError):
            continue
        if state not in ("Z", "X") and _environ_of(pid).get(MARKER_ENV) == marker:
            found.append(pid)
    return found


def gateway_pid(marker: str) -> int:
    """The pid of the ``python -m gateway serve`` process started with ``marker``."""
    found = [pid for pid in marked_pids(marker)
             if {"gateway", "serve"} <= set(_cmdline_of(pid))]
    assert len(found) == 1, f"expected one gateway process with marker {marker}, found {found}"
    return found[0]


def proc_status_kb(pid: int, field: str = "VmRSS") -> int:
    """A memory figure of ``pid`` from ``/proc/PID/status`` (VmRSS, VmHWM, …), in KB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"/proc/{pid}/status has no {field}")


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    fd_dir = Path(f"/proc/{pid}/fd")
    for fd in fd_dir.iterdir():
        try:
            link = os.readlink(fd)
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[len("socket:[") : -1])
    return inodes


def _decode_address(hex_address: str) -> tuple[str, int]:
    address, _, port = hex_address.partition(":")
    raw = bytes.fromhex(address)
    # /proc/net/tcp{,6} prints each 32-bit word of the address in host (little-endian) order.
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    host = str(ipaddress.IPv4Address(words) if len(words) == 4 else ipaddress.IPv6Address(words))
    return host, int(port, 16)


def listening_tcp(pid: int) -> list[tuple[str, int]]:
    """Every TCP socket in LISTEN state that ``pid`` holds, as (address, port)."""
    inodes = _socket_inodes(pid)
    found = []
    for table in ("tcp", "tcp6"):
        lines = Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]
        for line in lines:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A = TCP_LISTEN
                found.append(_decode_address(fields[1]))
    return sorted(found)


def listening_unix(pid: int) -> list[str]:
    """Paths of the listening Unix sockets ``pid`` holds (abstract ones start with @)."""
    inodes = _socket_inodes(pid)
    found = []
    for line in Path(f"/proc/{pid}/net/unix").read_text().splitlines()[1:]:
        fields = line.split()
        # Num RefCount Protocol Flags Type St Inode [Path]; flag 0x10000 = listening
        if len(fields) >= 8 and fields[6] in inodes and int(fields[3], 16) & 0x10000:
            found.append(fields[7])
    return sorted(found)


def stop_daemons(runtime_dir: Path, wait_s: float = 15.0) -> int:
    """SIGTERM every ``call`` daemon whose pid file is in ``runtime_dir``
    (``$XDG_RUNTIME_DIR/chrome-ssh-gateway``) and wait for them; returns how many.

    Tests give ``call`` a runtime directory of their own and end its daemons, so none
    outlives the test by its idle timeout."""
    import signal
    import time

    pids = []
    for pid_file in runtime_dir.glob("*.pid") if runtime_dir.is_dir() else []:
        try:
            pids.append(int(json.loads(pid_file.read_text())["pid"]))
            os.kill(pids[-1], signal.SIGTERM)
        except (ValueError, KeyError, OSError):
            continue
    deadline = time.monotonic() + wait_s
    for pid in pids:
        while pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
    return len(pids)


async def accepts(listen: str) -> bool:
    """Whether ``HOST:PORT`` or ``unix:PATH`` accepts a connection now."""
    try:
        if listen.startswith("unix:"):
            stream = await anyio.connect_unix(listen[5:])
        else:
            host, _, port = listen.rpartition(":")
            stream = await anyio.connect_tcp(host, int(port))
    except OSError:
        return False
    await stream.aclose()
    return True


@asynccontextmanager
async def open_http(url: str, token: str | None = None,
                    uds: str | None = None) -> AsyncIterator[Client]:
    """An ``mcp.Client`` over streamable HTTP to ``url`` (through the Unix socket
    ``uds`` when given), sending ``token`` as the bearer token."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    transport = httpx2.AsyncHTTPTransport(uds=uds) if uds else None
    async with httpx2.AsyncClient(headers=headers, transport=transport, timeout=60) as http, \
            Client(streamable_http_client(url, http_client=http)) as client:
        yield client


@asynccontextmanager
async def terminated(process: Process, wait_s: float = 15.0) -> AsyncIterator[Process]:
    """``process`` for the block; then SIGTERM, and SIGKILL after ``wait_s``."""
    try:
        yield process
    finally:
        process.terminate()
        with anyio.move_on_after(wait_s):
            await process.wait()
        if process.returncode is None:
            process.kill()
