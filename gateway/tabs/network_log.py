"""A tab's network activity, assembled from CDP ``Network.*`` events.

Pure, like ``console_log``: events in, request records out, in the same bounded
ring (``ring.EpochRing``). One record per
request (a redirect closes the hop it ends and opens a new record), with what a
developer looks for first: method, URL, status, resource type, size, duration
and — for failures — Chrome's reason (``net::ERR_*``, blocked, CORS). Headers
are kept so ``network_request`` can show them (redacted there); bodies are not
stored here: Chrome keeps them and they are fetched on demand.

Chrome sends the full request headers (with ``Cookie``) and response headers
(with ``Set-Cookie``) in separate ``…ExtraInfo`` events that may arrive before
or after the main ones; both orders are merged.
"""

from __future__ import annotations

import functools
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gateway.tabs.ring import KEEP_NAVIGATIONS, EpochRing

__all__ = ["KEEP_NAVIGATIONS", "NetworkEntry", "NetworkLog", "UrlMatcher", "regex_matcher",
           "url_matcher"]

if TYPE_CHECKING:
    import re2

UrlMatcher = Callable[[str], bool]

MAX_PENDING_EXTRA = 500


@dataclass
class NetworkEntry:
    id: int
    request_id: str
    method: str
    url: str
    type: str
    navigation: int
    started: float                        # CDP monotonic seconds
    wall_time: float | None = None        # epoch seconds
    status: int | None = None
    status_text: str = ""
    mime_type: str | None = None
    size: int | None = None               # bytes on the wire
    ended: float | None = None            # loading finished or failed
    responded: float | None = None        # response headers arrived
    error: str | None = None
    request_headers: dict[str, str] = field(default_factory=dict)
    response_headers: dict[str, str] = field(default_factory=dict)
    timing: dict[str, float] | None = None
    has_post_data: bool = False
    from_cache: bool = False
    request_extra: bool = field(default=False, repr=False)    # its ExtraInfo headers merged
    response_extra: bool = field(default=False, repr=False)
    remote_address: str | None = None
    protocol: str | None = None
    routed: str | None = None             # what a route did with it (``routes``)

    @property
    def failed(self) -> bool:
        return self.error is not None or (self.status is not None and self.status >= 400)

    @property
    def duration_ms(self) -> float | None:
        """Until loading ended — or, for a body the page never read (Chrome then never
        finishes it), until the response arrived."""
        end = self.ended if self.ended is not None else self.responded
        if end is None or self.started <= 0:  # a WebSocket seen without its handshake
            return None
        return round((end - self.started) * 1000, 1)


@functools.cache
def _re2_options() -> re2.Options:
    import re2

    options = re2.Options()
    options.log_errors = False  # the reason goes back to the caller, not to stderr
    return options


def url_matcher(pattern: str) -> UrlMatcher:
    """``/regex/`` (as in DevTools' filter box) or a plain substring.

    Regexes run on RE2, whose matching time is linear in the URL: with Python's
    backtracking ``re``, a filter like ``/(a+)+$/`` over a long URL would stall
    the one event loop — every target — for hours. The price is that
    backreferences and look-arounds are not supported. Raises ``ValueError``
    with RE2's reason for a pattern it cannot compile.
    """
    if len(pattern) >= 2 and pattern.startswith("/") and pattern.endswith("/"):
        return regex_matcher(pattern[1:-1])
    return lambda url: pattern in url


def regex_matcher(expression: str) -> UrlMatcher:
    """``expression`` searched in a URL, on RE2 (see ``url_matcher``); ``ValueError``
    with RE2's reason when it does not compile."""
    import re2  # only a regex needs it: not imported to serve

    try:
        compiled = re2.compile(expression, _re2_options())
    except re2.error as exc:
        reason = exc.args[0] if exc.args else "invalid pattern"
        text = reason.decode(errors="replace") if isinstance(reason, bytes) else str(reason)
        raise ValueError(text) from None
    return lambda url: compiled.search(url) is not None


def _cors_reason(params: dict[str, Any]) -> str | None:
    cors = params.get("corsErrorStatus") or {}
    if cors.get("corsError"):
        return f"CORS {cors['corsError']}" + (f" ({cors['failedParameter']})"
                                              if cors.get("failedParameter") else "")
    return None


