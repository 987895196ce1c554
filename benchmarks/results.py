"""The results table: rows of samples, their medians and p90s, and the Markdown they make.

Every phase fills rows it defined (``define_rows``) by key; the table lists the rows of
the phases that ran, in the order they were defined, so it reads top to bottom even
when a phase fails.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "TARGET_VIEW_OVER_FLOOR",
    "Results",
    "Row",
    "RowMaker",
    "at_least",
    "at_most",
    "differences",
    "fmt",
    "percentile",
    "progress",
    "view_limit_ms",
]


def progress(message: str) -> None:
    """One line on stderr (the table goes to stdout)."""
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..1) of a non-empty sequence."""
    ordered = sorted(values)
    rank = max(1, math.ceil(q * len(ordered)))
    return ordered[rank - 1]


@dataclass
class Row:
    """One line of the table; ``samples`` are in the row's unit."""

    key: str
    label: str
    unit: str                       # "ms", "MB", "calls/s", "%"
    samples: list[float] = field(default_factory=list)
    target: str = ""                # the target/floor column
    ok: bool | None = None          # None: a floor or information, no target
    show_p90: bool = True
    phase: str = ""
    hidden: bool = False            # JSON only
    note: str = ""

    @property
    def median(self) -> float | None:
        return percentile(self.samples, 0.5) if self.samples else None

    @property
    def p90(self) -> float | None:
        return percentile(self.samples, 0.9) if self.samples and self.show_p90 else None

    def as_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "label": self.label, "unit": self.unit, "n": len(self.samples),
            "median": self.median, "p90": self.p90, "target": self.target, "ok": self.ok,
        }
        if self.samples:
            data["mean"] = sum(self.samples) / len(self.samples)
            data["min"] = min(self.samples)
            data["max"] = max(self.samples)
        if self.note:
            data["note"] = self.note
        return data


def differences(ours: Sequence[float], floor: Sequence[float]) -> list[float]:
    """Each round's ``ours - floor``, for two rows measured back to back in rounds: a
    change of load between rounds moves both sides of a difference alike."""
    return [a - b for a, b in zip(ours, floor, strict=False)]


def at_most(row: Row, limit: float | None) -> None:
    """The verdict of a row whose median must not exceed ``limit`` (none without one)."""
    row.ok = None if row.median is None or limit is None else row.median <= limit


def at_least(row: Row, limit: float | None) -> None:
    """The verdict of a row whose median must reach ``limit`` (none without one)."""
    row.ok = None if row.median is None or limit is None else row.median >= limit


TARGET_VIEW_OVER_FLOOR = 0.10
"""A page view at most 10 % over its floor (Chrome computing the tree is most of a view),
in the ``view`` and ``peers`` phases alike."""


def view_limit_ms(floor_ms: float | None) -> float | None:
    """The longest view the target allows, given its floor's median in the same run."""
    return None if floor_ms is None else floor_ms * (1 + TARGET_VIEW_OVER_FLOOR)


RowMaker = Callable[..., Row]
"""``Results.row``: what a phase's ``define_rows`` is given."""


def fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "—"
    if unit == "ms":
        if abs(value) < 10:
            return f"{value:.3f} ms"
        return f"{value:.1f} ms" if abs(value) < 100 else f"{value:.0f} ms"
    if unit == "MB":
        return f"{value:.1f} MB"
    if unit == "calls/s":
        return f"{value:.0f} calls/s"
    if unit == "%":
        return f"{value:.0f} %"
    if unit == "x":
        return f"{value:.1f}x"
    if unit in ("msg/s", "B/call", "chars", "refs"):
        return f"{value:,.0f} {unit}"
    return f"{value:g} {unit}"


class Results:
    """The rows, the run's facts (``meta``), and what went wrong (errors, warnings)."""

    def __init__(self) -> None:
        self.rows: dict[str, Row] = {}
        self.meta: dict[str, Any] = {}
        self.errors: list[str] = []
        self.warnings: list[str] = []
        self.phases_run: set[str] = set()

    def row(self, key: str, label: str, unit: str = "ms", **kwargs: Any) -> Row:
        if key not in self.rows:
            self.rows[key] = Row(key, label, unit, **kwargs)
        return self.rows[key]

    def markdown(self, phases: Collection[str] | None = None) -> str:
        """The table of the rows of ``phases`` (default: every phase run)."""
        phases = self.phases_run if phases is None else phases
        lines = ["| measurement | median | p90 | target/floor |", "|---|---:|---:|---|"]
        for row in self.rows.values():
            if row.hidden or row.phase not in phases:
                continue
            target = row.target
            if row.ok is not None and row.samples:
                target = f"{target} {'✅' if row.ok else '❌'}".strip()
            if not row.samples:
                target = f"{target} (not measured)".strip()
            lines.append(f"| {row.label} | {fmt(row.median, row.unit)} | "
                         f"{fmt(row.p90, row.unit)} | {target} |")
        return "\n".join(lines)
