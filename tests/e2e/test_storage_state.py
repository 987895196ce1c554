"""``storage_state``: a sign-in saved as a Playwright storage-state file, loaded into a
fresh context on the same browser (h1) and on another (h2), cleared; values never in a
result or the call log; a malformed file and an existing path refused.

The sign-in is ``/signin.html``: the page server's secret cookie (HttpOnly, Lax) and a
localStorage token derived from its other secret — neither passes through a tool
argument, so finding one in the call log could only mean the tool leaked it. h2 serves
the same site at the same origin (``serve_pages(like=...)``), so its browser can show
whether the state carried over: ``/api/auth`` says if the cookie came with a request.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.helpers import call_err, call_ok, text_of
from tests.e2e.pages import (
    DevtoolsEnv,
    PageSite,
    blocked_error,
    close_tabs,
    devtools_gateway,
    file_mode,
    js,
    raw_call,
    serve_pages,
    settle,
)
from tests.topology import Topology

pytestmark = pytest.mark.anyio

COOKIE_KEYS = {"name", "value", "domain", "path", "expires", "httpOnly", "secure", "sameSite"}


@pytest.fixture(scope="module")
async def env(topology: Topology,
              tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[DevtoolsEnv]:
    tmp = tmp_path_factory.mktemp("storage")
    async with devtools_gateway(topology, tmp, hosts=("h1", "h2")) as e:
        with serve_pages(topology.host("h2"), tmp / "pages-h2-same.log",
                         like=e.site("h1")) as twin:
            e.extra["twin"] = twin
            yield e


def _token(site: PageSite) -> str:
    return "LS" + site.auth_secret[::-1]  # what /signin.html stores


async def _open(env: DevtoolsEnv, target: str, context: str, url: str) -> int:
    nav = await call_ok(env.client, "navigate", {"url": url, "target": target,
                                                 "context": context, "wait": "load"})
    return int(nav["tab"])


async def _signed_in(env: DevtoolsEnv, tab: int) -> tuple[bool, Any, Any]:
    """(the cookie went with a request, the token, the user) as the tab's page sees them."""
    auth = await js(env.client, tab, "(await (await fetch('/api/auth')).json()).cookie_ok")
    token = await js(env.client, tab, "localStorage.getItem('token')")
    user = await js(env.client, tab, "localStorage.getItem('user')")
    return auth, token, user


async def _storage(env: DevtoolsEnv, args: dict[str, Any]) -> tuple[dict[str, Any], str]:
    result, text = await raw_call(env.client, "storage_state", args)
    assert not result.is_error, text
    assert result.structured_content is not None
    return result.structured_content, text


async def test_sign_in_saved_loaded_on_both_targets_and_cleared(env: DevtoolsEnv) -> None:
    site, twin = env.site("h1"), env.extra["twin"]
    secrets = (site.cookie_secret, _token(site))
    path = env.tmp / "signed-in.json"
    opened: list[int] = []
    try:
        signer = await _open(env, "h1", "signer", site.url("/signin.html"))
        opened.append(signer)
        assert await settle(env.client, signer) == 2
        saved, text = await _storage(env, {"action": "save", "tab": signer, "path": str(path)})
        assert saved["context"] == "signer" and saved["path"] == str(path)
        assert "sid" in saved["cookie_names"] and saved["cookies"] >= 1
        assert saved["origins"] == [{"origin": site.origin, "items": 2}]
        for secret in secrets:
            assert secret not in text

        assert file_mode(path) == 0o600
        state = json.loads(path.read_text())
        assert set(state) == {"cookies", "origins"}
        [sid] = [c for c in state["cookies"] if c["name"] == "sid"]
        assert set(sid) == COOKIE_KEYS
        assert (sid["value"], sid["domain"], sid["path"], sid["expires"], sid["httpOnly"],
                sid["secure"], sid["sameSite"]) == (site.cookie_secret, "127.0.0.1", "/", -1,
                                                    True, False, "Lax")
        [origin] = state["origins"]
        assert origin["origin"] == site.origin
        assert {i["name"]: i["value"] for i in origin["localStorage"]} == {
            "token": _token(site), "user": "csgw"}

        again = await call_err(env.client, "storage_state",
                               {"action": "save", "tab": signer, "path": str(path)})
        assert "exists already" in again
        assert json.loads(path.read_text()) == state  # not replaced

        for target, context in (("h1", "fresh"), ("h2", "carried")):
            loaded, text = await _storage(env, {"action": "load", "path": str(path),
                                                "target": target, "context": context})
            assert loaded["origins"] == [{"origin": site.origin, "items": 2}]
            assert "sid" in loaded["cookie_names"]
            for secret in secrets:
                assert secret not in text
            listed = (await call_ok(env.client, "list_tabs"))["tabs"]
            assert [t for t in listed if t.get("context") == context] == []  # scratch closed
            host_site = site if target == "h1" else twin
            assert host_site.origin == site.origin  # the same origin, served on each host
            tab = await _open(env, target, context, host_site.url("/"))
            opened.append(tab)
            assert await _signed_in(env, tab) == (True, _token(site), "csgw"), target

        # saved again by context name from where it was loaded: the same state
        resaved = env.tmp / "resaved.json"
        await _storage(env, {"action": "save", "path": str(resaved), "context": "fresh",
                             "target": "h1"})
        assert json.loads(resaved.read_text()) == state

        stranger = await _open(env, "h2", "stranger", twin.url("/"))  # apart from the rest
        opened.append(stranger)
        assert await _signed_in(env, stranger) == (False, None, None)

        cleared, _ = await _storage(env, {"action": "clear", "tab": opened[-2]})
        assert cleared["cookies"] >= 1
        assert cleared["origins"] == [{"origin": site.origin, "items": 0}]
        assert await _signed_in(env, opened[-2]) == (False, None, None)
        assert await _signed_in(env, opened[1]) == (True, _token(site), "csgw")  # h1's kept
    finally:
        await close_tabs(env.client, opened)

    logged = env.call_log.read_text()
    assert '"storage_state"' in logged
    for secret in secrets:
        assert secret not in logged
        assert secret not in env.stderr_log.read_text()


