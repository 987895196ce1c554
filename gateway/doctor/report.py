"""What ``doctor`` found: the steps of each target, the JSON document and the text table.

Pure: nothing here does I/O. ``Recorder`` is how the checks fill a target's
report; a failed step raises ``StopCheck``, which ends that target's check
(the steps after it stay ``skipped``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Literal, NoReturn

__all__ = [
    "SSH_STEPS",
    "STEPS",
    "Recorder",
    "Report",
    "Step",
    "StepStatus",
    "StopCheck",
    "TargetReport",
    "render_text",
]

StepStatus = Literal["ok", "failed", "skipped"]

STEPS: tuple[tuple[str, str], ...] = (
    ("config", "config parsed"),
    ("dns", "DNS resolution"),
    ("tcp", "TCP connect"),
    ("host_key", "host key known"),
    ("auth", "authenticated"),
    ("webdriver", "WebDriver status"),
    ("session", "session created"),
    ("endpoint", "DevTools endpoint"),
    ("launch", "launch"),
    ("websocket", "websocket handshake"),
    ("browser", "browser version"),
    ("tabs", "tab count"),
)
"""(JSON name, table label) of every step, in the order they run."""

SSH_STEPS = frozenset({"dns", "tcp", "host_key", "auth"})
"""The steps a local target skips."""


@dataclass
class Step:
    name: str
    status: StepStatus = "skipped"
    ms: float | None = None
    detail: str = ""
    fix: str = ""


@dataclass
class TargetReport:
    name: str
    where: str                       # "ssh h1" / "local"
    steps: list[Step] = field(default_factory=lambda: [Step(name) for name, _ in STEPS])

    def step(self, name: str) -> Step:
        for step in self.steps:
            if step.name == name:
                return step
        raise KeyError(name)

    @property
    def up(self) -> bool:
        return not any(step.status == "failed" for step in self.steps)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "where": self.where,
            "up": self.up,
            "steps": [
                {"name": s.name, "status": s.status,
                 "ms": None if s.ms is None else round(s.ms, 1),
                 "detail": s.detail, "fix": s.fix or None}
                for s in self.steps
            ],
        }


@dataclass
class Report:
    source: str                      # where the configuration came from
    targets: list[TargetReport]

    @property
    def up(self) -> bool:
        return all(t.up for t in self.targets)

    def to_json(self) -> dict[str, Any]:
        return {"config": self.source, "up": self.up,
                "targets": [t.to_json() for t in self.targets]}


class StopCheck(Exception):
    """The target's check ends here: a step failed, or there is nothing left to check."""


class Recorder:
    """Fills one ``TargetReport``: the SSH and browser checks share it, so that a
    step is marked in one way only, and a failure always stops the check."""

    def __init__(self, report: TargetReport) -> None:
        self.report = report

    def ok(self, name: str, ms: float, detail: str) -> None:
        step = self.report.step(name)
        step.status, step.ms, step.detail = "ok", ms, detail

    def fail(self, name: str, ms: float, detail: str, fix: str) -> NoReturn:
        step = self.report.step(name)
        step.status, step.ms, step.detail, step.fix = "failed", ms, detail, fix
        raise StopCheck

    def note(self, names: tuple[str, ...] | frozenset[str], detail: str) -> None:
        """Say why steps that will not run are skipped."""
        for name in names:
            self.report.step(name).detail = detail

    @staticmethod
    def since(start: float, end: float | None = None) -> float:
        """Milliseconds from ``start`` (a ``time.monotonic()``) to ``end`` or now."""
        return ((end if end is not None else time.monotonic()) - start) * 1000


_STATUS_TEXT = {"ok": "ok", "failed": "FAIL", "skipped": "skip"}


def render_text(report: Report) -> str:
    """The human-readable report: per target a table, then the fix lines under it."""
    labels = dict(STEPS)
    width = max(len(label) for label in labels.values())
    out: list[str] = [f"configuration: {report.source}", ""]
    for target in report.targets:
        verdict = "UP" if target.up else "DOWN"
        out.append(f"{target.name} ({target.where}): {verdict}")
        out.append(f"  {'step':<{width}}  {'status':<6}  {'ms':>7}  detail")
        for step in target.steps:
            ms = "" if step.ms is None else f"{step.ms:.1f}"
            out.append(f"  {labels[step.name]:<{width}}  {_STATUS_TEXT[step.status]:<6}  "
                       f"{ms:>7}  {step.detail}".rstrip())
        for step in target.steps:
            if step.fix:
                out.append(f"  fix ({labels[step.name]}): {step.fix}")
        out.append("")
    up = sum(1 for t in report.targets if t.up)
    out.append(f"{len(report.targets)} target{'s' if len(report.targets) != 1 else ''}: "
               f"{up} up, {len(report.targets) - up} down")
    return "\n".join(out) + "\n"
