"""The ``profiling`` phase: a trace of a page load and a heap snapshot of a
~50 MB heap, each through the gateway beside the same capture over raw CDP.

Both sides work on the same tab of h1's Chromium (the raw client attaches a session
of its own to the gateway's tab) and alternate, ``ROUNDS`` times each:

* trace: ``performance_trace(reload=true, duration_s=TRACE_S)`` on
  ``tests/e2e/browse_site/perf.html`` against the floor — ``Tracing.start`` with the
  gateway's parameters, ``Page.reload``, the same wait, ``Tracing.end``, then
  ``IO.read`` until EOF into memory, nothing parsed or saved. Beside them: the
  trace's size (gzip, as saved) and the gateway's time minus the floor's (writing,
  parsing and summarising while it streams);
* heap: ``heap_snapshot`` of a tab whose JS heap holds ``HEAP_MB`` MB
  (``Runtime.getHeapUsage``), ``HEAP_ROUNDS`` times, against the floor —
  ``HeapProfiler.takeHeapSnapshot`` with its chunks counted and dropped. Beside them:
  the file's size and the gateway process's peak RSS growth (VmHWM after the
  snapshots - VmRSS before): the snapshot is streamed to disk, so the growth must stay
  far below the file's size;
* pdf: ``pdf`` of ``shop.html`` into a new file, ``PDF_ROUNDS`` times,
  against the floor — ``Page.printToPDF`` with ``transferMode: ReturnAsStream`` and
  ``IO.read`` until EOF into memory. Beside them: the PDF's size and the difference.
"""

from __future__ import annotations

import base64
import contextlib
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from benchmarks.bench import Bench
from benchmarks.clients import call, child_pid_with
from benchmarks.page_server import page_server
from gateway.page.io_stream import READ_BYTES
from gateway.page.profile.tracing import CATEGORIES
from tests.e2e.helpers import proc_status_kb, write_targets
from tests.topology import Topology

__all__ = ["ROW_KEYS", "define_rows", "profiling_phase", "run"]

ROUNDS = 3
PDF_ROUNDS = 5
HEAP_ROUNDS = 2                # a 50 MB snapshot takes Chrome 10-40 s here
TRACE_S = 3.0
HEAP_MB = 50
TARGET_TRACE_OVER_MS = 1000.0
TARGET_HEAP_RSS_SHARE = 0.25   # peak RSS growth ≤ this share of the snapshot file
CAPTURE_TIMEOUT_S = 300.0      # one capture; the gateway's heap_snapshot gets timeout_s
HEAP_TIMEOUT_S = 280.0
SITE = Path(__file__).resolve().parents[1] / "tests" / "e2e" / "browse_site"
ROW_KEYS = ("trace_raw", "trace_gw", "trace_over", "trace_kb", "heap_raw", "heap_gw",
            "heap_over", "heap_file", "heap_rss", "pdf_raw", "pdf_gw", "pdf_over", "pdf_kb")
# ~85 bytes of heap per item (an object, its string and a two-element array; measured:
# 600,000 items → 57 MB used).
FILL_HEAP = ("window.bench = []; for (let i = 0; i < {n}; i++) "
             "bench.push({{i, s: 'item-' + i, t: [i, i + 1]}}); bench.length")


def define_rows(row: Callable[..., Any]) -> None:
    row("trace_raw", f"raw CDP: trace of a reload of perf.html ({TRACE_S:g} s), IO.read "
        "into memory", target="floor")
    row("trace_gw", "gateway `performance_trace` reload (gzip file + summary)")
    row("trace_over", "↳ gateway - floor: saving, parsing, summary", show_p90=False,
        target=f"≤ {TARGET_TRACE_OVER_MS:,.0f} ms")
    row("trace_kb", "↳ trace size as saved (gzip)", unit="kB", show_p90=False)
    row("heap_raw", f"raw CDP: heap snapshot of a ~{HEAP_MB} MB heap, chunks dropped",
        target="floor")
    row("heap_gw", "gateway `heap_snapshot` (file + summary)")
    row("heap_over", "↳ gateway - floor: writing, reading back, summary", show_p90=False)
    row("heap_file", "↳ snapshot file size", unit="MB", show_p90=False)
    row("heap_rss", "↳ gateway peak RSS growth while snapshotting", unit="MB",
        show_p90=False, target=f"≤ {TARGET_HEAP_RSS_SHARE:.0%} of the file")
    row("pdf_raw", "raw CDP: printToPDF of shop.html as a stream, IO.read into memory",
        target="floor")
    row("pdf_gw", "gateway `pdf` of shop.html (a new file)")
    row("pdf_over", "↳ gateway - floor: the call, the file", show_p90=False)
    row("pdf_kb", "↳ PDF size", unit="kB", show_p90=False)


