"""The pure parts of ``doctor``: the report's JSON and table, the fix texts, target
selection, and the bounded name lookup (with injected resolvers — no DNS traffic)."""

from __future__ import annotations

import errno
import socket
import threading
import time

import anyio
import pytest

from gateway.config.model import GatewayConfig, TargetConfig
from gateway.doctor.checks import (
    Report,
    TargetReport,
    _resolve,
    auth_fix,
    dns_failure,
    host_key_fix,
    render_text,
    select_targets,
    tcp_failure,
)
from gateway.errors import ConfigError
from gateway.hosts.known_hosts import HostKeyVerdict


def _report() -> Report:
    up = TargetReport("one", "ssh h1")
    for step in up.steps:
        step.status, step.ms, step.detail = "ok", 1.25, f"{step.name} fine"
    down = TargetReport("two", "local")
    down.step("config").status, down.step("config").ms = "ok", 0.5
    endpoint = down.step("endpoint")
    endpoint.status, endpoint.ms = "failed", 12.0
    endpoint.detail, endpoint.fix = "nothing at 127.0.0.1:9222", "start Chrome"
    return Report("/etc/targets.toml", [up, down])


def test_json_document() -> None:
    payload = _report().to_json()
    assert payload["config"] == "/etc/targets.toml"
    assert payload["up"] is False
    one, two = payload["targets"]
    assert (one["name"], one["where"], one["up"]) == ("one", "ssh h1", True)
    assert one["steps"][0] == {"name": "config", "status": "ok", "ms": 1.2,
                               "detail": "config fine", "fix": None}
    assert two["up"] is False
    assert two["steps"][5] == {"name": "endpoint", "status": "failed", "ms": 12.0,
                               "detail": "nothing at 127.0.0.1:9222", "fix": "start Chrome"}
    assert two["steps"][1] == {"name": "dns", "status": "skipped", "ms": None, "detail": "",
                               "fix": None}


def test_table() -> None:
    text = render_text(_report())
    lines = text.splitlines()
    assert lines[:4] == [
        "configuration: /etc/targets.toml",
        "",
        "one (ssh h1): UP",
        "  step                 status       ms  detail",
    ]
    assert lines[4] == "  config parsed        ok          1.2  config fine"
    two = lines.index("two (local): DOWN")
    assert lines[two + 2] == "  config parsed        ok          0.5"
    assert lines[two + 3] == "  DNS resolution       skip"
    assert lines[two + 7] == "  DevTools endpoint    FAIL       12.0  nothing at 127.0.0.1:9222"
    assert lines[two + 11] == "  fix (DevTools endpoint): start Chrome"
    assert lines[-1] == "2 targets: 1 up, 1 down"
    assert text.endswith("\n")


@pytest.mark.parametrize(("exc", "detail", "fix_start"), [
    (ConnectionRefusedError(errno.ECONNREFUSED, "refused"), "connection to 10.0.0.2:22 refused",
     "sshd not listening on 10.0.0.2:22"),
    (OSError(errno.EHOSTUNREACH, "No route to host"), "no route to 10.0.0.2 (No route to host)",
     "host unreachable (no route) — check VPN"),
    (OSError(errno.ENETUNREACH, "Network is unreachable"),
     "no route to 10.0.0.2 (Network is unreachable)", "host unreachable (no route)"),
    (TimeoutError(), "no answer from 10.0.0.2:22 within 3 s",
     "host unreachable (no answer from 10.0.0.2:22)"),
    (OSError(errno.ECONNRESET, "reset"), "connect to 10.0.0.2:22 failed: [Errno 104] reset",
     "check that 10.0.0.2 is up"),
])
def test_tcp_failures(exc: BaseException, detail: str, fix_start: str) -> None:
    got_detail, fix = tcp_failure("10.0.0.2", 22, exc, 3)
    assert got_detail == detail
    assert fix.startswith(fix_start)


