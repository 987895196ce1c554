"""``network_route``: a tab's (or a context's) requests answered by the gateway, blocked,
or sent on changed — mock an API, cut off a tracker, add a header — and the routes listed
and removed (``gateway.tabs.routes``, ``interception``).

A route is the tab's (or, with ``context``, every tab's of that context, opened now or
later: a context named for the first time is made for it, and disposed again when its
last route is removed before any tab opened in it); it stays across navigations and
reconnects and goes with its tab or context (a named context ends with the browser
connection: ``contexts``). A route is added only once it is at work: when ``Fetch``
cannot be turned on for it, it is taken out again and the call fails. A ``body_path`` is
read where ``upload`` may read (``gateway.output.files``, off the event loop), bounded;
the route holds its body in memory, bounded gateway-wide too. Results list the routes
(id, pattern, action, matches left, hits): what was set is never guessed at.

Not read-only (a route changes what the page gets), not destructive (nothing is lost:
``remove`` undoes it), not idempotent (the same route twice is two routes), not
open-world: the call itself loads nothing — the page's own requests, made by tools that
are, meet the routes.
"""

from __future__ import annotations

import contextlib
import mimetypes
import re
from typing import TYPE_CHECKING, Annotated, Any, Literal

import anyio
from pydantic import BaseModel, Field

from gateway.browsers.session import BrowserSession, TabSession
from gateway.config.urls import check_url
from gateway.errors import GatewayError, InvalidArgument
from gateway.output.absent import absent
from gateway.output.files import Readable, read_checked, resolve_read_path
from gateway.tabs.routes import (
    MAX_BODY_BYTES,
    Route,
    RouteLimit,
    Routes,
    pattern_matcher,
)

from .args import ContextArg, OptionalTab, TargetArg, UrlArg
from .definition import BrowserCall, Gateway, Reach, TabCall, tab_tool
from .saving import allowed_dirs

if TYPE_CHECKING:
    from gateway.browsers.browser import Browser
    from gateway.fleet.registry import Registry
    from gateway.tabs.tab import Tab

__all__ = ["TOOLS"]

MAX_HEADERS = 64
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$")
_HEADER_VALUE = re.compile(r"^[^\r\n\x00]{0,8192}$")
_ADDING = ("fulfill", "block", "continue")
_ONLY_FOR: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("body", ("fulfill",)), ("body_path", ("fulfill",)), ("status", ("fulfill",)),
    ("url", ("continue",)), ("headers", ("fulfill", "continue")), ("times", _ADDING),
    ("id", ("remove",)))
"""Arguments meant for some actions only: refused with the others, never ignored."""


class RouteInfo(BaseModel):
    id: int
    pattern: str
    action: str
    times_left: int | None = absent()
    hits: int
    error: str | None = absent()


class RoutesResult(BaseModel):
    target: str
    tab: int | None = absent()
    context: str | None = absent()
    added: int | None = absent()
    removed: int | None = absent()
    routes: list[RouteInfo]


def _check(arguments: dict[str, Any]) -> None:
    tab, context, action = arguments.get("tab"), arguments.get("context"), arguments["action"]
    if (tab is None) == (context is None):
        raise InvalidArgument("pass tab or context (every tab of that context, now and later),"
                              " one of them")
    if action in _ADDING and not arguments.get("pattern"):
        raise InvalidArgument(f"action={action!r} needs pattern: a URL glob such as "
                              "'**/api/*' or a /regex/")
    if arguments.get("body") and arguments.get("body_path") is not None:
        raise InvalidArgument("pass body or body_path, not both")
    for name, only in _ONLY_FOR:
        if arguments.get(name) not in (None, "") and action not in only:
            raise InvalidArgument(f"{name} is for action={' or '.join(only)}, not {action!r}")


def _headers(headers: dict[str, str] | None) -> dict[str, str]:
    headers = headers or {}
    if len(headers) > MAX_HEADERS:
        raise InvalidArgument(f"{len(headers)} headers, over the limit of {MAX_HEADERS}")
    for name, value in headers.items():
        if not _HEADER_NAME.match(name) or not _HEADER_VALUE.match(value):
            raise InvalidArgument(f"header {name[:100]!r} is not valid HTTP: a name is a token"
                                  " (letters, digits, !#$%&'*+.^_`|~-), a value has no line"
                                  " break and at most 8,192 characters")
    return headers


async def _body(gateway: Gateway, body: str,
                body_path: str | None) -> tuple[bytes, str | None]:
    """The body's bytes, and a Content-Type guessed from ``body_path``'s name."""
    if body_path is None:
        data = body.encode()
        guessed = None
    else:
        file = resolve_read_path(body_path, await allowed_dirs(gateway),
                                 allow_any=gateway.registry.config.allow_any_path, what="body_path")
        if file.size > MAX_BODY_BYTES:
            raise InvalidArgument(f"body_path {body_path[:200]!r} is {file.size:,} bytes, "
                                  f"over the limit of {MAX_BODY_BYTES:,} (MAX_BODY_BYTES) for "
                                  "a route's body")
        data = await anyio.to_thread.run_sync(_read, file)  # up to 4 MB: off the loop
        guessed = mimetypes.guess_type(file.path.name)[0]
    if len(data) > MAX_BODY_BYTES:
        raise InvalidArgument(f"body is {len(data):,} bytes, over the limit of "
                              f"{MAX_BODY_BYTES:,} (MAX_BODY_BYTES) for a route's body")
    return data, guessed


