"""The ``share`` phase: a browser on a machine nobody can dial, shared to h2.

A share host (``tests/e2e/share_host.py``: a network namespace with no sshd, linked
only to h2's) runs a headless Chromium and ``chrome-ssh-gateway share h2 --name bench
--cdp 127.0.0.1:<port>``.  One gateway in the root namespace (the client HOME) serves

* ``[targets.viash] ssh = "h2", shared = true``: the shares on h2, so a target
  ``bench`` — the share host's Chromium, through ``bench.sock`` on h2;
* ``[targets.direct] ssh = "h2"``: h2's own Chromium, an ordinary SSH target.

Both go over the gateway's one SSH connection to h2 and are the same Chromium build;
the share adds a hop: sshd on h2 hands the socket's connection back over the sharer's
SSH connection, and the sharer (asyncssh, in Python) forwards it to the browser's
port.  Rows, all in one run on the same browsers:

* ``evaluate 1+1`` on each, interleaved in rotating blocks with two floors per
  browser, all with the ``evaluate`` tool's parameters: raw CDP over TCP inside the
  browser's own namespace (no SSH: the browsers themselves), and raw CDP over the
  path the gateway takes (``raw_cdp.RawCdp``: an asyncssh Unix-socket forward to the
  browser's port on h2, or to the share's socket there); plus the sharer's own CPU
  time per round trip through it (``/proc/<pid>/task/*/schedstat``);
* ``share`` spawned → its status line on stdout, and → its target usable in the
  running gateway (``list_targets`` shows it ``up``, then ``list_tabs`` of it and one
  ``evaluate`` on its tab succeed); a fresh ``--name`` per round, stopped with SIGINT
  (it must exit 0), and a random pause of 0-2 s before each round.  The gateway lists
  the shares every ``scan_interval_s`` (1 s by default), so this is the sharer's start plus up
  to one interval.
"""

from __future__ import annotations

import contextlib
import random
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import IO, Any

import anyio
from websockets.asyncio.client import ClientConnection, connect

from benchmarks.bench import Bench
from benchmarks.clients import call, cpu_ns
from benchmarks.raw_cdp import RawCdp
from benchmarks.results import fmt, progress
from gateway.config.model import SHARES_INTERVAL_S
from gateway.share.manifest import SHARED_DIR
from tests.e2e.helpers import write_targets
from tests.e2e.share_host import GATEWAY, ShareBrowser, ShareHost
from tests.topology import RemoteHost, Topology

__all__ = ["ROW_KEYS", "define_rows", "run", "share_phase"]

SHARE_INDEX = 9                # the share host's index (its /30; any unused one)
NAME = "bench"
GROUP = "viash"
DIRECT = "direct"
STATUS_TIMEOUT_S = 30.0        # share spawned → its status line
UP_TIMEOUT_S = 20.0            # share spawned → its target usable
STOP_TIMEOUT_S = 20.0          # SIGINT → share exited
TARGET_ADDED_MS = 0.3          # a call through the share within +0.3 ms of an SSH target
TARGET_UP_MS = 2000.0          # a share usable within 2 s of `share` starting
STATUS_PREFIX = b"chrome-ssh-gateway share: sharing "
# How often the gateway lists the shares (the default the targets file keeps).
SCAN_INTERVAL_S: float = SHARES_INTERVAL_S
# What the gateway's evaluate tool sends for "1+1" (run.EVALUATE_TOOL_PARAMS).
EVALUATE_PARAMS = {"expression": "1+1", "awaitPromise": True, "replMode": True,
                   "userGesture": True, "returnByValue": False}
ROW_KEYS = ("share_direct_h2", "share_direct", "share_raw_ssh", "share_raw", "share_gw_ssh",
            "share_gw", "share_added", "share_raw_added", "share_direct_added", "share_ovh_ssh",
            "share_ovh", "share_cpu", "share_status", "share_up", "share_seen")

Interleaved = Callable[..., Awaitable[None]]


