"""A browser's download record, replayed from Chrome's own events, and what a fetch refuses.

``fixtures/downloads`` holds the ``Browser.download*`` events a real headless Chromium
sent for a download that completed and one its server broke off
(``fixtures/capture_downloads.py``). The host and connection are the shared fakes
(``tests.unit.fakes``), recording what they are asked: the copy itself is the e2e
tests' (``tests/e2e/test_downloads.py``).
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import pytest

from gateway import progress
from gateway.browsers.contexts import BrowserContexts
from gateway.browsers.download_dir import (
    DIRECTORY_PREFIX,
    parse_prepared,
    prepare_command,
    remove_command,
)
from gateway.browsers.downloads import (
    MAX_DOWNLOADS,
    MAX_HOST_BYTES,
    Downloads,
    shown_name,
    unreachable,
)
from gateway.cdp.endpoint import Endpoint
from gateway.config import TargetConfig
from gateway.errors import HostError, InvalidArgument
from gateway.tabs.tab import Tab
from tests.unit.fakes import FakeCdp, FakeHost

pytestmark = pytest.mark.anyio

FIXTURES = Path(__file__).parents[2] / "fixtures" / "downloads"
MANIFEST = json.loads((FIXTURES / "manifest.json").read_text())
DIRECTORY = f"{DIRECTORY_PREFIX}abcd1234"
LOOPBACK = Endpoint("127.0.0.1", 9222, "/devtools/browser/x", "test")
PREPARED = f"@csgw dir {DIRECTORY}\n"  # what the host's set-up script prints


def _events() -> list[tuple[str, dict[str, Any]]]:
    with (FIXTURES / "events.jsonl").open() as f:
        return [(e["method"], e["params"]) for e in map(json.loads, f)]


class FakeTasks:
    """The connection's task group: what the record starts is run when a test says."""

    def __init__(self) -> None:
        self.jobs: list[tuple[Any, tuple[Any, ...]]] = []

    def start_soon(self, job: Any, *args: Any) -> None:
        self.jobs.append((job, args))

    async def run(self) -> None:
        jobs, self.jobs = self.jobs, []
        for job, args in jobs:
            await job(*args)


async def _served(host: FakeHost | None = None, endpoint: Endpoint = LOOPBACK,
                  cdp: FakeCdp | None = None, tasks: FakeTasks | None = None, *,
                  launched: bool = True, pages: SimpleNamespace | None = None,
                  **config: Any) -> tuple[Downloads, Tab]:
    tab = Tab(7, "devvm", MANIFEST["target_id"])
    pages = pages or SimpleNamespace(contexts=BrowserContexts())
    pages.tabs = {tab.target_id: tab}
    record = Downloads(TargetConfig.model_validate({"name": "devvm", **config}),
                       host or FakeHost(PREPARED), pages)  # type: ignore[arg-type]
    await record.start(cdp or FakeCdp(), endpoint, tasks or FakeTasks(),  # type: ignore[arg-type]
                       launched=launched)
    return record, tab


async def test_chromes_events_make_the_record() -> None:
    cdp = FakeCdp()
    record, tab = await _served(cdp=cdp)
    assert cdp.sent() == [("Browser.setDownloadBehavior", {
        "behavior": "allowAndName", "downloadPath": f"{DIRECTORY}/files",
        "eventsEnabled": True})]
    for method, params in _events():
        cdp.emit(method, params)
    blob, broken = record.entries
    guids = MANIFEST["guids"]
    assert (blob.id, blob.name, blob.state, blob.bytes, blob.total, blob.tab) == (
        1, "blob.bin", "completed", MANIFEST["blob_bytes"], MANIFEST["blob_bytes"], tab.id)
    assert blob.url == f"{MANIFEST['origin']}/download/blob.bin?bytes={MANIFEST['blob_bytes']}"
    assert blob.path == f"{DIRECTORY}/files/{guids['blob.bin']}"  # by guid, never by name
    assert (broken.id, broken.name, broken.state) == (2, "broken.bin", "failed")
    assert broken.ended.is_set() and blob.ended.is_set()


async def _made_saves_there(contexts: BrowserContexts, cdp: FakeCdp, name: str) -> None:
    """Make the context ``name`` (Chrome's id: CTX): its downloads are sent here."""

    async def call(method: str, params: dict[str, Any]) -> dict[str, Any]:
        await cdp.send(method, params)
        return {"browserContextId": "CTX"}

    await contexts.id_for(name, call)
    assert cdp.sent()[-1] == ("Browser.setDownloadBehavior", {
        "behavior": "allowAndName", "downloadPath": f"{DIRECTORY}/files",
        "eventsEnabled": True, "browserContextId": "CTX"})


