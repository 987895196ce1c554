"""Finding the DevTools endpoint of the browser on a target's host.

Order, for a target without an explicit ``cdp`` address:

1. ``DevToolsActivePort`` in the configured profile, else in the usual Chrome /
   Chromium profile directories of the (remote) user, Linux and macOS. The file
   is never deleted by Chrome, so a crashed browser leaves a stale one behind:
   a candidate only counts once its websocket opens.
2. ``/json/version`` on 127.0.0.1:9222, the conventional debugging port.

With an explicit ``cdp`` address, ``/json/version`` there (or the given
``/devtools/browser/…`` path directly, for Chrome's chrome://inspect mode
which serves no ``/json`` at all).

The parsing helpers at the top are pure and tested on fixtures; ``discover``
does the I/O through a ``Transport`` so SSH and local targets share it. A
``DiscoveryTrace`` passed to it sees each stage as it happens (what was read,
which endpoint is tried, why one was rejected): ``doctor`` reports those as
steps of their own without a second copy of the search order.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from websockets.asyncio.client import ClientConnection

from gateway.config import CdpAddress, TargetConfig
from gateway.errors import DiscoveryError, GatewayError, TargetUnavailable

if TYPE_CHECKING:
    from gateway.hosts.local import Transport

__all__ = [
    "DEFAULT_PROFILE_DIRS",
    "DiscoveryTrace",
    "Endpoint",
    "active_port_command",
    "discover",
    "http_response_complete",
    "parse_active_port",
    "parse_active_port_listing",
    "parse_http_response",
    "parse_version_payload",
]

# Relative to the user's home directory (where an SSH exec starts).
DEFAULT_PROFILE_DIRS: tuple[str, ...] = (
    ".config/google-chrome",
    ".config/google-chrome-beta",
    ".config/google-chrome-unstable",
    ".config/chromium",
    "snap/chromium/common/chromium",
    ".var/app/com.google.Chrome/config/google-chrome",
    ".var/app/org.chromium.Chromium/config/chromium",
    "Library/Application Support/Google/Chrome",
    "Library/Application Support/Google/Chrome Beta",
    "Library/Application Support/Google/Chrome Canary",
    "Library/Application Support/Chromium",
)
FALLBACK_ADDRESS = CdpAddress(host="127.0.0.1", port=9222)
_MARKER = "#csgw-profile "


@dataclass(frozen=True)
class Endpoint:
    """Where the browser's DevTools websocket lives, on the target host's side."""

    host: str
    port: int
    browser_path: str  # /devtools/browser/<uuid>
    found_by: str      # "DevToolsActivePort in <dir>" / "/json/version at host:port"

    @property
    def address(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


class DiscoveryTrace:
    """Hooks called by ``discover`` as it goes; this base class ignores them all."""

    def listed(self, dirs: list[str], found: list[tuple[str, int, str]]) -> None:
        """The DevToolsActivePort files read among ``dirs``: (dir, port, path)."""

    def trying(self, endpoint: Endpoint) -> None:
        """About to open the websocket of ``endpoint``."""

    def rejected(self, endpoint: Endpoint, reason: str) -> None:
        """The websocket of ``endpoint`` did not open (a stale DevToolsActivePort, …)."""

    def unanswered(self, address: CdpAddress, reason: str) -> None:
        """``/json/version`` at ``address`` gave no usable answer."""


_NO_TRACE = DiscoveryTrace()


def parse_active_port(text: str) -> tuple[int, str] | None:
    """``"<port>\\n/devtools/browser/<uuid>"`` → (port, path); None when malformed."""
    lines = text.strip().splitlines()
    if len(lines) < 2 or not lines[0].strip().isdigit():
        return None
    port = int(lines[0].strip())
    path = lines[1].strip()
    if not 0 < port < 65536 or not path.startswith("/devtools/browser/"):
        return None
    return port, path


def active_port_command(dirs: list[str]) -> str:
    """One shell command that prints every readable DevToolsActivePort among ``dirs``.

    One SSH exec instead of one per directory: discovery costs a single round
    trip however many profile locations we probe. Paths are shell-quoted;
    ``~/`` is expanded by the remote shell through ``$HOME``.
    """
    quoted = []
    for d in dirs:
        if d.startswith("~/"):
            quoted.append('"$HOME"/' + shlex.quote(d[2:]))
        else:
            quoted.append(shlex.quote(d))
    return (
        f"for d in {' '.join(quoted)}; do "
        'if [ -r "$d/DevToolsActivePort" ]; then '
        f"printf '%s%s\\n' {shlex.quote(_MARKER)} \"$d\"; "
        'cat "$d/DevToolsActivePort"; echo; fi; done; true'
    )


def parse_active_port_listing(output: str) -> list[tuple[str, int, str]]:
    """Output of ``active_port_command`` → [(dir, port, path)] in probe order."""
    found: list[tuple[str, int, str]] = []
    for block in output.split(_MARKER)[1:]:
        directory, _, content = block.partition("\n")
        parsed = parse_active_port(content)
        if parsed is not None:
            found.append((directory, *parsed))
    return found


def http_response_complete(raw: bytes) -> bool:
    """Whether ``raw`` holds a whole response: Chrome keeps the socket open after
    answering (it ignores ``Connection: close``), so EOF cannot be the signal."""
    head, sep, body = raw.partition(b"\r\n\r\n")
    if not sep:
        return False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length" and value.strip().isdigit():
            return len(body) >= int(value.strip())
    if b"transfer-encoding: chunked" in head.lower():
        return body.endswith(b"0\r\n\r\n")
    return False


def parse_http_response(raw: bytes) -> tuple[int, bytes]:
    """A whole HTTP/1.x response → (status, body)."""
    head, sep, body = raw.partition(b"\r\n\r\n")
    if not sep:
        raise ValueError("incomplete HTTP response")
    status_line = head.split(b"\r\n", 1)[0].split()
    if len(status_line) < 2 or not status_line[1].isdigit():
        raise ValueError(f"bad HTTP status line {status_line!r}")
    headers = head.lower()
    if b"transfer-encoding: chunked" in headers:
        body = _dechunk(body)
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length" and value.strip().isdigit():
            body = body[:int(value.strip())]
    return int(status_line[1]), body


def _dechunk(body: bytes) -> bytes:
    out = bytearray()
    while body:
        size_line, _, rest = body.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        out += rest[:size]
        body = rest[size + 2:]
    return bytes(out)


def parse_version_payload(body: bytes) -> str:
    """``/json/version`` body → the ``/devtools/browser/…`` path of its websocket URL."""
    payload: Any = json.loads(body)
    url = payload.get("webSocketDebuggerUrl") if isinstance(payload, dict) else None
    if not isinstance(url, str) or "/devtools/browser/" not in url:
        raise ValueError("no webSocketDebuggerUrl in /json/version")
    return url[url.index("/devtools/browser/"):]


async def discover(
    transport: Transport, config: TargetConfig, timeout_s: float,
    trace: DiscoveryTrace = _NO_TRACE,
) -> tuple[Endpoint, ClientConnection]:
    """Find the browser and open its websocket; the open socket is the proof."""
    if config.cdp is not None:
        return await _from_address(transport, config.cdp, config.name, timeout_s, trace)

    dirs = [config.profile] if config.profile else list(transport.default_profile_dirs())
    tried: list[str] = []
    listing = await transport.read_active_ports(dirs, timeout_s)
    trace.listed(dirs, listing)
    for directory, port, path in listing:
        endpoint = Endpoint("127.0.0.1", port, path, f"DevToolsActivePort in {directory}")
        trace.trying(endpoint)
        try:
            return endpoint, await transport.open_websocket(endpoint, timeout_s)
        except GatewayError as exc:
            trace.rejected(endpoint, _reason(exc))
            tried.append(f"{directory}/DevToolsActivePort says port {port} but {_reason(exc)}")
    if config.profile:
        tried.append(f"no readable DevToolsActivePort in {config.profile}"
                     if not listing else "")
    else:
        tried.append("no DevToolsActivePort in the usual profile directories"
                     if not listing else "")
    try:
        return await _from_address(transport, FALLBACK_ADDRESS, config.name, timeout_s, trace)
    except DiscoveryError as exc:
        tried.append(exc.reason)
    reasons = "; ".join(t for t in tried if t)
    raise DiscoveryError(
        config.name,
        f"no Chrome DevTools endpoint found on {transport.host_label}: {reasons}. Start "
        "Chrome there with --remote-debugging-port=0 (and a --user-data-dir), or set "
        "cdp/profile for this target",
    )


def _reason(exc: GatewayError) -> str:
    """The cause alone, without the "target X unreachable" wrapper around it."""
    return exc.reason if isinstance(exc, TargetUnavailable) else str(exc)


class _Unanswered(Exception):
    """``/json/version`` gave nothing to connect to; the message says why."""


async def _ask_version(transport: Transport, address: CdpAddress, timeout_s: float) -> str:
    """``/json/version`` at ``address`` → the ``/devtools/browser/…`` path it names."""
    where = f"{address.host}:{address.port}"
    try:
        status, body = await transport.http_get(address, "/json/version", timeout_s)
    except GatewayError as exc:
        raise _Unanswered(f"/json/version at {where}: {_reason(exc)}") from None
    if status != 200:
        raise _Unanswered(f"/json/version at {where} answered HTTP {status}")
    try:
        return parse_version_payload(body)
    except ValueError as exc:
        raise _Unanswered(f"/json/version at {where}: {exc}") from None


async def _from_address(
    transport: Transport, address: CdpAddress, target: str, timeout_s: float,
    trace: DiscoveryTrace,
) -> tuple[Endpoint, ClientConnection]:
    where = f"{address.host}:{address.port}"
    path = address.browser_path
    if path is None:
        try:
            path = await _ask_version(transport, address, timeout_s)
        except _Unanswered as exc:
            trace.unanswered(address, str(exc))
            raise DiscoveryError(target, str(exc)) from None
    found_by = (f"/json/version at {where}" if address.browser_path is None
                else f"the configured websocket URL at {where}")
    endpoint = Endpoint(address.host, address.port, path, found_by)
    trace.trying(endpoint)
    try:
        return endpoint, await transport.open_websocket(endpoint, timeout_s)
    except GatewayError as exc:
        trace.rejected(endpoint, _reason(exc))
        raise
