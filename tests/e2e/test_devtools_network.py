"""``network_requests`` and ``network_request`` on real pages served inside a remote host.

The devtools page (tests/e2e/page_server.py) loads two scripts and an image, then
fetches a 404, a refused port, a CORS-blocked URL on its second origin, a cookie, an
authorised endpoint, a JSON, a 300,000-byte text, a PNG and a POST. Every request
must show with method, URL, status, type, size, duration and — when it failed —
the reason; filters pick them apart; bodies come back (text cut with a note, binary
described or saved to a file).
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from tests.e2e.helpers import ERROR_BOUND, call_err, call_ok, eventually, present
from tests.e2e.page_server import BIG_LINES, DATA_JSON, IMAGE_SIZE, big_text, png_bytes
from tests.e2e.pages import (
    DevtoolsEnv,
    PageSite,
    devtools_gateway,
    dump,
    file_mode,
    ints_in,
    keys_in,
    open_page,
    settle,
    strings_in,
)
from tests.topology import Topology

pytestmark = pytest.mark.anyio

SETTLE_TIMEOUT = 20.0
BIG = big_text()
PNG = png_bytes(*IMAGE_SIZE)
assert len(BIG) == BIG_LINES * 75 == 300_000


@pytest.fixture(scope="module")
async def env(
    topology: Topology, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[DevtoolsEnv]:
    async with devtools_gateway(topology, tmp_path_factory.mktemp("devtools-network"),
                                hosts=("h1",)) as e:
        yield e


@pytest.fixture(scope="module")
def site(env: DevtoolsEnv) -> PageSite:
    return env.site("h1")


@pytest.fixture(scope="module")
async def page(env: DevtoolsEnv, site: PageSite) -> AsyncIterator[int]:
    """One tab showing the devtools page, every scripted request finished and listed."""
    tab = await open_page(env.client, site, "/devtools.html", "h1")
    done = await settle(env.client, tab)
    assert done["notFound"] == 404 and done["auth"] == {"authorization_ok": True,
                                                        "cookie_ok": True}, done

    def finished(requests: list[dict[str, Any]]) -> bool:
        echo = _one(requests, site.url("/api/echo"))
        failures = _by_suffix(requests, "/refused") + _by_suffix(requests, "?cross-origin")
        return (echo is not None and echo["status"] == 200 and len(failures) == 2
                and all(r.get("error") for r in failures))

    await wait_for_requests(env.client, tab, finished)
    yield tab
    await call_ok(env.client, "close_tab", {"tab": tab})


# --------------------------------------------------------------------------- helpers


def requests_of(result: dict[str, Any]) -> list[dict[str, Any]]:
    requests = result.get("requests")
    assert isinstance(requests, list), f"no `requests` list in {dump(result)[:800]}"
    return requests


async def listing(client: Client, tab: int, **args: Any) -> list[dict[str, Any]]:
    return requests_of(await call_ok(client, "network_requests", {"tab": tab, **args}))


async def wait_for_requests(
    client: Client, tab: int, ready: Callable[[list[dict[str, Any]]], Any], **args: Any
) -> list[dict[str, Any]]:
    async def probe() -> list[dict[str, Any]] | None:
        found = await listing(client, tab, **args)
        return found if ready(found) else None

    return await eventually(probe, until=present,
                            timeout=SETTLE_TIMEOUT, what=f"requests on tab {tab}")


def _by_suffix(requests: list[dict[str, Any]], suffix: str) -> list[dict[str, Any]]:
    return [r for r in requests if r["url"].endswith(suffix)]


def _one(requests: list[dict[str, Any]], url: str, type_: str | None = None
         ) -> dict[str, Any] | None:
    hits = [r for r in requests if r["url"] == url
            and (type_ is None or r["type"].lower() == type_)]
    return hits[0] if hits else None


def one(requests: list[dict[str, Any]], url: str, type_: str | None = None) -> dict[str, Any]:
    found = _one(requests, url, type_)
    assert found is not None, f"no {type_ or 'request'} for {url} in {[r['url'] for r in requests]}"
    return found


async def detail(client: Client, tab: int, request_id: Any, **args: Any) -> dict[str, Any]:
    return await call_ok(client, "network_request", {"tab": tab, "id": request_id, **args})


def assert_ok_request(request: dict[str, Any], method: str, type_: str) -> None:
    assert request["method"] == method, request
    assert request["status"] == 200, request
    assert request["type"].lower() == type_, request
    assert not request.get("error"), request
    assert isinstance(request["size"], int) and request["size"] > 0, request
    assert isinstance(request["duration_ms"], int | float) and request["duration_ms"] >= 0, request


def truncation_noted(value: Any) -> bool:
    flags = [v for k, v in keys_in(value) if "truncat" in k.lower()]
    return any(v is True for v in flags) or any("truncat" in s.lower() for s in strings_in(value)
                                                if len(s) < 2000)


# --------------------------------------------------------------------- what is shown


async def test_every_request_shows_with_its_fields(
    env: DevtoolsEnv, site: PageSite, page: int
) -> None:
    requests = await listing(env.client, page)

    assert_ok_request(one(requests, site.url("/devtools.html")), "GET", "document")
    for script in ("/console.js", "/thrower.js"):
        assert_ok_request(one(requests, site.url(script)), "GET", "script")
    assert_ok_request(one(requests, site.url("/api/image.png"), "image"), "GET", "image")
    assert_ok_request(one(requests, site.url("/api/image.png"), "fetch"), "GET", "fetch")
    for path in ("/api/data.json", "/api/big.txt", "/api/auth"):
        assert_ok_request(one(requests, site.url(path)), "GET", "fetch")
    assert_ok_request(one(requests, site.url("/api/echo")), "POST", "fetch")
    cookie = one(requests, site.url("/set-cookie"))  # body never read: see the test below
    assert (cookie["method"], cookie["status"], cookie["type"].lower()) == ("GET", 200, "fetch")

    big = one(requests, site.url("/api/big.txt"))
    assert len(BIG) <= big["size"] < len(BIG) + 4096, "size is the body's, headers at most"

    missing = one(requests, site.url("/missing.json"))
    assert (missing["method"], missing["status"], missing["type"].lower()) == (
        "GET", 404, "fetch")

    ids = [r["id"] for r in requests]
    assert len(set(map(str, ids))) == len(ids), f"request ids repeat: {ids}"


async def test_a_response_the_page_never_reads_still_has_a_duration(
    env: DevtoolsEnv, site: PageSite, page: int
) -> None:
    """``(await fetch(url)).status`` never reads the body, and Chrome then never sends
    ``loadingFinished``; the response still came, so the request took a known time."""
    requests = await listing(env.client, page)
    for path in ("/set-cookie", "/missing.json"):
        request = one(requests, site.url(path))
        assert request["status"] in (200, 404)
        assert isinstance(request["duration_ms"], int | float), (
            f"{path}: response headers arrived, yet no duration: {request}")


async def test_a_refused_connection_says_why(env: DevtoolsEnv, site: PageSite, page: int) -> None:
    refused = one(await listing(env.client, page),
                  f"http://127.0.0.1:{site.ports['refused']}/refused")
    assert refused["method"] == "GET" and refused["type"].lower() == "fetch"
    assert "net::ERR_CONNECTION_REFUSED" in refused["error"]
    assert refused["status"] in (None, 0), "no response, no status"


async def test_a_cors_block_says_so(env: DevtoolsEnv, site: PageSite, page: int) -> None:
    blocked = one(await listing(env.client, page),
                  site.url("/api/data.json?cross-origin", origin="b"))
    assert blocked["method"] == "GET" and blocked["type"].lower() == "fetch"
    assert "cors" in blocked["error"].lower(), f"a CORS failure names CORS: {blocked}"


async def test_request_detail_has_headers_and_timing(
    env: DevtoolsEnv, site: PageSite, page: int
) -> None:
    data = one(await listing(env.client, page), site.url("/api/data.json"))
    result = await detail(env.client, page, data["id"])

    assert result["url"] == site.url("/api/data.json") and result["status"] == 200
    text = dump(result)
    assert "application/json" in text, "response headers are shown"
    assert "Sec-Fetch-Mode" in text or "sec-fetch-mode" in text.lower(), (
        "request headers are shown")
    timing = [v for k, v in keys_in(result) if "timing" in k.lower()]
    assert timing and any(isinstance(t, dict) and t for t in timing), (
        f"timing is shown: {text[:800]}")


async def test_an_unknown_request_id_is_refused(env: DevtoolsEnv, page: int) -> None:
    error = await call_err(env.client, "network_request", {"tab": page, "id": 987654},
                           timeout=ERROR_BOUND)
    assert "987654" in error and "network_requests" in error


# --------------------------------------------------------------------------- filters


async def test_filter_by_url_substring(env: DevtoolsEnv, site: PageSite, page: int) -> None:
    found = await listing(env.client, page, filter="api/data.json")
    assert sorted(r["url"] for r in found) == sorted([
        site.url("/api/data.json"), site.url("/api/data.json?cross-origin", origin="b")])


async def test_filter_by_regex(env: DevtoolsEnv, site: PageSite, page: int) -> None:
    """A regex is written /like this/, as in the DevTools network panel's filter box."""
    found = await listing(env.client, page, filter=r"/(big\.txt|image\.png)$/")
    assert sorted(r["url"] for r in found) == sorted([
        site.url("/api/big.txt"), site.url("/api/image.png"), site.url("/api/image.png")])


