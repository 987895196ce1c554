"""Do no harm: with the gateway attached, every page runs exactly as without it.

The gateway attaches to every page of a browser it serves — its own tabs, a person's, a
test framework's. Measured on Chromium 156 before the fix: an attached gateway left
every dedicated web worker paused (a documentation site's search said "Initializing
search" forever) and made every background tab of the browser visible and focused.

The pages are real: ``browse_site/workers.html`` starts a dedicated worker from a file
and from a ``blob:`` URL, one that starts a worker of its own, a shared worker, a
service worker that answers a fetch, and a cross-site frame (out of process) with its own
worker; a documentation site built by MkDocs Material (installed from PyPI) whose search
runs in a worker; and a browser that Selenium drives through chromedriver while the
gateway's host scan attaches to it. What a page did is read over the page's own DevTools
connection where the tab is not the gateway's (``OtherClient``), and compared with the
same page in the same browser while no gateway is attached.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.e2e.helpers import (
    call_ok,
    eventually,
    open_gateway,
    present,
    targets_by_name,
    wait_for_targets,
    write_targets,
)
from tests.e2e.other_client import OtherClient
from tests.e2e.pages import (
    DevtoolsEnv,
    act,
    browse,
    devtools_gateway,
    js,
    page_fixtures,
    ref_of,
    serve_directory,
    serve_pages,
)
from tests.e2e.real_apps import build_docs_site
from tests.e2e.webdriver_host import CAPABILITIES, Chromedriver
from tests.topology import Topology

pytestmark = pytest.mark.anyio

WORKERS = "/browse/workers.html"
ANSWERS = {"file": 20, "blob": 15, "nested": "nested 40", "shared": 77,
           "service": "answered by the service worker", "frame": 90}
"""What every worker of ``workers.html`` answers (the page settles after 8 s with what
came by then, so a missing one shows up as a missing key, not a hang)."""
UNREGISTER = "window.csgwUnregister && window.csgwUnregister()"  # the service worker's
SEARCH_READY = """new Promise(resolve => {
  const meta = () => (document.querySelector('.md-search-result__meta') || {}).textContent;
  const started = Date.now();
  (function poll() {
    const text = (meta() || '').trim();
    if (text === 'Type to start searching' || Date.now() - started > 8000) resolve(text);
    else setTimeout(poll, 50);
  })();
})"""
"""The documentation site's search status once its worker has loaded the index (or what
it still says after 8 s: "Initializing search" while the worker stands still)."""
STATE = "[document.visibilityState, document.hasFocus()]"

env, tabs = page_fixtures("do-no-harm")


@dataclass
class Seen:
    """What a page another client opened did: its workers' answers, and how it ran
    (visibility and focus) beside a newer tab."""

    answers: Any
    state: Any


def _other_client_opens(client: OtherClient, url: str, expression: str) -> Seen:
    """Open ``url``, then a newer blank tab beside it (the first goes to the background,
    as a person's or a test's earlier tab does); read ``expression`` and the first tab's
    state; close both."""
    first = client.open(url)
    newer = client.open("about:blank")
    try:
        answers, state, _ = client.evaluate(first, expression, STATE, UNREGISTER)
        return Seen(answers, state)
    finally:
        client.close(newer)
        client.close(first)


@pytest.fixture(scope="module")
def docs_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A documentation site built by MkDocs Material: its search runs in a web worker."""
    return build_docs_site(tmp_path_factory.mktemp("docs-site"))


async def _seen_by_other_client(client: OtherClient, url: str, expression: str) -> Seen:
    return await anyio.to_thread.run_sync(_other_client_opens, client, url, expression)


async def test_a_tab_another_client_opened_runs_as_without_the_gateway(
        topology: Topology, tmp_path: Path) -> None:
    """The control first: the same page, in the same browser, with no gateway attached."""
    other = OtherClient(topology.host("h1"))
    with serve_pages(topology.host("h1")) as site:
        alone = await _seen_by_other_client(other, site.url(WORKERS), "window.csgwWorkers")
    assert alone.answers == ANSWERS  # the page works: what follows means something
    assert alone.state == ["hidden", False]  # a background tab, as browsers run them

    async with devtools_gateway(topology, tmp_path, hosts=("h1",)) as gateway:
        site = gateway.site("h1")
        seen = await _seen_by_other_client(other, site.url(WORKERS), "window.csgwWorkers")
        assert seen == alone
        listed = (await call_ok(gateway.client, "list_tabs", {"target": "h1"}))["tabs"]
        assert len(listed) >= 1  # the gateway was attached all along, and followed tabs


