"""Routes: requests of a tab (or of every tab of a context) the gateway answers itself,
blocks, or sends on changed — the ``network_route`` tool's table.

Pure: a pattern compiled and checked, routes kept in a bounded table, and for a request
Chrome paused (``Fetch.requestPaused``) the one CDP command that answers it
(``answer``). Sending it, and turning ``Fetch`` on and off on a tab's sessions, is
``interception``'s job.

Patterns are ours, not Chrome's (``Fetch.enable`` pauses every request and the match is
made here), so they mean the same on every Chrome and are checked when a route is made:
a glob as Playwright's (``*`` anything but ``/``, ``**`` anything, ``{a,b}`` either,
``\\`` escapes; ``?`` is itself, as URLs are full of them) matched against the whole URL,
or a ``/regex/`` searched in it. Both run on RE2 (``network_log.regex_matcher``): a
pattern cannot stall the event loop on a long URL.

Bounded: ``MAX_ROUTES`` per tab (and per context), a body of at most ``MAX_BODY_BYTES``,
``MAX_TABLE_BODY_BYTES`` of bodies in one table and ``MAX_GATEWAY_BODY_BYTES`` in all of
the gateway's tables together (the caller counts those: ``Routes.add``'s ``gateway_held``)
— they are held in memory for as long as the route lives, with their base64 text once a
request has been fulfilled (made once, not on every request: ``Route.encoded_body``).
"""

from __future__ import annotations

import base64
import itertools
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

from gateway.tabs.network_log import UrlMatcher, regex_matcher, url_matcher

__all__ = ["MAX_BODY_BYTES", "MAX_GATEWAY_BODY_BYTES", "MAX_ROUTES", "MAX_TABLE_BODY_BYTES",
           "Route", "RouteAction", "RouteLimit", "Routes", "answer", "glob_regex",
           "pattern_matcher", "routed"]

MAX_ROUTES = 32
MAX_BODY_BYTES = 4 * 1024 * 1024
MAX_TABLE_BODY_BYTES = 16 * 1024 * 1024
MAX_GATEWAY_BODY_BYTES = 64 * 1024 * 1024

RouteAction = Literal["fulfill", "block", "continue"]
_ROUTED = {"fulfill": "fulfilled", "block": "blocked", "continue": "continued"}
_ids = itertools.count(1)  # process-wide: a route id names one route, never another


def glob_regex(glob: str) -> str:
    """The RE2 expression (whole URL) of a Playwright-style glob; ``ValueError`` when a
    brace is left open or closed without opening, or nested."""
    out, i, depth = ["^"], 0, 0
    while i < len(glob):
        char = glob[i]
        if char == "\\" and i + 1 < len(glob):
            out.append(re.escape(glob[i + 1]))
            i += 1
        elif glob.startswith("**", i):
            out.append(".*")
            i += 1
        elif char == "*":
            out.append("[^/]*")
        elif char == "{":
            if depth:
                raise ValueError(f"nested '{{' at {i}: alternatives do not nest")
            depth = 1
            out.append("(?:")
        elif char == "}" and depth:
            depth = 0
            out.append(")")
        elif char == "," and depth:
            out.append("|")
        elif char == "}":
            raise ValueError(f"'}}' at {i} closes no '{{'")
        else:
            out.append(re.escape(char))
        i += 1
    if depth:
        raise ValueError("a '{' is never closed")
    return "".join(out) + "$"


def pattern_matcher(pattern: str) -> UrlMatcher:
    """What ``pattern`` matches: ``/regex/`` searched, else a glob of the whole URL.
    ``ValueError`` with the reason for one that cannot be compiled."""
    if not pattern.strip():
        raise ValueError("it is empty")
    if len(pattern) >= 2 and pattern.startswith("/") and pattern.endswith("/"):
        return url_matcher(pattern)
    return regex_matcher(glob_regex(pattern))


