"""``ProxyJump`` from ``~/.ssh/config``: the gateway reaches a host through a jump host.

The namespace hosts cannot reach each other, so the jump host is h1 itself: the alias
``h1-jumped`` says "ssh to h1, and from there to 10.231.N.2:22" — h1's own sshd. The
second hop is then a TCP connection made *inside* h1's namespace, from its own
address to itself, which a direct connection (always from the root-namespace side
of the veth, ``.1``) never makes. That is the proof the jump was taken.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.e2e.helpers import call_ok, data_url, open_gateway, wait_for_targets
from tests.topology import RemoteHost, Topology

pytestmark = pytest.mark.anyio


def _inner_ssh_connections(host: RemoteHost) -> list[str]:
    """Established TCP connections to sshd that start inside the host itself."""
    out = subprocess.run(host.netns_exec("ss", "-Htn", "state", "established"),
                         capture_output=True, text=True, check=True, timeout=10).stdout
    rows = []
    for line in out.splitlines():
        fields = line.split()
        local, peer = fields[-2], fields[-1]
        if local == f"{host.address}:22" and peer.startswith(f"{host.address}:"):
            rows.append(line)
    return rows


async def test_target_through_a_proxy_jump(topology: Topology, tmp_path: Path) -> None:
    h1 = topology.host("h1")
    home = topology.make_client_home(tmp_path / "home")
    config = home / ".ssh" / "config"
    config.write_text(config.read_text() + (
        "\nHost h1-jumped\n"
        f"    HostName {h1.address}\n"
        f"    User {h1.user}\n"
        "    ProxyJump h1\n"
        f"    IdentityFile {home / '.ssh' / 'id_ed25519'}\n"
        "    IdentitiesOnly yes\n"
        f"    UserKnownHostsFile {home / '.ssh' / 'known_hosts'}\n"
    ))
    assert _inner_ssh_connections(h1) == []
    async with open_gateway(topology.client_env(home) | {"SSH_PROXY_TO": "h1-jumped"}) as gw:
        await wait_for_targets(gw, {"default": "up"})
        assert _inner_ssh_connections(h1), "the gateway did not connect through the jump host"
        nav = await call_ok(gw, "navigate", {"url": data_url("jumped")})
        assert nav["title"] == "jumped"
        value = await call_ok(gw, "evaluate", {"tab": nav["tab"], "expression": "6*7"})
        assert value["value"] == 42
        await call_ok(gw, "close_tab", {"tab": nav["tab"]})