def define_rows(row: Callable[..., Any]) -> None:
    row("share_direct_h2", "raw CDP `Runtime.evaluate 1+1` (`evaluate`'s params), h2's own "
        "Chromium, TCP on its namespace's loopback, no SSH (`share` phase)",
        target="floor: the browser")
    row("share_direct", "raw CDP, same call, the share host's Chromium, TCP on its "
        "namespace's loopback, no SSH", target="floor: the browser")
    row("share_raw_ssh", "raw CDP, same call, h2's own Chromium, asyncssh forward to its "
        "port on h2", target="floor: the SSH path")
    row("share_raw", "raw CDP, same call, a share host's Chromium shared to h2: asyncssh "
        "forward to the share's socket there", target="floor: the share path")
    row("share_gw_ssh", "gateway `evaluate 1+1`, h2's own Chromium as an SSH target "
        "(`ssh = \"h2\"`)")
    row("share_gw", "gateway `evaluate 1+1`, the share host's Chromium shared to h2 "
        "(`shared = true`; one hop more)")
    row("share_added", "↳ share - SSH target, gateway (medians)", show_p90=False,
        target=f"≤ +{TARGET_ADDED_MS} ms")
    row("share_raw_added", "↳ share - SSH path, raw floors (medians): the share's hop",
        show_p90=False)
    row("share_direct_added", "↳ share host's - h2's Chromium, no SSH (medians): the browsers "
        "themselves", show_p90=False)
    row("share_ovh_ssh", "↳ gateway - floor, SSH target (medians)", show_p90=False)
    row("share_ovh", "↳ gateway - floor, share (medians)", show_p90=False)
    row("share_cpu", "↳ the sharer's CPU per round trip through the share (its asyncssh "
        "relaying both ways; all its threads' on-CPU time)", unit="µs", show_p90=False)
    row("share_status", "`share h2 --cdp …` spawned → its status line (the sharer's start: "
        "interpreter, SSH, SFTP, forward)", target="the sharer alone")
    row("share_up", "`share h2 --cdp …` spawned → its target usable in a running gateway "
        "(`up`, `list_tabs`, `evaluate`)", target=f"≤ {TARGET_UP_MS:,.0f} ms")
    row("share_seen", f"↳ status line → target usable (the gateway's next look: "
        f"{SCAN_INTERVAL_S:g} s interval)")


async def share_phase(topo: Topology, rows: dict[str, Any], *,
                      gateway: Callable[[dict[str, str], list[str]], Any],
                      call: Callable[..., Awaitable[dict[str, Any]]],
                      interleaved: Interleaved,
                      calls: int, warmup: int, rounds: int, budget_s: float,
                      workdir: Path) -> dict[str, Any]:
    """Fill the share rows; returns what else was seen (the browsers' versions).

    ``gateway(env, args)`` opens an MCP client to a gateway, ``interleaved`` is
    ``Bench.interleaved``."""
    h2 = topo.host("h2")
    share = await anyio.to_thread.run_sync(lambda: ShareHost(topo, dest=h2, index=SHARE_INDEX))
    sharers: list[Sharer] = []
    try:
        browser = await anyio.to_thread.run_sync(share.start_browser)
        deadline = time.perf_counter() + budget_s
        bench = await Sharer.start(share, browser, NAME, workdir)
        sharers.append(bench)
        await bench.status(STATUS_TIMEOUT_S)
        config = write_targets(workdir / "share-targets.toml", {
            GROUP: {"ssh": "h2", "shared": True}, DIRECT: {"ssh": "h2"}})
        async with gateway(topo.client_env(), ["--config", str(config)]) as client:
            with anyio.fail_after(UP_TIMEOUT_S):
                await _until_up(client, call, NAME, bench)
            path = f"{h2.home}/{SHARED_DIR}/{NAME}.sock"
            floors = {
                "share_direct_h2": DirectCdp(topo, h2, h2.run_in_netns,
                                             h2.devtools_active_port_file),
                "share_direct": DirectCdp(topo, h2, share.run_in_netns,
                                          browser.devtools_active_port_file),
                "share_raw_ssh": RawCdp(topo, h2),
                "share_raw": RawCdp(topo, h2, socket=path,
                                    active_port_file=browser.devtools_active_port_file)}
            seen = await _latency(rows, client, call, interleaved, floors, bench,
                                  (calls, warmup, deadline, budget_s))
            for i in range(1, rounds + 1):
                # Rounds take about the same time, so without this each would start at
                # the same point of the gateway's look cycle and wait the same (unknown)
                # part of it: a random pause makes that point uniform over the cycle.
                await anyio.sleep(random.uniform(0, SCAN_INTERVAL_S))
                sharer = await Sharer.start(share, browser, f"{NAME}-up-{i}", workdir)
                sharers.append(sharer)
                usable = await _usable(client, call, sharer)
                rows["share_up"].samples.append((usable - sharer.spawned) * 1000)
                status = await sharer.status(5.0)
                rows["share_status"].samples.append((status - sharer.spawned) * 1000)
                rows["share_seen"].samples.append((usable - status) * 1000)
                await sharer.stop()
        await bench.stop()
    finally:
        with anyio.CancelScope(shield=True):
            for sharer in sharers:
                sharer.kill()
            await anyio.to_thread.run_sync(share.close)
    _differences(rows)
    return seen


