"""The trace and heap-snapshot summaries, on captures from a real Chromium
(``fixtures/profiles/``, written by ``fixtures/capture_profiles.py``): a reload of
``perf.html`` (a 300 ms script, a late banner shifting the paragraph and the image, a
900x600 image as LCP) and a snapshot of ``leak.html`` (400 detached sections).

The streaming readers must give the same answer however the bytes are cut, keep
nothing but what the summary needs, and refuse what is not a trace or a snapshot."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path

import pytest

from gateway.page.profile import heap_summary
from gateway.page.profile.heap_summary import HeapFormatError, summarize_snapshot
from gateway.page.profile.trace_stream import TraceEventStream, TraceFormatError
from gateway.page.profile.trace_summary import TraceDigest, TraceSummary

PROFILES = Path(__file__).parents[2] / "fixtures" / "profiles"
MANIFEST = json.loads((PROFILES / "manifest.json").read_text())
TRACE_GZ = (PROFILES / "perf.trace.json.gz").read_bytes()
SNAPSHOT = gzip.decompress((PROFILES / "leak.heapsnapshot.gz").read_bytes()).decode()


def digest_of(data: bytes, piece: int, *, compressed: bool = True) -> TraceDigest:
    stream, digest = TraceEventStream(gzip=compressed), TraceDigest(MANIFEST["frame"])
    for start in range(0, len(data), piece):
        for event in stream.feed(data[start:start + piece]):
            digest.add(event)
    stream.close()
    return digest


def summary_of(piece: int = 65536) -> TraceSummary:
    return digest_of(TRACE_GZ, piece).summary()


# ------------------------------------------------------------------------------- trace


def test_trace_summary_names_what_the_page_does() -> None:
    summary = summary_of()
    assert summary.url == MANIFEST["perf"]
    assert summary.ttfb_ms is not None and summary.dcl_ms is not None
    assert summary.load_ms is not None
    assert 0 < summary.ttfb_ms <= summary.dcl_ms <= summary.load_ms
    assert summary.dcl_ms >= 300, "the 300 ms script blocks the parser before DCL"
    assert summary.lcp_element == "IMG id='hero'"
    assert summary.lcp_ms is not None and summary.fcp_ms is not None
    assert summary.lcp_ms >= summary.fcp_ms > 0
    assert summary.cls > 0.05 and len(summary.shifted) == 2
    assert all(s.element.startswith("node ") for s in summary.shifted), \
        "without a live page the shifted nodes keep their ids"
    longest = summary.long_tasks.longest[0]
    assert longest.script == MANIFEST["script"] and longest.ms >= 290
    assert summary.long_tasks.count == len(summary.long_tasks.longest) >= 1
    assert summary.main_thread_ms["scripting"] >= 290
    assert set(summary.main_thread_ms) == {"scripting", "rendering", "painting", "loading",
                                           "other"}
    assert not summary.truncated


def test_shifted_nodes_get_the_names_given() -> None:
    digest = digest_of(TRACE_GZ, 65536)
    nodes = [node for node, _ in digest.shifted_nodes()]
    summary = digest.summary({nodes[0]: "P id='intro'"})
    assert summary.shifted[0].element == "P id='intro'"
    assert summary.shifted[0].score == pytest.approx(summary.cls)


@pytest.mark.parametrize("piece", [1, 7, 4096, 1 << 20])
def test_trace_reading_does_not_depend_on_how_the_stream_is_cut(piece: int) -> None:
    if piece == 1:
        data = TRACE_GZ[:4000]  # byte by byte is slow: the start, to the first events
        stream, n = TraceEventStream(gzip=True), 0
        for i in range(len(data)):
            n += len(list(stream.feed(data[i:i + 1])))
        assert n > 10
        return
    assert summary_of(piece) == summary_of()


def test_trace_uncompressed_and_bare_array() -> None:
    text = gzip.decompress(TRACE_GZ)
    assert digest_of(text, 10_000, compressed=False).summary() == summary_of()
    events = json.loads(text)["traceEvents"]
    bare = json.dumps(events).encode()
    assert digest_of(bare, 10_000, compressed=False).summary() == summary_of()


def test_another_frame_sees_no_navigation() -> None:
    stream, digest = TraceEventStream(gzip=True), TraceDigest("not-this-tab")
    for event in stream.feed(TRACE_GZ):
        digest.add(event)
    summary = digest.summary()
    assert summary.url is None and summary.lcp_ms is None and summary.cls == 0


@pytest.mark.parametrize(("data", "compressed", "error"), [
    (b"<html>not a trace</html>", False, "not a Chrome trace"),
    (b'{"traceEvents":[{"name":"a"},', False, "ended before its events array closed"),
    (b"not gzip at all", True, "not valid gzip"),
])
def test_not_a_trace_is_refused(data: bytes, compressed: bool, error: str) -> None:
    stream = TraceEventStream(gzip=compressed)
    with pytest.raises(TraceFormatError, match=error):
        list(stream.feed(data))
        stream.close()


def test_cut_off_trace_is_refused() -> None:
    text = gzip.decompress(TRACE_GZ)
    stream = TraceEventStream(gzip=False)
    events = list(stream.feed(text[: len(text) // 2]))
    assert events
    with pytest.raises(TraceFormatError, match="ended before"):
        stream.close()


def test_worst_session_window_of_layout_shifts() -> None:
    digest = TraceDigest("F")
    second = 1_000_000
    for at, score, node in [(1, 0.1, 1), (1.5, 0.1, 2), (4, 0.05, 3), (4.2, 0.3, 4),
                            (4.9, 0.01, 4)]:
        digest.add({"name": "LayoutShift", "ph": "I", "ts": at * second, "pid": 1, "tid": 1,
                    "args": {"frame": "F", "data": {"weighted_score_delta": score,
                                                    "impacted_nodes": [{"node_id": node}]}}})
    digest.add({"name": "LayoutShift", "ph": "I", "ts": 5 * second, "pid": 1, "tid": 1,
                "args": {"frame": "F", "data": {"weighted_score_delta": 5,
                                                "had_recent_input": True}}})
    summary = digest.summary()
    assert summary.cls == pytest.approx(0.36), "the window 4-4.9 s; input-driven shift left out"
    assert [s.element for s in summary.shifted] == ["node 4", "node 3"]


# -------------------------------------------------------------------------------- heap


def snapshot_summary(text: str = SNAPSHOT) -> heap_summary.HeapSummary:
    return summarize_snapshot(io.StringIO(text))


def test_heap_summary_shows_the_detached_nodes() -> None:
    summary = snapshot_summary()
    meta = json.loads(SNAPSHOT)["snapshot"]
    assert summary.nodes == meta["node_count"]
    assert summary.detached_nodes == 401  # the 400 sections and the list that held them
    worst = summary.detached[0]
    assert (worst.constructor, worst.count) == ('<section class="leaked-item">', 400)
    assert worst.self_bytes > 0
    assert len(summary.top) == 10
    sizes = [c.self_bytes for c in summary.top]
    assert sizes == sorted(sizes, reverse=True)
    assert summary.heap_bytes > sum(sizes)
    assert any(c.constructor == "(closure)" for c in summary.top)


def test_heap_summary_matches_a_whole_parse() -> None:
    """The same numbers as reading the whole JSON, for the biggest constructor."""
    whole = json.loads(SNAPSHOT)
    fields = whole["snapshot"]["meta"]["node_fields"]
    types = whole["snapshot"]["meta"]["node_types"][0]
    width, nodes, strings = len(fields), whole["nodes"], whole["strings"]
    biggest = snapshot_summary().top[0]
    count = size = 0
    for i in range(0, len(nodes), width):
        kind = types[nodes[i + fields.index("type")]]
        name = strings[nodes[i + fields.index("name")]]
        if (f"({kind})" if kind == "array" else name) == biggest.constructor:
            count += 1
            size += nodes[i + fields.index("self_size")]
    assert (count, size) == (biggest.count, biggest.self_bytes)


@pytest.mark.parametrize("piece", [5, 999, 1 << 16])
def test_heap_reading_does_not_depend_on_the_piece_size(piece: int,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    expected = snapshot_summary()
    monkeypatch.setattr(heap_summary, "READ_CHARS", piece)
    assert snapshot_summary() == expected


@pytest.mark.parametrize(("text", "error"), [
    ('{"not":"a snapshot"}', "no nodes array"),
    (SNAPSHOT[: len(SNAPSHOT) // 3], "ends inside an array"),
    (SNAPSHOT[: SNAPSHOT.index('"strings":[') + 2000], "cut off"),
    (SNAPSHOT.replace('"nodes":[9,', '"nodes":[x,', 1), "non-integer"),
])
def test_not_a_snapshot_is_refused(text: str, error: str) -> None:
    with pytest.raises(HeapFormatError, match=error):
        snapshot_summary(text)


def test_slices_kept_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    from gateway.page.profile import trace_summary

    monkeypatch.setattr(trace_summary, "MAX_SLICES", 50)
    summary = summary_of()
    assert summary.truncated
    assert summary.lcp_element == "IMG id='hero'", "marks are kept whatever the slice count"
