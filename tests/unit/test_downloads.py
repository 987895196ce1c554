"""A browser's download record, replayed from Chrome's own events, and what a fetch refuses.

``fixtures/downloads`` holds the ``Browser.download*`` events a real headless Chromium
sent for a download that completed and one its server broke off
(``fixtures/capture_downloads.py``). The host is a stand-in that records what it is
asked: the copy itself is the e2e tests' (``tests/e2e/test_downloads.py``).
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any, BinaryIO

import anyio
import pytest

from gateway import progress
from gateway.browsers.contexts import BrowserContexts
from gateway.browsers.download_dir import DIRECTORY_PREFIX, parse_prepared, prepare_command
from gateway.browsers.downloads import MAX_DOWNLOADS, Downloads, shown_name, unreachable
from gateway.browsers.endpoint import Endpoint
from gateway.browsers.tab import Tab
from gateway.config import TargetConfig
from gateway.errors import HostError, InvalidArgument

pytestmark = pytest.mark.anyio

FIXTURES = Path(__file__).parents[2] / "fixtures" / "downloads"
MANIFEST = json.loads((FIXTURES / "manifest.json").read_text())
DIRECTORY = f"{DIRECTORY_PREFIX}abcd1234"
LOOPBACK = Endpoint("127.0.0.1", 9222, "/devtools/browser/x", "test")


def _events() -> list[tuple[str, dict[str, Any]]]:
    with (FIXTURES / "events.jsonl").open() as f:
        return [(e["method"], e["params"]) for e in map(json.loads, f)]


class FakeHost:
    label = "alice@devvm"

    def __init__(self, prepared: str = f"@csgw dir {DIRECTORY}\n") -> None:
        self.prepared, self.commands = prepared, []  # type: str, list[str]
        self.fetched: list[tuple[str, int]] = []

    async def run(self, command: str, timeout_s: float) -> str:
        self.commands.append(command)
        return self.prepared

    async def fetch_file(self, path: str, into: BinaryIO, max_bytes: int,
                         timeout_s: float) -> int:
        self.fetched.append((path, max_bytes))
        into.write(b"data")
        return 4


class FakeCdp:
    def __init__(self) -> None:
        self.sent: list[tuple[str, dict[str, Any]]] = []
        self.listener: Any = None

    def listen(self, session: str | None, listener: Any) -> Any:
        self.listener = listener
        return lambda: None

    async def send(self, method: str, params: dict[str, Any], **_: Any) -> dict[str, Any]:
        self.sent.append((method, params))
        return {}


async def _served(host: FakeHost | None = None, endpoint: Endpoint = LOOPBACK,
                  cdp: FakeCdp | None = None, **config: Any) -> tuple[Downloads, Tab]:
    tab = Tab(7, "devvm", MANIFEST["target_id"])
    pages = SimpleNamespace(tabs={tab.target_id: tab}, contexts=BrowserContexts())
    record = Downloads(TargetConfig.model_validate({"name": "devvm", **config}),
                       host or FakeHost(), pages)  # type: ignore[arg-type]
    await record.start(cdp or FakeCdp(), endpoint)  # type: ignore[arg-type]
    return record, tab


async def test_chromes_events_make_the_record() -> None:
    cdp = FakeCdp()
    record, tab = await _served(cdp=cdp)
    assert cdp.sent == [("Browser.setDownloadBehavior", {
        "behavior": "allowAndName", "downloadPath": f"{DIRECTORY}/files",
        "eventsEnabled": True})]
    for method, params in _events():
        cdp.listener(method, params)
    blob, broken = record.entries
    guids = MANIFEST["guids"]
    assert (blob.id, blob.name, blob.state, blob.bytes, blob.total, blob.tab) == (
        1, "blob.bin", "completed", MANIFEST["blob_bytes"], MANIFEST["blob_bytes"], tab.id)
    assert blob.url == f"{MANIFEST['origin']}/download/blob.bin?bytes={MANIFEST['blob_bytes']}"
    assert blob.path == f"{DIRECTORY}/files/{guids['blob.bin']}"  # by guid, never by name
    assert (broken.id, broken.name, broken.state) == (2, "broken.bin", "failed")
    assert broken.ended.is_set() and blob.ended.is_set()


async def test_a_context_the_gateway_makes_saves_there_too() -> None:
    record, _ = await _served()
    cdp = FakeCdp()
    contexts = BrowserContexts()
    contexts.made = record.context_made

    async def call(method: str, params: dict[str, Any]) -> dict[str, Any]:
        await cdp.send(method, params)
        return {"browserContextId": "CTX"}

    await contexts.id_for("second-user", call)
    assert cdp.sent[-1] == ("Browser.setDownloadBehavior", {
        "behavior": "allowAndName", "downloadPath": f"{DIRECTORY}/files",
        "eventsEnabled": True, "browserContextId": "CTX"})


async def test_the_record_is_bounded_and_ids_go_on() -> None:
    cdp = FakeCdp()
    record, _ = await _served(cdp=cdp)
    for n in range(MAX_DOWNLOADS + 5):
        cdp.listener("Browser.downloadWillBegin", {"guid": f"g{n}", "url": "http://x/",
                                                   "suggestedFilename": "f", "frameId": "?"})
    assert len(record.entries) == MAX_DOWNLOADS and record.dropped == 5
    assert record.entries[0].id == 6 and record.entries[-1].id == MAX_DOWNLOADS + 5
    assert record.entries[0].tab is None  # a frame that is no tab's
    with pytest.raises(InvalidArgument, match="older ones were dropped"):
        record.get(1)


async def test_a_download_under_way_at_a_reconnect_is_failed_and_the_directory_kept() -> None:
    host, cdp = FakeHost(), FakeCdp()
    record, _ = await _served(host, cdp=cdp)
    cdp.listener(*_events()[0])  # began, never ended on this connection
    await record.start(FakeCdp(), LOOPBACK)
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
    said = unreachable(endpoint, FakeHost(), hosted=hosted)  # type: ignore[arg-type]
    assert said == why if why is None else why in str(said)


async def test_a_share_lists_downloads_but_says_why_none_comes_back() -> None:
    host, cdp = FakeHost(), FakeCdp()
    share = Endpoint("localhost", 0, "/p", "share", socket="/s.sock")
    record, _ = await _served(host, share, cdp)
    assert host.commands == [] and record.directory is None  # nothing made there
    assert cdp.sent == [("Browser.setDownloadBehavior", {"behavior": "default",
                                                         "eventsEnabled": True})]
    for method, params in _events():
        cdp.listener(method, params)
    with pytest.raises(InvalidArgument, match="cannot be copied back: it is a share"):
        await record.fetch(record.entries[0], io.BytesIO(), 512, 5)


async def test_what_a_fetch_refuses_and_what_it_copies() -> None:
    host, cdp = FakeHost(), FakeCdp()
    record, _ = await _served(host, cdp=cdp)
    for method, params in _events():
        cdp.listener(method, params)
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

    cdp.listener("Browser.downloadWillBegin", {"guid": "slow", "url": "u",
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

    record, _ = await _served(Down())
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


async def test_the_directory_goes_at_exit_even_after_a_failed_set_up() -> None:
    class Flaky(FakeHost):
        async def run(self, command: str, timeout_s: float) -> str:
            self.commands.append(command)
            if len(self.commands) == 2:
                raise HostError("connection lost")
            return self.prepared

    host = Flaky()
    record, _ = await _served(host)
    await record.start(FakeCdp(), LOOPBACK)  # the reconnect's set-up fails
    assert record.unreachable is not None and "connection lost" in record.unreachable
    await record.aclose()
    assert host.commands[-1] == f"rm -rf -- {DIRECTORY}"
    await record.aclose()  # once only
    assert len(host.commands) == 3


async def test_a_fetch_waits_for_a_download_under_way_and_says_how_far_it_is() -> None:
    cdp = FakeCdp()
    record, _ = await _served(cdp=cdp)
    cdp.listener("Browser.downloadWillBegin", {"guid": "g", "url": "u",
                                               "suggestedFilename": "s"})
    heard: list[tuple[float, float | None, str | None]] = []

    async def send(done: float, total: float | None, message: str | None) -> None:
        heard.append((done, total, message))

    async def browser() -> None:
        for received, state in ((1 << 20, "inProgress"), (2 << 20, "completed")):
            await anyio.sleep(0.3)
            cdp.listener("Browser.downloadProgress", {
                "guid": "g", "receivedBytes": received, "totalBytes": 2 << 20, "state": state})

    with progress.reporting(send):
        async with anyio.create_task_group() as tg:
            tg.start_soon(browser)
            assert await record.fetch(record.get(1), io.BytesIO(), 512, 10) == 4
    assert [h[0] for h in heard] == [0, 1 << 20], heard
    assert heard[-1] == (1 << 20, 2 << 20, "still downloading in the browser: 1.0 MB")
