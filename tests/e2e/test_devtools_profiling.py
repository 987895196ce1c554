"""``performance_trace`` and ``heap_snapshot`` on a remote Chromium, through real sshd.

The pages (``tests/e2e/browse_site/``): ``perf.html`` runs ``slow-script.js`` (a
300 ms busy loop while the page parses, then a late banner that pushes the paragraph
and the 900x600 ``hero.svg`` down); ``leak.html`` keeps 400 removed ``<section
class="leaked-item">`` elements alive from a global array. The summaries must name
these; the saved files must be what DevTools loads (a gzipped JSON trace with
``traceEvents``, a heap snapshot with ``snapshot.meta``).
"""

from __future__ import annotations

import gzip
import json
import os
import stat
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.e2e.helpers import call_err, call_ok, eventually, present, text_of
from tests.e2e.pages import DevtoolsEnv, devtools_gateway, open_page
from tests.topology import Topology

pytestmark = pytest.mark.anyio

TRACE_TIMEOUT = 120.0


@pytest.fixture(scope="module")
async def env(
    topology: Topology, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[DevtoolsEnv]:
    async with devtools_gateway(topology, tmp_path_factory.mktemp("devtools-profiling"),
                                hosts=("h1",)) as e:
        yield e


async def page(env: DevtoolsEnv, path: str) -> int:
    return await open_page(env.client, env.site("h1"), f"/browse/{path}", "h1")


def trace_events(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt") as f:
        return list(json.load(f)["traceEvents"])


async def test_trace_of_a_reload_names_the_shift_the_long_task_and_the_lcp(
        env: DevtoolsEnv, tmp_path: Path) -> None:
    tab = await page(env, "perf.html")
    save = tmp_path / "perf.json.gz"
    result = await call_ok(env.client, "performance_trace", {
        "tab": tab, "reload": True, "duration_s": 4, "save_to": str(save)},
        timeout=TRACE_TIMEOUT)
    summary = result["summary"]

    assert summary["url"] == env.site("h1").url("/browse/perf.html")
    assert 0 < summary["ttfb_ms"] <= summary["dcl_ms"] <= summary["load_ms"], summary
    assert summary["lcp_element"] == "IMG id='hero'", summary
    assert summary["lcp_ms"] >= summary["fcp_ms"] > 0, summary
    assert summary["cls"] > 0.05, summary
    shifted = [s["element"] for s in summary["shifted"]]
    assert "P id='intro'" in shifted and "IMG id='hero'" in shifted, summary["shifted"]
    tasks = summary["long_tasks"]
    assert tasks["count"] >= 1
    longest = tasks["longest"][0]
    assert longest["script"] == env.site("h1").url("/browse/slow-script.js"), tasks
    assert longest["ms"] >= 250, tasks  # the script busies the thread for 300 ms
    assert summary["main_thread_ms"]["scripting"] >= 250, summary["main_thread_ms"]

    assert result["path"] == str(save) and result["bytes"] == save.stat().st_size
    assert stat.S_IMODE(save.stat().st_mode) == 0o600
    events = trace_events(save)
    assert any(e.get("name") == "largestContentfulPaint::Candidate" for e in events)
    assert any(e.get("name") == "TracingStartedInBrowser" for e in events), \
        "the Performance panel needs TracingStartedInBrowser to load the file"


async def test_start_and_stop_around_own_steps(env: DevtoolsEnv) -> None:
    tab = await page(env, "perf.html")
    started = await call_ok(env.client, "performance_trace", {"tab": tab, "action": "start"})
    assert started["recording"] is True and "path" not in started

    again = await call_err(env.client, "performance_trace", {"tab": tab, "action": "start"})
    assert "already running" in again and f"tab={tab}" in again and "stop" in again

    await call_ok(env.client, "evaluate", {"tab": tab, "expression": "busyFor(120)"})
    stopped = await call_ok(env.client, "performance_trace", {"tab": tab, "action": "stop"},
                            timeout=TRACE_TIMEOUT)
    path = Path(stopped["path"])
    try:
        assert path.parent == Path(os.path.realpath(tempfile.gettempdir()))
        assert path.name.endswith(".json.gz")
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert "url" not in stopped["summary"], "no navigation happened in this trace"
        longest = stopped["summary"]["long_tasks"]["longest"]
        assert longest and longest[0]["ms"] >= 100, stopped["summary"]
        assert trace_events(path)
    finally:
        path.unlink()

    nothing = await call_err(env.client, "performance_trace", {"tab": tab, "action": "stop"})
    assert "no performance trace started with action='start' is running" in nothing
    assert f"performance_trace(tab={tab}, action='start')" in nothing


async def test_tab_closed_mid_trace(env: DevtoolsEnv) -> None:
    tab = await page(env, "perf.html")
    await call_ok(env.client, "performance_trace", {"tab": tab, "action": "start"})
    await call_ok(env.client, "close_tab", {"tab": tab})
    other = await page(env, "perf.html")
    stop = await call_err(env.client, "performance_trace", {"tab": other, "action": "stop"})
    assert f"tab {tab} closed while it was being traced" in stop, stop
    # Chrome ended the trace with its session: a new one starts and completes.
    result = await call_ok(env.client, "performance_trace", {"tab": other, "duration_s": 0.5},
                           timeout=TRACE_TIMEOUT)
    Path(result["path"]).unlink()


async def test_tab_closed_during_a_duration_trace(env: DevtoolsEnv) -> None:
    """close_tab does not wait for the tab's lock: the trace call ends early, with the
    reason, rather than after its 30 s."""
    tab, other = await page(env, "perf.html"), await page(env, "perf.html")
    outcome: dict[str, str] = {}

    async def trace() -> None:
        result = await env.client.call_tool("performance_trace",
                                            {"tab": tab, "duration_s": 30})
        outcome["error" if result.is_error else "ok"] = text_of(result)

    async with anyio.create_task_group() as tg:
        tg.start_soon(trace)
        with anyio.fail_after(60):  # until the trace runs (a stop says so, and stops nothing)
            while f"tab {tab} is recording for duration_s" not in await call_err(
                    env.client, "performance_trace", {"tab": other, "action": "stop"}):
                await anyio.sleep(0.1)
        with anyio.fail_after(20):  # well before the trace's 30 s
            await call_ok(env.client, "close_tab", {"tab": tab})
            while not outcome:
                await anyio.sleep(0.05)
    assert "went away (closed or crashed) during the trace" in outcome.get("error", ""), outcome
    result = await call_ok(env.client, "performance_trace", {"tab": other, "duration_s": 0.5},
                           timeout=TRACE_TIMEOUT)
    Path(result["path"]).unlink()


async def test_trace_save_to_outside_allowed_dirs_is_refused(env: DevtoolsEnv) -> None:
    tab = await page(env, "perf.html")
    refused = await call_err(env.client, "performance_trace", {
        "tab": tab, "duration_s": 0.5, "save_to": "/var/csgw-not-allowed.json.gz"})
    assert "outside the allowed directories" in refused
    # refused before recording: the browser is free for the next trace
    result = await call_ok(env.client, "performance_trace", {"tab": tab, "duration_s": 0.5},
                           timeout=TRACE_TIMEOUT)
    Path(result["path"]).unlink()


async def test_heap_snapshot_shows_detached_nodes(env: DevtoolsEnv, tmp_path: Path) -> None:
    tab = await page(env, "leak.html")
    save = tmp_path / "leak.heapsnapshot"
    result = await call_ok(env.client, "heap_snapshot", {"tab": tab, "save_to": str(save)},
                           timeout=TRACE_TIMEOUT)

    assert result["detached_nodes"] >= 400, result
    worst = result["detached"][0]
    assert worst["constructor"] == '<section class="leaked-item">' and worst["count"] == 400
    assert len(result["top"]) == 10
    sizes = [c["self_bytes"] for c in result["top"]]
    assert sizes == sorted(sizes, reverse=True) and sizes[-1] > 0
    assert result["heap_bytes"] >= sum(sizes)

    assert result["path"] == str(save) and result["file_bytes"] == save.stat().st_size
    assert stat.S_IMODE(save.stat().st_mode) == 0o600
    snapshot = json.loads(save.read_text())
    assert snapshot["snapshot"]["node_count"] == result["nodes"]


async def test_calls_are_logged(env: DevtoolsEnv) -> None:
    tab = await page(env, "leak.html")
    before = len(env.call_log.read_text().splitlines())
    trace = await call_ok(env.client, "performance_trace", {
        "tab": tab, "reload": True, "duration_s": 0.5}, timeout=TRACE_TIMEOUT)
    heap = await call_ok(env.client, "heap_snapshot", {"tab": tab}, timeout=TRACE_TIMEOUT)
    await call_err(env.client, "performance_trace", {"tab": tab, "action": "stop"})
    for saved in (trace["path"], heap["path"]):
        Path(saved).unlink()
    with anyio.fail_after(10):
        while len(lines := env.call_log.read_text().splitlines()) < before + 3:
            await anyio.sleep(0.05)
    logged = [json.loads(line) for line in lines[before:]]
    assert [(e["tool"], e["outcome"], e["tab"]) for e in logged] == [
        ("performance_trace", "ok", tab), ("heap_snapshot", "ok", tab),
        ("performance_trace", "error", tab)]
    assert logged[0]["target"] == logged[1]["target"] == "h1"
    assert logged[0]["arguments"]["reload"] is True and logged[0]["result_bytes"] > 0
    assert "no performance trace started with action='start'" in logged[2]["error"]


async def test_size_limit_and_read_only_mode(
        env: DevtoolsEnv, topology: Topology, tmp_path_factory: pytest.TempPathFactory) -> None:
    """A read-only gateway on the same browser (it can open no page: the module's
    gateway opens one for it)."""
    mine = await page(env, "leak.html")
    url = env.site("h1").url("/browse/leak.html")
    async with devtools_gateway(topology, tmp_path_factory.mktemp("profiling-limit"),
                                hosts=("h1",), target_options={"max_capture_mb": 1},
                                gateway_options={"read_only": True}) as small:
        listed = {tool.name for tool in (await small.client.list_tools()).tools}
        assert {"performance_trace", "heap_snapshot"} <= listed, "both only read the page"
        tabs = (await call_ok(small.client, "list_tabs"))["tabs"]
        tab = next(int(t["tab"]) for t in tabs if t["url"] == url)
        refused = await call_err(small.client, "performance_trace", {"tab": tab, "reload": True})
        assert "read-only" in refused and "reload" in refused

        before = set(Path(tempfile.gettempdir()).glob("csgw-heap-*"))
        error = await call_err(small.client, "heap_snapshot", {"tab": tab},
                               timeout=TRACE_TIMEOUT)
        assert "larger than max_capture_mb (1 MB" in error, error
        assert set(Path(tempfile.gettempdir()).glob("csgw-heap-*")) == before, \
            "a refused snapshot leaves no partial file"
    await call_ok(env.client, "close_tab", {"tab": mine})


async def test_a_dialog_opened_during_a_trace_leaves_the_browser_free(env: DevtoolsEnv) -> None:
    """An alert() while recording freezes the page, not the browser's tracing: the trace
    comes back (or fails saying so), and Chrome is not left tracing, which would refuse
    every later trace on that browser as 'another client is tracing'."""
    tab = await page(env, "perf.html")
    scheduled = await call_ok(env.client, "evaluate", {
        "tab": tab, "expression": "setTimeout(() => alert('mid-trace'), 300), 'scheduled'"})
    assert scheduled["value"] == "scheduled"
    with anyio.fail_after(TRACE_TIMEOUT):
        result = await env.client.call_tool("performance_trace", {"tab": tab, "duration_s": 2})
    if result.is_error:
        assert "dialog" in text_of(result), text_of(result)
    else:
        assert result.structured_content is not None
        Path(result.structured_content["path"]).unlink()
    await call_ok(env.client, "handle_dialog", {"tab": tab, "accept": True})

    async def traced() -> dict[str, Any] | None:  # Chrome flushes the ended trace first
        again = await env.client.call_tool("performance_trace", {"tab": tab, "duration_s": 0.5})
        if again.is_error:
            assert "still be finishing" in text_of(again), text_of(again)
            return None
        return again.structured_content

    again = await eventually(traced, until=present,
                             timeout=TRACE_TIMEOUT, what="a trace after the dialog",
                             interval=0.5)
    Path(again["path"]).unlink()
    await call_ok(env.client, "close_tab", {"tab": tab})


async def test_stop_with_a_dialog_open_keeps_the_trace_until_it_is_answered(
        env: DevtoolsEnv) -> None:
    tab = await page(env, "perf.html")
    started = await call_ok(env.client, "performance_trace", {"tab": tab, "action": "start"})
    assert started["recording"] is True
    await call_ok(env.client, "evaluate", {
        "tab": tab, "expression": "setTimeout(() => alert('before stop'), 0), 'scheduled'"})

    async def frozen() -> bool:  # the page answers nothing once the alert is open
        probe = await env.client.call_tool("evaluate", {"tab": tab, "expression": "1"})
        return probe.is_error and "dialog" in text_of(probe)

    await eventually(frozen, timeout=30, what="the alert open")
    refused = await call_err(env.client, "performance_trace", {"tab": tab, "action": "stop"})
    assert "open alert dialog" in refused and "handle_dialog" in refused, refused
    await call_ok(env.client, "handle_dialog", {"tab": tab, "accept": True})
    stopped = await call_ok(env.client, "performance_trace", {"tab": tab, "action": "stop"},
                            timeout=TRACE_TIMEOUT)
    assert stopped["summary"]["trace_ms"] > 0
    Path(stopped["path"]).unlink()
    await call_ok(env.client, "close_tab", {"tab": tab})


async def test_a_saved_trace_holds_no_secret_header_values(env: DevtoolsEnv) -> None:
    """Chrome's trace records each response's headers (ResourceReceiveResponse): the
    page's Set-Cookie and Authorization values must not reach the saved file."""
    site = env.site("h1")
    tab = await open_page(env.client, site, "/devtools.html", "h1")
    result = await call_ok(env.client, "performance_trace", {
        "tab": tab, "reload": True, "duration_s": 4}, timeout=TRACE_TIMEOUT)
    saved = Path(result["path"])
    text = gzip.decompress(saved.read_bytes()).decode()
    saved.unlink()
    await call_ok(env.client, "close_tab", {"tab": tab})
    assert "ResourceReceiveResponse" in text and "/set-cookie" in text, "the requests ran"
    for secret in site.secrets:
        assert secret not in text, "a secret header value is in the saved trace"


async def test_a_started_trace_whose_tab_closed_does_not_block_the_next(
        env: DevtoolsEnv) -> None:
    """The recording went with its tab (Chrome ends a session's trace when the session
    goes), so a new one starts; it used to be refused, naming the closed tab to stop."""
    gone, other = await page(env, "perf.html"), await page(env, "perf.html")
    await call_ok(env.client, "performance_trace", {"tab": gone, "action": "start"})
    await call_ok(env.client, "close_tab", {"tab": gone})
    result = await call_ok(env.client, "performance_trace", {"tab": other, "duration_s": 0.5},
                           timeout=TRACE_TIMEOUT)
    Path(result["path"]).unlink()
    await call_ok(env.client, "close_tab", {"tab": other})
