"""Routes at work (``routes``): ``Fetch`` on the sessions of a tab that has routes (its own,
or its context's), and an answer for every request it pauses.

``Fetch.enable`` is per session, so it is sent to a tab's page session and to each of its
cross-site iframes' (``PageTracker.prepare`` sends it to every new session of a routed
tab, before a paused new page runs: its first request is routed too, and so is every
request after a reconnect). It pauses *every* request (``urlPattern: "*"``) and the
route is chosen here: a paused request nobody answers would hang the page, so each one
gets an answer — the route's, or "go on untouched" — and when Chrome refuses the route's
(a header it will not send, a URL it cannot load) the request fails instead of hanging,
and the route keeps the reason — only then: an answer that found the request or its
session gone (the page navigated away, the frame or tab closed) says nothing of the
route. When a tab has no route left, ``Fetch`` is disabled on it: an unrouted tab's
requests never wait for the gateway.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any, NamedTuple

from gateway.errors import CdpError, GatewayError
from gateway.tabs.routes import Route, Routes, answer, routed

if TYPE_CHECKING:
    from gateway.browsers.contexts import BrowserContexts
    from gateway.cdp.connection import CdpConnection
    from gateway.tabs.tab import Tab

__all__ = ["ANSWER_TIMEOUT_S", "FETCH_ENABLE", "FETCH_METHODS", "Taken", "fetch_command",
           "holds", "intercepting", "send_answer", "take", "went"]

ANSWER_TIMEOUT_S = 10.0
FETCH_ENABLE = {"patterns": [{"urlPattern": "*", "requestStage": "Request"}]}
FETCH_METHODS = frozenset({"Fetch.enable", "Fetch.disable", "Fetch.continueRequest",
                           "Fetch.fulfillRequest", "Fetch.failRequest"})
"""Answered by the browser process, so they work while a dialog blocks the page."""
_GONE = ("invalid interceptionid", "session with given id not found",
         "no session with given id")
"""Chrome's words for a paused request that is no longer there (the page navigated away,
the request was cancelled) and for a session that went (its frame or tab closed)."""


def _tables(tab: Tab, contexts: BrowserContexts) -> tuple[Routes, Routes]:
    """The tab's own routes first (they decide over its context's), then its context's."""
    return tab.routes, contexts.routes(tab.context)


def intercepting(tab: Tab, contexts: BrowserContexts) -> bool:
    """Whether the tab's requests go through ``Fetch`` (some route may take them)."""
    return any(_tables(tab, contexts))


def fetch_command(tab: Tab, contexts: BrowserContexts) -> tuple[str, dict[str, Any] | None]:
    """The command that puts the tab's sessions in step with its routes."""
    return ("Fetch.enable", FETCH_ENABLE) if intercepting(tab, contexts) else ("Fetch.disable",
                                                                            None)


class Taken(NamedTuple):
    """What answers one paused request."""

    route: Route | None              # the route that took it, if one did
    method: str                      # the ``Fetch`` command that answers it
    params: dict[str, Any]
    expired: bool                    # that was the route's last match: it is gone, and
    # the tabs it applied to may have no route left (their ``Fetch`` to be refreshed)


def take(tab: Tab, contexts: BrowserContexts, params: dict[str, Any]) -> Taken:
    """For a ``Fetch.requestPaused`` of ``tab``: the route that takes it — the tab's own
    routes before its context's, the newest first — its hit counted (and the route gone
    with its last one), the request marked in the tab's network log, and the command that
    answers it."""
    url = str(params.get("request", {}).get("url", ""))
    route = None
    for table in _tables(tab, contexts):
        route = table.match(url)
        if route is not None:
            break
    network_id = params.get("networkId")
    if route is not None and isinstance(network_id, str):
        tab.network.mark_routed(network_id, routed(route))
    return Taken(route, *answer(route, params),
                 expired=route is not None and route.times == 0)


def holds(tab: Tab, session: str) -> bool:
    """Whether ``session`` is still one of the tab's (its page's or a frame's)."""
    return not tab.retired and (session == tab.session_id
                                or session in tab.frame_sessions.values())


def went(exc: GatewayError, tab: Tab, session: str) -> bool:
    """Whether a command failed because what it was for went (the session, or the paused
    request) rather than because Chrome refused it."""
    if not holds(tab, session):
        return True
    return isinstance(exc, CdpError) and any(gone in exc.message.lower() for gone in _GONE)


async def send_answer(cdp: CdpConnection, tab: Tab, session: str, route: Route | None,
                      method: str, params: dict[str, Any]) -> None:
    """Answer a paused request of ``tab``; if Chrome refuses a route's answer, fail the
    request (the page sees a network error, not a hang) and note why on the route. Never
    raises, and notes nothing when the request or its session went meanwhile (the page
    navigated, the frame or tab closed): that is no fault of the route's."""
    try:
        await cdp.send(method, params, session_id=session, timeout_s=ANSWER_TIMEOUT_S)
        return
    except GatewayError as exc:
        if route is None or not cdp.is_open or went(exc, tab, session):
            return
        if isinstance(exc, CdpError):  # a refusal; a timeout says nothing of the route
            route.error = str(exc)[:300]
    with contextlib.suppress(GatewayError):  # the session is gone, and the request with it
        await cdp.send("Fetch.failRequest", {"requestId": params["requestId"],
                                             "errorReason": "Failed"},
                       session_id=session, timeout_s=ANSWER_TIMEOUT_S)
