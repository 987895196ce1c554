"""Who may open a live page: one link per URL handed out, its token used once.

A live URL carries a fresh random token in its query (``/live/?t=…``). The first
request with it exchanges it for a session cookie — HttpOnly, SameSite=Strict, its
path the link's own (``/live/s/<id>/``) — and a redirect to a URL without the token,
so the token is spent before it can sit in a history, a screenshot or a log: pasted
again it opens nothing. View and control are separate links with separate tokens. A
link (used or not) expires after ``LINK_IDLE_S`` without a request, and all of them
with the gateway (they live in its memory only). Tokens and session secrets are kept
as their SHA-256, so a lookup's timing says nothing about a stored one.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gateway.live.hold import Hold

__all__ = ["LINK_IDLE_S", "Link", "Links", "host_allowed", "origin_allowed"]

LINK_IDLE_S = 15 * 60
"""A live link not used for this long (15 minutes) opens nothing any more."""
MAX_LINKS = 1000
"""Links kept at most; the least recently used go first (each ``live_view`` makes one)."""


@dataclass
class Link:
    """What one live URL opens: a tab (None: every tab listed) and whether the person
    may act on it; ``handoff``, the hold it was made for, shows the Done button (which
    ends that hold only) and its input goes to the tab only while that hold lasts."""

    id: str
    tab: int | None
    control: bool
    handoff: Hold | None
    last_used: float

    def allows(self, tab: int) -> bool:
        return self.tab is None or self.tab == tab


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class Links:
    """The live links handed out, their unspent tokens and their sessions."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._links: dict[str, Link] = {}
        self._tokens: dict[str, str] = {}    # digest of an unspent token → link id
        self._sessions: dict[str, str] = {}  # digest of a session secret → link id

    def issue(self, tab: int | None, *, control: bool, handoff: Hold | None = None) -> str:
        """A new link; returns its token (to put in the URL, never to log)."""
        self._expire()
        while len(self._links) >= MAX_LINKS:
            self._forget(min(self._links.values(), key=lambda link: link.last_used).id)
        link = Link(secrets.token_urlsafe(9), tab, control, handoff, self._clock())
        self._links[link.id] = link
        token = secrets.token_urlsafe(32)
        self._tokens[_digest(token)] = link.id
        return token

    def exchange(self, token: str) -> tuple[Link, str] | None:
        """Spend ``token``: its link and a new session secret (for the cookie); None
        for a token unknown, spent or expired."""
        link = self._live(self._tokens.pop(_digest(token), None))
        if link is None:
            return None
        secret = secrets.token_urlsafe(32)
        self._sessions[_digest(secret)] = link.id
        return link, secret

    def session(self, link_id: str, secret: str | None) -> Link | None:
        """The link a session cookie opens, if it is that link's and neither expired;
        using it keeps it alive."""
        if not secret:
            return None
        found = self._sessions.get(_digest(secret))
        if found is None or not secrets.compare_digest(found, link_id):
            return None
        return self._live(found)

    def for_tab(self, tab: int) -> list[Link]:
        return [link for link in self._links.values() if link.tab == tab]

    def clear(self) -> None:
        self._links.clear()
        self._tokens.clear()
        self._sessions.clear()

    def _live(self, link_id: str | None) -> Link | None:
        link = self._links.get(link_id) if link_id is not None else None
        if link is None:
            return None
        now = self._clock()
        if now - link.last_used > LINK_IDLE_S:
            self._forget(link.id)
            return None
        link.last_used = now
        return link

    def _expire(self) -> None:
        now = self._clock()
        for link in [k for k in self._links.values() if now - k.last_used > LINK_IDLE_S]:
            self._forget(link.id)

    def _forget(self, link_id: str) -> None:
        self._links.pop(link_id, None)
        for table in (self._tokens, self._sessions):
            for digest in [d for d, owner in table.items() if owner == link_id]:
                del table[digest]


_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def host_allowed(host: str | None, port: int) -> bool:
    """Whether a request's Host names this server on loopback: a DNS-rebinding page
    reaches 127.0.0.1 under its own name, which this refuses."""
    return host is not None and host in {f"{name}:{port}" for name in _LOOPBACK_NAMES}


def origin_allowed(origin: str | None, host: str) -> bool:
    """Whether a request's Origin is the live page's own (or absent: a navigation);
    another site's page, even on loopback, gets nothing."""
    return origin is None or origin == f"http://{host}"
