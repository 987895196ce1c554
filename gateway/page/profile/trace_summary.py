"""What a model needs from a performance trace, read event by event as the trace streams in.

``TraceDigest.add`` sees every event once and keeps only what the summary uses: the
handful of navigation marks of the tab's main frame, its layout shifts, and the slices
of its renderer's main thread (three numbers each, in ``array``s: ~17 bytes a slice,
``MAX_SLICES`` in all) — never the events themselves. ``summary()`` then works out, as
the DevTools Performance panel does:

- navigation timings of the last navigation of the main frame in the trace (``ttfb_ms``
  from the document's response headers, ``dcl_ms``, ``load_ms``, ``fcp_ms``, ``lcp_ms``
  and the LCP element as Chrome names it), all from the navigation's start;
- ``cls``: the largest session window of layout shifts without recent input (gaps under
  1 s, at most 5 s long), and the nodes that moved (their backend node ids; the caller
  names them, which needs the live page);
- long tasks: main-thread tasks over 50 ms; ``tbt_ms`` sums their time beyond 50 ms
  after first contentful paint (the whole trace when it has no paint), and each of
  the 5 longest names the script it ran (the longest script slice inside it);
- main-thread time by category (scripting, rendering, painting, loading, other): each
  slice's self time, slices the table does not know counted in their parent.

Pure: tested on a captured trace (``fixtures/profiles/perf.trace.json.gz``).
"""

from __future__ import annotations

from array import array
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from gateway.output.absent import absent

__all__ = ["MAX_SLICES", "LongTask", "LongTasks", "Shift", "TraceDigest", "TraceSummary"]

MAX_SLICES = 2_000_000
LONG_TASK_US = 50_000
SCRIPT_SLICE_MIN_US = 1_000  # shorter script slices cannot name a 50 ms task
SHIFT_GAP_US, SHIFT_WINDOW_US = 1_000_000, 5_000_000

CATEGORIES = ("scripting", "rendering", "painting", "loading", "other")
_KIND = {name: CATEGORIES.index(category) for category, names in {
    "scripting": ("EvaluateScript", "FunctionCall", "TimerFire", "EventDispatch", "v8.compile",
                  "v8.compileModule", "v8.evaluateModule", "v8.produceCache", "RunMicrotasks",
                  "FireAnimationFrame", "FireIdleCallback", "XHRReadyStateChange", "XHRLoad",
                  "V8.Execute", "MinorGC", "MajorGC", "BlinkGC.AtomicPhase",
                  "CppGC.AtomicPause", "V8.GC_SCAVENGER", "V8.GC_MARK_COMPACTOR"),
    "rendering": ("Layout", "UpdateLayoutTree", "RecalculateStyles", "HitTest", "PrePaint",
                  "Layerize", "UpdateLayer", "UpdateLayerTree", "ComputeIntersections",
                  "IntersectionObserverController::computeIntersections"),
    "painting": ("Paint", "PaintImage", "Decode Image", "Decode LazyPixelRef", "Commit",
                 "CompositeLayers", "RasterTask", "PaintSetup", "ImageDecodeTask"),
    "loading": ("ParseHTML", "ParseAuthorStyleSheet"),
    "other": ("RunTask",),
}.items() for name in names}
_SCRIPTS = frozenset({"EvaluateScript", "FunctionCall", "v8.compile", "v8.evaluateModule",
                      "v8.compileModule"})


class LongTask(BaseModel):
    at_ms: float
    ms: float
    script: str | None = absent()
    function: str | None = absent()


class LongTasks(BaseModel):
    count: int
    tbt_ms: float
    longest: list[LongTask]


class Shift(BaseModel):
    element: str
    score: float


class TraceSummary(BaseModel):
    url: str | None = absent()
    ttfb_ms: float | None = absent()
    dcl_ms: float | None = absent()
    load_ms: float | None = absent()
    fcp_ms: float | None = absent()
    lcp_ms: float | None = absent()
    lcp_element: str | None = absent()
    cls: float
    shifted: list[Shift]
    long_tasks: LongTasks
    main_thread_ms: dict[str, float]
    trace_ms: float
    truncated: bool = absent(False)


@dataclass
class _Thread:
    """One renderer main thread's slices, compactly."""

    ts: array[float] = field(default_factory=lambda: array("d"))
    dur: array[float] = field(default_factory=lambda: array("d"))
    kind: array[int] = field(default_factory=lambda: array("b"))
    scripts: list[tuple[float, float, str, str]] = field(default_factory=list)


@dataclass
class _Navigation:
    ts: float
    url: str


