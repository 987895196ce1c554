"""The pure parts of ``doctor``: the report's JSON and table, the step recorder, the fix
texts, target selection, ProxyJump hop parsing, and the bounded name lookup (with
injected resolvers — no DNS traffic)."""

from __future__ import annotations

import errno
import re
import socket
import threading
import time
from pathlib import Path

import anyio
import pytest

from gateway.cdp.endpoint import Endpoint
from gateway.config import CdpAddress, GatewayConfig, TargetConfig
from gateway.doctor import Report, TargetReport, render_text, select_targets
from gateway.doctor.fixes import (
    auth_fix,
    dns_failure,
    endpoint_failure,
    host_key_fix,
    stale_notes,
    tcp_failure,
)
from gateway.doctor.probes import parse_hop, resolve
from gateway.doctor.report import STEPS, Recorder, StopCheck
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
    assert two["steps"][7] == {"name": "endpoint", "status": "failed", "ms": 12.0,
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
    assert lines[two + 7] == "  WebDriver status     skip"
    assert lines[two + 9] == "  DevTools endpoint    FAIL       12.0  nothing at 127.0.0.1:9222"
    assert lines[two + 10] == "  launch               skip"
    assert lines[two + 14] == "  fix (DevTools endpoint): start Chrome"
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
    (OSError(errno.ECONNRESET, "reset"),
     "connect to 10.0.0.2:22 failed: the connection was reset by the other end",
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


def test_recorder_marks_steps_and_a_failure_ends_the_check() -> None:
    report = TargetReport("one", "local")
    record = Recorder(report)
    record.ok("config", 0.25, "parsed")
    record.note(("dns", "tcp"), "local target: no SSH")
    with pytest.raises(StopCheck):
        record.fail("endpoint", 3.0, "nothing there", "start Chrome")
    assert (report.step("config").status, report.step("config").detail) == ("ok", "parsed")
    assert (report.step("dns").status, report.step("dns").detail) == (
        "skipped", "local target: no SSH")
    endpoint = report.step("endpoint")
    assert (endpoint.status, endpoint.ms, endpoint.fix) == ("failed", 3.0, "start Chrome")
    assert not report.up
    assert Recorder.since(10.0, 10.5) == 500.0


@pytest.mark.parametrize(("hop", "parsed"), [
    ("bastion", ("", "bastion", None)),
    ("ops@bastion", ("ops", "bastion", None)),
    ("ops@bastion:2222", ("ops", "bastion", 2222)),
    ("bastion:ssh", ("", "bastion:ssh", None)),  # not a port: asyncssh sees the whole name
])
def test_parse_hop(hop: str, parsed: tuple[str, str, int | None]) -> None:
    assert parse_hop(hop) == parsed


def _stale(directory: str, port: int) -> tuple[Endpoint, str]:
    endpoint = Endpoint("127.0.0.1", port, "/devtools/browser/x",
                        f"DevToolsActivePort in {directory}")
    return endpoint, "connection refused"


def test_endpoint_failure_stale_active_port() -> None:
    config = TargetConfig(name="t", ssh=None, cdp=None)
    unanswered = [(CdpAddress("127.0.0.1", 9222), "/json/version at 127.0.0.1:9222: refused")]
    detail, fix = endpoint_failure(config, "h1", "r", listed=True,
                                   stale=[_stale(".config/chromium", 40001)],
                                   unanswered=unanswered)
    assert detail == ("stale DevToolsActivePort in .config/chromium (port 40001: connection "
                      "refused); nothing at 127.0.0.1:9222: refused")
    assert fix.startswith("the Chrome that wrote DevToolsActivePort in ~/.config/chromium is "
                          "gone")
    assert fix.endswith("on h1 with --remote-debugging-port=0 --user-data-dir=~/.config/chromium")
    assert stale_notes([_stale("/p", 1), _stale("/q", 2)]) == (
        "ignored stale DevToolsActivePort in /p (port 1); "
        "ignored stale DevToolsActivePort in /q (port 2)")


def test_endpoint_failure_cdp_and_profile_and_default() -> None:
    cdp = TargetConfig(name="t", ssh=None, cdp=CdpAddress("127.0.0.1", 9333))
    served_no_json = [(CdpAddress("127.0.0.1", 9333),
                       "/json/version at 127.0.0.1:9333 answered HTTP 404")]
    detail, fix = endpoint_failure(cdp, "h1", "why", listed=False, stale=[],
                                   unanswered=served_no_json)
    assert detail == "why"
    assert fix.startswith("the browser at 127.0.0.1:9333 serves no /json")
    _, fix = endpoint_failure(cdp, "h1", "why", listed=False, stale=[], unanswered=[])
    assert fix.startswith("no Chrome DevTools at 127.0.0.1:9333 on h1: start one with "
                          "--remote-debugging-port=9333 ")
    profile = TargetConfig(name="t", ssh=None, cdp=None, profile="/p")
    assert endpoint_failure(profile, "h1", "why", listed=False, stale=[], unanswered=[]) == (
        "why", "check that commands can run over SSH on h1")
    detail, fix = endpoint_failure(profile, "h1", "why", listed=True, stale=[], unanswered=[])
    assert detail == "no DevToolsActivePort in /p; nothing at 127.0.0.1:9222: not tried"
    assert fix.startswith("no Chrome runs with --user-data-dir=/p on h1: start one with "
                          "--remote-debugging-port=0 --user-data-dir=/p ")
    default = TargetConfig(name="t", ssh=None, cdp=None)
    detail, fix = endpoint_failure(default, "h1", "why", listed=True, stale=[], unanswered=[])
    assert detail.startswith("no DevToolsActivePort in the usual profile directories (~/")
    assert fix.startswith("no Chrome found in ~/")
    assert (" on h1: for the person's own Chrome (144+), the person opens "
            "chrome://inspect/#remote-debugging in their Chrome" in fix)
    assert "; for a browser of the agent's own, start one with " in fix


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

    assert await resolve(resolver, "good", 22, 5) == ["10.0.0.2", "fd00::2"]
    with pytest.raises(socket.gaierror):
        await resolve(resolver, "bad", 22, 5)


@pytest.mark.anyio
async def test_a_hanging_resolver_is_abandoned_after_the_timeout() -> None:
    release = threading.Event()

    def stuck(host: str, port: int) -> list[tuple[object, ...]]:
        release.wait(30)
        return []

    started = time.monotonic()
    with pytest.raises(TimeoutError):
        await resolve(stuck, "slow", 22, 0.2)
    assert time.monotonic() - started < 5
    release.set()
    await anyio.sleep(0.05)  # the abandoned thread ends without a loop to report to


def test_the_docs_name_every_step_in_order() -> None:
    """The doctor's page (the --json step names, the example table) names every step
    doctor prints for every target, the WebDriver steps and launch included."""
    readme = (Path(__file__).resolve().parents[2] / "docs" / "troubleshooting.md").read_text()
    names = readme.split("with\nstep names", 1)[1].split("and status", 1)[0]
    assert re.findall(r"`(\w+)`", names) == [name for name, _ in STEPS]
    example = readme.split("$ chrome-ssh-gateway doctor --config targets.toml", 1)[1]
    tables = example.split("```", 1)[0].split("  step ")[1:]
    assert len(tables) == 2
    labels = [label for _, label in STEPS]
    for table in tables:
        rows = [line.strip() for line in table.splitlines()[1:] if line.startswith("  ")
                and not line.startswith("  fix")]
        assert [next(lb for lb in labels if row.startswith(lb)) for row in rows] == labels
