"""Benchmark chrome-ssh-gateway against its floors, in one run, on the test topology.

    .venv/bin/python -m benchmarks.run [--hosts 2] [--calls 2000] [--json out.json]
        [--write-docs docs/performance.md]

Brings the test topology up with ``tests.topology.up(n)`` (a healthy running one
with at least ``n`` hosts is reused; it is never torn down here) and prints ONE
Markdown table of medians and p90s, every row measured in this run (``--write-docs``:
also each phase's section of docs/performance.md, ``benchmarks.docs_page``). Each phase is a
module of its own (``PHASES``, in run order), every row beside its floor; see
benchmarks/README.md for what each row means.

The sequential measurements are interleaved in blocks (raw, floor, gateway, …,
rotating the order every round) so that load from other processes on the
machine hits every row alike instead of whichever happened to run last.

Every loop is bounded by a count and by time; the script stops by itself and
closes every tab it opened.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import os
import platform
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from types import ModuleType
from typing import Any

import anyio

from benchmarks import (
    context_phase,
    docs_page,
    download_phase,
    flood_phase,
    launch_phase,
    live_phase,
    load_phase,
    logs_phase,
    model_phase,
    peers_phase,
    profiling_phase,
    route_phase,
    scan_phase,
    screenshot_phase,
    sequential_phase,
    share_phase,
    shell_phase,
    startup_phase,
    targets_phase,
    upload_phase,
    view_phase,
    webdriver_phase,
)
from benchmarks.bench import Bench
from benchmarks.clients import describe
from benchmarks.options import Options, parse_args
from benchmarks.results import Results, progress
from tests.topology import load, up

__all__ = ["PHASES", "main"]

# Each: ROW_KEYS, define_rows(row) and run(bench); the table lists their rows in this order.
PHASES: dict[str, ModuleType] = {
    "sequential": sequential_phase, "startup": startup_phase, "targets": targets_phase,
    "load": load_phase, "flood": flood_phase, "screenshot": screenshot_phase,
    "logs": logs_phase, "live": live_phase, "view": view_phase, "context": context_phase,
    "launch": launch_phase,
    "scan": scan_phase, "share": share_phase, "shell": shell_phase, "upload": upload_phase,
    "download": download_phase, "profiling": profiling_phase, "route": route_phase,
    "webdriver": webdriver_phase, "model": model_phase,
    "peers": peers_phase,
}


def wait_healthy(n_hosts: int, timeout_s: float) -> None:
    """Wait (bounded) while a running topology with enough hosts reports problems.

    Never repairs anything: that is up()'s decision, made afterwards.
    """
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        current = load()
        if current is None or len(current.hosts) < n_hosts or not current.problems():
            return
        time.sleep(0.5)


def define_rows(bench: Bench) -> None:
    """Every phase's rows, in table order, each marked with its phase."""
    for name, module in PHASES.items():
        before = set(bench.r.rows)
        if module is targets_phase:
            targets_phase.define_rows(bench.r.row, bench.opts.concurrency)
        else:
            module.define_rows(bench.r.row)
        defined = set(bench.r.rows) - before
        assert defined == set(module.ROW_KEYS), f"{name}: rows {defined ^ set(module.ROW_KEYS)}"
        for key in defined:
            bench.r.rows[key].phase = name


def environment(bench: Bench) -> dict[str, Any]:
    def version(dist: str) -> str:
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            return "?"

    return {
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        "mcp": version("mcp"), "asyncssh": version("asyncssh"),
        "websockets": version("websockets"), "anyio": version("anyio"),
        "calls": bench.opts.calls, "warmup": bench.opts.warmup,
    }