async def test_a_context_the_gateway_makes_saves_there_too() -> None:
    record, _ = await _served()
    contexts = BrowserContexts()
    contexts.made = record.context_made
    await _made_saves_there(contexts, FakeCdp(), "second-user")


async def test_the_record_is_bounded_and_ids_go_on() -> None:
    host, cdp, tasks = FakeHost(PREPARED), FakeCdp(), FakeTasks()
    record, _ = await _served(host, cdp=cdp, tasks=tasks)
    for n in range(MAX_DOWNLOADS + 5):
        cdp.emit("Browser.downloadWillBegin", {"guid": f"g{n}", "url": "http://x/",
                                                   "suggestedFilename": "f", "frameId": "?"})
    assert len(record.entries) == MAX_DOWNLOADS and record.dropped == 5
    assert record.entries[0].id == 6 and record.entries[-1].id == MAX_DOWNLOADS + 5
    assert record.entries[0].tab is None  # a frame that is no tab's
    with pytest.raises(InvalidArgument, match="older ones were dropped"):
        record.get(1)
    await tasks.run()  # the dropped ones' files leave the host; those under way are cancelled
    assert host.commands[1:] == [remove_command(f"{DIRECTORY}/files/g{n}") for n in range(5)]
    assert cdp.sent()[1:] == [("Browser.cancelDownload", {"guid": f"g{n}"}) for n in range(5)]


async def test_a_download_under_way_at_a_reconnect_is_failed_and_the_directory_kept() -> None:
    host, cdp = FakeHost(PREPARED), FakeCdp()
    record, _ = await _served(host, cdp=cdp)
    cdp.emit(*_events()[0])  # began, never ended on this connection
    await record.start(FakeCdp(), LOOPBACK, FakeTasks(), launched=True)  # type: ignore[arg-type]
    assert record.entries[0].state == "failed"
    assert host.commands[1] == prepare_command(DIRECTORY)  # kept, its holder rewritten


@pytest.mark.parametrize(("endpoint", "hosted", "why"), [
    (Endpoint("localhost", 0, "/p", "share", socket="/home/a/.cache/x.sock"), False,
     "it is a share"),
    (Endpoint("pool.example", 443, "/p", "hosted", scheme="wss"), True, "hosted browser"),
    (Endpoint("127.0.0.1", 3000, "/p", "hosted"), True, "hosted browser"),
    (Endpoint("10.0.0.5", 9222, "/p", "cdp"), False, "listens at 10.0.0.5, not on "
     "alice@devvm's own loopback"),
    (LOOPBACK, False, None),
    (Endpoint("::1", 9222, "/p", "cdp"), False, None),
])
def test_which_browsers_files_can_come_back(endpoint: Endpoint, hosted: bool,
                                            why: str | None) -> None:
    said = unreachable(endpoint, FakeHost(PREPARED), hosted=hosted)  # type: ignore[arg-type]
    assert said == why if why is None else why in str(said)


async def test_a_share_lists_downloads_but_says_why_none_comes_back() -> None:
    host, cdp = FakeHost(PREPARED), FakeCdp()
    share = Endpoint("localhost", 0, "/p", "share", socket="/s.sock")
    record, _ = await _served(host, share, cdp, launched=False)
    assert host.commands == [] and record.directory is None  # nothing made there
    assert cdp.sent() == []  # its downloads are its own: only its pages' events tell
    for method, params in _events():
        cdp.emit(method, params)
    with pytest.raises(InvalidArgument, match="cannot be copied back: it is a share"):
        await record.fetch(record.entries[0], io.BytesIO(), 512, 5)


async def test_what_a_fetch_refuses_and_what_it_copies() -> None:
    host, cdp = FakeHost(PREPARED), FakeCdp()
    record, _ = await _served(host, cdp=cdp)
    for method, params in _events():
        cdp.emit(method, params)
    blob, broken = record.entries
    with pytest.raises(InvalidArgument, match=r"failed in the browser .* download it again"):
        await record.fetch(broken, io.BytesIO(), 512, 5)
    with pytest.raises(InvalidArgument, match=r"3,000,000 bytes, over the 1 MB limit .*"
                                              "max_capture_mb"):
        await record.fetch(blob, io.BytesIO(), 1, 5)
    with pytest.raises(InvalidArgument, match=r"no download 9 .*known: 1, 2.*without fetch"):
        record.get(9)
    assert host.fetched == []
    into = io.BytesIO()
    assert await record.fetch(blob, into, 4096, 5) == 4
    assert host.fetched == [(blob.path, 512 << 20)] and into.getvalue() == b"data"

    cdp.emit("Browser.downloadWillBegin", {"guid": "slow", "url": "u",
                                               "suggestedFilename": "s"})
    with pytest.raises(InvalidArgument, match=r"still under way after 0\.05 s"):
        await record.fetch(record.get(3), io.BytesIO(), 512, 0.05)