class Sharer:
    """One ``share h2`` process in the share host; its status line read on a thread."""

    def __init__(self, name: str, process: subprocess.Popen[bytes], spawned: float,
                 stderr: Path) -> None:
        self.name = name
        self.process = process
        self.spawned = spawned
        self.stderr = stderr
        self.status_at: float | None = None
        self.lines: list[bytes] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    @classmethod
    async def start(cls, share: ShareHost, browser: ShareBrowser, name: str,
                    workdir: Path) -> Sharer:
        stderr = workdir / f"share-{name}.stderr"
        argv = (*GATEWAY, "share", "h2", "--name", name, "--cdp", f"127.0.0.1:{browser.port}")

        def spawn() -> tuple[float, subprocess.Popen[bytes]]:
            with stderr.open("wb") as err:
                spawned = time.perf_counter()
                return spawned, share.spawn(*argv, stdout=subprocess.PIPE, stderr=err)

        spawned, process = await anyio.to_thread.run_sync(spawn)
        return cls(name, process, spawned, stderr)

    def _read(self) -> None:
        out: IO[bytes] | None = self.process.stdout
        assert out is not None
        for line in out:
            if self.status_at is None and line.startswith(STATUS_PREFIX):
                self.status_at = time.perf_counter()
            self.lines.append(line)

    def failed(self, what: str) -> RuntimeError:
        tail = self.stderr.read_text(errors="replace").strip().splitlines()[-10:]
        said = b"".join(self.lines).decode(errors="replace").strip()
        return RuntimeError(f"share {self.name}: {what}; exit {self.process.poll()}; "
                            f"stdout {said!r}; stderr tail: {' | '.join(tail)}")

    async def status(self, timeout_s: float) -> float:
        """When its status line came (waiting up to ``timeout_s`` for it)."""
        with anyio.move_on_after(timeout_s):
            while self.status_at is None and self.process.poll() is None:
                await anyio.sleep(0.01)
        if self.status_at is None:
            raise self.failed("no status line")
        return self.status_at

    async def stop(self) -> None:
        """SIGINT, as Ctrl-C: it must remove its share and exit 0."""
        with contextlib.suppress(ProcessLookupError):
            self.process.send_signal(signal.SIGINT)
        try:
            code = await anyio.to_thread.run_sync(self.process.wait, STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise self.failed(f"still running {STOP_TIMEOUT_S:g} s after SIGINT") from None
        await anyio.to_thread.run_sync(self._reader.join, 5.0)
        if code != 0:
            raise self.failed("SIGINT did not end it with status 0")

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(5)


async def _until_up(client: Any, call: Callable[..., Awaitable[dict[str, Any]]],
                    name: str, sharer: Sharer) -> None:
    """Poll ``list_targets`` until the target ``name`` is up (the sharer must live)."""
    while True:
        listed = await call(client, "list_targets", {})
        if any(t["name"] == name and t["state"] == "up" for t in listed["targets"]):
            return
        if sharer.process.poll() is not None:
            raise sharer.failed("exited before its target was up")
        await anyio.sleep(0.02)


async def _usable(client: Any, call: Callable[..., Awaitable[dict[str, Any]]],
                  sharer: Sharer) -> float:
    """When the share's target answered ``list_tabs`` and an ``evaluate`` on its tab."""
    with anyio.fail_after(UP_TIMEOUT_S):
        await _until_up(client, call, sharer.name, sharer)
        tabs = (await call(client, "list_tabs", {"target": sharer.name}))["tabs"]
        if not tabs:
            raise sharer.failed("its target listed no tab")
        result = await call(client, "evaluate", {"expression": "1+1", "tab": tabs[0]["tab"]})
        assert result["value"] == 2, result
    return time.perf_counter()


async def _latency(rows: dict[str, Any], client: Any,
                   call: Callable[..., Awaitable[dict[str, Any]]], interleaved: Interleaved,
                   floors: dict[str, Any], bench: Sharer,
                   plan: tuple[int, int, float, float]) -> dict[str, Any]:
    """``evaluate 1+1`` both ways, gateway and raw, in rotating blocks; the sharer's CPU
    time meanwhile (over the calls through the share, warm-up included)."""
    calls, warmup, deadline, budget_s = plan
    tabs: list[int] = []
    try:
        for floor in floors.values():
            await floor.open()
        for target in (DIRECT, NAME):
            tabs.append(int((await call(client, "new_tab", {"target": target}))["tab"]))

        def raw_eval(cdp: Any) -> Callable[[], Awaitable[None]]:
            async def one() -> None:
                result = await cdp.send("Runtime.evaluate", EVALUATE_PARAMS)
                assert result["result"]["value"] == 2, result
            return one

        def gw_eval(tab: int) -> Callable[[], Awaitable[None]]:
            async def one() -> None:
                content = await call(client, "evaluate", {"expression": "1+1", "tab": tab})
                assert content["value"] == 2, content
            return one

        kinds = {key: (raw_eval(floor), calls) for key, floor in floors.items()}
        kinds |= {"share_gw_ssh": (gw_eval(tabs[0]), calls),
                  "share_gw": (gw_eval(tabs[1]), calls)}
        before = cpu_ns(bench.process.pid)
        await interleaved(kinds, "share", deadline, budget_s, warmup)
        through = 2 * warmup + len(rows["share_raw"].samples) + len(rows["share_gw"].samples)
        rows["share_cpu"].samples = [round((cpu_ns(bench.process.pid) - before) / 1000 / through)]
        return {"browsers": {key: getattr(floor, "browser", "") for key, floor in floors.items()}}
    finally:
        with anyio.CancelScope(shield=True), anyio.move_on_after(10):
            for tab in tabs:
                with contextlib.suppress(Exception):
                    await call(client, "close_tab", {"tab": tab})
            for floor in floors.values():
                await floor.aclose()


class DirectCdp(RawCdp):
    """Raw CDP without SSH: a TCP connection to the browser's port, opened inside its
    namespace (``run_in_netns``), a tab of its own, one session."""

    def __init__(self, topo: Topology, host: RemoteHost,
                 run_in_netns: Callable[[Callable[[], socket.socket]], socket.socket],
                 active_port_file: Path) -> None:
        super().__init__(topo, host, active_port_file=active_port_file)
        self.run_in_netns = run_in_netns

    async def websocket(self) -> ClientConnection:
        port_line, path = self.active_port_file.read_text().strip().split("\n")[:2]
        port = int(port_line)
        sock = await anyio.to_thread.run_sync(lambda: self.run_in_netns(
            lambda: socket.create_connection(("127.0.0.1", port), timeout=5)))
        sock.settimeout(None)
        return await connect(f"ws://127.0.0.1:{port}{path.strip()}", sock=sock,
                             compression=None, proxy=None, ping_interval=None,
                             max_size=16 * 1024 * 1024)


def _differences(rows: dict[str, Any]) -> None:
    def median(key: str) -> float | None:
        value: float | None = rows[key].median
        return value

    for key, ours, base in (("share_added", "share_gw", "share_gw_ssh"),
                            ("share_direct_added", "share_direct", "share_direct_h2"),
                            ("share_raw_added", "share_raw", "share_raw_ssh"),
                            ("share_ovh_ssh", "share_gw_ssh", "share_raw_ssh"),
                            ("share_ovh", "share_gw", "share_raw")):
        a, b = median(ours), median(base)
        if a is not None and b is not None:
            rows[key].samples = [a - b]
    added = rows["share_added"]
    if added.samples:
        added.ok = added.samples[0] <= TARGET_ADDED_MS
    up = rows["share_up"]
    up.ok = up.median is not None and up.median <= TARGET_UP_MS


async def run(bench: Bench) -> None:
    """A shared browser beside an SSH target; share → target usable."""
    opts, r = bench.opts, bench.r
    with tempfile.TemporaryDirectory(prefix="csgw-bench-share-") as workdir:
        seen = await share_phase(
            bench.topo, r.rows, gateway=bench.gateway, call=call,
            interleaved=bench.interleaved, calls=opts.calls, warmup=opts.warmup,
            rounds=opts.starts, budget_s=opts.sequential_budget_s, workdir=Path(workdir))
    r.meta["share"] = seen
    r.meta.setdefault("browser", seen["browsers"].get("share_raw_ssh"))
    rows = r.rows
    progress(f"share: gateway share {fmt(rows['share_gw'].median, 'ms')} vs SSH target "
             f"{fmt(rows['share_gw_ssh'].median, 'ms')}; raw "
             f"{fmt(rows['share_raw'].median, 'ms')} vs "
             f"{fmt(rows['share_raw_ssh'].median, 'ms')}; share → usable "
             f"{fmt(rows['share_up'].median, 'ms')}")