async def test_an_invalid_regex_is_refused(env: DevtoolsEnv, page: int) -> None:
    error = await call_err(env.client, "network_requests", {"tab": page, "filter": "/([a-/"},
                           timeout=ERROR_BOUND)
    assert "regex" in error.lower()


async def test_failed_only(env: DevtoolsEnv, site: PageSite, page: int) -> None:
    failed = await listing(env.client, page, failed_only=True)

    urls = {r["url"] for r in failed}
    assert f"http://127.0.0.1:{site.ports['refused']}/refused" in urls
    assert site.url("/api/data.json?cross-origin", origin="b") in urls
    assert site.url("/missing.json") in urls, "HTTP error statuses count as failures"
    for request in failed:
        assert request.get("error") or (request["status"] or 0) >= 400, request
    assert site.url("/api/data.json") not in urls


async def test_resource_types(env: DevtoolsEnv, site: PageSite, page: int) -> None:
    everything = await listing(env.client, page)
    image_type = one(everything, site.url("/api/image.png"), "image")["type"]
    script_type = one(everything, site.url("/console.js"))["type"]

    images = await listing(env.client, page, resource_types=[image_type])
    assert [r["url"] for r in images] == [site.url("/api/image.png")]

    both = await listing(env.client, page, resource_types=[image_type, script_type])
    assert sorted(r["url"] for r in both) == sorted([
        site.url("/api/image.png"), site.url("/console.js"), site.url("/thrower.js")])

    lower = await listing(env.client, page, resource_types=["image"])
    assert [r["id"] for r in lower] == [r["id"] for r in images], "types match in any case"