async def run(bench: Bench) -> Results:
    """Bring the topology up, then each chosen phase (a failed one retried)."""
    opts, r = bench.opts, bench.r
    started = time.perf_counter()
    r.meta.update(environment(bench))
    r.meta["loadavg_start"] = os.getloadavg()
    progress(f"bringing up the topology (tests.topology.up({opts.hosts}))")
    try:
        # Other sessions on this machine inject faults into the shared topology and
        # reset() them; up() would tear an unhealthy topology down and rebuild it under
        # their feet, so give a running one a moment to recover first.
        await anyio.to_thread.run_sync(wait_healthy, opts.hosts, 30.0)
        bench.topo = await anyio.to_thread.run_sync(up, opts.hosts)
    except Exception as exc:
        r.errors.append(f"topology: {describe(exc)}")
        r.meta["loadavg_end"] = os.getloadavg()
        r.meta["wall_s"] = round(time.perf_counter() - started, 1)
        return r
    r.meta["hosts"] = [h.name for h in bench.hosts()]
    chosen: list[tuple[str, Callable[[Bench], Awaitable[None]], Sequence[str]]] = [
        (name, module.run, module.ROW_KEYS) for name, module in PHASES.items()
        if name in opts.phases]
    if opts.profile is not None:
        chosen.append(("profile", sequential_phase.profile, ()))
    for name, phase, keys in chosen:
        r.phases_run.add(name)
        for attempt in range(opts.retries + 1):
            progress(f"phase: {name}" + (f" (retry {attempt})" if attempt else ""))
            try:
                await phase(bench)
                break
            except Exception as exc:  # report, retry once, keep going with the others
                message = f"{name}: {describe(exc)}"
                progress(f"FAILED {message}")
                for key in keys:  # a retry starts the phase's rows afresh
                    r.rows[key].samples.clear()
                    r.rows[key].ok = None
                if attempt == opts.retries:
                    r.errors.append(message)
                else:
                    r.meta.setdefault("retried", []).append(message)
                    await anyio.to_thread.run_sync(wait_healthy, opts.hosts, 30.0)
    r.meta["loadavg_end"] = os.getloadavg()
    r.meta["wall_s"] = round(time.perf_counter() - started, 1)
    return r


def machine_line(results: Results, opts: Options) -> str:
    """What the figures were measured with: versions, machine, calls, load."""
    meta = results.meta
    return (f"Chromium {meta.get('browser', '?')}, Python {meta['python']}, mcp {meta['mcp']}, "
            f"asyncssh {meta['asyncssh']}, websockets {meta['websockets']}; {meta['machine']}; "
            f"{opts.calls} calls per sequential row; load average "
            f"{meta['loadavg_start'][0]:.2f} → {meta['loadavg_end'][0]:.2f}")


def docs_sections(results: Results, opts: Options) -> dict[str, str]:
    """docs/performance.md's section of each phase this run measured without an error:
    the table of its own a phase keeps in ``meta`` (model, peers), else its rows'."""
    measured = f"{time.strftime('%Y-%m-%d')}: {machine_line(results, opts)}."
    failed = {error.split(":", 1)[0] for error in results.errors}
    sections = {}
    for name in PHASES:
        if name not in results.phases_run or name in failed:
            continue
        own = results.meta.get(name)
        if isinstance(own, dict) and "table" in own:
            sections[name] = docs_page.section(name, measured, [own["table"]])
        elif any(row.phase == name and not row.hidden for row in results.rows.values()):
            sections[name] = docs_page.section(name, measured, [results.markdown({name})])
    return sections


def main(argv: Sequence[str] | None = None) -> int:
    opts = parse_args(argv, tuple(PHASES), (__doc__ or "").split("\n")[0])
    if os.geteuid() != 0:
        print("benchmarks need root (the topology uses network namespaces)", file=sys.stderr)
        return 2
    bench = Bench(opts)
    define_rows(bench)
    results = asyncio.run(run(bench))
    table = results.markdown()
    meta = results.meta
    print()
    print(table)
    print()
    print(f"{machine_line(results, opts)}; {meta['wall_s']} s.")
    for extra in ("model", "peers"):  # tables of their own
        if extra in meta:
            print()
            print(meta[extra]["table"])
    for warning in results.warnings:
        print(f"WARNING: {warning}")
    for error in results.errors:
        print(f"ERROR: {error}")
    if opts.docs_path is not None:
        docs_page.write(opts.docs_path, docs_sections(results, opts), tuple(PHASES))
    if opts.json_path is not None:
        payload = {"meta": meta, "rows": {k: row.as_json() for k, row in results.rows.items()},
                   "errors": results.errors, "warnings": results.warnings, "table": table}
        opts.json_path.write_text(json.dumps(payload, indent=2, default=str) + "\n")
    return 1 if results.errors else 0


if __name__ == "__main__":
    sys.exit(main())
