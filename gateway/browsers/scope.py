"""Which of a browser's pages are the agent's: all of them, or only its own.

A browser the gateway launched, a CI host's or a test framework's is the agent's to
use whole (``all``). A person's own browser is not: it holds their mail and their bank.
With ``agent`` the gateway knows only the pages the agent opened (``new_tab``, and the
popups those open), and those the person handed it (``handed_tabs``: a URL or its start,
or words of the title). Every other page is never attached, tracked, listed, read or
captured, and its events never reach the gateway's records: a page the agent cannot
name has no tab id, so no tool can reach it. What the agent owns is kept for the
gateway's life, across reconnects; a restarted gateway owns nothing it did not open
again (the safe side: a tab it forgot becomes the person's).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gateway.config import TabScope
from gateway.errors import NotAllowed

__all__ = ["PageScope", "scope_mode"]


def scope_mode(tabs: TabScope | None, handed: Iterable[str], personal: bool) -> TabScope:
    """``tabs`` as configured; unset: ``agent`` for a person's own browser (found through
    its remote-debugging setting) or one with handed tabs, else ``all``."""
    return tabs or ("agent" if personal or tuple(handed) else "all")


class PageScope:
    """The pages of one browser the agent may use."""

    def __init__(self, mode: TabScope, handed: Iterable[str] = ()) -> None:
        self.mode: TabScope = mode
        self._handed = tuple(handed)
        self._owned: set[str] = set()

    @property
    def agent_only(self) -> bool:
        return self.mode == "agent"

    def check_own_context(self, target: str, context: str | None, doing: str) -> None:
        """Refuse ``doing`` to the default browser context of an agent-scoped browser:
        it is the person's profile (their cookies, storage and site permissions for every
        site), not the agent's. An isolated ``context`` the gateway made is the agent's."""
        if self.agent_only and context is None:
            raise NotAllowed(
                f"{doing} would reach the person's own profile on target {target!r} (tabs "
                "= \"agent\": the agent sees only its own tabs); do it in an isolated "
                "context instead (new_tab with context=NAME), or have the person do it")

    def claim(self, target_id: str) -> None:
        """The agent opened this page: it is the agent's from now on."""
        self._owned.add(target_id)

    def forget(self, target_id: str) -> None:
        self._owned.discard(target_id)

    def admits(self, info: dict[str, Any]) -> bool:
        """Whether a page (Chrome's ``targetInfo``) is the agent's: every page with
        ``all``; with ``agent`` one it opened, a popup of one of those, or one the
        person handed it — which then stays the agent's wherever it navigates."""
        if self.mode == "all":
            return True
        target_id = info.get("targetId")
        if not isinstance(target_id, str):
            return False
        if target_id in self._owned:
            return True
        if info.get("openerId") in self._owned or self._handed_over(info):
            self._owned.add(target_id)
            return True
        return False

    def _handed_over(self, info: dict[str, Any]) -> bool:
        url, title = str(info.get("url", "")), str(info.get("title", "")).casefold()
        return any(url.startswith(handed) or handed.casefold() in title
                   for handed in self._handed)
