"""The live page's web app (starlette), at ``/live``.

Every request and websocket is checked first (``_Checked``): a Host that is not this
server on loopback (DNS rebinding) or an Origin not the page's own gets 403 before any
route runs. Then ``/live/?t=TOKEN`` spends a link's token for a cookie scoped to the
link's own path and redirects there (``links.py``); every other route wants that
cookie. The page gets JSON state (targets, tabs, the agent's recent calls on the tab),
frames over a websocket — each a binary message: 4 bytes of length, the frame's JSON
metadata, the JPEG — and sends back only input events (``page.live_input``), and
only on a link with control. Nothing here speaks CDP to the page.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Sequence
from importlib.resources import files
from typing import TYPE_CHECKING, Any, Protocol

import anyio
import structlog
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocket, WebSocketDisconnect

from gateway.errors import GatewayError
from gateway.live.hold import held
from gateway.live.links import Link, Links, host_allowed, origin_allowed
from gateway.page.act.live_input import input_command, parse_input
from gateway.page.capture.screencast import Mailbox, Screencasts

if TYPE_CHECKING:
    from gateway.browsers.browser import Browser
    from gateway.fleet.registry import Registry
    from gateway.tabs.tab import Tab

__all__ = ["Live", "issuing_links", "live_app", "with_live"]

log = structlog.get_logger("gateway.live")

COOKIE = "csgw_live"
PAGE = files("gateway.live").joinpath("page.html").read_text()
CALLS_SHOWN = 20
INPUT_TIMEOUT_S = 5.0
NO_LINK = ("this live link is unknown, already used, or expired (15 minutes idle, or the "
           "gateway restarted); ask for a new one: live_view, or chrome-ssh-gateway live")


class Live(Protocol):
    """What the page serves from (``hub.Live``)."""

    registry: Registry
    links: Links
    screencasts: Screencasts
    recent: Sequence[dict[str, Any]]

    async def url(self, tab: int | None, *, control: bool) -> str: ...


class _Checked:
    """Refuses a request whose Host is not this loopback server or whose Origin is
    another site's, websocket included, before any route sees it."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            headers = {k.decode("latin-1"): v.decode("latin-1")
                       for k, v in scope.get("headers") or []}
            server = scope.get("server") or ("", 0)
            host = headers.get("host")
            if not host_allowed(host, server[1]) or not origin_allowed(
                    headers.get("origin"), host or ""):
                log.warning("live request refused: foreign Host or Origin",
                            host=(host or "")[:100], origin=headers.get("origin", "")[:100])
                if scope["type"] == "websocket":
                    await send({"type": "websocket.close", "code": 1008})
                else:
                    await PlainTextResponse("refused: not this server's page\n",
                                            403)(scope, receive, send)
                return
        await self._app(scope, receive, send)


def live_app(live: Live) -> ASGIApp:
    """The page's routes under ``/live``, checked."""

    def link_of(connection: Request | WebSocket) -> Link | None:
        return live.links.session(connection.path_params["link"],
                                  connection.cookies.get(COOKIE))

    async def enter(request: Request) -> Response:
        exchanged = live.links.exchange(request.query_params.get("t", ""))
        if exchanged is None:
            return PlainTextResponse(NO_LINK + "\n", 403)
        link, secret = exchanged
        where = f"{request.scope.get('root_path', '')}/s/{link.id}/"
        response = RedirectResponse(where, 303)
        response.set_cookie(COOKIE, secret, path=where, httponly=True, samesite="strict")
        response.headers["cache-control"] = "no-store"
        response.headers["referrer-policy"] = "no-referrer"
        return response

    async def page(request: Request) -> Response:
        if link_of(request) is None:
            return PlainTextResponse(NO_LINK + "\n", 403)
        nonce = secrets.token_urlsafe(16)
        return Response(PAGE.replace("NONCE", nonce), media_type="text/html", headers={
            "cache-control": "no-store", "referrer-policy": "no-referrer",
            "x-frame-options": "DENY",
            "content-security-policy": (
                f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; "
                "img-src blob:; connect-src 'self'; frame-ancestors 'none'; "
                "base-uri 'none'; form-action 'none'")})

    async def state(request: Request) -> Response:
        link = link_of(request)
        if link is None:
            return PlainTextResponse(NO_LINK + "\n", 403)
        chosen = _tab_param(request.query_params.get("tab", ""))
        tab_id = chosen if chosen is not None and link.allows(chosen) else link.tab
        return JSONResponse(_state(live, link, tab_id), headers={"cache-control": "no-store"})

    async def done(request: Request) -> Response:
        link = link_of(request)
        if link is None or request.headers.get("origin") is None:
            return PlainTextResponse(NO_LINK + "\n", 403)
        if link.handoff is None:
            return PlainTextResponse("this link was not a handoff\n", 400)
        return JSONResponse({"released": link.handoff.end("done")})

    async def frames(websocket: WebSocket) -> None:
        link = link_of(websocket)
        chosen = _tab_param(websocket.query_params.get("tab", ""))
        if link is None or chosen is None or not link.allows(chosen):
            await websocket.close(1008)
            return
        try:
            browser, tab = await live.registry.tab(chosen)
        except GatewayError as exc:
            await websocket.accept()
            await websocket.send_text(json.dumps({"error": str(exc)}))
            await websocket.close(1000)
            return
        await websocket.accept()
        shown: dict[str, Any] = {}
        async with live.screencasts.watch(browser, tab) as mailbox, \
                anyio.create_task_group() as tg:
            tg.start_soon(_send_frames, websocket, mailbox, shown)
            try:
                while (message := await websocket.receive())["type"] == "websocket.receive":
                    raw = message.get("text") or message.get("bytes") or b""
                    error = await _act(link, browser, tab, raw, shown)
                    if error is not None:
                        await websocket.send_text(json.dumps({"error": error}))
            except WebSocketDisconnect:
                pass
            finally:
                tg.cancel_scope.cancel()

    routes = [Route("/", enter), Route("/s/{link}/", page), Route("/s/{link}/state", state),
              Route("/s/{link}/done", done, methods=["POST"]),
              WebSocketRoute("/s/{link}/ws", frames)]
    return _Checked(Starlette(routes=[Mount("/live", routes=routes)]))