async def test_a_directory_that_cannot_be_made_is_said() -> None:
    record, _ = await _served(FakeHost("@csgw error could not create a directory in /tmp\n"))
    assert record.unreachable == ("its download directory could not be made (could not "
                                  "create a directory in /tmp)")

    class Down(FakeHost):
        async def run(self, command: str, timeout_s: float) -> str:
            raise HostError("connection lost")

    record, _ = await _served(Down(PREPARED))
    assert record.unreachable is not None and "connection lost" in record.unreachable


def test_the_set_up_scripts_answer() -> None:
    assert parse_prepared(f"noise\n@csgw dir {DIRECTORY}\n") == (DIRECTORY, "")
    assert parse_prepared("@csgw error nope\n") == (None, "nope")
    assert parse_prepared("@csgw dir /etc\n")[0] is None  # only a directory of ours
    assert "printed nothing usable" in parse_prepared("")[1]


def test_a_sites_name_is_only_shown() -> None:
    assert shown_name("../../.bashrc") == ".._.._.bashrc"
    assert shown_name("a\x00b\nc\\d") == "a_b_c_d"
    assert shown_name("") == "download" and len(shown_name("x" * 999)) == 200
    assert shown_name("invoice\u202etxt.exe\u200b") == "invoicetxt.exe"  # no direction tricks


async def test_the_directory_goes_at_exit_even_after_a_failed_set_up() -> None:
    class Flaky(FakeHost):
        async def run(self, command: str, timeout_s: float) -> str:
            self.commands.append(command)
            if len(self.commands) == 2:
                raise HostError("connection lost")
            return self.prepared

    host = Flaky(PREPARED)
    record, _ = await _served(host)
    # the reconnect's set-up fails
    await record.start(FakeCdp(), LOOPBACK, FakeTasks(), launched=True)  # type: ignore[arg-type]
    assert record.unreachable is not None and "connection lost" in record.unreachable
    await record.aclose()
    assert host.commands[-1] == f"rm -rf -- {DIRECTORY}" == remove_command(DIRECTORY)
    await record.aclose()  # once only
    assert len(host.commands) == 3


