"""Fault injection: the gateway rides through what remote browsers live with (issue 5).

One section per fault row; each test starts its own gateway on the namespace topology,
injects the fault with ``tests/topology.py`` and leaves the hosts as it found them
(``fault_topology``). Neighbouring files prove the simpler cases and are not repeated
here: ``test_reconnect.py`` (sessions killed between calls, graceful browser restart,
sshd down at start, a short silent partition), ``test_host_keys.py`` (unknown / changed
keys at start-up), ``test_bad_input.py`` (one hung page at a time),
``test_devtools_dialogs.py`` (a dialog blocks one tab only) and
``test_local_default.py`` (the launched browser goes when the client closes cleanly).

Recovery is watched from the host side (a new sshd session, sshd's login log) or
through ``list_targets``, which answers from memory and wakes nothing: "comes back by
itself" means no tool call helped it.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest
from mcp import Client
from mcp.types import LATEST_PROTOCOL_VERSION

from tests.e2e.helpers import (
    ERROR_BOUND,
    call_err,
    call_ok,
    data_url,
    eventually,
    local_default_env,
    marked_env,
    marked_pids,
    open_gateway,
    present,
    remote_active_port,
    targets_by_name,
    text_of,
    wait_for_targets,
    write_targets,
)
from tests.topology import CHROMIUM, RemoteHost, Topology

pytestmark = pytest.mark.anyio

RECOVER_BOUND = 20.0
"""A host that is back must be ``up`` again within this, with no call from the agent:
max_delay_s (5 s by default) + one connect + set-up, with room for a loaded machine."""

FAST = 10.0
""""Fails fast": well under the 30 s command timeout, so the call did not sit it out."""

EXIT_BOUND = 10.0
"""The gateway exits within this after its client closed stdin ("a few seconds")."""


async def _timed_err(client: Client, tool: str, args: Mapping[str, Any],
                     bound: float = ERROR_BOUND) -> tuple[str, float]:
    """The tool error of a call that must fail, and how long it took."""
    start = time.monotonic()
    error = await call_err(client, tool, args, timeout=bound)
    return error, time.monotonic() - start


async def _mark_page(client: Client, target: str, title: str) -> int:
    """A tab on ``target`` whose page carries a JS mark: proof it is the same page later."""
    tab = (await call_ok(client, "navigate", {"target": target, "url": data_url(title)}))["tab"]
    await call_ok(client, "evaluate", {"tab": tab, "expression": f"window.mark = '{title}'"})
    return int(tab)


async def _same_page(client: Client, tab: int, title: str) -> None:
    value = await call_ok(client, "evaluate", {"tab": tab, "expression": "window.mark"},
                          timeout=ERROR_BOUND)
    assert value["value"] == title, f"tab {tab} now shows another page: {value}"


async def _tab_ids(client: Client, target: str) -> dict[int, str]:
    listing = await call_ok(client, "list_tabs", {"target": target}, timeout=ERROR_BOUND)
    return {t["tab"]: t["url"] for t in listing["tabs"]}


async def _new_session_on(host: RemoteHost, old: set[int]) -> list[int]:
    """Wait, without any tool call, for an sshd session on ``host`` that is not in ``old``."""

    async def fresh() -> list[int] | None:
        new = sorted(set(host.ssh_session_pids()) - old)
        return new or None

    return await eventually(fresh, until=present, timeout=RECOVER_BOUND,
                            what=f"the gateway to open a new SSH session on {host.name}")


async def _state_leaves(client: Client, target: str, state: str, bound: float) -> dict[str, Any]:
    async def changed() -> dict[str, Any] | None:
        info = (await targets_by_name(client))[target]
        return info if info["state"] != state else None

    return await eventually(changed, until=present,
                            timeout=bound, what=f"{target!r} to leave {state!r}")


# ------------------------------------------------------------- 1. the link goes down


@pytest.mark.parametrize("silent", [True, False], ids=["silent-drop", "hard-down"])
async def test_link_outage_fails_calls_and_recovers_by_itself(
    fault_topology: Topology, tmp_path: Path, silent: bool
) -> None:
    topology = fault_topology
    h1 = topology.host("h1")
    path = write_targets(tmp_path / "targets.toml", {"r1": {"ssh": "h1"}, "r2": {"ssh": "h2"}})
    with anyio.fail_after(180):
        async with open_gateway(topology.client_env(), ["--config", str(path)]) as gw:
            await wait_for_targets(gw, {"r1": "up", "r2": "up"})
            tab1 = await _mark_page(gw, "r1", "outage-r1")
            tab2 = await _mark_page(gw, "r2", "outage-r2")
            ids_before = await _tab_ids(gw, "r1")
            sessions_before = set(h1.ssh_session_pids())
            assert sessions_before, "the gateway has no SSH session on h1"

            h1.link_down(silent=silent)
            try:
                # A call on r1 hangs on the dead link; r2 answers all the while.
                r2_answers: list[float] = []
                outcome: dict[str, Any] = {}

                async def on_r1() -> None:
                    outcome["error"], outcome["took"] = await _timed_err(
                        gw, "evaluate", {"tab": tab1, "expression": "1", "timeout_s": 3})
                    outcome["at"] = time.monotonic()

                async with anyio.create_task_group() as tg:
                    tg.start_soon(on_r1)
                    while "at" not in outcome:
                        value = await call_ok(gw, "evaluate", {"tab": tab2, "expression": "6*7"},
                                              timeout=ERROR_BOUND)
                        assert value["value"] == 42
                        r2_answers.append(time.monotonic())
                        await anyio.sleep(0.2)
                assert "target 'r1' unreachable (" in outcome["error"], outcome["error"]
                # 3 s of timeout, ≤ 2 s probing the link, and slack for a loaded machine.
                assert outcome["took"] < 3 + 2 + 5, outcome
                assert any(t < outcome["at"] for t in r2_answers), "r2 did not answer meanwhile"

                # Further calls during the outage fail the same way, bounded.
                error, took = await _timed_err(gw, "evaluate", {"tab": tab1, "expression": "1",
                                                                "timeout_s": 3})
                assert "target 'r1' unreachable (" in error, error
                assert took < ERROR_BOUND
                await _same_page(gw, tab2, "outage-r2")
            finally:
                h1.link_up()
            back = time.monotonic()

            # Back without any call: a new SSH login on h1, then list_targets (memory) says up.
            await _new_session_on(h1, sessions_before)
            await wait_for_targets(gw, {"r1": "up", "r2": "up"}, timeout=RECOVER_BOUND)
            print(f"r1 up {time.monotonic() - back:.1f} s after the link came back; the "
                  f"first outage call failed after {outcome['took']:.1f} s, the next "
                  f"after {took:.1f} s")
            assert await _tab_ids(gw, "r1") == ids_before
            await _same_page(gw, tab1, "outage-r1")
            await _same_page(gw, tab2, "outage-r2")


async def test_keepalive_notices_a_silent_partition_without_calls(
    fault_topology: Topology, tmp_path: Path
) -> None:
    """keepalive_interval_s times keepalive_count_max bounds how long a dead link looks
    up when nobody calls; the defaults (15 s, 3) would take 45 s."""
    topology = fault_topology
    h1 = topology.host("h1")
    path = write_targets(tmp_path / "targets.toml", {"t": {"ssh": "h1", "reconnect": {
        "keepalive_interval_s": 1, "keepalive_count_max": 2, "connect_timeout_s": 3,
        "max_delay_s": 1}}})
    with anyio.fail_after(120):
        async with open_gateway(topology.client_env(), ["--config", str(path)]) as gw:
            await wait_for_targets(gw, {"t": "up"})
            tab = await _mark_page(gw, "t", "keepalive")
            sessions_before = set(h1.ssh_session_pids())
            h1.link_down(silent=True)
            try:
                info = await _state_leaves(gw, "t", "up", bound=1 * 2 + 8)
                assert info["state"] in ("connecting", "down"), info
            finally:
                h1.link_up()
            await _new_session_on(h1, sessions_before)
            await wait_for_targets(gw, {"t": "up"}, timeout=RECOVER_BOUND)
            await _same_page(gw, tab, "keepalive")


# -------------------------------------------------- 2. sshd restarted / session killed


class _ConnectRecorder:
    """Stands in for sshd on a host's port 22: notes when each connection arrives and
    drops it at once, so every reconnect attempt of the gateway is seen and fails."""

    def __init__(self, host: RemoteHost) -> None:
        self.arrivals: list[float] = []
        self._sock = host.run_in_netns(
            lambda: socket.create_server((host.address, host.ssh_port)))
        self._sock.settimeout(0.2)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            self.arrivals.append(time.monotonic())
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self._sock.close()


@pytest.mark.parametrize("fault", ["kill-sessions", "restart-sshd"])
async def test_ssh_drop_fails_the_call_in_flight_and_reconnects(
    fault_topology: Topology, tmp_path: Path, fault: str
) -> None:
    topology = fault_topology
    h1 = topology.host("h1")
    policy = {"initial_delay_s": 0.2, "max_delay_s": 1.6}
    path = write_targets(tmp_path / "targets.toml", {"t": {"ssh": "h1", "reconnect": policy}})
    with anyio.fail_after(180):
        async with open_gateway(topology.client_env(), ["--config", str(path)]) as gw:
            await wait_for_targets(gw, {"t": "up"})
            tab = await _mark_page(gw, "t", "in-flight")
            ids_before = await _tab_ids(gw, "t")
            sessions_before = set(h1.ssh_session_pids())
            outcome: dict[str, Any] = {}

            async def slow_call() -> None:
                start = time.monotonic()
                with anyio.fail_after(ERROR_BOUND):
                    result = await gw.call_tool("evaluate", {
                        "tab": tab, "timeout_s": 30,
                        "expression": "await new Promise(r => setTimeout(r, 5000)); 'finished'"})
                outcome.update(result=result, took=time.monotonic() - start)

            recorder: _ConnectRecorder | None = None
            async with anyio.create_task_group() as tg:
                tg.start_soon(slow_call)
                await anyio.sleep(1)  # the page is now awaiting its timer
                if fault == "restart-sshd":
                    h1.stop_sshd()  # the listener; its sessions die next, as in a reboot
                    recorder = _ConnectRecorder(h1)
                h1.kill_ssh_sessions()
            result = outcome["result"]
            assert result.is_error, f"the call survived its connection: {result}"
            assert "retry" in text_of(result), text_of(result)
            assert outcome["took"] < ERROR_BOUND

            if recorder is not None:
                # sshd is "rebooting": watch the gateway's attempts, then bring it back.
                await anyio.sleep(6)
                recorder.close()
                h1.start_sshd()
                _assert_backoff(recorder.arrivals, policy["initial_delay_s"],
                                policy["max_delay_s"])

            await _new_session_on(h1, sessions_before)
            await wait_for_targets(gw, {"t": "up"}, timeout=RECOVER_BOUND)
            assert await _tab_ids(gw, "t") == ids_before
            await _same_page(gw, tab, "in-flight")


def _assert_backoff(arrivals: list[float], initial: float, cap: float) -> None:
    """Attempts spaced by initial, 2 * initial, … up to the cap — neither a busy loop nor
    a delay that keeps growing past max_delay_s."""
    gaps = [b - a for a, b in itertools.pairwise(arrivals)]
    assert len(gaps) >= 3, f"too few reconnect attempts in 6 s: {arrivals}"
    expected = [min(initial * 2**i, cap) for i in range(len(gaps))]
    for gap, want in zip(gaps, expected, strict=True):
        assert gap >= 0.9 * want, f"attempt after {gap:.2f} s, backoff says ≥ {want:g}: {gaps}"
    capped = [gap for gap, want in zip(gaps, expected, strict=True) if want == cap]
    assert capped, f"the delay never reached max_delay_s in 6 s: {gaps}"
    assert all(gap < 2 * cap for gap in capped), f"delay grew past max_delay_s {cap}: {gaps}"


# ------------------------------------------------ 3. Chrome crashes, comes back elsewhere


async def test_chrome_crash_stale_port_and_restart_on_new_port(
    fault_topology: Topology, tmp_path: Path
) -> None:
    topology = fault_topology
    h1 = topology.host("h1")
    path = write_targets(tmp_path / "targets.toml", {"t": {"ssh": "h1"}})
    with anyio.fail_after(180):
        async with open_gateway(topology.client_env(), ["--config", str(path)]) as gw:
            await wait_for_targets(gw, {"t": "up"})
            old_tabs = [await _mark_page(gw, "t", f"crash-{i}") for i in range(2)]
            seen = set(await _tab_ids(gw, "t"))

            stale_port = h1.kill_chrome()
            assert remote_active_port(h1)[0] == stale_port  # the file outlived its browser

            targets = await wait_for_targets(gw, {"t": "down"})
            reason = targets["t"].get("error")
            assert f"DevToolsActivePort says port {stale_port} but" in reason, reason

            new_port = h1.start_chrome_on_new_port(stale_port)
            await wait_for_targets(gw, {"t": "up"}, timeout=RECOVER_BOUND)
            endpoint = (await targets_by_name(gw))["t"]["cdp_endpoint"]
            assert endpoint.startswith(f"127.0.0.1:{new_port}/devtools/browser/"), endpoint

            for tab in old_tabs:
                error = await call_err(gw, "evaluate", {"tab": tab, "expression": "1"},
                                       timeout=ERROR_BOUND)
                assert f"tab {tab} was in the browser on 't', which restarted; it is gone" \
                    in error, error
            now = await _tab_ids(gw, "t")
            assert now and not set(now) & seen, f"old ids reused: {now} vs {seen}"
            seen |= set(now)
            fresh = await call_ok(gw, "navigate", {"target": "t", "url": data_url("reborn")})
            assert fresh["tab"] not in seen and fresh["tab"] > max(seen)
            assert fresh["title"] == "reborn"


# ----------------------------------------------------------- 4. Chrome gone for good


@pytest.mark.parametrize("leftover", ["stale-file", "no-file"])
async def test_chrome_gone_for_good_fails_fast_with_the_fix(
    fault_topology: Topology, tmp_path: Path, leftover: str
) -> None:
    topology = fault_topology
    h1 = topology.host("h1")
    path = write_targets(tmp_path / "targets.toml", {"t": {"ssh": "h1",
                                                           "command_timeout_s": 30}})
    with anyio.fail_after(180):
        async with open_gateway(topology.client_env(), ["--config", str(path)]) as gw:
            await wait_for_targets(gw, {"t": "up"})
            tab = await _mark_page(gw, "t", "doomed")
            if leftover == "no-file":  # gone before the crash: no attempt ever sees it
                h1.devtools_active_port_file.unlink()
            port = h1.kill_chrome()

            targets = await wait_for_targets(gw, {"t": "down"})
            reason = targets["t"].get("error")
            assert "no Chrome DevTools endpoint found on h1" in reason, reason
            assert "Start Chrome there with --remote-debugging-port=0" in reason, reason
            if leftover == "stale-file":
                assert f"DevToolsActivePort says port {port} but" in reason, reason
            else:
                assert "no DevToolsActivePort in the usual profile directories" in reason

            for tool, args in [
                ("evaluate", {"tab": tab, "expression": "1"}),
                ("navigate", {"tab": tab, "url": data_url("nowhere")}),
                ("new_tab", {"target": "t"}),
                ("cdp_command", {"target": "t", "method": "Browser.getVersion"}),
            ]:
                error, took = await _timed_err(gw, tool, args)
                assert took < FAST, f"{tool} took {took:.1f} s to fail"
                assert "target 't' unreachable (no Chrome DevTools endpoint found" in error, error
                assert "--remote-debugging-port=0" in error, error
            start = time.monotonic()
            ping = await call_ok(gw, "ping", {"target": "t"}, timeout=ERROR_BOUND)
            assert time.monotonic() - start < FAST
            assert ping["connected"] is False
            assert "--remote-debugging-port=0" in ping["error"], ping


# ----------------------------------------------------- 5. host key changes mid-session


@pytest.mark.parametrize("policy", ["strict", "accept-new"])
async def test_host_key_changed_while_connected_is_refused_on_reconnect(
    fault_topology: Topology, tmp_path: Path, policy: str
) -> None:
    topology = fault_topology
    h2 = topology.host("h2")
    home = topology.make_client_home(tmp_path / "home")  # trusts the original keys
    known_hosts = home / ".ssh" / "known_hosts"
    before = known_hosts.read_bytes()
    path = write_targets(tmp_path / "targets.toml", {"t": {
        "ssh": "h2", "host_key_policy": policy,
        "reconnect": {"initial_delay_s": 0.2, "max_delay_s": 1}}})
    with anyio.fail_after(120):
        async with open_gateway(topology.client_env(home), ["--config", str(path)]) as gw:
            await wait_for_targets(gw, {"t": "up"})
            tab = await _mark_page(gw, "t", "rekeyed")

            h2.rotate_host_key()  # the established session keeps its old key exchange
            await _same_page(gw, tab, "rekeyed")
            logins = h2.ssh_logins()
            h2.kill_ssh_sessions()

            async def refused() -> str | None:
                info = (await targets_by_name(gw))["t"]
                return info.get("error") if "CHANGED" in (info.get("error") or "") else None

            reason = await eventually(refused, until=present, timeout=RECOVER_BOUND,
                                      what="the reconnect to be refused for the new key")
            assert f"the host key of h2 ({h2.address}) CHANGED" in reason, reason
            assert f"ssh-keygen -R {h2.address} -f {known_hosts}" in reason, reason
            error = await call_err(gw, "evaluate", {"tab": tab, "expression": "1"},
                                   timeout=ERROR_BOUND)
            assert "target 't' unreachable (the host key of h2" in error, error
            assert "ssh-keygen -R" in error
            await anyio.sleep(3)  # several more attempts (max_delay_s 1): none gets in
            assert h2.ssh_logins() == logins, "the gateway logged in to a host whose key changed"
            assert (await targets_by_name(gw))["t"]["state"] != "up"
    assert known_hosts.read_bytes() == before


# -------------------------------------------------------------------- 6. pages hang


async def test_hung_pages_give_bounded_errors_while_other_tabs_work(
    fault_topology: Topology,
) -> None:
    topology = fault_topology
    hangs = {
        "busy": ("while (true) {}", "got no answer within 3 s"),
        "promise": ("await new Promise(() => {})", "got no answer within 3 s"),
        "dialog": ("alert('stuck'); 1", "dialog"),
    }
    with anyio.fail_after(120):
        async with open_gateway(topology.client_env() | {"SSH_PROXY_TO": "h1"}) as gw:
            await wait_for_targets(gw, {"default": "up"})
            tabs = {name: await _mark_page(gw, "default", f"hang-{name}") for name in hangs}
            healthy = await _mark_page(gw, "default", "healthy")
            errors: dict[str, tuple[str, float]] = {}
            healthy_answers: list[float] = []

            async def hang(name: str) -> None:
                expression, _ = hangs[name]
                errors[name] = await _timed_err(gw, "evaluate", {
                    "tab": tabs[name], "expression": expression, "timeout_s": 3})

            async with anyio.create_task_group() as tg:
                for name in hangs:
                    tg.start_soon(hang, name)
                await anyio.sleep(0.5)  # all three pages are stuck now
                while len(errors) < len(hangs):
                    value = await call_ok(gw, "evaluate", {"tab": healthy,
                                                           "expression": "window.mark"},
                                          timeout=ERROR_BOUND)
                    assert value["value"] == "healthy"
                    if "busy" not in errors:
                        healthy_answers.append(time.monotonic())
                    await anyio.sleep(0.2)
            assert healthy_answers, "the healthy tab did not answer while another one spun"
            for name, (error, took) in errors.items():
                assert hangs[name][1] in error, f"{name}: {error}"
                assert took < 3 + FAST, f"{name} took {took:.1f} s"
            assert "raise timeout_s" in errors["busy"][0]

            for name, tab in tabs.items():
                closed = await call_ok(gw, "close_tab", {"tab": tab}, timeout=ERROR_BOUND)
                assert closed == {"tab": tab, "closed": True}, name
            fresh = await call_ok(gw, "navigate", {"url": data_url("after-hangs")})
            value = await call_ok(gw, "evaluate", {"tab": fresh["tab"], "expression": "2+2"})
            assert value["value"] == 4
            await _same_page(gw, healthy, "healthy")
            for tab in (fresh["tab"], healthy):
                await call_ok(gw, "close_tab", {"tab": tab})


# ------------------------------------------------------------- 7. the client goes away


class _RawStdioClient:
    """MCP over the gateway's stdin/stdout by hand, so the test decides exactly when
    stdin closes — and nobody but the gateway itself ends its process (the SDK client
    would terminate it after a grace period, hiding a gateway that does not exit)."""

    def __init__(self, process: anyio.abc.Process) -> None:
        self.process = process
        self._buffer = b""
        self._ids = iter(range(1, 1_000_000))

    async def send(self, method: str, params: dict[str, Any], *, notify: bool = False) -> int:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
        call_id = 0 if notify else next(self._ids)
        if not notify:
            message["id"] = call_id
        assert self.process.stdin is not None
        await self.process.stdin.send(json.dumps(message).encode() + b"\n")
        return call_id

    async def reply(self, call_id: int) -> dict[str, Any]:
        assert self.process.stdout is not None
        while True:
            while b"\n" not in self._buffer:
                self._buffer += await self.process.stdout.receive()
            line, _, self._buffer = self._buffer.partition(b"\n")
            message: dict[str, Any] = json.loads(line)
            if message.get("id") == call_id:
                return message

    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        with anyio.fail_after(60):
            return await self.reply(await self.send(method, params))

    async def tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = (await self.call("tools/call", {"name": name, "arguments": arguments}))["result"]
        assert not result.get("isError"), f"{name} failed: {result}"
        content: dict[str, Any] = result["structuredContent"]
        return content


def _only_entry(directory: Path, prefix: str) -> Path:
    entries = [p for p in directory.iterdir() if p.name.startswith(prefix)]
    assert len(entries) == 1, f"expected one {prefix}* in {directory}: {entries}"
    return entries[0]


@pytest.mark.parametrize("kind", ["ssh", "local"])
async def test_client_closing_stdin_mid_call_ends_the_gateway_cleanly(
    fault_topology: Topology, tmp_path: Path, kind: str
) -> None:
    topology = fault_topology
    # The gateway's TMPDIR (forward sockets, launched profile); short, as pytest's own
    # tmp_path is too long for the launched Chromium (see test_local_default.py).
    scratch = Path(tempfile.mkdtemp(prefix="csgw-f-", dir="/tmp"))
    try:
        await _close_stdin_mid_call(topology, tmp_path, kind, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


async def _close_stdin_mid_call(
    topology: Topology, tmp_path: Path, kind: str, scratch: Path
) -> None:
    h1 = topology.host("h1")
    if kind == "ssh":
        env = topology.client_env() | {"SSH_PROXY_TO": "h1"}
    else:
        assert os.access(CHROMIUM, os.X_OK), f"{CHROMIUM} is needed for the local default"
        env = local_default_env(tmp_path / "home")
    env, marker = marked_env(env | {"TMPDIR": str(scratch)})
    sessions_before = set(h1.ssh_session_pids())
    repo = Path(__file__).resolve().parents[2]

    with open(tmp_path / "stderr.log", "wb") as stderr, anyio.fail_after(120):
        process = await anyio.open_process([sys.executable, "-m", "gateway", "serve"],
                                           env=env, cwd=repo, stderr=stderr)
        try:
            client = _RawStdioClient(process)
            await client.call("initialize", {"protocolVersion": LATEST_PROTOCOL_VERSION,
                                             "capabilities": {},
                                             "clientInfo": {"name": "faults", "version": "0"}})
            await client.send("notifications/initialized", {}, notify=True)
            nav = await client.tool("navigate", {"url": data_url("goodbye")})
            # What the gateway holds while it runs — so the checks below can fail.
            if kind == "ssh":
                assert _only_entry(scratch, "csgw-").is_dir()  # the Unix-socket forward dir
                our_sessions = set(h1.ssh_session_pids()) - sessions_before
                assert our_sessions, "no SSH session of the gateway on h1"
            else:
                profile = _only_entry(scratch, "csgw-chrome-")
                assert len(marked_pids(marker)) > 1, "no launched browser beside the gateway"

            await client.send("tools/call", {"name": "evaluate", "arguments": {
                "tab": nav["tab"], "timeout_s": 120,
                "expression": "await new Promise(r => setTimeout(r, 60000)); 'late'"}})
            await anyio.sleep(1)  # the call is in flight
            assert process.stdin is not None
            await process.stdin.aclose()
            start = time.monotonic()
            with anyio.move_on_after(EXIT_BOUND):
                await process.wait()
            took = time.monotonic() - start
            assert process.returncode is not None, (
                f"the gateway still runs {EXIT_BOUND:g} s after its client closed stdin")
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()

    print(f"gateway exited {took:.2f} s after stdin closed")
    assert process.returncode == 0, (tmp_path / "stderr.log").read_text()[-2000:]

    async def nothing_left() -> bool:
        return not marked_pids(marker)

    await eventually(nothing_left, timeout=10, what="every process the gateway started to end")
    assert list(scratch.iterdir()) == [], "the gateway left files in its TMPDIR"
    if kind == "ssh":
        async def sessions_closed() -> bool:
            return not set(h1.ssh_session_pids()) & our_sessions

        await eventually(sessions_closed, timeout=10, what="the SSH session on h1 to close")
    else:
        assert not profile.exists()


# -------------------------------------------------------- 8. reconnect policy per target


async def test_call_wait_zero_fails_at_once_with_the_last_reason(
    fault_topology: Topology, tmp_path: Path
) -> None:
    """With the link silently down every attempt takes connect_timeout_s to fail; a
    target with call_wait_s = 0 must not make a call sit through one."""
    topology = fault_topology
    h1 = topology.host("h1")
    path = write_targets(tmp_path / "targets.toml", {"t": {"ssh": "h1", "reconnect": {
        "call_wait_s": 0, "connect_timeout_s": 6, "initial_delay_s": 0.2, "max_delay_s": 1}}})
    h1.link_down(silent=True)
    with anyio.fail_after(120):
        async with open_gateway(topology.client_env(), ["--config", str(path)]) as gw:
            async def reason() -> str | None:
                return (await targets_by_name(gw))["t"].get("error")

            last = await eventually(reason, until=present,
                                    timeout=20, what="the first attempt to fail")
            assert "SSH connect to h1 timed out after 6 s" in last, last
            for tool, args in [("new_tab", {"target": "t"}),
                               ("cdp_command", {"target": "t", "method": "Browser.getVersion"}),
                               ("new_tab", {"target": "t"})]:
                error, took = await _timed_err(gw, tool, args)
                assert took < 3, f"{tool} waited {took:.1f} s despite call_wait_s = 0"
                assert "target 't' unreachable (SSH connect to h1 timed out" in error, error


async def test_call_wait_rides_through_a_dropped_connection(
    fault_topology: Topology, tmp_path: Path
) -> None:
    """The SSH connection dies and the agent's very next call comes at once: it waits for
    the reconnect (call_wait_s) instead of failing, and lands on the same page."""
    topology = fault_topology
    h1 = topology.host("h1")
    path = write_targets(tmp_path / "targets.toml", {"t": {"ssh": "h1", "reconnect": {
        "call_wait_s": 20, "initial_delay_s": 0.2, "max_delay_s": 1}}})
    with anyio.fail_after(120):
        async with open_gateway(topology.client_env(), ["--config", str(path)]) as gw:
            await wait_for_targets(gw, {"t": "up"})
            tab = await _mark_page(gw, "t", "patient")
            sessions_before = set(h1.ssh_session_pids())
            h1.kill_ssh_sessions()
            await _same_page(gw, tab, "patient")  # the first call works: no retry needed
            assert not set(h1.ssh_session_pids()) & sessions_before  # over a new connection


async def test_a_call_on_a_down_target_tries_now_not_after_the_backoff(
    fault_topology: Topology, tmp_path: Path
) -> None:
    """A target in a long backoff (30 s here): a call starts a fresh attempt at once and
    reports how that one went — failing while the host refuses, working once it is back."""
    topology = fault_topology
    h1 = topology.host("h1")
    path = write_targets(tmp_path / "targets.toml", {"t": {"ssh": "h1", "reconnect": {
        "call_wait_s": 20, "initial_delay_s": 30, "max_delay_s": 30}}})
    with anyio.fail_after(120):
        async with open_gateway(topology.client_env(), ["--config", str(path)]) as gw:
            await wait_for_targets(gw, {"t": "up"})
            tab = await _mark_page(gw, "t", "woken")
            h1.stop_sshd()
            recorder = _ConnectRecorder(h1)
            try:
                h1.kill_ssh_sessions()
                await wait_for_targets(gw, {"t": "down"})
                await anyio.sleep(1)
                assert len(recorder.arrivals) == 1, recorder.arrivals  # then the backoff
                asked = time.monotonic()
                error, took = await _timed_err(gw, "evaluate", {"tab": tab, "expression": "1"})
                assert took < FAST, f"the call sat out the backoff: {took:.1f} s"
                assert "target 't' unreachable (SSH connect to h1 failed" in error, error
                await anyio.sleep(1)
                # Exactly one attempt for the call, and after it the backoff holds again.
                assert len(recorder.arrivals) == 2 and recorder.arrivals[1] > asked, \
                    f"expected one attempt for the call, then none: {recorder.arrivals}"
            finally:
                recorder.close()
                h1.start_sshd()
            start = time.monotonic()
            await _same_page(gw, tab, "woken")  # this call's attempt succeeds
            assert time.monotonic() - start < FAST
