"""Which sockets the gateway opens.

By default none a network could reach: the websocket runs through a Unix-socket
forward in a private (0700) directory and discovery uses bare SSH channels, so the
gateway process holds no listening TCP socket at all. ``SSH_PROXY_PORT=N`` opts in to
a TCP forward for other tools — on 127.0.0.1:N only.
"""

from __future__ import annotations

import errno
import http.client
import json
import os
import socket
import stat
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp import Client

from tests.e2e.helpers import (
    call_ok,
    data_url,
    eventually,
    gateway_pid,
    listening_tcp,
    listening_unix,
    marked_env,
    open_gateway,
    present,
    remote_active_port,
    wait_for_targets,
)
from tests.topology import Topology

pytestmark = pytest.mark.anyio


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _get(port: int, path: str) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


@pytest.fixture(scope="module")
async def exposed(topology: Topology) -> AsyncIterator[tuple[Client, int, int]]:
    """A gateway with SSH_PROXY_TO=h1 and SSH_PROXY_PORT; yields (client, port, pid)."""
    port = _free_port()
    env, marker = marked_env(
        topology.client_env() | {"SSH_PROXY_TO": "h1", "SSH_PROXY_PORT": str(port)})
    async with open_gateway(env) as client:
        await wait_for_targets(client, {"default": "up"})
        yield client, port, gateway_pid(marker)


async def test_tunnel_is_exposed_on_loopback(
    exposed: tuple[Client, int, int], topology: Topology
) -> None:
    _, port, _ = exposed
    status, body = _get(port, "/json/version")

    assert status == 200
    version = json.loads(body)
    _, path = remote_active_port(topology.host("h1"))
    assert version["webSocketDebuggerUrl"].endswith(path)  # h1's browser, through the tunnel
    assert version["Browser"] == topology.host("h1").devtools_version()["Browser"]


async def test_exposed_port_listens_on_127_0_0_1_only(
    exposed: tuple[Client, int, int], topology: Topology
) -> None:
    _, port, pid = exposed

    assert listening_tcp(pid) == [("127.0.0.1", port)]
    # Another address of this machine (the root side of h1's veth) gets nothing.
    outside = topology.host("h1").gateway_address
    with pytest.raises(OSError) as refused:
        socket.create_connection((outside, port), timeout=2).close()
    assert refused.value.errno == errno.ECONNREFUSED


async def test_cdp_url_reaches_the_exposed_tunnel(
    exposed: tuple[Client, int, int], topology: Topology
) -> None:
    """CDP_URL alone: a ``local`` target at that address — here, h1's browser."""
    first, port, _ = exposed
    env = topology.client_env() | {"CDP_URL": f"http://127.0.0.1:{port}"}
    url = data_url("through-the-exposed-port")
    async with open_gateway(env) as second:
        targets = await wait_for_targets(second, {"local": "up"})
        assert targets["local"]["transport"] == "local"
        assert targets["local"]["cdp_endpoint"].endswith(f"(/json/version at 127.0.0.1:{port})")
        opened = await call_ok(second, "new_tab", {"url": url})
        assert opened["target"] == "local"

        async def seen_by_first() -> int | None:
            listing = await call_ok(first, "list_tabs")
            ids = [t["tab"] for t in listing["tabs"] if t["url"] == url]
            return ids[0] if ids else None

        tab = await eventually(seen_by_first, until=present,
                               timeout=10, what="the tab in the SSH gateway")
        await call_ok(first, "close_tab", {"tab": tab})


async def test_no_tcp_listener_without_ssh_proxy_port(topology: Topology) -> None:
    env, marker = marked_env(topology.client_env() | {"SSH_PROXY_TO": "h1"})
    async with open_gateway(env) as gw:
        await wait_for_targets(gw, {"default": "up"})
        nav = await call_ok(gw, "navigate", {"url": data_url("no-listener")})
        pid = gateway_pid(marker)
        tcp = listening_tcp(pid)
        unix = {path: (stat.S_IMODE(Path(path).parent.stat().st_mode),
                       Path(path).parent.stat().st_uid)
                for path in listening_unix(pid) if not path.startswith("@")}
        abstract = [path for path in listening_unix(pid) if path.startswith("@")]
        await call_ok(gw, "close_tab", {"tab": nav["tab"]})

    assert tcp == []
    # The forward to the browser is a Unix socket in a directory only we can enter.
    assert unix, "expected the Unix-socket forward to the browser"
    assert all(mode_owner == (0o700, os.getuid()) for mode_owner in unix.values()), unix
    assert abstract == []  # abstract sockets have no file permissions at all