async def test_a_fetch_waits_for_a_download_under_way_and_says_how_far_it_is(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Each report the fetch makes lets the browser go one step on: no clock involved."""
    monkeypatch.setattr(progress, "MIN_INTERVAL_S", 0)
    cdp, host = FakeCdp(), FakeHost(PREPARED)
    record, _ = await _served(host, cdp=cdp)
    cdp.emit("Browser.downloadWillBegin", {"guid": "g", "url": "u",
                                               "suggestedFilename": "s"})
    heard: list[tuple[float, float | None, str | None]] = []
    steps = iter([(1 << 20, "inProgress"), (2 << 20, "completed")])

    async def send(done: float, total: float | None, message: str | None) -> None:
        heard.append((done, total, message))
        received, state = next(steps)
        cdp.emit("Browser.downloadProgress", {
            "guid": "g", "receivedBytes": received, "totalBytes": 2 << 20, "state": state})

    with progress.reporting(send):
        assert await record.fetch(record.get(1), io.BytesIO(), 512, 10) == 4
    assert [h[0] for h in heard] == [0, 1 << 20], heard
    assert heard[-1] == (1 << 20, 2 << 20, "still downloading in the browser: 1.0 MB")
    assert 0 < host.timeouts[0] <= 10  # what the wait left of the one budget


async def test_the_wait_and_the_copy_share_one_budget() -> None:
    cdp, host = FakeCdp(), FakeHost(PREPARED)
    record, _ = await _served(host, cdp=cdp)
    cdp.emit("Browser.downloadWillBegin", {"guid": "g", "url": "u",
                                               "suggestedFilename": "s"})

    async def browser() -> None:
        await anyio.sleep(0.1)
        cdp.emit("Browser.downloadProgress", {"guid": "g", "receivedBytes": 1,
                                                  "state": "completed"})

    async with anyio.create_task_group() as tg:
        tg.start_soon(browser)
        await record.fetch(record.get(1), io.BytesIO(), 512, 5)
    assert host.timeouts[0] < 5 - 0.05, host.timeouts  # the copy had what the wait left


async def test_an_id_that_is_no_plain_name_is_never_a_path() -> None:
    host, cdp = FakeHost(PREPARED), FakeCdp()
    record, _ = await _served(host, cdp=cdp)
    cdp.emit("Browser.downloadWillBegin", {"guid": "../../../etc/passwd", "url": "u",
                                               "suggestedFilename": "s"})
    cdp.emit("Browser.downloadProgress", {"guid": "../../../etc/passwd",
                                              "receivedBytes": 5, "state": "completed"})
    entry = record.entries[0]
    assert entry.path is None and entry.state == "completed"
    with pytest.raises(InvalidArgument, match=r"cannot be copied back: the browser gave it "
                                              r"the id '\.\./\.\./\.\./etc/passwd', not a plain"):
        await record.fetch(entry, io.BytesIO(), 512, 5)
    assert host.fetched == []


async def test_a_browser_the_gateway_did_not_launch_keeps_its_own_downloads() -> None:
    """Its default context is sent nothing (its pages tell of its downloads, once even
    when the browser does too); a context the gateway makes saves here."""
    host, cdp = FakeHost(PREPARED), FakeCdp()
    pages = SimpleNamespace(contexts=BrowserContexts())
    record, tab = await _served(host, cdp=cdp, launched=False, pages=pages)
    assert cdp.sent() == []
    for method, params in _events():
        pages.downloaded(method.replace("Browser.", "Page."), params, tab)
        cdp.emit(method, params)
    assert len(record.entries) == 2
    blob = record.entries[0]
    assert blob.tab == tab.id and blob.state == "completed"
    assert blob.path is None and blob.state == "completed"
    with pytest.raises(InvalidArgument, match=r"did not launch this browser.*isolated "
                                              r"context.*launch = true"):
        await record.fetch(blob, io.BytesIO(), 512, 5)
    await _made_saves_there(pages.contexts, cdp, "mine")
    tab.context = "mine"
    cdp.emit("Browser.downloadWillBegin", {"guid": "g-1", "url": "u",
                                               "suggestedFilename": "s",
                                               "frameId": tab.target_id})
    assert record.entries[-1].path == f"{DIRECTORY}/files/g-1"
    assert record.entries[-1].context == "CTX"


async def test_past_the_hosts_bound_downloads_are_cancelled_saying_why() -> None:
    host, cdp, tasks = FakeHost(PREPARED), FakeCdp(), FakeTasks()
    record, _ = await _served(host, cdp=cdp, tasks=tasks)
    cdp.emit("Browser.downloadWillBegin", {"guid": "big", "url": "u",
                                               "suggestedFilename": "big.iso"})
    cdp.emit("Browser.downloadProgress", {"guid": "big", "receivedBytes": MAX_HOST_BYTES,
                                              "state": "inProgress"})
    assert record.entries[0].state == "in_progress"  # at the bound, not past it
    cdp.emit("Browser.downloadProgress", {"guid": "big", "state": "inProgress",
                                              "receivedBytes": MAX_HOST_BYTES + 1})
    big = record.entries[0]
    assert big.state == "failed" and "reached 2,048 MB" in str(big.why_not)
    with pytest.raises(InvalidArgument, match="cannot be copied back: cancelled: the "
                                              "downloads kept on alice@devvm reached"):
        await record.fetch(big, io.BytesIO(), 512, 5)
    await tasks.run()
    assert cdp.sent()[-1] == ("Browser.cancelDownload", {"guid": "big"})
    assert host.commands[-1] == remove_command(f"{DIRECTORY}/files/big")

    cdp.emit("Browser.downloadWillBegin", {"guid": "a", "url": "u",
                                               "suggestedFilename": "a"})
    cdp.emit("Browser.downloadProgress", {"guid": "a", "receivedBytes": MAX_HOST_BYTES,
                                              "state": "completed"})
    cdp.emit("Browser.downloadWillBegin", {"guid": "b", "url": "u",
                                               "suggestedFilename": "b"})
    assert [e.state for e in record.entries] == ["failed", "completed", "failed"]
    await tasks.run()
    assert cdp.sent()[-1] == ("Browser.cancelDownload", {"guid": "b"})
