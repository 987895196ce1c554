"""The ``peers`` phase: the gateway beside chrome-devtools-mcp and Playwright
MCP, on the same remote browser and page, in the same run, each row beside its floor.

The browser is h1's Chromium; the page the news page of ``fixtures/pages`` (served on
h1's loopback, as the ``view`` phase does). The gateway reaches it by its own SSH
connection (``SSH_PROXY_TO=h1``); the peers, as their documentation says for a remote
browser, through a local TCP port that one asyncssh connection forwards to h1's
DevTools port (``benchmarks/peers.py``: pinned versions, installed with npm into a
cache directory; when npm is absent or the install fails their columns say why and the
rest is measured). Rows:

* page view — ``browse_view`` / ``take_snapshot`` / ``browser_snapshot`` of the page in
  a tab of each one's own, time (median of ``max(20, --calls/100)``) and size (what a
  structured-first client shows the model, first view); floor: raw CDP
  ``Accessibility.getFullAXTree`` over the gateway's kind of SSH forward, on the
  gateway's tab;
* ``evaluate 1+1`` — ``evaluate`` / ``evaluate_script`` / ``browser_evaluate`` with
  ``() => 1+1`` (their defaults otherwise); floor: raw CDP ``Runtime.evaluate`` with the
  parameters our ``evaluate`` sends;
* start — spawn → the first tab list's result (our first non-empty ``list_tabs``;
  ``list_pages``; ``browser_tabs list``), ``--starts`` rounds; floor: the no-op MCP
  server's spawn → first result. The peers' forward is up before they start (as an
  ``ssh -L`` would be); ours makes its SSH connection inside its start;
* tool definitions — ``tools/list`` JSON (camelCase, no nulls), our default tool list.

Our page view's target: within the floor + 10 % (``results.view_limit_ms``,
as in the ``view`` phase) and faster than both peers' views, medians of this run.

The time rows run interleaved in rotating blocks, so load from elsewhere hits all
alike. Every tab a peer opens is closed at the end (``/json/close``), and ours by us.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.types import CallToolResult

from benchmarks.bench import LIVE_BLOCK, RAW_LIVE_TIMEOUT_S, Bench
from benchmarks.clients import CALL_TIMEOUT_S, noop_start_ms, tools_list_json, until_tabs
from benchmarks.model_view import structured_first
from benchmarks.page_server import page_server
from benchmarks.peers import (
    PEERS,
    Peer,
    browser_version,
    call_peer,
    close_pages,
    forward,
    npm_install,
    open_page,
    page_ids,
)
from benchmarks.raw_cdp import EVALUATE_TOOL_PARAMS, RawCdp
from benchmarks.results import Results, RowMaker, fmt, progress, view_limit_ms

__all__ = ["ROW_KEYS", "define_rows", "run", "view_verdict"]

BUDGET_S = 180.0               # the timed rounds stop early (after 2) beyond this
SIDES = ("floor", "us", "cdm", "pw")
NAMES = {"cdm": "chrome-devtools-mcp", "pw": "playwright-mcp"}
MEASURES = {  # key → (label, unit, floor)
    "view": ("page view of the news page (ms)", "ms",
             "raw `Accessibility.getFullAXTree` over SSH"),
    "size": ("page view size, as a structured-first client shows it (chars)", "chars", ""),
    "eval": ("`evaluate 1+1` (ms)", "ms", "raw CDP `Runtime.evaluate`"),
    "start": ("spawn → first tab list result (ms)", "ms",
              "no-op MCP server: spawn → first result"),
    "defs": ("tool definitions: `tools/list` JSON, ours the default list (chars)", "chars",
             ""),
}
ROW_KEYS = tuple(f"peers_{m}_{side}" for m in MEASURES for side in SIDES
                 if side != "floor" or MEASURES[m][2])


def define_rows(row: RowMaker) -> None:
    who = {"us": "chrome-ssh-gateway", "cdm": PEERS["chrome-devtools-mcp"].label,
           "pw": PEERS["playwright-mcp"].label}
    for m, (label, unit, floor) in MEASURES.items():
        for side in SIDES:
            if side == "floor" and not floor:
                continue
            text = floor if side == "floor" else f"{who[side]}: {label}"
            target = "floor" if side == "floor" else ""
            if (m, side) == ("view", "us"):
                target = "≤ floor + 10 %, ahead of both peers"
            row(f"peers_{m}_{side}", f"peers: {text}", unit=unit,
                show_p90=unit == "ms", target=target)


async def run(bench: Bench) -> None:
    r = bench.r
    why_not = await anyio.to_thread.run_sync(
        npm_install, [p.spec for p in PEERS.values()], progress)
    peers = {} if why_not else {side: PEERS[name] for side, name in NAMES.items()}
    deadline = time.perf_counter() + BUDGET_S
    host = bench.topo.host("h1")
    with tempfile.TemporaryDirectory(prefix="csgw-bench-peers-") as home:
        async with forward(bench.topo, bench.raw("h1").ssh_connect) as port:
            before = await anyio.to_thread.run_sync(page_ids, port)
            try:
                r.meta.setdefault("browser", await anyio.to_thread.run_sync(
                    browser_version, port))
                await _starts(bench, peers, port, Path(home))
                async with page_server(host) as base:
                    await _calls(bench, peers, port, Path(home), base + "news.html", deadline)
            finally:
                with anyio.CancelScope(shield=True):
                    opened = await anyio.to_thread.run_sync(page_ids, port) - before
                    await anyio.to_thread.run_sync(close_pages, port, opened)
    medians = {side: r.rows[f"peers_view_{side}"].median for side in SIDES}
    r.rows["peers_view_us"].ok = view_verdict(medians)[0]
    r.meta["peers"] = {"table": _table(r, why_not), "not_measured": why_not}
    progress("peers: view " + ", ".join(
        f"{side} {fmt(r.rows[f'peers_view_{side}'].median, 'ms')}" for side in SIDES))


async def _starts(bench: Bench, peers: dict[str, Peer], port: int, home: Path) -> None:
    """``--starts`` rounds of each server's spawn → first tab list, in rotating order."""
    rows = bench.r.rows

    async def ours() -> float:
        t0 = time.perf_counter()
        with anyio.fail_after(CALL_TIMEOUT_S):
            async with bench.gateway(bench.env("h1")) as gw:
                await until_tabs(gw)
                return (time.perf_counter() - t0) * 1000

    def theirs(peer: Peer) -> Callable[[], Awaitable[float]]:
        async def one() -> float:
            t0 = time.perf_counter()
            tool, args = peer.list_tabs
            with anyio.fail_after(CALL_TIMEOUT_S):
                async with Client(peer.params(port, home),
                                  read_timeout_seconds=CALL_TIMEOUT_S) as client:
                    await call_peer(client, peer, tool, args)
                    return (time.perf_counter() - t0) * 1000
        return one

    kinds: dict[str, Callable[[], Awaitable[float]]] = {"floor": noop_start_ms, "us": ours}
    kinds.update({side: theirs(peer) for side, peer in peers.items()})
    order = list(kinds)
    for i in range(bench.opts.starts):
        for side in order[i % len(order):] + order[:i % len(order)]:
            rows[f"peers_start_{side}"].samples.append(await kinds[side]())


