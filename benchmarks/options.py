"""The command line of ``python -m benchmarks.run``: its options, checked once."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Options", "parse_args"]


@dataclass
class Options:
    hosts: int
    calls: int
    warmup: int
    starts: int
    concurrency: int
    retries: int
    phases: tuple[str, ...]
    sequential_budget_s: float
    profile: Path | None
    json_path: Path | None
    docs_path: Path | None


def parse_args(argv: Sequence[str] | None, phases: Sequence[str],
               description: str) -> Options:
    """``phases``: every phase's name, in run order (the default runs them all)."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run", description=description)
    parser.add_argument("--hosts", type=int, default=2,
                        help="topology hosts to use (default 2; a running topology with more "
                             "is reused)")
    parser.add_argument("--calls", type=int, default=2000,
                        help="sequential calls per measurement (default 2000); also sizes "
                             "the throughput rounds")
    parser.add_argument("--warmup", type=int, default=50,
                        help="unmeasured calls before each sequential measurement (default 50)")
    parser.add_argument("--starts", type=int, default=5,
                        help="process starts per start-up measurement (default 5)")
    parser.add_argument("--concurrency", type=int, default=32,
                        help="tabs / concurrent callers over the 8 targets (default 32)")
    parser.add_argument("--budget", type=float, default=60.0,
                        help="seconds the sequential calls may take at most (default 60); "
                             "a loaded machine reports fewer calls instead of running long")
    parser.add_argument("--retries", type=int, default=1,
                        help="re-run a phase that failed, e.g. because a test on this machine "
                             "restarted a browser (default 1)")
    parser.add_argument("--phases", default=",".join(phases),
                        help=f"comma-separated subset of {','.join(phases)} (default: all)")
    parser.add_argument("--json", type=Path, default=None, metavar="PATH",
                        help="also write every number (and the table) to this JSON file")
    parser.add_argument("--write-docs", type=Path, default=None, metavar="PATH",
                        help="also rewrite the sections of the phases run in this Markdown "
                             "page (docs/performance.md), leaving the other phases' alone")
    parser.add_argument("--profile", type=Path, default=None, metavar="PATH",
                        help="afterwards, run --calls evaluate + cdp_command calls through a "
                             "gateway under cProfile, write the stats to PATH and print the "
                             "top functions (not part of the table)")
    args = parser.parse_args(argv)
    if args.hosts < 1 or args.calls < 1 or args.warmup < 0 or args.starts < 1 \
            or not 1 <= args.concurrency <= 256:
        parser.error("--hosts, --calls, --starts must be ≥ 1, --warmup ≥ 0, "
                     "--concurrency 1..256")
    chosen = tuple(p.strip() for p in args.phases.split(",") if p.strip())
    unknown = set(chosen) - set(phases)
    if unknown or not chosen:
        parser.error(f"--phases: unknown {sorted(unknown)}; use {','.join(phases)}")
    return Options(hosts=args.hosts, calls=args.calls, warmup=args.warmup, starts=args.starts,
                   concurrency=args.concurrency, retries=max(0, args.retries),
                   phases=chosen, sequential_budget_s=args.budget,
                   profile=args.profile.resolve() if args.profile else None,
                   json_path=args.json, docs_path=args.write_docs)
