"""Host keys: checked against known_hosts, trusted on first use only when configured.

Every test uses a client HOME of its own (``make_client_home``) so the shared
client's known_hosts is never touched; the rotated-key test restores the host's
original key afterwards (``fault_topology``).
"""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path

import pytest

from tests.e2e.helpers import (
    ERROR_BOUND,
    call_err,
    call_ok,
    data_url,
    eventually,
    open_gateway,
    wait_for_targets,
    write_targets,
)
from tests.topology import RemoteHost, Topology

pytestmark = pytest.mark.anyio


def _fingerprint(public_key: Path) -> str:
    out = subprocess.run(["ssh-keygen", "-lf", str(public_key)], capture_output=True,
                         text=True, check=True, timeout=10).stdout
    return out.split()[1]  # "256 SHA256:… comment (ED25519)"


def _openssh_accepts(topology: Topology, home: Path, host: str) -> subprocess.CompletedProcess[str]:
    """OpenSSH's own client, strict host key checking, with this HOME's known_hosts."""
    return subprocess.run(
        ["ssh", "-F", str(home / ".ssh" / "config"), "-o", "BatchMode=yes",
         "-o", "StrictHostKeyChecking=yes", "-o", "ConnectTimeout=5", host, "true"],
        env=topology.client_env(home), capture_output=True, text=True, timeout=20,
        stdin=subprocess.DEVNULL,
    )


async def test_unknown_host_key_is_refused(topology: Topology, tmp_path: Path) -> None:
    home = topology.make_client_home(tmp_path / "home", known_hosts=False)
    known_hosts = home / ".ssh" / "known_hosts"
    h1 = topology.host("h1")

    async with open_gateway(topology.client_env(home) | {"SSH_PROXY_TO": "h1"}) as gw:
        targets = await wait_for_targets(gw, {"default": "down"})
        reason = targets["default"].get("error")
        assert f"the host key of {h1.name} ({h1.address})" in reason
        assert _fingerprint(h1.host_key.with_suffix(".pub")) in reason
        assert f"is not in {known_hosts}" in reason
        assert 'set host_key_policy = "accept-new" for this target' in reason

        error = await call_err(gw, "list_tabs", {"target": "default"}, timeout=ERROR_BOUND)
        assert "target 'default' unreachable (the host key of" in error
        assert "accept-new" in error
        ping = await call_ok(gw, "ping", timeout=ERROR_BOUND)
        assert ping["connected"] is False

    assert known_hosts.read_text() == ""  # strict never records anything


async def test_accept_new_records_the_key(topology: Topology, tmp_path: Path) -> None:
    home = topology.make_client_home(tmp_path / "home", known_hosts=False)
    known_hosts = home / ".ssh" / "known_hosts"
    h1 = topology.host("h1")
    path = write_targets(tmp_path / "targets.toml",
                         {"t": {"ssh": "h1", "host_key_policy": "accept-new"}})

    async with open_gateway(topology.client_env(home), ["--config", str(path)]) as gw:
        await wait_for_targets(gw, {"t": "up"})
        nav = await call_ok(gw, "navigate", {"target": "t", "url": data_url("tofu")})
        assert nav["title"] == "tofu"
        await call_ok(gw, "close_tab", {"tab": nav["tab"]})

    key_type, key = h1.host_key.with_suffix(".pub").read_text().split()[:2]
    assert known_hosts.read_text() == f"{h1.address} {key_type} {key}\n"
    assert stat.S_IMODE(known_hosts.stat().st_mode) == 0o600
    # The entry is one OpenSSH itself accepts under strict checking ...
    result = _openssh_accepts(topology, home, "h1")
    assert result.returncode == 0, result.stderr
    # ... and so does the gateway, now without accept-new.
    async with open_gateway(topology.client_env(home) | {"SSH_PROXY_TO": "h1"}) as gw:
        await wait_for_targets(gw, {"default": "up"})
    assert known_hosts.read_text().count("\n") == 1  # recorded once, not again


@pytest.mark.parametrize("policy", ["strict", "accept-new"])
async def test_missing_known_hosts_file(topology: Topology, tmp_path: Path, policy: str) -> None:
    """No known_hosts file yet (a fresh machine): like an empty one, never an I/O error."""
    home = topology.make_client_home(tmp_path / "home", known_hosts=False)
    known_hosts = home / ".ssh" / "known_hosts"
    known_hosts.unlink()
    h2 = topology.host("h2")
    path = write_targets(tmp_path / "targets.toml",
                         {"t": {"ssh": "h2", "host_key_policy": policy}})

    async with open_gateway(topology.client_env(home), ["--config", str(path)]) as gw:
        target = (await wait_for_targets(gw))["t"]
    # Checked after the gateway stopped, so a failure reads as a plain assertion.
    if policy == "strict":
        assert target["state"] == "down"
        assert f"the host key of {h2.name} ({h2.address})" in target["error"]
        assert f"is not in {known_hosts}" in target["error"]
        assert not known_hosts.exists()
    else:
        assert (target["state"], target.get("error")) == ("up", None)
        assert stat.S_IMODE(known_hosts.stat().st_mode) == 0o600
        assert known_hosts.read_text().startswith(f"{h2.address} ssh-ed25519 ")


async def test_changed_host_key_is_refused_even_under_accept_new(
    fault_topology: Topology, tmp_path: Path
) -> None:
    topology = fault_topology
    home = topology.make_client_home(tmp_path / "home")  # trusts the original keys
    known_hosts = home / ".ssh" / "known_hosts"
    before = known_hosts.read_bytes()
    h2: RemoteHost = topology.host("h2")
    path = write_targets(tmp_path / "targets.toml", {
        "strict": {"ssh": "h2"},
        "tofu": {"ssh": "h2", "host_key_policy": "accept-new"},
    })

    h2.rotate_host_key()
    new_fingerprint = _fingerprint(h2.host_key.with_suffix(".pub"))

    async with open_gateway(topology.client_env(home), ["--config", str(path)]) as gw:
        targets = await wait_for_targets(gw, {"strict": "down", "tofu": "down"})
        for name in ("strict", "tofu"):
            reason = targets[name].get("error")
            assert f"the host key of {h2.name} ({h2.address}) CHANGED" in reason, reason
            assert new_fingerprint in reason
            assert f"ssh-keygen -R {h2.address} -f {known_hosts}" in reason
            error = await call_err(gw, "new_tab", {"target": name}, timeout=ERROR_BOUND)
            assert "CHANGED" in error
        assert known_hosts.read_bytes() == before  # accept-new did not overwrite the entry

        # Once the host has its old key back, the targets recover by themselves.
        topology.reset()
        assert not h2.host_key_rotated()

        async def both_up() -> bool:
            for name in ("strict", "tofu"):
                ping = await call_ok(gw, "ping", {"target": name})
                if not ping["connected"]:
                    return False
            return True

        await eventually(both_up, timeout=30, what="both targets to reconnect")
    assert known_hosts.read_bytes() == before