async def test_since_and_limit(env: DevtoolsEnv, page: int) -> None:
    everything = await listing(env.client, page, limit=1000)
    ids = [r["id"] for r in everything]
    assert len(ids) >= 10

    since = await listing(env.client, page, since=ids[4], limit=1000)
    assert [r["id"] for r in since] == ids[5:]

    three = [r["id"] for r in await listing(env.client, page, limit=3)]
    assert len(three) == 3
    start = ids.index(three[0])
    assert ids[start:start + 3] == three, "limit returns a contiguous run of requests"


# ---------------------------------------------------------------------------- bodies


async def test_json_response_body(env: DevtoolsEnv, site: PageSite, page: int) -> None:
    data = one(await listing(env.client, page), site.url("/api/data.json"))
    result = await detail(env.client, page, data["id"], include_body="response")
    assert json.dumps(DATA_JSON) in strings_in(result), f"body missing: {dump(result)[:800]}"
    assert not truncation_noted(result)


async def test_a_large_text_body_is_cut_with_a_note(
    env: DevtoolsEnv, site: PageSite, page: int
) -> None:
    big = one(await listing(env.client, page), site.url("/api/big.txt"))
    result = await detail(env.client, page, big["id"], include_body="response")

    bodies = [s for s in strings_in(result) if s.startswith("csgw-big-text line 000000")]
    assert len(bodies) == 1, f"one body text expected: {dump(result)[:600]}"
    assert 1000 <= len(bodies[0]) < len(BIG) and BIG.startswith(bodies[0])
    assert truncation_noted(result), "a cut body says it was cut"