async def profiling_phase(topo: Topology, rows: dict[str, Any], *, gateway: Callable[..., Any],
                          call: Callable[..., Any], raw: Callable[[], Any],
                          serve: Callable[..., Any], pid_of: Callable[[str], int | None],
                          workdir: Path) -> None:
    """Fill the rows. ``gateway(env, args)`` opens an MCP client; ``raw()`` a RawCdp to
    h1; ``serve(host, directory)`` a page server there; ``pid_of(marker)`` finds the
    gateway process."""
    host = topo.host("h1")
    config = write_targets(workdir / "profiling-targets.toml", {"h1": {"ssh": "h1"}})
    floor = raw()
    async with serve(host, SITE) as base, \
            gateway(topo.client_env(), ["--config", str(config)]) as gw:
        pid = pid_of(str(config))
        if pid is None:
            raise RuntimeError("could not find the gateway process")
        tab = int((await call(gw, "new_tab", {}))["tab"])
        try:
            await call(gw, "navigate", {"url": base + "perf.html", "tab": tab})
            info = await call(gw, "cdp_command", {"method": "Target.getTargetInfo",
                                                  "tab": tab})
            await floor.open(attach_to=info["result"]["targetInfo"]["targetId"])
            await floor.send("Page.enable")
            await _traces(gw, call, floor, tab, rows)
            await call(gw, "navigate", {"url": base + "shop.html", "tab": tab})
            await _pdfs(gw, call, floor, tab, rows, workdir)
            await call(gw, "navigate", {"url": "about:blank", "tab": tab})
            await _heaps(gw, call, floor, tab, rows, pid)
        finally:
            await floor.aclose()
            with anyio.CancelScope(shield=True), anyio.move_on_after(10), \
                    contextlib.suppress(Exception):
                await call(gw, "close_tab", {"tab": tab})