@dataclass
class Route:
    """One route: what it matches, what it does, and what it did so far."""

    pattern: str
    action: RouteAction
    matches: UrlMatcher = field(repr=False)
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    url: str | None = None
    times: int | None = None          # matches left before it goes; None: until removed
    hits: int = 0
    error: str | None = None          # Chrome refused its last answer (the request failed)
    id: int = field(default_factory=lambda: next(_ids))

    @cached_property
    def encoded_body(self) -> str:
        """The body as ``Fetch.fulfillRequest`` takes it, encoded on the first request it
        answers and kept: a 4 MB body is not encoded again in the event handler of every
        request it fulfills. (A route's body is set when it is made and never changed.)"""
        return base64.b64encode(self.body).decode()


class RouteLimit(ValueError):
    """A table is full (routes or body bytes): the message names the limit."""


@dataclass
class Routes:
    """The routes of one tab or one context, newest first when matching (as Playwright:
    the route added last decides)."""

    routes: list[Route] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.routes)

    @property
    def body_bytes(self) -> int:
        """The bytes of its routes' bodies, held in memory."""
        return sum(len(r.body) for r in self.routes)

    def add(self, route: Route, gateway_held: int = 0) -> None:
        """Add ``route``, or raise ``RouteLimit`` naming the bound it would pass: this
        table's, or the gateway's (``gateway_held``: the body bytes of every table the
        gateway holds, this one too)."""
        if len(self.routes) >= MAX_ROUTES:
            raise RouteLimit(f"it has {len(self.routes)} routes, the most one tab or context "
                             f"may have (MAX_ROUTES = {MAX_ROUTES}); remove some first")
        held, size = self.body_bytes, len(route.body)
        if held + size > MAX_TABLE_BODY_BYTES:
            raise RouteLimit(f"its routes' bodies would come to {held + size:,} "
                             f"bytes, over the limit of {MAX_TABLE_BODY_BYTES:,} "
                             "(MAX_TABLE_BODY_BYTES); remove some first")
        if gateway_held + size > MAX_GATEWAY_BODY_BYTES:
            raise RouteLimit(f"the bodies of all routes the gateway holds would come to "
                             f"{gateway_held + size:,} bytes, over the limit of "
                             f"{MAX_GATEWAY_BODY_BYTES:,} (MAX_GATEWAY_BODY_BYTES); remove "
                             "routes with large bodies (on any tab or context) first")
        self.routes.append(route)

    def remove(self, route_id: int | None = None, pattern: str | None = None) -> int:
        """Remove the route ``route_id``, else those of ``pattern``, else all: how many."""
        kept = [r for r in self.routes
                if (route_id is not None and r.id != route_id)
                or (route_id is None and pattern is not None and r.pattern != pattern)]
        removed = len(self.routes) - len(kept)
        self.routes = kept
        return removed

    def match(self, url: str) -> Route | None:
        """The route that takes a request for ``url``, its hit counted (and gone, if that
        was its last one)."""
        for route in reversed(self.routes):
            if route.matches(url):
                route.hits += 1
                if route.times is not None:
                    route.times -= 1
                    if route.times <= 0:
                        self.routes.remove(route)
                return route
        return None


def answer(route: Route | None, params: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The ``Fetch`` command (method, params) that answers the paused request ``params``
    as ``route`` says; with no route, it goes on untouched."""
    request_id = params["requestId"]
    if route is None:
        return "Fetch.continueRequest", {"requestId": request_id}
    if route.action == "block":
        return "Fetch.failRequest", {"requestId": request_id, "errorReason": "BlockedByClient"}
    if route.action == "fulfill":
        return "Fetch.fulfillRequest", {
            "requestId": request_id, "responseCode": route.status,
            "responseHeaders": [{"name": k, "value": v} for k, v in route.headers.items()],
            "body": route.encoded_body}
    command: dict[str, Any] = {"requestId": request_id}
    if route.headers:
        changed = {k.lower() for k in route.headers}
        sent = params.get("request", {}).get("headers", {})
        command["headers"] = [*({"name": k, "value": str(v)} for k, v in sent.items()
                                if k.lower() not in changed),
                              *({"name": k, "value": v} for k, v in route.headers.items())]
    if route.url is not None:
        command["url"] = route.url
    return "Fetch.continueRequest", command


def routed(route: Route) -> str:
    """How ``network_requests`` marks a request ``route`` took: fulfilled, blocked, continued."""
    return _ROUTED[route.action]

