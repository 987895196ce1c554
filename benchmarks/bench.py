"""What every phase is given: the options, the results, the topology, and the helpers
that several phases share (interleaved timing, a gateway client, a live tab, a raw CDP
session on that tab).

Phases import this module; it imports only the shared helpers below it, never a phase.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager

import anyio
from mcp import Client

from benchmarks.clients import CALL_TIMEOUT_S, call, gateway_params, mcp_client
from benchmarks.options import Options
from benchmarks.raw_cdp import RawCdp
from benchmarks.results import Results, fmt, progress
from tests.topology import RemoteHost, Topology

__all__ = ["BLOCK_TIMEOUT_S", "LIVE_BLOCK", "RAW_LIVE_TIMEOUT_S", "Bench", "Timed"]

BLOCK_TIMEOUT_S = 120.0        # one block of sequential calls
LIVE_BLOCK = 5                 # live-page blocks are short: calls take 0.1-0.3 s each
RAW_LIVE_TIMEOUT_S = 20.0      # one raw screenshot / AX tree (a gateway call: CALL_TIMEOUT_S)

Timed = dict[str, tuple[Callable[[], Awaitable[None]], int]]
"""Row key → (one call, how many to time): what ``Bench.interleaved`` runs."""


class Bench:
    """One run's state; ``topo`` is set once the topology is up (before any phase)."""

    def __init__(self, opts: Options) -> None:
        self.opts = opts
        self.r = Results()
        self._topo: Topology | None = None

    @property
    def topo(self) -> Topology:
        assert self._topo is not None, "the topology is not up"
        return self._topo

    @topo.setter
    def topo(self, topo: Topology) -> None:
        self._topo = topo

    def hosts(self) -> list[RemoteHost]:
        """The hosts this run uses (``--hosts``; all of them if the topology has fewer)."""
        return self.topo.hosts[:self.opts.hosts] or self.topo.hosts

    def env(self, host: str = "h1") -> dict[str, str]:
        """The client environment with the embedded default proxied to ``host``."""
        return {**self.topo.client_env(), "SSH_PROXY_TO": host}

    def gateway(self, env: dict[str, str], args: Sequence[str] = (),
                timeout_s: float = CALL_TIMEOUT_S) -> AbstractAsyncContextManager[Client]:
        """An MCP client of a gateway (``serve ARGS``) started for it, over stdio."""
        return mcp_client(gateway_params(env, args), timeout_s)

    def raw(self, host: str = "h1") -> RawCdp:
        return RawCdp(self.topo, self.topo.host(host))

    def live_warmup(self) -> int:
        """Unmeasured calls before a live-page row (those calls take 0.1-0.3 s)."""
        return min(self.opts.warmup, 3)

    async def interleaved(self, kinds: Timed, phase: str, deadline: float, budget_s: float,
                          warmup: int, block: int | None = None) -> None:
        """Warm up each kind, then run its count of calls in rotating blocks.

        After two rounds, stop once ``deadline`` (the phase's budget, which covers its
        start-up and warm-up too) has passed.  ``block``: calls per block (default: a
        twentieth of the largest count, 10 to 200).
        """
        r = self.r
        for fn, _count in kinds.values():
            with anyio.fail_after(BLOCK_TIMEOUT_S):
                for _ in range(warmup):
                    await fn()
        most = max(count for _fn, count in kinds.values())
        block = block or max(10, min(200, most // 20))
        rounds = math.ceil(most / block)
        order = list(kinds)
        perf = time.perf_counter
        for round_no in range(rounds):
            if round_no >= 2 and perf() > deadline:  # at least 2 rounds
                message = (f"{phase} budget of {budget_s:.0f} s used up after "
                           f"{round_no} of {rounds} rounds: the {phase} rows have fewer "
                           "samples than planned (see n in --json)")
                progress(message)
                r.warnings.append(message)
                break
            shift = round_no % len(order)
            for key in order[shift:] + order[:shift]:
                (fn, count), samples = kinds[key], r.rows[key].samples
                share = math.ceil(count * (round_no + 1) / rounds)  # spread evenly over rounds
                with anyio.fail_after(BLOCK_TIMEOUT_S):
                    for _ in range(share - len(samples)):
                        t0 = perf()
                        await fn()
                        samples.append((perf() - t0) * 1000)
        progress(f"{phase}: " + ", ".join(
            f"{k} {fmt(r.rows[k].median, 'ms')}" for k in kinds))

    async def attach_raw(self, raw: RawCdp, gw: Client, tab: int) -> None:
        """Attach the raw floor to the gateway's own tab.

        One tab for both: the same page, viewport and renderer, and no question of
        which tab is in front (a second tab of our own made Chrome stall
        Page.captureScreenshot on it for seconds, now and then, in trial runs).
        """
        info = await call(gw, "cdp_command", {"method": "Target.getTargetInfo", "tab": tab})
        await raw.open(attach_to=info["result"]["targetInfo"]["targetId"])
        self.r.meta.setdefault("browser", raw.browser)
        await raw.send("Page.enable")  # as the gateway's session has

    @staticmethod
    async def live_tab(gw: Client, url: str, tabs: list[tuple[Client, int]]) -> int:
        """A new tab of ``gw`` with ``url`` loaded; recorded in ``tabs`` to be closed."""
        tab = int((await call(gw, "new_tab", {}))["tab"])
        tabs.append((gw, tab))
        await call(gw, "navigate", {"url": url, "tab": tab})
        return tab

    @staticmethod
    async def close_tabs(tabs: list[tuple[Client, int]]) -> None:
        with anyio.CancelScope(shield=True), anyio.move_on_after(10):
            for client, tab in tabs:
                with contextlib.suppress(Exception):
                    await call(client, "close_tab", {"tab": tab})

    @staticmethod
    async def all_up(gw: Client) -> None:
        """Until list_targets shows every target up (callers bound it in time)."""
        while True:
            listed = await call(gw, "list_targets", {})
            if all(t["state"] == "up" for t in listed["targets"]):
                return
            await anyio.sleep(0.05)
