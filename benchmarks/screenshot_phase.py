"""The ``screenshot`` phase: a 1280x720 viewport PNG of the news page through
the gateway, beside raw ``Page.captureScreenshot`` on the same tab over the same kind of
SSH forward, interleaved in blocks of LIVE_BLOCK."""

from __future__ import annotations

import base64
import time

import anyio
from mcp import Client

from benchmarks.bench import LIVE_BLOCK, RAW_LIVE_TIMEOUT_S, Bench
from benchmarks.clients import call
from benchmarks.page_server import page_server
from benchmarks.results import RowMaker

__all__ = ["ROW_KEYS", "SCREENSHOT_BUDGET_S", "define_rows", "run"]

TARGET_SCREENSHOT_MS = 150.0   # a viewport PNG, end to end
SCREENSHOT_BUDGET_S = 25.0     # set-up included; the rounds stop early (after 2) beyond it
VIEWPORT = {"width": 1280, "height": 720, "deviceScaleFactor": 1, "mobile": False}
ROW_KEYS = ("raw_shot", "gw_shot", "ovh_shot")


def define_rows(row: RowMaker) -> None:
    row("raw_shot", "raw CDP `Page.captureScreenshot` PNG, 1280x720 viewport of the news "
        "page, same forward", target="floor")
    row("gw_shot", "gateway `screenshot` viewport PNG 1280x720, news page, over SSH",
        target=f"≤ {TARGET_SCREENSHOT_MS:.0f} ms")
    row("ovh_shot", "↳ gateway - raw (MCP stdio with the base64 image, the tool's code)",
        show_p90=False)


async def run(bench: Bench) -> None:
    r = bench.r
    deadline = time.perf_counter() + SCREENSHOT_BUDGET_S
    host = bench.topo.host("h1")
    raw = bench.raw(host.name)
    tabs: list[tuple[Client, int]] = []
    png_bytes: dict[str, int] = {}
    try:
        async with page_server(host) as base, bench.gateway(bench.env(host.name)) as gw:
            try:
                tab = await bench.live_tab(gw, base + "news.html", tabs)
                await call(gw, "cdp_command", {
                    "method": "Emulation.setDeviceMetricsOverride", "params": VIEWPORT,
                    "tab": tab})
                await bench.attach_raw(raw, gw, tab)

                async def raw_shot() -> None:
                    with anyio.fail_after(RAW_LIVE_TIMEOUT_S):
                        shot = await raw.send("Page.captureScreenshot", {"format": "png"})
                    data = shot["data"]
                    png_bytes["raw"] = len(data) * 3 // 4
                    head = base64.b64decode(data[:32])  # PNG signature + IHDR
                    size = (int.from_bytes(head[16:20]), int.from_bytes(head[20:24]))
                    assert size == (1280, 720), size

                async def gw_shot() -> None:
                    info = await call(gw, "screenshot", {"tab": tab})
                    got = (info["format"], info["width"], info["height"])
                    assert got == ("png", 1280, 720), info
                    png_bytes["gateway"] = info["bytes"]

                n = max(10, bench.opts.calls // 40)
                await bench.interleaved(
                    {"raw_shot": (raw_shot, n), "gw_shot": (gw_shot, n)}, "screenshot",
                    deadline, SCREENSHOT_BUDGET_S, bench.live_warmup(), LIVE_BLOCK)
            finally:
                await bench.close_tabs(tabs)
    finally:
        await raw.aclose()
    gw_row, raw_row = r.rows["gw_shot"], r.rows["raw_shot"]
    gw_row.ok = gw_row.median is not None and gw_row.median <= TARGET_SCREENSHOT_MS
    if gw_row.median is not None and raw_row.median is not None:
        r.rows["ovh_shot"].samples = [gw_row.median - raw_row.median]
    r.meta["screenshot_png_bytes"] = png_bytes
    kb = png_bytes.get("gateway", 0) / 1024
    gw_row.label = (f"gateway `screenshot` viewport PNG 1280x720 ({kb:.0f} KB), news page, "
                    "over SSH")