async def test_workers_run_in_a_tab_the_gateway_opened(env: DevtoolsEnv,
                                                        tabs: list[int]) -> None:
    opened = await browse(env.client, env.site("h1").url(WORKERS), target="h1")
    tabs.append(opened["tab"])
    try:
        assert await js(env.client, opened["tab"], "await window.csgwWorkers") == ANSWERS
    finally:
        await js(env.client, opened["tab"], UNREGISTER)


async def test_a_documentation_sites_search_works_in_every_tab(
        topology: Topology, env: DevtoolsEnv, tabs: list[int], docs_site: Path) -> None:
    h1 = topology.host("h1")
    with serve_directory(h1, docs_site) as origin:
        seen = await _seen_by_other_client(OtherClient(h1), origin + "/", SEARCH_READY)
        assert seen.answers == "Type to start searching"  # not "Initializing search"

        opened = await browse(env.client, origin + "/", target="h1")
        tabs.append(opened["tab"])
        search = ref_of(opened["view"], "Search", "textbox")
        # The site searches on key-up, as a person types: type, then a key.
        found = await act(env.client, opened["tab"],
                          {"do": "type", "ref": search, "text": "tunnels"},
                          {"do": "press", "key": "End"},
                          {"do": "wait_for", "text": "1 matching document"})
        assert [step["do"] for step in found["steps"] if step.get("ok")] == [
            "type", "press", "wait_for"], found["steps"]
        assert "1 matching document" in found["view"]


@pytest.fixture
def chromedriver(topology: Topology) -> Iterator[Chromedriver]:
    driver = Chromedriver(topology.host("h1"))
    try:
        yield driver
    finally:
        driver.close()


def _selenium_session(topology: Topology) -> Any:
    """A Selenium ``Remote`` session on h1's chromedriver, started inside h1."""
    from selenium import webdriver

    def start() -> Any:
        options = webdriver.ChromeOptions()
        chrome = CAPABILITIES["goog:chromeOptions"]
        options.binary_location = chrome["binary"]
        for argument in chrome["args"]:
            options.add_argument(argument)
        return webdriver.Remote(command_executor="http://127.0.0.1:9515", options=options)

    return topology.host("h1").run_in_netns(start)


def _selenium_test(topology: Topology, driver: Any, url: str) -> Any:
    """The framework's own test of the page: load it, wait for every worker's answer."""
    from selenium.webdriver.support.ui import WebDriverWait

    def run() -> Any:
        driver.get(url)
        return WebDriverWait(driver, 20).until(lambda d: d.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "window.csgwWorkers.then(done);"))

    return topology.host("h1").run_in_netns(run)


async def test_a_test_framework_still_passes_with_the_gateway_attached(
        topology: Topology, chromedriver: Chromedriver, tmp_path: Path) -> None:
    """Selenium drives a browser on h1 through chromedriver; the gateway's host scan finds
    that browser and attaches to it; the framework's test of a page with workers passes."""
    targets = write_targets(tmp_path / "targets.toml", {
        "ci": {"ssh": "h1", "browsers": "all", "scan_interval_s": 0.5}})
    with serve_pages(topology.host("h1")) as site:
        async with open_gateway(topology.client_env(), ["--config", str(targets)]) as client:
            await wait_for_targets(client, {"ci": "up"})
            session = await anyio.to_thread.run_sync(_selenium_session, topology)
            try:
                address = session.capabilities["goog:chromeOptions"]["debuggerAddress"]
                port = int(address.rpartition(":")[2])

                async def attached() -> dict[str, Any] | None:
                    return next((t for t in (await targets_by_name(client)).values()
                                 if t.get("port") == port and t.get("state") == "up"), None)

                member = await eventually(attached, until=present, timeout=30,
                                          what="the gateway attached to Selenium's browser")
                assert member["started_by"] == "chromedriver"
                answers = await anyio.to_thread.run_sync(
                    _selenium_test, topology, session, site.url(WORKERS))
                assert answers == ANSWERS
                await anyio.to_thread.run_sync(
                    lambda: topology.host("h1").run_in_netns(
                        lambda: session.execute_script(f"return {UNREGISTER}")))
            finally:
                await anyio.to_thread.run_sync(
                    lambda: topology.host("h1").run_in_netns(session.quit))