async def test_a_save_without_an_origin_whose_tab_did_not_answer_says_so(
        env: DevtoolsEnv) -> None:
    """A tab blocked by a dialog cannot give its origin's localStorage: the file is still
    written (cookies, the rest), and the call is a tool error naming the origin left out
    and what to do, carrying the whole result."""
    site = env.site("h1")
    path = env.tmp / "partial.json"
    tab = await _open(env, "h1", "blocked", site.url("/signin.html"))
    try:
        assert await settle(env.client, tab) == 2
        await js(env.client, tab, "setTimeout(() => alert('csgw-hold'), 50); 1")
        await blocked_error(env.client, tab)  # the dialog is open
        result, _ = await raw_call(env.client, "storage_state", {
            "action": "save", "context": "blocked", "target": "h1", "path": str(path)})
        first = text_of(result)
        assert result.is_error, first
        assert first.startswith(f"saved without the localStorage of {site.origin}: its tab "
                                "did not answer (an open dialog, a hung page); answer or "
                                "close it"), first
        saved = result.structured_content
        assert saved is not None and saved["unread"] == [site.origin], saved
        assert saved["path"] == str(path) and "sid" in saved["cookie_names"], saved
        assert json.loads(path.read_text())["origins"] == []
    finally:
        await call_ok(env.client, "handle_dialog", {"tab": tab, "accept": True})
        await close_tabs(env.client, [tab])


@pytest.mark.parametrize(("content", "says"), [
    ("not json", "is not JSON"),
    ('{"cookies": []}', "origins: Field required"),
    ('{"cookies": [{"name": "a", "value": "SECRET-VALUE-1", "domain": "x", "path": "/", '
     '"expires": -1, "httpOnly": false, "secure": false, "sameSite": "Sometimes"}], '
     '"origins": []}', "cookies.0.sameSite"),
    ('{"cookies": [], "origins": [{"origin": "http://x/path", "localStorage": []}]}',
     "origins.0.origin"),
])
async def test_a_file_that_is_not_a_storage_state_is_refused(
        env: DevtoolsEnv, content: str, says: str) -> None:
    path = Path(env.tmp) / f"bad-{abs(hash(content))}.json"
    path.write_text(content)
    error = await call_err(env.client, "storage_state", {"action": "load", "path": str(path),
                                                         "target": "h1", "context": "bad"})
    assert "storage-state" in error and says in error, error
    assert "SECRET-VALUE-1" not in error and "Sometimes" not in error


@pytest.mark.parametrize(("args", "says"), [
    ({"action": "save", "context": "nobody", "target": "h1"}, "has no context 'nobody'"),
    ({"action": "clear", "context": "nobody", "target": "h1"}, "has no context 'nobody'"),
    ({"action": "load", "target": "h1"}, "action='load' needs path"),
    ({"action": "clear", "tab": 1, "context": "x"}, "pass tab or context, not both"),
])
async def test_arguments_that_do_not_fit_are_refused(env: DevtoolsEnv, args: dict[str, Any],
                                                     says: str) -> None:
    if args["action"] == "save":
        args["path"] = str(env.tmp / "never-written.json")
    error = await call_err(env.client, "storage_state", args)
    assert says in error, error
    assert not (env.tmp / "never-written.json").exists()
    listed = (await call_ok(env.client, "list_tabs"))["tabs"]
    assert all(t.get("context") != "nobody" for t in listed)


async def test_cookies_chrome_will_not_keep_are_named_and_the_rest_load(
        env: DevtoolsEnv) -> None:
    """One invalid cookie fails Chrome's whole batch; SameSite=None without Secure is
    dropped without a word: both are named in ``refused``, and the good one loads. The
    load did part of its work, so the call is a tool error that says which cookies did not
    load — first, in the text a client hands the model for an error — and still carries
    the whole result; the call log's line says error too."""
    def cookie(name: str, value: str, same_site: str) -> dict[str, Any]:
        return {"name": name, "value": value, "domain": "127.0.0.1", "path": "/",
                "expires": -1, "httpOnly": False, "secure": False, "sameSite": same_site}

    path = env.tmp / "picky.json"
    path.write_text(json.dumps({"cookies": [
        cookie("kept", "yes", "Lax"), cookie("dropped", "SECRET-D", "None"),
        cookie("broken", "SECRET;B", "Strict")], "origins": []}))
    result, everything = await raw_call(env.client, "storage_state", {
        "action": "load", "path": str(path), "target": "h1", "context": "picky"})
    first = text_of(result)
    assert result.is_error, first
    assert first.startswith("Chrome did not keep the cookies dropped, broken "), first
    assert '"refused":["dropped","broken"]' in first, "the whole result is in the text too"
    loaded = result.structured_content
    assert loaded is not None and (loaded["cookies"], loaded["refused"]) == (
        3, ["dropped", "broken"]), loaded
    assert "SECRET" not in everything
    [line] = [json.loads(line) for line in env.call_log.read_text().splitlines()
              if '"picky"' in line and '"storage_state"' in line]
    assert line["outcome"] == "error" and "dropped, broken" in line["error"], line
    tab = await _open(env, "h1", "picky", env.site("h1").url("/"))
    try:
        assert await js(env.client, tab, "document.cookie") == "kept=yes"
    finally:
        await close_tabs(env.client, [tab])
