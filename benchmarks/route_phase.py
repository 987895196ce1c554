"""The ``route`` phase (``network_route``): a routed request's added latency
beside the same request unrouted.

Three tabs of one gateway on h1 load the same small page from the page server inside
h1, and each times, in the page (``performance.now()`` around ``fetch`` and reading the
body, ``cache: "no-store"``, a fresh query string each time), fetches of the same 1 kB
file (``news.css``):

* on a tab without routes: the floor — Chrome and the page server alone;
* on a tab whose ``continue`` route takes the request: Chrome pauses it, the gateway
  matches the route and answers over the SSH link, then it goes to the server;
* on a tab whose ``fulfill`` route answers it with a body of the same size: paused and
  answered by the gateway, no request to the server.

Timing in the page leaves out the MCP call that carries the batch, so the difference of
the medians is what a route adds to a request. Batches of ``BATCH`` fetches per call,
the three tabs in rotating order every round.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from mcp import Client

from benchmarks.bench import Bench
from benchmarks.clients import call
from benchmarks.page_server import page_server
from benchmarks.results import progress

__all__ = ["ROW_KEYS", "define_rows", "run"]

ROW_KEYS = ("route_plain", "route_continue", "route_fulfill", "route_added")
BUDGET_S = 40.0
BATCH = 20
FILE = "news.css"
FILE_BYTES = 1142
_FETCHES = ("(async () => {{ const out = []; for (let i = 0; i < {n}; i++) {{ "
            "const t0 = performance.now(); const r = await fetch('{file}?q=' + "
            "Math.random(), {{cache: 'no-store'}}); const body = await r.text(); "
            "if (r.status !== 200 || body.length !== {size}) throw new Error("
            "'got ' + r.status + ', ' + body.length + ' chars'); "
            "out.push(performance.now() - t0); }} return out; }})()")
KINDS = {"route_plain": None, "route_continue": "continue", "route_fulfill": "fulfill"}


def define_rows(row: Callable[..., Any]) -> None:
    row("route_plain", f"in-page `fetch` of a 1 kB file ({FILE}) on h1, tab without routes",
        target="floor")
    row("route_continue", "↳ the same fetch taken by a `continue` route (paused, matched "
        "and answered by the gateway over SSH)", target="vs floor")
    row("route_fulfill", "↳ the same fetch answered by a `fulfill` route (same size, no "
        "request to the server)", target="vs floor")
    row("route_added", "↳ continue - plain (medians): what a route adds to a request",
        show_p90=False)


async def _tab(gw: Client, url: str, action: str | None, tabs: list[tuple[Client, int]]
               ) -> int:
    tab = await Bench.live_tab(gw, url, tabs)
    if action is not None:
        args: dict[str, Any] = {"tab": tab, "action": action, "pattern": f"**/{FILE}*"}
        if action == "fulfill":
            args |= {"body": "x" * FILE_BYTES, "headers": {"Content-Type": "text/css"}}
        await call(gw, "network_route", args)
    return tab


async def run(bench: Bench) -> None:
    r = bench.r
    deadline = time.perf_counter() + BUDGET_S
    host = bench.topo.host("h1")
    tabs: list[tuple[Client, int]] = []
    per_row = max(3 * BATCH, bench.opts.calls // 10)
    rounds = -(-per_row // BATCH)
    batch = _FETCHES.format(n=BATCH, file=FILE, size=FILE_BYTES)
    async with page_server(host) as base, \
            bench.gateway(bench.env(host.name), ["--tools", "all"]) as gw:
        try:
            on = {key: await _tab(gw, base + "frame-nested.html", action, tabs)
                  for key, action in KINDS.items()}
            for key in KINDS:  # warm-up: connections, the route's first pause
                await call(gw, "evaluate", {"tab": on[key], "expression": batch})
            order = list(KINDS)
            for round_no in range(rounds):
                if round_no >= 2 and time.perf_counter() > deadline:
                    r.warnings.append(f"route budget of {BUDGET_S:.0f} s used up after "
                                      f"{round_no} of {rounds} rounds")
                    break
                shift = round_no % len(order)
                for key in order[shift:] + order[:shift]:
                    got = await call(gw, "evaluate", {"tab": on[key], "expression": batch})
                    r.rows[key].samples.extend(float(ms) for ms in got["value"])
            hits = await call(gw, "network_route", {"tab": on["route_continue"],
                                                    "action": "list"})
            assert hits["routes"][0]["hits"] >= len(r.rows["route_continue"].samples)
        finally:
            await bench.close_tabs(tabs)
    plain, routed = r.rows["route_plain"].median, r.rows["route_continue"].median
    if plain is not None and routed is not None:
        r.rows["route_added"].samples = [routed - plain]
    progress("route: " + ", ".join(f"{k} {r.rows[k].median:.2f} ms" for k in KINDS
                                   if r.rows[k].median is not None))