def _read(file: Readable) -> bytes:
    return b"".join(read_checked(file, 1 << 20))


async def _table(on: BrowserSession, context: str | None,
                 make: bool) -> tuple[Routes, list[Tab]]:
    """The routes meant (the tab's, else the context's), and the tabs they apply to now."""
    if isinstance(on, TabSession):
        return on.tab.routes, [on.tab]
    assert context is not None  # _check
    browser = on.browser
    contexts = browser.pages.contexts
    table = (await contexts.routes_for(context, browser.browser_call) if make  # made if new
             else contexts.routes(context))
    return table, [t for t in browser.tabs.values() if t.context == context]


def _held(registry: Registry) -> int:
    """The body bytes of every route the gateway holds, on every tab and context."""
    return sum(table.body_bytes for browser in registry.browsers.values()
               for table in (*(t.routes for t in browser.tabs.values()),
                             *browser.pages.contexts.tables()))


def _changes(arguments: dict[str, Any]) -> Reach:
    """A list reads; the rest change the tab's routes, or a whole context's."""
    if arguments["action"] == "list":
        return "nothing"
    return "tab" if arguments.get("tab") is not None else "context"


async def _add(on: BrowserSession, registry: Registry, page: Tab | None, context: str | None,
               route: Route) -> Routes:
    """Add ``route`` where it is meant and put it to work; when either fails, nothing is
    left of it (nor of a context made for it alone)."""
    table, tabs = await _table(on, context, make=True)
    try:
        try:  # no await since the table was found: it is the one kept
            table.add(route, gateway_held=_held(registry))
        except RouteLimit as exc:
            where = f"tab {page.id}" if page else f"context {context!r}"
            raise InvalidArgument(f"{where} takes no more routes: {exc}") from None
        try:
            await on.browser.pages.route_added(table, route, tabs, on.budget)
        except GatewayError as exc:
            raise GatewayError(f"the route was not added (Fetch could not be turned on "
                               f"for it): {exc}") from None
    except GatewayError:
        with contextlib.suppress(GatewayError):  # the error to report is the one above
            await _unrouted(on.browser, context, tabs)
        raise
    return table


async def _unrouted(browser: Browser, context: str | None, tabs: list[Tab]) -> None:
    """A context made for routes alone goes when it has none left and no tab."""
    if context is not None:
        await browser.pages.contexts.unrouted(context, browser.browser_call,
                                              has_tabs=bool(tabs))


@tab_tool("Route network requests", tab="optional", check=_check, changes=_changes)
async def network_route(
    on: BrowserCall | TabCall,
    action: Literal["fulfill", "block", "continue", "remove", "list"],
    pattern: Annotated[str | None, Field(description="URL glob ('**/api/*') or /regex/.",
                                         max_length=2000)] = None,
    tab: OptionalTab = None,
    context: ContextArg = None,
    status: Annotated[int | None, Field(ge=100, le=599)] = None,
    headers: Annotated[dict[str, str] | None, Field(
        description="Set on the response (fulfill) or request.")] = None,
    body: str = "",  # not `str | None`: the SDK would parse a JSON body into an object
    body_path: Annotated[str | None, Field(description="Local file as body.",
                                           max_length=4096)] = None,
    url: UrlArg | None = None,
    times: Annotated[int | None, Field(description="Expire after N matches.", ge=1)] = None,
    id: Annotated[int | None, Field(description="Route to remove.", ge=1)] = None,
    target: TargetArg = None,
) -> RoutesResult:
    """Mock (fulfill), block or change (continue) a tab's or context's requests that
    match pattern, across navigations; remove (id, pattern, else all) or list."""
    page = on.tab if isinstance(on, TabSession) else None
    added = removed = None
    if action in ("fulfill", "block", "continue"):
        assert pattern is not None  # _check
        try:
            matches = pattern_matcher(pattern)
        except ValueError as exc:
            raise InvalidArgument(f"pattern {pattern[:200]!r} is not a valid glob or "
                                  f"/regex/: {exc}") from None
        schemes = on.browser.config.allow_schemes
        route = Route(pattern, action, matches, status or 200, _headers(headers),
                      times=times, url=None if url is None else check_url(url, schemes))
        if action == "fulfill":
            route.body, guessed = await _body(on.gateway, body, body_path)
            if guessed and not any(k.lower() == "content-type" for k in route.headers):
                route.headers["Content-Type"] = guessed
        table = await _add(on, on.gateway.registry, page, context, route)
        added = route.id
    else:
        table, tabs = await _table(on, context, make=False)
        if action == "remove":
            removed = table.remove(id, pattern)
            await on.browser.pages.refresh_routes(tabs, on.budget)
            await _unrouted(on.browser, context, tabs)
    return RoutesResult(
        target=on.browser.name, tab=tab, context=context, added=added, removed=removed,
        routes=[RouteInfo(id=r.id, pattern=r.pattern, action=r.action, times_left=r.times,
                          hits=r.hits, error=r.error) for r in table.routes])


TOOLS = (network_route,)