def test_tcp_failure_ipv6_brackets() -> None:
    assert tcp_failure("fd00::2", 2222, ConnectionRefusedError(errno.ECONNREFUSED, "x"), 1)[0] \
        == "connection to [fd00::2]:2222 refused"


def test_dns_failures() -> None:
    unknown = socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    detail, fix = dns_failure("devvm.corp", "devvm", unknown)
    assert detail == ("cannot resolve devvm.corp (HostName of devvm in ~/.ssh/config): Name or "
                      "service not known")
    assert "check its spelling" in fix and "VPN" in fix
    again = socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")
    detail, fix = dns_failure("devvm", "devvm", again)
    assert detail == "cannot resolve devvm: Temporary failure in name resolution"
    assert fix.startswith("temporary DNS failure")


def _verdict(kind: str) -> HostKeyVerdict:
    return HostKeyVerdict(kind, "devvm", "10.0.0.2", 2222, "SHA256:abc",  # type: ignore[arg-type]
                          "/home/a/.ssh/known_hosts")


def test_host_key_fixes() -> None:
    unknown = host_key_fix(_verdict("unknown"), None)
    assert "`ssh-keyscan -p 2222 10.0.0.2 >> /home/a/.ssh/known_hosts`" in unknown
    assert "fingerprint is SHA256:abc" in unknown
    assert "ssh-keygen -R" not in unknown
    changed = host_key_fix(_verdict("changed"), None)
    assert changed.startswith("if 10.0.0.2 was reinstalled")
    assert "`ssh-keygen -R 10.0.0.2 -f /home/a/.ssh/known_hosts`" in changed
    jumped = host_key_fix(_verdict("unknown"), "bastion")
    assert "`ssh devvm` once (it goes through bastion)" in jumped
    assert "ssh-keyscan" not in jumped  # it cannot reach a host behind a jump host


def test_auth_fixes() -> None:
    assert auth_fix("alice", "devvm", []).startswith("no key to offer")
    fix = auth_fix("alice", "devvm", ["/home/a/.ssh/id_ed25519 (ssh-ed25519 SHA256:x)"])
    assert "`ssh-copy-id alice@devvm`" in fix
    assert "~alice/.ssh/authorized_keys" in fix


def _config(*names: str) -> GatewayConfig:
    targets = tuple(TargetConfig(name=n, ssh=None, cdp=None) for n in names)
    return GatewayConfig(targets=targets, call_log=None, source="t.toml")


def test_select_targets() -> None:
    config = _config("a", "b", "c")
    assert [t.name for t in select_targets(config, [])] == ["a", "b", "c"]
    assert [t.name for t in select_targets(config, ["c", "a", "c"])] == ["c", "a"]
    with pytest.raises(ConfigError) as caught:
        select_targets(config, ["a", "zz"])
    assert str(caught.value) == ("--target: unknown target 'zz'; configured targets in t.toml: "
                                 "a, b, c")


@pytest.mark.anyio
async def test_resolve_passes_addresses_and_errors() -> None:
    def resolver(host: str, port: int) -> list[tuple[object, ...]]:
        if host == "bad":
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        infos = [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.0.0.2", port)),
                 (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.0.0.2", port)),
                 (socket.AF_INET6, socket.SOCK_STREAM, 6, "", ("fd00::2", port, 0, 0))]
        return infos

    assert await _resolve(resolver, "good", 22, 5) == ["10.0.0.2", "fd00::2"]
    with pytest.raises(socket.gaierror):
        await _resolve(resolver, "bad", 22, 5)


@pytest.mark.anyio
async def test_a_hanging_resolver_is_abandoned_after_the_timeout() -> None:
    release = threading.Event()

    def stuck(host: str, port: int) -> list[tuple[object, ...]]:
        release.wait(30)
        return []

    started = time.monotonic()
    with pytest.raises(TimeoutError):
        await _resolve(stuck, "slow", 22, 0.2)
    assert time.monotonic() - started < 5
    release.set()
    await anyio.sleep(0.05)  # the abandoned thread ends without a loop to report to