def issuing_links(app: ASGIApp, live: Live) -> ASGIApp:
    """``app`` that also answers ``POST /live-link`` (``{"tab": N, "control": true}``)
    with a new live URL: ``chrome-ssh-gateway live`` asks the daemon this way, behind
    the server's own guard (its Unix socket, or its bearer token)."""

    async def link(request: Request) -> Response:
        try:
            asked = json.loads(await request.body() or b"{}")
            tab, control = asked.get("tab"), asked.get("control") is True
            if tab is not None and (type(tab) is not int or tab < 1):
                raise ValueError("tab must be a positive integer")
        except (ValueError, AttributeError) as exc:
            return JSONResponse({"error": f"expected {{\"tab\": N, \"control\": true}}: "
                                          f"{exc}"}, 400)
        try:
            if tab is not None:
                live.registry.tabs.get(tab)
        except GatewayError as exc:
            return JSONResponse({"error": str(exc)}, 404)
        control = control and not live.registry.config.read_only
        return JSONResponse({"url": await live.url(tab, control=control),
                             "control": control})

    issuer = Route("/live-link", link, methods=["POST"])

    async def route(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope.get("path") == "/live-link":
            await issuer(scope, receive, send)
        else:
            await app(scope, receive, send)

    return route


def with_live(app: ASGIApp, live: Live) -> ASGIApp:
    """``app`` with the live page at ``/live`` in front of it (``serve --http``): the
    page has its own link tokens (a browser cannot send the bearer token)."""
    page = live_app(live)

    async def route(scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "") if scope["type"] != "lifespan" else ""
        target = page if path == "/live" or path.startswith("/live/") else app
        await target(scope, receive, send)

    return route


async def _send_frames(websocket: WebSocket, mailbox: Mailbox, shown: dict[str, Any]) -> None:
    """Each newest frame to the viewer; sending waits while the viewer does not read,
    and meanwhile newer frames replace the one in the mailbox. When the screencast ends
    the viewer is told why; a viewer gone mid-send ends only this task (the receive
    loop hears of it too)."""
    count = 0
    try:
        while (frame := await mailbox.get()) is not None:
            count += 1
            header = json.dumps({"n": count, "dropped": mailbox.dropped,
                                 "metadata": frame.metadata}).encode()
            await websocket.send_bytes(len(header).to_bytes(4, "big") + header + frame.jpeg)
            shown.clear()
            shown.update(frame.metadata)
        await websocket.send_text(json.dumps({"error": mailbox.reason or
                                              "the tab's screencast ended"}))
        await websocket.close(1000)
    except (WebSocketDisconnect, RuntimeError):  # RuntimeError: a send after the close
        pass  # the viewer went (the receive loop ends too); its page opens a new websocket


def _tab_param(text: str) -> int | None:
    """A tab id from a query parameter, or None (not a number, or absurdly long)."""
    return int(text) if text.isdigit() and len(text) <= 10 else None


async def _act(link: Link, browser: Browser, tab: Tab, raw: str | bytes,
               shown: dict[str, Any]) -> str | None:
    """Forward one input event from the page; the error to show, if any."""
    if not link.control:
        return "this link is view-only"
    if link.handoff is not None and held(tab) is not link.handoff:
        return ("this handoff has ended (Done, its time ran out, or the tab closed): the "
                "agent has the tab again")
    try:
        method, params = input_command(parse_input(raw), shown)
        await browser.tab_call(tab, method, params, timeout_s=INPUT_TIMEOUT_S)
    except GatewayError as exc:
        return str(exc)
    return None


def _state(live: Live, link: Link, tab_id: int | None) -> dict[str, Any]:
    """What the page shows beside the frames: the link, the targets and tabs it may
    show, the agent's recent calls on the chosen tab, and its open dialog if any."""
    targets = []
    for name in sorted(live.registry.browsers):
        browser = live.registry.browsers[name]
        tabs = [{"id": t.id, "title": t.title[:200], "url": t.url[:500],
                 "held": hold.reason if (hold := held(t)) else None}
                for t in sorted(browser.tabs.values(), key=lambda t: t.id)
                if link.allows(t.id)]
        if tabs or link.tab is None:
            targets.append({"name": name, "state": browser.state, "tabs": tabs})
    now = time.time()
    calls = [{"tool": r.get("tool"), "ms": r.get("duration_ms"), "outcome": r.get("outcome"),
              "error": str(r.get("error") or "")[:200] or None,
              "ago_s": round(now - float(r.get("ts") or now), 1)}
             for r in live.recent if r.get("tool") and r.get("tab") == tab_id][-CALLS_SHOWN:]
    shown: dict[str, Any] = {
        "link": {"tab": link.tab, "control": link.control, "handoff": link.handoff is not None},
        "tab": tab_id, "targets": targets, "calls": calls[::-1]}
    try:
        dialog = live.registry.tabs.get(tab_id).dialog if tab_id is not None else None
    except GatewayError:
        dialog = None
    if dialog is not None:  # frames do not show it: the page offers OK / Cancel
        shown["dialog"] = {"type": str(dialog.get("type", "")),
                           "message": str(dialog.get("message", ""))[:2000]}
    return shown
