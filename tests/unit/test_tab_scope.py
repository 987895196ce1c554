"""Tab scope (``tabs = "agent"``): which pages are the agent's, what is refused on a
person's browser, and how a share's and the gateway's say combine (pure parts; the
browser side is ``tests/e2e/test_tab_scope.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from gateway.browsers.scope import PageScope
from gateway.config import TargetConfig
from gateway.config.policy import check_own_tabs
from gateway.errors import NotAllowed
from gateway.share.manifest import SeenShare, ShareManifest
from gateway.share.options import share_options

PAGE = {"type": "page", "url": "https://mail.example/inbox", "title": "Inbox (3)"}


def page(target_id: str, **info: Any) -> dict[str, Any]:
    return {**PAGE, "targetId": target_id, **info}


def test_all_admits_every_page() -> None:
    assert PageScope("all").admits(page("A"))
    assert not PageScope("all").agent_only


def test_agent_admits_its_own_their_popups_and_handed_pages_only() -> None:
    scope = PageScope("agent", ["http://localhost:3000", "quarterly report"])
    assert not scope.admits(page("mail"))
    scope.claim("mine")
    assert scope.admits(page("mine"))
    assert scope.admits(page("popup", openerId="mine"))
    assert scope.admits(page("popup"))  # owned once admitted: its later infos too
    assert not scope.admits(page("bank-popup", openerId="mail"))
    assert scope.admits(page("dev", url="http://localhost:3000/orders"))
    assert scope.admits(page("doc", title="The Quarterly Report - Docs"))
    assert scope.admits(page("doc", url="https://bank.example/", title="Bank"))  # handed stays
    scope.forget("mine")
    assert not scope.admits(page("mine"))
    assert not scope.admits({"type": "page"})  # no target id: never ours


def test_the_default_context_is_the_persons() -> None:
    with pytest.raises(NotAllowed, match=r"person's own profile.*isolated context"):
        PageScope("agent").check_own_context("laptop", None, "storage_state")
    PageScope("agent").check_own_context("laptop", "agent-own", "storage_state")
    PageScope("all").check_own_context("laptop", None, "storage_state")


@pytest.mark.parametrize(("method", "params", "on_tab"), [
    ("Browser.getVersion", None, False),
    ("Page.navigate", {"url": "https://x.example"}, False),  # browser level: anything
    ("Target.getTargets", None, True),
    ("Target.attachToTarget", {"targetId": "mail"}, True),
    ("Storage.getCookies", None, True),
    ("DOMStorage.getDOMStorageItems", None, True),
    ("Network.getAllCookies", None, True),
    ("Network.clearBrowserCookies", None, True),
    ("Network.getCookies", {"urls": ["https://bank.example"]}, True),
])
def test_what_reaches_past_a_tab_is_refused(method: str, params: dict[str, Any] | None,
                                           on_tab: bool) -> None:
    with pytest.raises(NotAllowed, match=r"only its own tabs.*tab=<id>"):
        check_own_tabs("laptop", method, params, on_tab=on_tab)


@pytest.mark.parametrize("method", ["Runtime.evaluate", "Page.navigate", "DOM.getDocument",
                                    "Network.getCookies", "Emulation.setTimezoneOverride"])
def test_a_tabs_own_commands_go_through(method: str) -> None:
    check_own_tabs("laptop", method, None, on_tab=True)


def test_config_keys() -> None:
    assert TargetConfig(name="a").tabs is None
    assert TargetConfig.model_validate({"name": "a", "tabs": "agent",
                                        "handed_tabs": ["Jira"]}).handed_tabs == ("Jira",)
    for bad, key in (({"tabs": "mine"}, "tabs"), ({"handed_tabs": [""]}, "handed_tabs"),
                     ({"handed_tabs": ["a\nb"]}, "handed_tabs"),
                     ({"handed_tabs": ["x" * 201]}, "handed_tabs"),
                     ({"handed_tabs": [f"t{i}" for i in range(9)]}, "handed_tabs"),
                     ({"tabs": "all", "handed_tabs": ["Jira"]}, "handed_tabs")):
        with pytest.raises(ValidationError, match=key):
            TargetConfig.model_validate({"name": "a", **bad})


def test_handed_tabs_alone_mean_agent() -> None:
    from gateway.browsers.pages import PageTracker
    from gateway.browsers.uploads import Uploads
    from gateway.hosts.local import LocalHost
    from gateway.tabs.tab import TabIds

    def mode(**keys: Any) -> str:
        config = TargetConfig(name="a", **keys)
        return PageTracker("a", config, TabIds(), Uploads(LocalHost())).scope.mode

    assert (mode(), mode(handed_tabs=("Jira",)), mode(tabs="agent")) == ("all", "agent",
                                                                         "agent")


def _options(tabs: str | None, *handed: str) -> Any:
    return share_options("me@devbox", None, None, False, False, "one", None, False, tabs,
                         handed)


def test_share_flags() -> None:
    assert (_options(None).tabs, _options("all").tabs, _options("agent").tabs) == (
        None, "all", "agent")
    assert (_options(None, "Jira").tabs, _options(None, "Jira").handed_tabs) == (
        "agent", ("Jira",))
    for tabs, handed, reason in (("all", ["Jira"], "with --tabs all"), (None, [""], "a URL"),
                                 (None, [f"t{i}" for i in range(9)], "at most 8")):
        with pytest.raises(ValueError, match=reason):
            _options(tabs, *handed)


def test_the_manifest_carries_the_sharers_say() -> None:
    manifest = ShareManifest(name="laptop", share_id="0123456789abcdef", sharer="laptop",
                             shared_at="2026-12-04T10:00:00+00:00", tabs="agent",
                             handed_tabs=("Jira",))
    assert ShareManifest.model_validate_json(manifest.to_text()) == manifest
    plain = ShareManifest(name="laptop", share_id="0123456789abcdef", sharer="laptop",
                          shared_at="2026-12-04T10:00:00+00:00")
    assert "tabs" not in plain.to_text()  # an older gateway reads the same as before
    with pytest.raises(ValidationError):
        ShareManifest.model_validate({**plain.model_dump(), "tabs": "every"})


@pytest.mark.parametrize(("gateway", "sharer", "wanted"), [
    (None, None, None), ("all", None, "all"), (None, "all", "all"),
    ("agent", "all", "agent"), ("all", "agent", "agent"), (None, "agent", "agent")])
def test_the_stricter_say_wins(gateway: str | None, sharer: str | None,
                               wanted: str | None) -> None:
    from gateway.fleet.share_watch import _scope_of

    config = TargetConfig(name="here", shared=True, tabs=gateway)  # type: ignore[arg-type]
    seen = SeenShare(ShareManifest(name="laptop", share_id="0123456789abcdef",
                                   sharer="laptop", shared_at="2026-12-04T10:00:00+00:00",
                                   tabs=sharer, handed_tabs=("Jira",)),  # type: ignore[arg-type]
                     str(Path("/x/laptop.sock")), True)
    assert _scope_of(config, seen) == {"tabs": wanted, "handed_tabs": ("Jira",)}
