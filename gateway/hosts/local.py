"""How a target reaches its browser's host: the ``Transport`` interface, and the local one.

Discovery and the target's connect loop talk only to this interface, so an SSH
target and a Chrome on this machine go through exactly the same code above it.
``SshTransport`` (in ``ssh.py``) is the other implementation.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from websockets.asyncio.client import ClientConnection

from gateway.browsers.cdp import open_websocket
from gateway.browsers.discovery import (
    DEFAULT_PROFILE_DIRS,
    Endpoint,
    http_response_complete,
    parse_active_port,
    parse_http_response,
)
from gateway.config import CdpAddress
from gateway.errors import DiscoveryError

__all__ = ["LocalTransport", "Transport", "http_get_over"]

MAX_HTTP_RESPONSE = 1024 * 1024


class Transport(Protocol):
    """The operations discovery and a target need from the link to a host."""

    kind: str          # "ssh" or "local"
    host_label: str    # for messages: "alice@devvm" / "this machine"

    def default_profile_dirs(self) -> Sequence[str]: ...

    async def connect(self) -> None:
        """Make sure the link is up (idempotent); raise ``TunnelError`` otherwise."""

    async def read_active_ports(
        self, dirs: list[str], timeout_s: float
    ) -> list[tuple[str, int, str]]:
        """Every parseable DevToolsActivePort among ``dirs``: (dir, port, path)."""

    async def http_get(
        self, address: CdpAddress, path: str, timeout_s: float
    ) -> tuple[int, bytes]: ...

    async def open_websocket(self, endpoint: Endpoint, timeout_s: float) -> ClientConnection: ...

    async def link_alive(self, endpoint: Endpoint, timeout_s: float) -> bool:
        """Whether the host still answers at all — asked when Chrome did not, to tell a
        hung page from a dead link. On ``False`` the link has been dropped, so the
        target reconnects now instead of after the keepalives give up."""

    async def aclose(self) -> None: ...


def _host_header(address: CdpAddress) -> str:
    # Chrome refuses /json requests whose Host is not an IP or "localhost".
    host = f"[{address.host}]" if ":" in address.host else address.host
    return f"{host}:{address.port}"


async def http_get_over(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
    address: CdpAddress, path: str,
) -> tuple[int, bytes]:
    """One HTTP/1.1 GET on an already-open byte stream (a TCP socket or an SSH channel)."""
    request = (f"GET {path} HTTP/1.1\r\nHost: {_host_header(address)}\r\n"
               "Connection: close\r\nAccept: application/json\r\n\r\n")
    writer.write(request.encode())
    raw = b""
    while not http_response_complete(raw):
        chunk = await reader.read(65536)
        if not chunk:
            break
        raw += chunk
        if len(raw) > MAX_HTTP_RESPONSE:
            raise ValueError("response too large")
    writer.close()
    return parse_http_response(raw)


class LocalTransport:
    """A Chrome on this machine: files read directly, TCP to loopback."""

    kind = "local"
    host_label = "this machine"

    def __init__(self, target: str) -> None:
        self._target = target

    def default_profile_dirs(self) -> Sequence[str]:
        home = Path.home()
        return [str(home / d) for d in DEFAULT_PROFILE_DIRS]

    async def connect(self) -> None:
        return None

    async def read_active_ports(
        self, dirs: list[str], timeout_s: float
    ) -> list[tuple[str, int, str]]:
        found = []
        for directory in dirs:
            try:
                text = (Path(directory).expanduser() / "DevToolsActivePort").read_text()
            except (OSError, UnicodeDecodeError):
                continue
            parsed = parse_active_port(text)
            if parsed is not None:
                found.append((directory, *parsed))
        return found

    async def http_get(
        self, address: CdpAddress, path: str, timeout_s: float
    ) -> tuple[int, bytes]:
        try:
            async with asyncio.timeout(timeout_s):
                reader, writer = await asyncio.open_connection(address.host, address.port)
                return await http_get_over(reader, writer, address, path)
        except TimeoutError:
            raise DiscoveryError(self._target, f"no HTTP answer within {timeout_s:g} s") from None
        except (OSError, ValueError) as exc:
            raise DiscoveryError(self._target, str(exc) or type(exc).__name__) from None

    async def open_websocket(self, endpoint: Endpoint, timeout_s: float) -> ClientConnection:
        url = f"ws://{endpoint.address}{endpoint.browser_path}"
        return await open_websocket(url, unix_path=None, target=self._target, timeout_s=timeout_s)

    async def link_alive(self, endpoint: Endpoint, timeout_s: float) -> bool:
        return True  # loopback does not go down; a silent Chrome is a hung page

    async def aclose(self) -> None:
        return None

