"""Progress and cancellation of long calls, as an MCP client sees them over stdio.

A client that sends a ``progressToken`` (the SDK does when ``call_tool`` gets a
``progress_callback``) hears how far a long call is: a trace its seconds and then
its bytes, an upload the bytes copied to the browser's host, a heap snapshot Chrome's
own progress and then its bytes. A client that gives up on a call (the SDK sends
``notifications/cancelled`` when the awaiting task is cancelled) gets back a clean
slate: no file where ``save_to`` pointed, nothing left on the remote host, Chrome no
longer tracing, and the same tab answering the next call.

The target is Chromium on h1 behind its sshd (``devtools_gateway``).
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.types import CallToolResult

from tests.e2e.helpers import call_ok, eventually, text_of
from tests.e2e.pages import DevtoolsEnv, browse, devtools_gateway, js, open_page, ref_of
from tests.topology import RemoteHost, Topology

pytestmark = pytest.mark.anyio

CALL_BOUND = 120.0
BIG_HEAP_JS = """
window.csgwHeap = Array.from({length: 100000}, (_, i) => ({n: i, s: 'item ' + i}));
window.csgwHeap.length
"""
"""About 200,000 objects: a heap snapshot takes seconds, long enough to cancel."""


@pytest.fixture(scope="module")
async def env(
    topology: Topology, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[DevtoolsEnv]:
    async with devtools_gateway(topology, tmp_path_factory.mktemp("progress"),
                                hosts=("h1",)) as e:
        yield e


@dataclass
class Heard:
    """The progress notifications of one call: (progress, total, message, when)."""

    notes: list[tuple[float, float | None, str | None, float]] = field(default_factory=list)
    first: anyio.Event = field(default_factory=anyio.Event)

    async def __call__(self, done: float, total: float | None, message: str | None) -> None:
        self.notes.append((done, total, message, time.monotonic()))
        self.first.set()

    @property
    def values(self) -> list[float]:
        return [n[0] for n in self.notes]


async def call_hearing(env: DevtoolsEnv, tool: str, args: dict[str, Any]
                       ) -> tuple[CallToolResult, Heard]:
    heard = Heard()
    with anyio.fail_after(CALL_BOUND):
        result = await env.client.call_tool(tool, args, progress_callback=heard)
    assert not result.is_error, text_of(result)
    return result, heard


async def cancel_after_first_progress(env: DevtoolsEnv, tool: str, args: dict[str, Any]
                                      ) -> Heard:
    """Call ``tool`` and cancel the call (the client sends notifications/cancelled) as
    soon as its first progress notification arrives."""
    heard = Heard()
    outcome: list[CallToolResult] = []

    async def call() -> None:
        outcome.append(await env.client.call_tool(tool, args, progress_callback=heard))

    async with anyio.create_task_group() as tg:
        tg.start_soon(call)
        with anyio.fail_after(CALL_BOUND):
            await heard.first.wait()
        tg.cancel_scope.cancel()
    assert not outcome, f"the call ended before it was cancelled: {outcome}"
    return heard


def strictly_increasing(values: list[float]) -> bool:
    return all(a < b for a, b in itertools.pairwise(values))


async def test_a_trace_reports_its_seconds_then_its_bytes(env: DevtoolsEnv,
                                                          tmp_path: Path) -> None:
    tab = await open_page(env.client, env.site("h1"), "/browse/perf.html", "h1")
    save = tmp_path / "three-seconds.json.gz"
    _, heard = await call_hearing(env, "performance_trace", {
        "tab": tab, "duration_s": 3, "save_to": str(save)})
    notes = heard.notes
    print(f"\n3 s trace: {len(notes)} notifications:",  # measured facts, with -s
          [(round(p, 2), t, m, round(w - notes[0][3], 2)) for p, t, m, w in notes])
    assert len(notes) >= 5, notes  # every half second of three, then the bytes
    assert strictly_increasing(heard.values), notes
    assert all(total is not None for _, total, _, _ in notes), notes
    seconds = [n for n in notes if n[1] == 3]
    assert len(seconds) >= 4 and seconds[-1][0] == 3, notes
    assert all(str(m).startswith("tracing ") for _, _, m, _ in seconds), seconds
    done, total, message, _ = notes[-1]
    assert done == total == save.stat().st_size, (notes[-1], save.stat().st_size)
    assert str(message).startswith("trace read"), message
    spread = seconds[-1][3] - seconds[0][3]
    assert 2.5 <= spread <= 6, f"the seconds were reported over {spread:.2f} s"


async def test_a_long_wait_for_reports_seconds_of_its_timeout(env: DevtoolsEnv) -> None:
    tab = await open_page(env.client, env.site("h1"), "/browse/waits.html", "h1")
    await js(env.client, tab, "setTimeout(() => document.body.append('Late words'), 2500); 1")
    result, heard = await call_hearing(env, "browse_act", {"tab": tab, "actions": [
        {"do": "wait_for", "text": "Late words", "timeout": 10}]})
    notes = heard.notes
    print(f"\n2.5 s wait_for: {len(notes)} notifications:", [(round(p, 2), t, m)
                                                             for p, t, m, _ in notes])
    assert "Late words" in text_of(result)
    ticks, (done, total, message, _) = notes[:-1], notes[-1]
    assert len(ticks) >= 3 and all(t == 10 for _, t, _, _ in ticks), notes
    assert ticks[0][2] == (f"waiting for text 'Late words' to appear: {ticks[0][0]:.1f} "
                           "of 10 s"), notes
    assert strictly_increasing(heard.values), notes
    assert done == total and 1.4 <= done <= 10, notes[-1]  # ~2.5 s after the setTimeout
    assert str(message).startswith("waited ") and "Late words" in str(message), message
    await call_ok(env.client, "close_tab", {"tab": tab})


def staged(host: RemoteHost) -> set[str]:
    """The gateway's upload directories on the host now (read by the host's own shell)."""
    script = 'for d in /tmp/csgw-upload-*; do [ -d "$d" ] && echo "$d"; done; :'
    return set(subprocess.run(host.netns_exec("/bin/sh", "-c", script), capture_output=True,
                              text=True, timeout=30, check=True).stdout.split())


def upload_step(view: str, path: Path) -> dict[str, Any]:
    return {"do": "upload", "ref": ref_of(view, "Document"), "paths": [str(path)]}


async def test_a_large_upload_reports_the_bytes_copied(env: DevtoolsEnv,
                                                       tmp_path: Path) -> None:
    size = 20 * 1024 * 1024
    big = tmp_path / "twenty.bin"
    big.write_bytes(os.urandom(size))
    opened = await browse(env.client, env.site("h1").url("/browse/upload.html"), target="h1")
    tab = opened["tab"]
    try:
        result, heard = await call_hearing(env, "browse_act", {
            "tab": tab, "timeout_s": 60, "actions": [upload_step(opened["view"], big)]})
        notes = heard.notes
        print(f"\n20 MB upload: {len(notes)} notifications over "
              f"{notes[-1][3] - notes[0][3]:.2f} s:", [(p, t, m) for p, t, m, _ in notes])
        assert "twenty.bin 20971520" in text_of(result), text_of(result)
        assert len(notes) >= 2, notes
        assert strictly_increasing(heard.values), notes
        assert all(total == size for _, total, _, _ in notes), notes
        assert notes[-1][0] == size and "20.0 of 20.0 MB" in str(notes[-1][2]), notes[-1]
        files = (await js(env.client, tab, "await window.csgwRead()"))[-1]["files"]
        assert [(f["name"], f["size"]) for f in files] == [("twenty.bin", size)]
    finally:
        await call_ok(env.client, "close_tab", {"tab": tab})


async def test_a_cancelled_upload_leaves_nothing_on_the_host(env: DevtoolsEnv,
                                                            tmp_path: Path) -> None:
    host = env.site("h1").host
    big = tmp_path / "large.bin"
    with open(big, "wb") as f:
        f.truncate(100 * 1024 * 1024)  # sparse here, 100 MB of real bytes on the host
    opened = await browse(env.client, env.site("h1").url("/browse/upload.html"), target="h1")
    tab = opened["tab"]
    before = staged(host)
    try:
        heard = await cancel_after_first_progress(env, "browse_act", {
            "tab": tab, "timeout_s": 120, "actions": [upload_step(opened["view"], big)]})
        assert heard.notes[0][0] < heard.notes[0][1], heard.notes  # cancelled mid-copy
        await eventually(lambda: _nothing_new(host, before), timeout=15,
                         what="the cancelled upload's directory removed from h1")
        # the tab is free again at once: the cancelled call let go of it
        with anyio.fail_after(10):
            assert await js(env.client, tab, "window.csgwUploads.length") == 0
    finally:
        await call_ok(env.client, "close_tab", {"tab": tab})


async def _nothing_new(host: RemoteHost, before: set[str]) -> bool:
    return not staged(host) - before


async def test_a_cancelled_trace_ends_in_chrome_and_leaves_no_file(env: DevtoolsEnv,
                                                                  tmp_path: Path) -> None:
    tab = await open_page(env.client, env.site("h1"), "/browse/perf.html", "h1")
    save = tmp_path / "cancelled.json.gz"
    await cancel_after_first_progress(env, "performance_trace", {
        "tab": tab, "duration_s": 30, "save_to": str(save)})
    # Chrome records one trace per browser: a new one starts only if the first ended.
    began = time.monotonic()
    again = tmp_path / "next.json.gz"
    await call_ok(env.client, "performance_trace", {
        "tab": tab, "duration_s": 0.5, "save_to": str(again)}, timeout=CALL_BOUND)
    print(f"\nthe next trace, 0.5 s, took {time.monotonic() - began:.2f} s")
    assert again.stat().st_size > 0
    assert not save.exists(), "the cancelled trace left its file"


async def test_a_cancelled_heap_snapshot_leaves_no_file_and_the_tab_answers(
        env: DevtoolsEnv, tmp_path: Path) -> None:
    tab = await open_page(env.client, env.site("h1"), "/browse/leak.html", "h1")
    assert await js(env.client, tab, BIG_HEAP_JS) == 100000
    whole = tmp_path / "whole.heapsnapshot"
    began = time.monotonic()
    _, heard = await call_hearing(env, "heap_snapshot", {
        "tab": tab, "save_to": str(whole), "timeout_s": 100})
    took = time.monotonic() - began
    print(f"\na whole snapshot took {took:.2f} s, {len(heard.notes)} notifications: "
          f"{[(p, t, m) for p, t, m, _ in heard.notes]}")
    assert strictly_increasing(heard.values), heard.notes
    objects = [n for n in heard.notes if str(n[2]).startswith("heap snapshot: ")]
    assert objects and all(n[1] == objects[0][1] for n in objects), heard.notes
    done, total, message, _ = heard.notes[-1]
    assert done == total == whole.stat().st_size and "received" in str(message), heard.notes
    whole.unlink()

    save = tmp_path / "cancelled.heapsnapshot"
    await cancel_after_first_progress(env, "heap_snapshot", {
        "tab": tab, "save_to": str(save), "timeout_s": 100})
    cancelled = time.monotonic()
    await eventually(lambda: _absent(save), timeout=10, what=f"{save} removed")
    # The same tab answers as soon as Chrome is done with the snapshot it cannot stop:
    # nothing of the gateway's waits on it.
    with anyio.fail_after(60):
        assert await js(env.client, tab, "1 + 1") == 2
    answered = time.monotonic() - cancelled
    print(f"the same tab answered {answered:.2f} s after the cancel")
    assert answered <= took + 1, (answered, took)
    assert list(tmp_path.iterdir()) == [], list(tmp_path.iterdir())

    # Cancelled again, and at once another snapshot of the same tab: its file holds
    # only its own snapshot (none of the chunks Chrome still sends of the abandoned one).
    await cancel_after_first_progress(env, "heap_snapshot", {"tab": tab, "save_to": str(save)})
    fresh = tmp_path / "fresh.heapsnapshot"
    await call_ok(env.client, "heap_snapshot", {"tab": tab, "save_to": str(fresh),
                                                "timeout_s": 100}, timeout=CALL_BOUND)
    snapshot = json.loads(fresh.read_text())  # one JSON document, whole
    assert snapshot["snapshot"]["node_count"] > 200000
    assert [p.name for p in tmp_path.iterdir()] == [fresh.name]
    fresh.unlink()


async def _absent(path: Path) -> bool:
    return not path.exists()



NOISE_JS = """
for (let i = 0; i < 6; i++) {
  const c = document.createElement('canvas');
  c.width = c.height = 1200;
  const g = c.getContext('2d'), img = g.createImageData(1200, 1200);
  for (let j = 0; j < img.data.length; j++) img.data[j] = (Math.random() * 256) | 0;
  g.putImageData(img, 0, 0);
  document.body.append(c);
}
document.querySelectorAll('canvas').length
"""
"""Canvases of noise: a PDF of several MB (noise does not compress), read back in
several pieces."""


async def test_a_pdf_reports_its_bytes_and_a_cancelled_one_leaves_no_file(
        env: DevtoolsEnv, tmp_path: Path) -> None:
    tab = await open_page(env.client, env.site("h1"), "/browse/second.html", "h1")
    assert await js(env.client, tab, NOISE_JS) == 6
    whole = tmp_path / "noise.pdf"
    _, heard = await call_hearing(env, "pdf", {"tab": tab, "save_to": str(whole)})
    print(f"\na {whole.stat().st_size / 2**20:.1f} MB PDF: {len(heard.notes)} notifications: "
          f"{[(p, t, m) for p, t, m, _ in heard.notes]}")
    assert len(heard.notes) >= 2 and strictly_increasing(heard.values), heard.notes
    done, total, message, _ = heard.notes[-1]
    assert done == total == whole.stat().st_size and str(message).startswith("PDF read"), \
        heard.notes
    whole.unlink()

    save = tmp_path / "cancelled.pdf"
    await cancel_after_first_progress(env, "pdf", {"tab": tab, "save_to": str(save)})
    await eventually(lambda: _absent(save), timeout=10, what=f"{save} removed")
    with anyio.fail_after(30):  # the tab is free: the cancelled call let go of it
        assert await js(env.client, tab, "1 + 1") == 2
    again = tmp_path / "again.pdf"  # and Chrome prints again (its stream was closed)
    assert (await call_ok(env.client, "pdf", {"tab": tab, "save_to": str(again)},
                          timeout=CALL_BOUND))["bytes"] > 0
    assert list(tmp_path.iterdir()) == [again], list(tmp_path.iterdir())
    await call_ok(env.client, "close_tab", {"tab": tab})