class NetworkLog(EpochRing[NetworkEntry]):
    """Bounded request history of one tab."""

    def __init__(self, capacity: int = 1000) -> None:
        super().__init__(capacity)
        self._live: dict[str, NetworkEntry] = {}          # requestId → current hop
        self._hops: dict[str, list[NetworkEntry]] = {}    # requestId → every hop kept
        self._extra: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._routed: OrderedDict[str, str] = OrderedDict()  # requestId → mark, hop not seen
        self.malformed = 0

    def mark_routed(self, request_id: str, how: str) -> None:
        """A route took the request (``Fetch.requestPaused`` names it by its network id):
        mark its current hop, or — when that hop is answered or marked already, or
        Chrome has not announced the request yet (either order happens) — its next."""
        entry = self._live.get(request_id)
        if entry is not None and entry.routed is None and entry.status is None \
                and entry.error is None:
            entry.routed = how
            return
        self._routed[request_id] = how
        if len(self._routed) > MAX_PENDING_EXTRA:
            self._routed.popitem(last=False)

    # --------------------------------------------------------------- events

    def on_event(self, method: str, params: dict[str, Any]) -> None:
        handler = _HANDLERS.get(method)
        if handler is not None:
            if not isinstance(params.get("requestId", ""), str):
                self.malformed += 1  # records are keyed by it: never store a bad one
                return
            try:
                handler(self, params)
            except (AttributeError, KeyError, TypeError, ValueError):
                self.malformed += 1  # not the protocol's shape: skip it, keep the rest

    def _forget(self, entry: NetworkEntry) -> None:
        super()._forget(entry)
        if self._live.get(entry.request_id) is entry:
            del self._live[entry.request_id]
        hops = self._hops.get(entry.request_id)
        if hops is not None:
            hops.remove(entry)
            if not hops:
                del self._hops[entry.request_id]

    def _open(self, request_id: str, method: str, url: str, kind: str, started: float,
              wall_time: float | None) -> NetworkEntry:
        entry = NetworkEntry(self._next_id(), request_id, method, url, kind, self.navigation,
                             started, wall_time)
        self._keep(entry)
        self._live[request_id] = entry
        self._hops.setdefault(request_id, []).append(entry)
        entry.routed = self._routed.pop(request_id, None)
        stash = self._extra.get(request_id, {})
        if "request" in stash:
            entry.request_headers.update(stash.pop("request"))
            entry.request_extra = True
        return entry

    def _will_be_sent(self, params: dict[str, Any]) -> None:
        request_id = params.get("requestId", "")
        previous = self._live.get(request_id)
        redirect = params.get("redirectResponse")
        if previous is not None and redirect:
            self._apply_response(previous, redirect)
            previous.ended = params.get("timestamp", previous.started)
        request = params.get("request", {})
        entry = self._open(request_id, request.get("method", "GET"), request.get("url", ""),
                           params.get("type", "Other"), params.get("timestamp", 0.0),
                           params.get("wallTime"))
        entry.request_headers.update(request.get("headers", {}))
        entry.has_post_data = bool(request.get("hasPostData"))

    def _apply_response(self, entry: NetworkEntry, response: dict[str, Any]) -> None:
        entry.status = response.get("status")
        entry.status_text = response.get("statusText", "")
        entry.mime_type = response.get("mimeType")
        entry.response_headers.update(response.get("headers", {}))
        entry.timing = response.get("timing")
        entry.from_cache = bool(response.get("fromDiskCache") or response.get("fromServiceWorker")
                                or response.get("fromPrefetchCache"))
        ip = response.get("remoteIPAddress")
        entry.remote_address = f"{ip}:{response.get('remotePort')}" if ip else None
        entry.protocol = response.get("protocol")

    def _response(self, params: dict[str, Any]) -> None:
        entry = self._live.get(params.get("requestId", ""))
        if entry is not None:
            response = params.get("response", {})
            self._apply_response(entry, response)
            entry.type = params.get("type", entry.type)
            entry.responded = params.get("timestamp")
            stash = self._extra.get(entry.request_id, {})
            if "response" in stash and not entry.response_extra:
                entry.response_headers.update(stash.pop("response"))
                entry.response_extra = True
            length = {k.lower(): v for k, v in entry.response_headers.items()}.get(
                "content-length", "")
            if entry.size is None and str(length).isdigit():
                entry.size = int(length)  # until loadingFinished gives the bytes on the wire

    def _finished(self, params: dict[str, Any]) -> None:
        entry = self._live.get(params.get("requestId", ""))
        if entry is not None:
            entry.ended = params.get("timestamp")
            entry.size = int(params.get("encodedDataLength", 0))

    def _failed(self, params: dict[str, Any]) -> None:
        entry = self._live.get(params.get("requestId", ""))
        if entry is None:
            return
        entry.ended = params.get("timestamp")
        reason = params.get("errorText") or "failed"
        blocked = params.get("blockedReason")
        detail = _cors_reason(params) or (f"blocked: {blocked}" if blocked else None)
        if params.get("canceled"):
            detail = "canceled"
        entry.error = f"{reason} ({detail})" if detail else reason
        entry.type = params.get("type", entry.type)

    def _extra_info(self, params: dict[str, Any], side: str) -> None:
        """Merge the wire headers into the hop they belong to.

        Chrome sends one request and one response ExtraInfo per hop of a redirect
        chain, in order, but not always before the next hop starts: so they go to
        the oldest hop still without one (for responses, preferably the hop with
        the same status), not simply to the newest.
        """
        request_id = params.get("requestId", "")
        headers = params.get("headers", {})
        waiting = [h for h in self._hops.get(request_id, ())
                   if not (h.request_extra if side == "request" else h.response_extra)]
        status = params.get("statusCode")
        if side == "response" and status is not None:
            waiting = ([h for h in waiting if h.status == status]
                       or [h for h in waiting if h.status is None])
        if waiting:
            hop = waiting[0]
            if side == "request":
                hop.request_headers.update(headers)
                hop.request_extra = True
            else:
                hop.response_headers.update(headers)
                hop.response_extra = True
            return
        stash = self._extra.setdefault(request_id, {})  # arrived before its hop / response
        stash.setdefault(side, {}).update(headers)
        if len(self._extra) > MAX_PENDING_EXTRA:
            self._extra.popitem(last=False)

    def _websocket(self, params: dict[str, Any]) -> None:
        self._open(params.get("requestId", ""), "GET", params.get("url", ""), "WebSocket",
                   params.get("timestamp", 0.0), None)

    def _websocket_handshake(self, params: dict[str, Any]) -> None:
        entry = self._live.get(params.get("requestId", ""))
        if entry is not None and entry.type == "WebSocket":
            entry.started = params.get("timestamp", entry.started)
            entry.wall_time = params.get("wallTime", entry.wall_time)
            entry.request_headers.update(params.get("request", {}).get("headers", {}))

    def _websocket_response(self, params: dict[str, Any]) -> None:
        entry = self._live.get(params.get("requestId", ""))
        if entry is not None:
            self._apply_response(entry, params.get("response", {}))
            entry.ended = params.get("timestamp")

    def _websocket_error(self, params: dict[str, Any]) -> None:
        entry = self._live.get(params.get("requestId", ""))
        if entry is not None and entry.status is None:
            entry.error = params.get("errorMessage") or "WebSocket error"

    # ---------------------------------------------------------------- reads

    def query(
        self,
        url_filter: UrlMatcher | None = None,
        failed_only: bool = False,
        resource_types: set[str] | None = None,
        since: int | None = None,
        limit: int = 100,
    ) -> list[NetworkEntry]:
        """The newest ``limit`` records matching, oldest first."""
        return self._select(
            lambda e: ((not failed_only or e.failed)
                       and (resource_types is None or e.type.lower() in resource_types)
                       and (url_filter is None or url_filter(e.url))),
            since, limit)


_HANDLERS = {
    "Network.requestWillBeSent": NetworkLog._will_be_sent,
    "Network.responseReceived": NetworkLog._response,
    "Network.loadingFinished": NetworkLog._finished,
    "Network.loadingFailed": NetworkLog._failed,
    "Network.requestWillBeSentExtraInfo": lambda log, p: log._extra_info(p, "request"),
    "Network.responseReceivedExtraInfo": lambda log, p: log._extra_info(p, "response"),
    "Network.webSocketCreated": NetworkLog._websocket,
    "Network.webSocketWillSendHandshakeRequest": NetworkLog._websocket_handshake,
    "Network.webSocketHandshakeResponseReceived": NetworkLog._websocket_response,
    "Network.webSocketFrameError": NetworkLog._websocket_error,
}