async def test_a_binary_body_is_described_not_inlined(
    env: DevtoolsEnv, site: PageSite, page: int
) -> None:
    image = one(await listing(env.client, page), site.url("/api/image.png"), "fetch")
    result = await detail(env.client, page, image["id"], include_body="response")

    text = dump(result)
    assert "image/png" in text
    assert len(PNG) in ints_in(result), f"the body's size ({len(PNG)}) is given: {text[:800]}"
    assert base64.b64encode(PNG).decode()[:64] not in text, "binary is not inlined as base64"
    assert "\\u0089PNG" not in text and "\ufffdPNG" not in text, "binary is not inlined as text"


async def test_a_binary_body_saved_to_a_file(
    env: DevtoolsEnv, site: PageSite, page: int, tmp_path: Path
) -> None:
    image = one(await listing(env.client, page), site.url("/api/image.png"), "fetch")
    path = tmp_path / f"body-{uuid.uuid4().hex}.png"

    result = await detail(env.client, page, image["id"], include_body="response",
                          save_to=str(path))

    assert path.read_bytes() == PNG
    assert file_mode(path) == 0o600
    assert str(path) in strings_in(result), "the result says where the body went"


async def test_a_text_body_saved_to_a_file_is_whole(
    env: DevtoolsEnv, site: PageSite, page: int, tmp_path: Path
) -> None:
    big = one(await listing(env.client, page), site.url("/api/big.txt"))
    path = tmp_path / "big.txt"
    await detail(env.client, page, big["id"], include_body="response", save_to=str(path))
    assert path.read_text() == BIG
    assert file_mode(path) == 0o600


async def test_request_body_of_a_post(env: DevtoolsEnv, site: PageSite, page: int) -> None:
    echo = one(await listing(env.client, page), site.url("/api/echo"))

    request_only = await detail(env.client, page, echo["id"], include_body="request")
    assert any("csgw-post-body" in s for s in strings_in(request_only))
    assert not any("received_bytes" in s for s in strings_in(request_only))

    both = await detail(env.client, page, echo["id"], include_body="both")
    assert any("csgw-post-body" in s for s in strings_in(both))
    assert json.dumps({"received_bytes": 25}) in strings_in(both)


async def test_no_body_unless_asked(env: DevtoolsEnv, site: PageSite, page: int) -> None:
    data = one(await listing(env.client, page), site.url("/api/data.json"))
    result = await detail(env.client, page, data["id"])
    assert json.dumps(DATA_JSON) not in strings_in(result)


@pytest.mark.parametrize("where", ["/etc", "/root"])
async def test_saving_a_body_outside_allowed_dirs_is_refused(
    env: DevtoolsEnv, site: PageSite, page: int, where: str
) -> None:
    image = one(await listing(env.client, page), site.url("/api/image.png"), "fetch")
    path = Path(where) / f"csgw-{uuid.uuid4().hex}.png"
    try:
        error = await call_err(env.client, "network_request", {
            "tab": page, "id": image["id"], "include_body": "response", "save_to": str(path)},
            timeout=ERROR_BOUND)
        assert "/tmp" in error, f"a refused path names the allowed directories: {error}"
        assert not path.exists()
    finally:
        if path.exists():
            os.unlink(path)


async def test_a_body_chrome_dropped_is_said_to_be_gone(env: DevtoolsEnv, site: PageSite) -> None:
    """After the tab moved on, Chrome drops the old page's bodies; the answer says so."""
    tab = await open_page(env.client, site, "/devtools.html", "h1")
    try:
        await settle(env.client, tab)
        data = one(await listing(env.client, tab), site.url("/api/data.json"))
        await open_page(env.client, site, "/tall.html", "h1", tab=tab)
        await open_page(env.client, site, "/many.html?n=1", "h1", tab=tab)

        result = await detail(env.client, tab, data["id"], include_body="response")

        assert json.dumps(DATA_JSON) not in strings_in(result)
        notes = " ".join(strings_in(result)).lower()
        assert any(word in notes for word in ("no longer", "not available", "unavailable",
                                              "evicted", "gone")), (
            f"the missing body is explained: {dump(result)[:800]}")
    finally:
        await call_ok(env.client, "close_tab", {"tab": tab})


# ---------------------------------------------------------------- collection coverage