@asynccontextmanager
async def _clients(bench: Bench, peers: dict[str, Peer], port: int,
                   home: Path) -> AsyncIterator[dict[str, Client]]:
    async with AsyncExitStack() as stack:
        clients = {"us": await stack.enter_async_context(bench.gateway(bench.env("h1")))}
        for side, peer in peers.items():
            clients[side] = await stack.enter_async_context(
                Client(peer.params(port, home), read_timeout_seconds=CALL_TIMEOUT_S))
        yield clients


async def _calls(bench: Bench, peers: dict[str, Peer], port: int, home: Path, news: str,
                 deadline: float) -> None:
    """Views and evaluates, all four sides on one tab each, in rotating blocks."""
    rows = bench.r.rows
    first: dict[str, CallToolResult] = {}
    raw = bench.raw("h1")
    tabs: list[tuple[Client, int]] = []
    try:
        async with _clients(bench, peers, port, home) as clients:
            try:
                tab = await bench.live_tab(clients["us"], news, tabs)
                await bench.attach_raw(raw, clients["us"], tab)
                view = {"floor": _raw_view(raw), "us": _tool(clients["us"], None, "browse_view",
                                                             {"tab": tab}, first, "us")}
                evaluate = {"floor": _raw_eval(raw),
                            "us": _tool(clients["us"], None, "evaluate",
                                        {"tab": tab, "expression": "1+1"})}
                for side, peer in peers.items():
                    page = await open_page(clients[side], peer, news)
                    view[side] = _tool(clients[side], peer, peer.snapshot, page, first, side)
                    tool, args = peer.evaluate
                    evaluate[side] = _tool(clients[side], peer, tool, {**page, **args})
                n = max(20, bench.opts.calls // 100)
                for measure, kinds in (("view", view), ("eval", evaluate)):
                    await bench.interleaved(
                        {f"peers_{measure}_{side}": (fn, n) for side, fn in kinds.items()},
                        f"peers {measure}", deadline, BUDGET_S, bench.live_warmup(),
                        LIVE_BLOCK)
                for side, client in clients.items():
                    with anyio.fail_after(CALL_TIMEOUT_S):
                        listed = (await client.list_tools()).tools
                    rows[f"peers_defs_{side}"].samples = [float(len(tools_list_json(listed)))]
            finally:
                await bench.close_tabs(tabs)
    finally:
        await raw.aclose()
    for side, result in first.items():
        rows[f"peers_size_{side}"].samples = [float(len(structured_first(result)[0]))]


def _raw_view(raw: RawCdp) -> Callable[[], Awaitable[None]]:
    async def one() -> None:
        with anyio.fail_after(RAW_LIVE_TIMEOUT_S):
            tree = await raw.send("Accessibility.getFullAXTree")
        assert len(tree["nodes"]) > 1000, len(tree["nodes"])
    return one


def _raw_eval(raw: RawCdp) -> Callable[[], Awaitable[None]]:
    async def one() -> None:
        result = await raw.send("Runtime.evaluate", EVALUATE_TOOL_PARAMS)
        assert result["result"]["value"] == 2, result
    return one


def _tool(client: Client, peer: Peer | None, tool: str, args: dict[str, Any],
          first: dict[str, CallToolResult] | None = None,
          side: str = "") -> Callable[[], Awaitable[None]]:
    """One call of ``tool`` that must succeed; the first result kept in ``first[side]``."""
    async def one() -> None:
        if peer is not None:
            result = await call_peer(client, peer, tool, args)
        else:
            result = await client.call_tool(tool, args)
            if result.is_error:
                raise RuntimeError(f"{tool}: {structured_first(result)[0][:300]}")
        if first is not None:
            first.setdefault(side, result)
    return one


def view_verdict(median: dict[str, float | None]) -> tuple[bool | None, str]:
    """Our page view (``median["us"]``) against its target: within the floor + 10 % and
    ahead of both peers (``"cdm"``, ``"pw"``); no verdict without our view or the floor.
    The verdict, and the words for the table."""
    ours, limit = median["us"], view_limit_ms(median["floor"])
    if ours is None or limit is None:
        return None, "view target: not measured"
    within = ours <= limit
    theirs = [median[side] for side in ("cdm", "pw")]
    if None in theirs:
        return within, f"≤ floor + 10 % {_mark(within)}; peers not measured"
    ahead = all(ours < t for t in theirs if t is not None)
    return (within and ahead,
            f"≤ floor + 10 % {_mark(within)}; ahead of both peers {_mark(ahead)}")


def _mark(ok: bool) -> str:
    return "✅" if ok else "❌"


def _table(r: Results, why_not: str | None) -> str:
    """The comparison: a line per measure, the floor, us, the peers, and the ratios."""
    lines = ["| row | floor | us | chrome-devtools-mcp 1.11.0 | Playwright MCP 0.0.83 | "
             "ratios |", "|---|---:|---:|---:|---:|---|"]
    for m, (label, unit, floor) in MEASURES.items():
        value = {side: r.rows[f"peers_{m}_{side}"].median if f"peers_{m}_{side}" in r.rows
                 else None for side in SIDES}
        ours, base = value["us"], value["floor"]
        ratios = [f"us/floor {ours / base:.2f}"] if ours is not None and base else []
        for side in ("cdm", "pw"):
            theirs = value[side]
            if theirs is not None and ours:
                ratios.append(f"{side}/us {theirs / ours:.2f}")
        if m == "view":
            ratios.append(view_verdict(value)[1])
        floor_cell = f"{floor}: {fmt(value['floor'], unit)}" if floor else "—"
        lines.append(f"| {label} | {floor_cell} | {fmt(value['us'], unit)} | "
                     f"{fmt(value['cdm'], unit)} | {fmt(value['pw'], unit)} | "
                     f"{'; '.join(ratios)} |")
    note = (f"peers: not measured ({why_not})" if why_not else
            "cdm = chrome-devtools-mcp, pw = Playwright MCP; medians; the same browser "
            "(h1's Chromium over SSH) and page, in this run.")
    return "\n".join(lines) + "\n\n" + note
