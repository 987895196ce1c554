"""Captured CDP event streams (fixtures/events, written by fixtures/capture_events.py).

Each ``<page>.jsonl`` holds every event one real headless Chromium sent on a
page's flattened session, in arrival order. ``manifest.json`` says which origins
and which refused port that capture used, so tests derive URLs instead of
hard-coding ports that change with every capture.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any, Protocol

EVENTS = Path(__file__).parents[2] / "fixtures" / "events"

Event = tuple[str, dict[str, Any]]


class Collector(Protocol):
    def on_event(self, method: str, params: dict[str, Any]) -> None: ...

    def navigated(self) -> None: ...


@cache
def manifest() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((EVENTS / "manifest.json").read_text())
    return data


def load(page: str) -> list[Event]:
    """The events of ``page`` in order, as fresh objects (tests may mutate them)."""
    with (EVENTS / f"{page}.jsonl").open() as f:
        return [(e["method"], e["params"]) for e in map(json.loads, f)]


def all_events() -> list[Event]:
    return [event for page in manifest()["pages"] for event in load(page)]


def is_main_frame_navigation(method: str, params: dict[str, Any], frame_id: str) -> bool:
    """A new document in the main frame: its first request (a redirect hop is not a new one)."""
    return (method == "Network.requestWillBeSent" and params.get("type") == "Document"
            and params.get("frameId") == frame_id
            and params.get("requestId") == params.get("loaderId")
            and "redirectResponse" not in params)


def replay(events: list[Event], *collectors: Collector, frame_id: str | None = None) -> None:
    """Feed ``events`` to ``collectors``; with ``frame_id``, mark main-frame navigations."""
    for method, params in events:
        if frame_id is not None and is_main_frame_navigation(method, params, frame_id):
            for collector in collectors:
                collector.navigated()
        for collector in collectors:
            collector.on_event(method, params)