async def test_a_tab_opened_with_a_url_has_its_document_request(
    env: DevtoolsEnv, site: PageSite
) -> None:
    """new_tab(url) loads at once: the document request is recorded all the same."""
    url = site.url(f"/fetches.html?n=2&run={uuid.uuid4().hex}")
    opened = await call_ok(env.client, "new_tab", {"target": "h1", "url": url})
    tab = opened["tab"]
    try:
        requests = await wait_for_requests(env.client, tab, lambda rs: (
            _one(rs, site.url("/api/data.json?i=1")) is not None))
        assert_ok_request(one(requests, url), "GET", "document")
    finally:
        await call_ok(env.client, "close_tab", {"tab": tab})


async def test_a_popup_has_its_document_request(env: DevtoolsEnv, site: PageSite) -> None:
    """A tab the page opens itself is watched from its first request."""
    path = f"/fetches.html?n=3&run={uuid.uuid4().hex}"
    opener = await open_page(env.client, site, "/many.html?n=1", "h1")
    popup = None
    try:
        await call_ok(env.client, "evaluate", {
            "tab": opener, "expression": f"window.open('{path}', '_blank') !== null"})

        async def popup_tab() -> int | None:
            tabs = (await call_ok(env.client, "list_tabs", {"target": "h1"}))["tabs"]
            hits = [t["tab"] for t in tabs if t["url"] == site.url(path)]
            return hits[0] if hits else None

        popup = await eventually(popup_tab, until=present,
                                 timeout=SETTLE_TIMEOUT, what="the popup tab")
        requests = await wait_for_requests(env.client, popup, lambda rs: (
            _one(rs, site.url("/api/data.json?i=2")) is not None))
        assert_ok_request(one(requests, site.url(path)), "GET", "document")
        assert _one(requests, site.url("/many.html?n=1")) is None, "the opener's stay its own"
    finally:
        for tab in (popup, opener):
            if tab is not None:
                await call_ok(env.client, "close_tab", {"tab": tab})


def _open_behind_the_gateway(site: PageSite, path: str) -> str:
    """Open a tab the way another program on the host would (``PUT /json/new``)."""
    host = site.host
    port = host.chrome_port(timeout=5)

    def put() -> bytes:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        try:
            conn.request("PUT", "/json/new?" + site.url(path))
            return conn.getresponse().read()
        finally:
            conn.close()

    return str(json.loads(host.run_in_netns(put))["id"])


async def test_a_tab_opened_by_someone_else_is_watched_from_the_start(
    env: DevtoolsEnv, site: PageSite
) -> None:
    """A tab another client opens is watched from the moment the gateway's attach
    lands, which races the page: its document request is made by the browser
    process before any client can attach, and its first script may run before
    collection is on. (Tabs opened through the gateway, and popups, are paused
    until it is — see the tests above.) So: the page's requests from then on, in
    order, the last one always, and nothing invented."""
    # /json/new takes the whole query as the URL but stops at "&": keep it to one parameter.
    path = "/fetches.html?n=4"
    url = site.url(path)
    before = {t["tab"] for t in (await call_ok(env.client, "list_tabs", {"target": "h1"}))["tabs"]}
    _open_behind_the_gateway(site, path)

    async def its_tab() -> int | None:
        tabs = (await call_ok(env.client, "list_tabs", {"target": "h1"}))["tabs"]
        hits = [t["tab"] for t in tabs if t["url"] == url and t["tab"] not in before]
        return hits[0] if hits else None

    tab = await eventually(its_tab, until=present,
                           timeout=SETTLE_TIMEOUT, what="the tab opened behind us")
    try:
        # Listed as soon as Chrome creates it: its script may not have run yet.
        assert await eventually(lambda: settle(env.client, tab), until=present,
                                timeout=SETTLE_TIMEOUT, what="the page's script to finish") == 4
        requests = await wait_for_requests(env.client, tab, lambda rs: (
            _one(rs, site.url("/api/data.json?i=3")) is not None))
        fetched = [r["url"] for r in requests if r["url"] != url]
        expected = [site.url(f"/api/data.json?i={i}") for i in range(4)]
        assert fetched and fetched == expected[len(expected) - len(fetched):], fetched
    finally:
        await call_ok(env.client, "close_tab", {"tab": tab})