class TraceDigest:
    """The parts of a trace that ``summary()`` needs, for the tab whose main frame is
    ``frame_id`` (a tab's CDP targetId)."""

    def __init__(self, frame_id: str) -> None:
        self.frame = frame_id
        self.truncated = False
        self._main: dict[tuple[int, int], _Thread] = {}
        self._pids: set[int] = set()
        self._navigations: dict[str, _Navigation] = {}
        self._responses: dict[str, float] = {}
        self._marks: dict[str, list[float]] = defaultdict(list)
        self._fcp: dict[str, float] = {}
        self._lcp: dict[str, tuple[int, float, str | None]] = {}
        self._shifts: list[tuple[float, float, list[int]]] = []
        self._slices = 0
        self._first = self._last = 0.0

    def add(self, event: dict[str, Any]) -> None:
        name, ph, args = event.get("name"), event.get("ph"), event.get("args") or {}
        ts = event.get("ts")
        if ph == "M":
            if name == "thread_name" and args.get("name") == "CrRendererMain":
                self._main.setdefault((event.get("pid", 0), event.get("tid", 0)), _Thread())
            return
        if not isinstance(ts, (int, float)) or ts <= 0:
            return
        self._first = min(self._first, ts) if self._first else ts
        self._last = max(self._last, ts + (event.get("dur") or 0))
        thread = self._main.get((event.get("pid", 0), event.get("tid", 0)))
        if ph == "X" and thread is not None:
            self._slice(thread, name, ts, event.get("dur") or 0, args)
        elif isinstance(name, str):
            self._mark(name, ts, args)

    def _slice(self, thread: _Thread, name: Any, ts: float, dur: float,
               args: dict[str, Any]) -> None:
        kind = _KIND.get(name)
        if kind is None or dur <= 0:
            return
        if self._slices >= MAX_SLICES:
            self.truncated = True
            return
        self._slices += 1
        thread.ts.append(ts)
        thread.dur.append(dur)
        thread.kind.append(kind)
        data = args.get("data") or {}
        if name in _SCRIPTS and dur >= SCRIPT_SLICE_MIN_US and data.get("url"):
            thread.scripts.append((ts, dur, str(data["url"])[:500],
                                   str(data.get("functionName") or "")[:200]))

    def _mark(self, name: str, ts: float, args: dict[str, Any]) -> None:
        data = args.get("data") or {}
        frame = args.get("frame") or data.get("frame")
        if name in ("TracingStartedInBrowser", "FrameCommittedInBrowser"):
            for committed in data.get("frames") or [data]:
                if committed.get("frame") == self.frame and committed.get("processId"):
                    self._pids.add(committed["processId"])
            return
        if frame != self.frame:
            return
        if name == "navigationStart" and data.get("documentLoaderURL"):
            self._navigations[data.get("navigationId", "")] = _Navigation(
                ts, data["documentLoaderURL"])
        elif name == "ResourceReceiveResponse":
            timing = data.get("timing") or {}
            headers = timing.get("receiveHeadersStart", timing.get("receiveHeadersEnd"))
            if timing.get("requestTime") and headers is not None:
                self._responses[data.get("requestId", "")] = (timing["requestTime"] * 1e6
                                                              + headers * 1e3)
        elif name in ("MarkDOMContent", "MarkLoad") and data.get("isMainFrame"):
            self._marks[name].append(ts)
        elif name == "firstContentfulPaint":
            self._fcp[data.get("navigationId", "")] = ts
        elif name == "largestContentfulPaint::Candidate":
            index = data.get("candidateIndex", 0)
            navigation = data.get("navigationId", "")
            if index >= self._lcp.get(navigation, (-1, 0.0, None))[0]:
                self._lcp[navigation] = (index, ts, data.get("nodeName"))
        elif name == "LayoutShift" and not data.get("had_recent_input"):
            score = data.get("weighted_score_delta", data.get("score", 0.0))
            nodes = [n["node_id"] for n in data.get("impacted_nodes") or () if "node_id" in n]
            self._shifts.append((ts, float(score), nodes))

    # ----------------------------------------------------------------- summary

    def shifted_nodes(self) -> list[tuple[int, float]]:
        """The nodes moved in the worst session window, most shifted first (5 at most):
        (backend node id, the window's score they took part in)."""
        window = _worst_window(sorted(self._shifts))
        by_node: dict[int, float] = defaultdict(float)
        for _, score, nodes in window:
            for node in nodes:
                by_node[node] += score
        return sorted(by_node.items(), key=lambda item: -item[1])[:5]

    def summary(self, names: dict[int, str] | None = None) -> TraceSummary:
        """The summary; ``names``: the shifted nodes' descriptions (``shifted_nodes``)."""
        navigation = max(self._navigations.items(), key=lambda item: item[1].ts, default=None)
        origin = navigation[1].ts if navigation else self._first
        summary = TraceSummary(
            cls=round(sum(s for _, s, _ in _worst_window(sorted(self._shifts))), 4),
            shifted=[Shift(element=(names or {}).get(node, f"node {node}"), score=round(s, 4))
                     for node, s in self.shifted_nodes()],
            long_tasks=self._long_tasks(origin, self._fcp.get(navigation[0]) if navigation
                                        else None),
            main_thread_ms=self._by_category(), trace_ms=_ms(self._last - self._first),
            truncated=self.truncated)
        if navigation is None:
            return summary
        nav_id, nav = navigation

        def after(mark: str) -> float | None:
            later = [ts for ts in self._marks[mark] if ts >= nav.ts]
            return _ms(min(later) - nav.ts) if later else None

        response = self._responses.get(nav_id)
        lcp = self._lcp.get(nav_id)
        fcp = self._fcp.get(nav_id)
        summary.url = nav.url[:500]
        summary.ttfb_ms = _ms(response - nav.ts) if response else None
        summary.dcl_ms, summary.load_ms = after("MarkDOMContent"), after("MarkLoad")
        summary.fcp_ms = _ms(fcp - nav.ts) if fcp else None
        if lcp is not None:
            summary.lcp_ms, summary.lcp_element = _ms(lcp[1] - nav.ts), lcp[2]
        return summary

    def _threads(self) -> list[_Thread]:
        """The main threads of the tab's renderer processes (every renderer's, if the
        trace did not say which process the tab's frame lives in)."""
        mine = [t for (pid, _), t in self._main.items() if pid in self._pids]
        return mine or list(self._main.values())

    def _long_tasks(self, origin: float, fcp: float | None) -> LongTasks:
        tasks: list[tuple[float, float, _Thread]] = []
        for thread in self._threads():
            other = CATEGORIES.index("other")
            tasks += [(thread.ts[i], thread.dur[i], thread) for i in range(len(thread.ts))
                      if thread.kind[i] == other and thread.dur[i] >= LONG_TASK_US]
        blocking = sum(d - LONG_TASK_US for ts, d, _ in tasks if fcp is None or ts >= fcp)
        longest = []
        for ts, dur, thread in sorted(tasks, key=lambda t: -t[1])[:5]:
            inside = [s for s in thread.scripts if ts <= s[0] <= ts + dur]
            script = max(inside, key=lambda s: s[1], default=None)
            longest.append(LongTask(at_ms=_ms(ts - origin), ms=_ms(dur),
                                    script=script[2] if script else None,
                                    function=(script[3] or None) if script else None))
        return LongTasks(count=len(tasks), tbt_ms=_ms(blocking), longest=longest)

    def _by_category(self) -> dict[str, float]:
        """Self time per category over the main threads: a slice's time minus its
        children's (slices nest on one thread; sorted by start, longest first)."""
        totals = [0.0] * len(CATEGORIES)
        for thread in self._threads():
            order = sorted(range(len(thread.ts)), key=lambda i: (thread.ts[i], -thread.dur[i]))
            stack: list[tuple[float, int]] = []  # (end, slice index)
            self_time = list(thread.dur)
            for i in order:
                start, end = thread.ts[i], thread.ts[i] + thread.dur[i]
                while stack and stack[-1][0] <= start:
                    stack.pop()
                if stack:
                    self_time[stack[-1][1]] -= min(end, stack[-1][0]) - start
                stack.append((end, i))
            for i, spent in enumerate(self_time):
                totals[thread.kind[i]] += max(spent, 0.0)
        return {name: _ms(total) for name, total in zip(CATEGORIES, totals, strict=True)}


def _worst_window(shifts: list[tuple[float, float, list[int]]]
                  ) -> list[tuple[float, float, list[int]]]:
    """The session window of layout shifts with the largest total score."""
    best: list[tuple[float, float, list[int]]] = []
    window: list[tuple[float, float, list[int]]] = []
    for shift in shifts:
        if window and (shift[0] - window[-1][0] > SHIFT_GAP_US
                       or shift[0] - window[0][0] > SHIFT_WINDOW_US):
            window = []
        window.append(shift)
        if sum(s for _, s, _ in window) > sum(s for _, s, _ in best):
            best = list(window)
    return best


def _ms(us: float) -> float:
    return round(us / 1000, 1)
