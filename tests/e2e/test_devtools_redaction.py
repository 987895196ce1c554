"""Secrets in headers never leave the gateway: not in tool results, not in the call log.

The page server sets a cookie with ``Set-Cookie`` and the page sends it back with an
``Authorization: Bearer …`` header; both values are random per run and appear in no
response body and no URL (the page carries the token base64-encoded), so finding one
in a result or in the log can only mean a header value leaked. The page server
confirms the secrets were really sent (``/api/auth`` answers whether they matched),
and a target configured ``redact = false`` shows them — so the checks here cannot
pass just because the secrets never reached the browser.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.e2e.helpers import call_ok, eventually, present
from tests.e2e.pages import (
    DevtoolsEnv,
    devtools_gateway,
    dump,
    header_values,
    open_page,
    raw_call,
    settle,
)
from tests.topology import Topology

pytestmark = pytest.mark.anyio

REDACTED = "[redacted]"
SECRET_HEADERS = ("Cookie", "Set-Cookie", "Authorization", "Proxy-Authorization")


@pytest.fixture(scope="module")
async def env(
    topology: Topology, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[DevtoolsEnv]:
    async with devtools_gateway(topology, tmp_path_factory.mktemp("devtools-redaction"),
                                hosts=("h1",)) as e:
        yield e


async def _load(env: DevtoolsEnv, target: str) -> tuple[int, list[dict[str, Any]]]:
    """The devtools page on ``target``, its requests all listed, and the listing."""
    site = env.site(target)
    tab = await open_page(env.client, site, "/devtools.html", target)
    done = await settle(env.client, tab)
    assert done["auth"] == {"authorization_ok": True, "cookie_ok": True}, (
        f"the page really sent both secrets: {done}")

    async def finished() -> list[dict[str, Any]] | None:
        listing = await call_ok(env.client, "network_requests", {"tab": tab, "limit": 1000})
        echo = [r for r in listing["requests"] if r["url"] == site.url("/api/echo")]
        return listing["requests"] if echo and echo[0]["status"] == 200 else None

    return tab, await eventually(finished, until=present, timeout=20, what="the page's requests")


def _request(requests: list[dict[str, Any]], url: str) -> dict[str, Any]:
    hits = [r for r in requests if r["url"] == url]
    assert hits, f"no request for {url}"
    return hits[0]


async def test_secrets_never_appear_in_results_or_the_call_log(env: DevtoolsEnv) -> None:
    tab, requests = await _load(env, "h1")
    secrets = env.all_secrets()
    seen: list[str] = []

    for tool, args in [
        ("network_requests", {"tab": tab, "limit": 1000}),
        ("console_messages", {"tab": tab}),
        *[("network_request", {"tab": tab, "id": r["id"], "include_body": "both"})
          for r in requests],
        ("cdp_command", {"tab": tab, "method": "Network.getCookies"}),
    ]:
        result, text = await raw_call(env.client, tool, args)
        assert not result.is_error, f"{tool}({args}) failed: {text[:500]}"
        seen.append(text)
        for secret in secrets:
            assert secret not in text, f"{tool}({args}) shows a secret header value"

    assert len(seen) == len(requests) + 3
    log = env.call_log.read_text()
    logged = [line for line in log.splitlines() if '"network_request"' in line]
    assert len(logged) >= len(requests), "every network_request call is in the call log"
    for secret in secrets:
        assert secret not in log, "the call log holds a secret header value"
        assert secret not in env.stderr_log.read_text(), "stderr holds a secret header value"
    await call_ok(env.client, "close_tab", {"tab": tab})


async def test_authorization_and_cookie_headers_show_as_redacted(env: DevtoolsEnv) -> None:
    """Redacted, not hidden: the agent sees that the header was there."""
    site = env.site("h1")
    tab, requests = await _load(env, "h1")
    try:
        auth = await call_ok(env.client, "network_request", {
            "tab": tab, "id": _request(requests, site.url("/api/auth"))["id"]})
        assert set(header_values(auth, "Authorization")) == {REDACTED}, dump(auth)[:1500]
        assert set(header_values(auth, "Cookie")) == {REDACTED}, (
            "the Cookie the browser added is shown, redacted: " + dump(auth)[:1500])

        set_cookie = await call_ok(env.client, "network_request", {
            "tab": tab, "id": _request(requests, site.url("/set-cookie"))["id"]})
        assert set(header_values(set_cookie, "Set-Cookie")) == {REDACTED}, (
            dump(set_cookie)[:1500])

        plain = header_values(auth, "Content-Type") + header_values(auth, "Accept")
        assert plain and REDACTED not in plain, "other headers are left alone"
    finally:
        await call_ok(env.client, "close_tab", {"tab": tab})


async def test_redact_false_shows_the_values(
    topology: Topology, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The control: with ``redact = false`` the same requests show the real values."""
    async with devtools_gateway(topology, tmp_path_factory.mktemp("devtools-no-redaction"),
                                hosts=("h2",), target_options={"redact": False}) as env:
        site = env.site("h2")
        tab, requests = await _load(env, "h2")
        auth = await call_ok(env.client, "network_request", {
            "tab": tab, "id": _request(requests, site.url("/api/auth"))["id"]})
        assert set(header_values(auth, "Authorization")) == {f"Bearer {site.auth_secret}"}
        assert site.auth_secret in (await raw_call(env.client, "network_request", {
            "tab": tab, "id": _request(requests, site.url("/api/auth"))["id"]}))[1]
        await call_ok(env.client, "close_tab", {"tab": tab})
