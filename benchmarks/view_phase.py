"""The ``view`` phase: a live ``browse_view`` of the news page beside raw
``Accessibility.getFullAXTree`` on the same tab over the same kind of SSH forward,
interleaved in blocks of LIVE_BLOCK; and the view's size.

The time target is relative: the view's median at most
TARGET_VIEW_OVER_FLOOR above the raw call's median in the same run (Chrome computing the
tree is most of a view; the ``peers`` phase checks that the view stays ahead of theirs).
"""

from __future__ import annotations

import re
import time
from typing import Any

import anyio
from mcp import Client

from benchmarks.bench import LIVE_BLOCK, RAW_LIVE_TIMEOUT_S, Bench
from benchmarks.clients import call_with_text
from benchmarks.page_server import page_server
from benchmarks.results import TARGET_VIEW_OVER_FLOOR, RowMaker, at_most, view_limit_ms

__all__ = ["ROW_KEYS", "define_rows", "run"]

TARGET_VIEW_CHARS = 12_000
TARGET_VIEW_TEXT_EXTRA = 200   # text content ≤ the view + this many characters (its header)
VIEW_BUDGET_S = 25.0           # set-up included; the rounds stop early (after 2) beyond it
ROW_KEYS = ("raw_ax", "gw_view", "view_chars", "view_refs", "view_text")


def define_rows(row: RowMaker) -> None:
    row("raw_ax", "raw CDP `Accessibility.getFullAXTree` of the news page, same forward",
        target="floor: the view's largest CDP call")
    row("gw_view", "gateway `browse_view` of the news page over SSH (live tab)",
        target=f"≤ floor + {TARGET_VIEW_OVER_FLOOR:.0%}".replace("%", " %"))
    row("view_chars", "↳ that view's size", unit="chars", show_p90=False,
        target=f"≤ {TARGET_VIEW_CHARS:,} chars")
    row("view_refs", "↳ refs in that view (links and controls)", unit="refs",
        show_p90=False, target="every link and control")
    row("view_text", "↳ that view's MCP text content (header + view)", unit="chars",
        show_p90=False, target=f"≤ view + {TARGET_VIEW_TEXT_EXTRA} chars")


async def run(bench: Bench) -> None:
    r = bench.r
    deadline = time.perf_counter() + VIEW_BUDGET_S
    host = bench.topo.host("h1")
    raw = bench.raw(host.name)
    tabs: list[tuple[Client, int]] = []
    seen: dict[str, Any] = {}
    try:
        async with page_server(host) as base, bench.gateway(bench.env(host.name)) as gw:
            try:
                tab = await bench.live_tab(gw, base + "news.html", tabs)
                await bench.attach_raw(raw, gw, tab)

                async def raw_ax() -> None:
                    with anyio.fail_after(RAW_LIVE_TIMEOUT_S):
                        tree = await raw.send("Accessibility.getFullAXTree")
                    seen["ax_nodes"] = len(tree["nodes"])
                    assert seen["ax_nodes"] > 1000, seen

                # The size rows are the first view's: ref numbers count on across views
                # of a tab, so later views are longer.
                seen["first"], seen["first_text"] = await call_with_text(
                    gw, "browse_view", {"tab": tab})
                refs, truncated = seen["first"]["refs"], seen["first"].get("truncated", False)
                assert refs > 200 and not truncated, (refs, truncated)

                async def gw_view() -> None:  # as a model's client gets it: text only
                    result = await gw.call_tool("browse_view", {"tab": tab})
                    seen["last_text"] = "".join(getattr(b, "text", "") for b in result.content)
                    assert not result.is_error and len(seen["last_text"]) > 5000, seen["last_text"]

                n = max(10, bench.opts.calls // 40)
                await bench.interleaved(
                    {"raw_ax": (raw_ax, n), "gw_view": (gw_view, n)}, "view",
                    deadline, VIEW_BUDGET_S, bench.live_warmup(), LIVE_BLOCK)
            finally:
                await bench.close_tabs(tabs)
    finally:
        await raw.aclose()
    at_most(r.rows["gw_view"], view_limit_ms(r.rows["raw_ax"].median))
    first = seen["first"]
    chars = len(first["view"])
    r.rows["view_chars"].samples = [float(chars)]
    r.rows["view_chars"].ok = chars <= TARGET_VIEW_CHARS
    r.rows["view_refs"].samples = [float(first["refs"])]
    text_chars = len(seen["first_text"])
    r.rows["view_text"].samples = [float(text_chars)]
    r.rows["view_text"].ok = text_chars <= chars + TARGET_VIEW_TEXT_EXTRA
    found = re.search(r"#(\d+)", seen["last_text"])
    r.meta["view"] = {"ax_nodes": seen.get("ax_nodes"), "first_view_chars": chars,
                      "refs": first["refs"], "views": len(r.rows["gw_view"].samples),
                      "last_view_text_chars": len(seen["last_text"]),
                      "last_view_first_ref": int(found.group(1)) if found else None}
    r.rows["raw_ax"].label = (f"raw CDP `Accessibility.getFullAXTree` of the news page "
                              f"({seen.get('ax_nodes')} nodes), same forward")