async def _timed(work: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    with anyio.fail_after(CAPTURE_TIMEOUT_S):
        result = await work
    return (time.perf_counter() - start) * 1000, result


async def _traces(gw: Any, call: Callable[..., Any], floor: Any, tab: int,
                  rows: dict[str, Any]) -> None:
    for _ in range(ROUNDS):
        raw_ms, raw_bytes = await _timed(_raw_trace(floor))
        gw_ms, result = await _timed(call(gw, "performance_trace", {
            "tab": tab, "reload": True, "duration_s": TRACE_S}))
        Path(result["path"]).unlink()
        rows["trace_raw"].samples.append(raw_ms)
        rows["trace_gw"].samples.append(gw_ms)
        rows["trace_kb"].samples.append(round(result["bytes"] / 1000))
        assert raw_bytes > 0 and result["summary"]["lcp_element"], result
    over = rows["trace_gw"].median - rows["trace_raw"].median
    rows["trace_over"].samples = [over]
    rows["trace_over"].ok = over <= TARGET_TRACE_OVER_MS


async def _raw_trace(floor: Any) -> int:
    """The floor's trace: what the gateway asks Chrome for, read into memory."""
    complete: list[dict[str, Any]] = []

    def note(event: dict[str, Any]) -> None:
        if event.get("method") == "Tracing.tracingComplete":
            complete.append(event["params"])

    await floor.send("Tracing.start", {
        "transferMode": "ReturnAsStream", "streamFormat": "json", "streamCompression": "gzip",
        "traceConfig": {"includedCategories": list(CATEGORIES), "excludedCategories": ["*"]}})
    await floor.send("Page.reload")
    await anyio.sleep(TRACE_S)  # the recording window itself, as the gateway's duration_s
    await floor.send("Tracing.end", events=note)
    while not complete:
        note(json.loads(await floor.ws.recv()))
    return await _raw_read(floor, complete[0]["stream"])


async def _raw_read(floor: Any, handle: str) -> int:
    """A CDP IO stream read into memory, then closed: its size."""
    size = 0
    while True:
        got = await floor.send("IO.read", {"handle": handle, "size": READ_BYTES})
        size += len(base64.b64decode(got["data"]) if got.get("base64Encoded")
                    else got["data"].encode())
        if got.get("eof"):
            break
    await floor.send("IO.close", {"handle": handle})
    return size


async def _pdfs(gw: Any, call: Callable[..., Any], floor: Any, tab: int,
                rows: dict[str, Any], workdir: Path) -> None:
    for n in range(PDF_ROUNDS):
        raw_ms, raw_bytes = await _timed(_raw_pdf(floor))
        path = workdir / f"shop-{n}.pdf"
        gw_ms, result = await _timed(call(gw, "pdf", {"tab": tab, "save_to": str(path)}))
        path.unlink()
        rows["pdf_raw"].samples.append(raw_ms)
        rows["pdf_gw"].samples.append(gw_ms)
        rows["pdf_kb"].samples.append(round(result["bytes"] / 1000))
        assert raw_bytes > 0 and result["bytes"] > 0, result
    rows["pdf_over"].samples = [rows["pdf_gw"].median - rows["pdf_raw"].median]


async def _raw_pdf(floor: Any) -> int:
    """The floor's PDF: what the gateway asks Chrome for, read into memory."""
    printed = await floor.send("Page.printToPDF", {
        "landscape": False, "printBackground": False, "transferMode": "ReturnAsStream"})
    return await _raw_read(floor, printed["stream"])


async def _heaps(gw: Any, call: Callable[..., Any], floor: Any, tab: int,
                 rows: dict[str, Any], pid: int) -> None:
    await call(gw, "evaluate", {"tab": tab, "expression": FILL_HEAP.format(
        n=HEAP_MB * 11_000)})
    usage = await call(gw, "cdp_command", {"method": "Runtime.getHeapUsage", "tab": tab})
    used_mb = usage["result"]["usedSize"] / 1e6
    rows["heap_raw"].label = (f"raw CDP: heap snapshot of a {used_mb:.0f} MB heap "
                              "(Runtime.getHeapUsage), chunks dropped")
    rss_before = proc_status_kb(pid, "VmRSS") / 1024
    for _ in range(HEAP_ROUNDS):
        raw_ms, _ = await _timed(_raw_heap(floor))
        gw_ms, result = await _timed(call(gw, "heap_snapshot", {"tab": tab,
                                                                 "timeout_s": HEAP_TIMEOUT_S}))
        Path(result["path"]).unlink()
        rows["heap_raw"].samples.append(raw_ms)
        rows["heap_gw"].samples.append(gw_ms)
        rows["heap_file"].samples.append(result["file_bytes"] / 1e6)
    growth = proc_status_kb(pid, "VmHWM") / 1024 - rss_before
    rows["heap_rss"].samples = [growth]
    rows["heap_rss"].ok = growth <= TARGET_HEAP_RSS_SHARE * rows["heap_file"].median
    rows["heap_over"].samples = [rows["heap_gw"].median - rows["heap_raw"].median]


async def _raw_heap(floor: Any) -> int:
    """The floor's snapshot: chunks counted as they arrive, then dropped."""
    size = 0

    def count(event: dict[str, Any]) -> None:
        nonlocal size
        if event.get("method") == "HeapProfiler.addHeapSnapshotChunk":
            size += len(event["params"]["chunk"])

    await floor.send("HeapProfiler.enable")
    await floor.send("HeapProfiler.takeHeapSnapshot",
                     {"reportProgress": False, "captureNumericValue": False}, events=count)
    await floor.send("HeapProfiler.disable")
    return size


async def run(bench: Bench) -> None:
    with tempfile.TemporaryDirectory(prefix="csgw-bench-profiling-") as workdir:
        await profiling_phase(
            bench.topo, bench.r.rows,
            gateway=lambda env, args: bench.gateway(env, args, CAPTURE_TIMEOUT_S),
            call=call, raw=lambda: bench.raw("h1"), serve=page_server,
            pid_of=child_pid_with, workdir=Path(workdir))
