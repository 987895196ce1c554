"""A tab's staged upload files go with the tab, whenever it goes.

``close_tab`` does not wait for the tab's lock, so a tab can be retired at any point of
an upload step: before its files are copied (then nothing may be copied: no one would
ever remove them), or while they are (then they are removed at the next sweep).
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from gateway.browsers.pages import PageTracker
from gateway.browsers.uploads import Uploads
from gateway.config import TargetConfig
from gateway.errors import StagingFailed, TabNotFound
from gateway.output.files import Readable
from gateway.tabs.tab import TabIds
from tests.unit.fakes import FakeHost

pytestmark = pytest.mark.anyio

FILES = [Readable(Path("/tmp/a.txt"), 5, (1, 2))]


def tracker(host: FakeHost) -> PageTracker:
    return PageTracker("t", TargetConfig(name="t", ssh=None, cdp=None), TabIds(),
                       Uploads(host))  # type: ignore[arg-type]


async def test_files_of_a_closed_tab_are_removed_at_the_sweep() -> None:
    host = FakeHost()
    pages = tracker(host)
    tab = pages.track({"targetId": "T1"})
    paths = await pages.uploads.stage(tab, FILES, 5)
    assert paths == ("/tmp/csgw-upload-0/0/a.txt",)
    await pages.uploads.sweep()
    assert host.commands == [], "the tab is still open"
    pages.retire(tab, "was closed")
    await pages.uploads.sweep()
    assert host.commands == ["rm -rf -- /tmp/csgw-upload-0"]


async def test_a_tab_closed_before_its_files_are_copied_copies_nothing() -> None:
    host = FakeHost()
    pages = tracker(host)
    tab = pages.track({"targetId": "T1"})
    pages.retire(tab, "was closed by close_tab")  # while its upload step was clicking
    with pytest.raises(TabNotFound, match="closed"):
        await pages.uploads.stage(tab, FILES, 5)
    assert host.staged == [], "copied for a tab that is gone: nothing would remove them"


async def test_a_tab_closed_while_its_files_are_copied_has_them_removed() -> None:
    host = FakeHost()
    host.release_copy = anyio.Event()
    pages = tracker(host)
    tab = pages.track({"targetId": "T1"})
    async with anyio.create_task_group() as tg:
        tg.start_soon(pages.uploads.stage, tab, FILES, 5)
        await host.copying.wait()
        pages.retire(tab, "was closed by close_tab")
        host.release_copy.set()
    await pages.uploads.sweep()
    assert host.commands == ["rm -rf -- /tmp/csgw-upload-0"]


async def test_a_removal_that_failed_is_tried_again() -> None:
    host = FakeHost()
    pages = tracker(host)
    tab = pages.track({"targetId": "T1"})
    await pages.uploads.stage(tab, FILES, 5)
    pages.retire(tab, "was closed")
    host.fail_runs = 1
    await pages.uploads.sweep()
    assert host.commands == []
    await pages.uploads.aclose()
    assert host.commands == ["rm -rf -- /tmp/csgw-upload-0"]


async def test_a_copy_that_broke_off_has_its_directory_removed_once_served_again() -> None:
    """The link died mid-copy, so the host could not remove the half-filled directory
    there and then: the upload fails, and the directory is the next sweep's — the one
    the sweeper makes as soon as the browser is served again, with no tab closing."""
    host = FakeHost()
    host.break_off = True
    pages = tracker(host)
    tab = pages.track({"targetId": "T1"})
    host.fail_runs = 1  # still unreachable for the first sweep
    with pytest.raises(StagingFailed, match="connection lost"):
        await pages.uploads.stage(tab, FILES, 5)
    await pages.uploads.sweep()
    assert host.commands == []
    with anyio.move_on_after(1):  # a reconnect: the browser's sweeper starts again
        await pages.uploads.sweeper()
    assert host.commands == ["rm -rf -- /tmp/csgw-upload-0"]


async def test_a_sweep_returns_once_a_removal_already_under_way_is_done() -> None:
    """``close_tab`` sweeps before it answers; the sweeper may have taken the tab's
    directories a moment before (its targetDestroyed came first): close_tab's sweep must
    still wait for that removal, or the files outlive the answer."""
    host = FakeHost()
    pages = tracker(host)
    tab = pages.track({"targetId": "T1"})
    await pages.uploads.stage(tab, FILES, 5)
    pages.retire(tab, "was closed")
    slow, removing = anyio.Event(), anyio.Event()
    real_run = host.run

    async def run(command: str, timeout_s: float) -> str:
        removing.set()
        await slow.wait()
        return await real_run(command, timeout_s)

    host.run = run  # type: ignore[method-assign]
    async with anyio.create_task_group() as tg:
        tg.start_soon(pages.uploads.sweep)  # the sweeper, first
        await removing.wait()
        answered = anyio.Event()

        async def close_tabs_sweep() -> None:
            await pages.uploads.sweep()
            answered.set()

        tg.start_soon(close_tabs_sweep)
        await anyio.wait_all_tasks_blocked()
        assert not answered.is_set(), "answered while the files were still there"
        slow.set()
    assert host.commands == ["rm -rf -- /tmp/csgw-upload-0"]


async def test_a_sweep_in_a_cancelled_scope_still_removes_the_files() -> None:
    """A browser let go (its task group cancelled) still removes its tabs' files: the
    sweep, its lock included, is shielded."""
    host = FakeHost()
    pages = tracker(host)
    tab = pages.track({"targetId": "T1"})
    await pages.uploads.stage(tab, FILES, 5)
    pages.retire(tab, "was closed")
    with anyio.CancelScope() as scope:
        scope.cancel()
        await pages.uploads.sweep()
    assert host.commands == ["rm -rf -- /tmp/csgw-upload-0"]
