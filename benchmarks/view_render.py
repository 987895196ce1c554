"""How fast the page view renders, and how big it is, on the captured fixtures.

    .venv/bin/python -m benchmarks.view_render [--runs 300] [--json out.json]

Pure CPU, no browser: each fixture in ``fixtures/ax`` (captured from real
Chromium by ``fixtures/capture_ax.py``) is rendered ``--runs`` times. Prints
one Markdown table: per page the AX node count, the view's size in characters,
its refs, and the render time (median, p90, best) — for ``news``, the
~1,600-node link table the issue sets the targets on (render ≤ 5 ms, view ≤
12,000 characters with every link and control keeping a ref and every link its
destination).

Parsing the JSON text is not timed: the gateway gets Python objects from its
websocket reader either way. ``snapshot_from_json`` (the envelope check) is
timed with the render. ``attribute_requests`` — the scan for controls that
need ``DOM.describeNode`` before rendering — is timed on its own column.

Wall-clock time on a shared machine includes waiting for a CPU, so a
calibration row times a fixed pure-Python loop (100,000 additions) in the same
run: when that row is slow too, the machine was busy, not the renderer.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from gateway.page.view import attribute_requests, render_view, snapshot_from_json

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "ax"
PAGES = ("news", "form", "landmarks", "frames", "tables", "shadow")
TARGET_RENDER_MS = 5.0
TARGET_NEWS_CHARS = 12_000


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..1) of a non-empty sequence."""
    ordered = sorted(values)
    return ordered[max(1, math.ceil(q * len(ordered))) - 1]


def timings_ms(work: Callable[[], object], runs: int) -> list[float]:
    work()  # warm up: first-call costs are not what a long-running gateway pays
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        work()
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def calibration() -> None:
    total = 0
    for i in range(100_000):
        total += i


def measure(page: str, runs: int) -> dict[str, Any]:
    data = json.loads((FIXTURES / f"{page}.json").read_text())
    view = render_view(snapshot_from_json(data))
    samples = timings_ms(lambda: render_view(snapshot_from_json(data)), runs)
    snapshot = snapshot_from_json(data)
    asked = timings_ms(lambda: attribute_requests(snapshot), max(1, runs // 3))
    links = sum(1 for r in view.refs.values() if r.role == "link")
    return {
        "page": page,
        "ax_nodes": sum(len(f["nodes"]) for f in data["frames"]),
        "frames": len(data["frames"]),
        "chars": len(view.text),
        "refs": len(view.refs),
        "links": links,
        "median_ms": statistics.median(samples),
        "p90_ms": percentile(samples, 0.9),
        "best_ms": min(samples),
        "attribute_requests_ms": statistics.median(asked),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=300, help="renders per page (default 300)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")

    rows = [measure(page, args.runs) for page in PAGES]
    loop = timings_ms(calibration, max(10, args.runs // 10))
    print("| page | AX nodes | frames | view chars | refs (links) | render median | p90 | best "
          "| attribute_requests |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['page']} | {r['ax_nodes']} | {r['frames']} | {r['chars']:,} | "
              f"{r['refs']} ({r['links']}) | {r['median_ms']:.2f} ms | {r['p90_ms']:.2f} ms | "
              f"{r['best_ms']:.2f} ms | {r['attribute_requests_ms']:.2f} ms |")
    print(f"| calibration: 100k-addition loop | | | | | {statistics.median(loop):.2f} ms | "
          f"{percentile(loop, 0.9):.2f} ms | {min(loop):.2f} ms | |")
    news = next(r for r in rows if r["page"] == "news")
    render_ok = news["median_ms"] <= TARGET_RENDER_MS
    size_ok = news["chars"] <= TARGET_NEWS_CHARS
    print()
    print(f"news render median {news['median_ms']:.2f} ms (target ≤ {TARGET_RENDER_MS:g} ms): "
          f"{'ok' if render_ok else 'MISSED'}")
    print(f"news view {news['chars']:,} characters (target ≤ {TARGET_NEWS_CHARS:,}): "
          f"{'ok' if size_ok else 'MISSED'}")
    if args.json is not None:
        args.json.write_text(json.dumps({"runs": args.runs, "pages": rows,
                                         "calibration_ms": statistics.median(loop)}, indent=2))
    return 0 if render_ok and size_ok else 1


if __name__ == "__main__":
    sys.exit(main())
