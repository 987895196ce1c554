"""A tab's network activity: the request list, and one request in detail."""

from __future__ import annotations

import base64
import re
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, Field

from gateway.browsers.session import TabSession
from gateway.errors import CdpError, InvalidArgument
from gateway.output.absent import absent
from gateway.output.files import write_private
from gateway.output.redact import redact
from gateway.output.sizing import DEFAULT_MAX_CHARS, fit
from gateway.tabs.network_log import NetworkEntry, url_matcher

from .args import DEFAULT_LIMIT, LimitArg, MaxChars, SinceArg, TabArg
from .definition import TabCall, tab_tool
from .saving import save_path

if TYPE_CHECKING:
    from pathlib import Path


__all__ = ["TOOLS"]

_TEXT_MIME = re.compile(r"^(text/|application/([\w.+-]*\+)?(json|xml|javascript|ecmascript|"
                        r"x-www-form-urlencoded|graphql)|image/svg\+xml)", re.I)


class RequestSummary(BaseModel):
    id: int
    method: str
    url: str
    status: int | None
    type: str
    size: int | None
    duration_ms: float | None
    error: str | None = absent()
    navigation: int
    routed: str | None = absent()  # fulfilled / blocked / continued by a network_route


class NetworkRequests(BaseModel):
    tab: int
    target: str
    requests: list[RequestSummary]
    last_id: int
    dropped: int = absent(0)
    note: str | None = absent()


class Body(BaseModel):
    available: bool
    mime_type: str | None = absent()
    size: int | None = absent()
    text: str | None = absent()
    truncated: bool = absent(False)
    omitted_chars: int = absent(0)
    binary: bool = absent(False)
    path: str | None = absent()
    note: str | None = absent()


class RequestDetail(BaseModel):
    tab: int
    target: str
    id: int
    method: str
    url: str
    status: int | None = absent()
    status_text: str
    type: str
    mime_type: str | None = absent()
    size: int | None = absent()
    duration_ms: float | None = absent()
    error: str | None = absent()
    request_headers: dict[str, Any]
    response_headers: dict[str, Any]
    timing: dict[str, Any] | None = absent()
    remote_address: str | None = absent()
    protocol: str | None = absent()
    from_cache: bool
    request_body: Body | None = absent()
    response_body: Body | None = absent()

    def written(self) -> list[str]:
        """The bodies saved with ``save_to`` (``WritesFiles``)."""
        return [body.path for body in (self.request_body, self.response_body)
                if body is not None and body.path]


def _summary(e: NetworkEntry) -> RequestSummary:
    url = e.url if len(e.url) <= 500 else e.url[:499] + "…"
    return RequestSummary(id=e.id, method=e.method, url=url, status=e.status, type=e.type,
                          size=e.size, duration_ms=e.duration_ms, error=e.error,
                          navigation=e.navigation, routed=e.routed)


async def _body(session: TabSession, entry: NetworkEntry,
                side: Literal["request", "response"], save_to: Path | None,
                max_chars: int) -> Body:
    try:
        if side == "response":
            got = await session.call("Network.getResponseBody",
                                     {"requestId": entry.request_id})
            raw, encoded = got.get("body", ""), bool(got.get("base64Encoded"))
            mime = entry.mime_type
        else:
            if not entry.has_post_data:
                return Body(available=False, note="the request has no body")
            got = await session.call("Network.getRequestPostData",
                                     {"requestId": entry.request_id})
            raw, encoded = got.get("postData", ""), False
            mime = entry.request_headers.get("Content-Type") or entry.request_headers.get(
                "content-type")
    except CdpError as exc:
        if side == "response" and entry.ended is None and entry.error is None:
            return Body(available=False, note="Chrome has not finished loading this body "
                        "(the tab never read it, or it is still streaming), so it holds none")
        return Body(available=False, note=f"Chrome no longer holds this {side} body "
                    f"({exc.message}); it keeps bodies only for recent requests of the "
                    "current tab — reload the tab and ask again")
    data = base64.b64decode(raw) if encoded else raw.encode()
    textual = not encoded or bool(mime and _TEXT_MIME.match(mime))
    path = None
    if save_to is not None:
        write_private(save_to, data)
        path = str(save_to)
    if not textual:
        return Body(available=True, mime_type=mime, size=len(data), binary=True, path=path,
                    note=None if path else f"binary {mime or 'data'}, {len(data)} bytes; pass "
                    "save_to to write it to a file")
    fitted = fit(data.decode(errors="replace") if encoded else raw, max_chars)
    return Body(available=True, mime_type=mime, size=len(data), text=fitted.value,
                truncated=fitted.truncated, omitted_chars=fitted.omitted_chars, path=path)


@tab_tool("List network requests", read_only=True, lock=False)
async def network_requests(
    on: TabCall,
    tab: TabArg,
    filter: Annotated[str | None, Field(description="URL substring, or /regex/.",
                                        max_length=2000)] = None,
    failed_only: Annotated[bool, Field(description="Only failed or HTTP >= 400.")] = False,
    resource_types: Annotated[list[str] | None,
                              Field(description="e.g. [\"XHR\", \"Fetch\"].",
                                    max_length=32)] = None,
    since: SinceArg = None,
    limit: LimitArg = DEFAULT_LIMIT,
) -> NetworkRequests:
    """A tab's network requests (method, url, status, type, size, duration, error);
    network_request(id) has the details."""
    matcher = None
    if filter:
        try:
            matcher = url_matcher(filter)
        except ValueError as exc:
            raise InvalidArgument(f"filter {filter[:200]!r} is not a valid regex: {exc} "
                                  "(RE2 syntax: no backreferences or look-arounds)") from None
    types = {r.lower() for r in resource_types} if resource_types else None
    log = on.tab.network
    entries = log.query(matcher, failed_only, types, since, limit)
    note = (f"{log.dropped} older requests were dropped (buffer of {log.capacity})"
            if log.dropped else None)
    return NetworkRequests(tab=on.tab.id, target=on.browser.name, last_id=log.last_id,
                           dropped=log.dropped, note=note,
                           requests=[_summary(e) for e in entries])

@tab_tool("Inspect one network request", read_only=True)
async def network_request(
    on: TabCall,
    tab: TabArg,
    id: Annotated[int, Field(description="From network_requests.", ge=1)],
    include_body: Literal["none", "request", "response", "both"] = "none",
    save_to: Annotated[str | None, Field(description="Write the (response) body to this "
                                                     "absolute path.",
                                         max_length=4096)] = None,
    max_chars: MaxChars = DEFAULT_MAX_CHARS,
) -> RequestDetail:
    """One request in detail: headers (secrets redacted), timing, bodies on demand."""
    entry = on.tab.network.get(id)
    if entry is None:
        raise InvalidArgument(f"tab {tab} has no request {id} (it may have been dropped "
                              "from the buffer); call network_requests for current ids")
    request_body = response_body = None
    path = await save_path(on.gateway, save_to)
    if include_body in ("request", "both"):
        request_body = await _body(on, entry, "request",
                                   path if include_body == "request" else None, max_chars)
    if include_body in ("response", "both"):
        response_body = await _body(on, entry, "response", path, max_chars)
    headers: tuple[Any, Any] = (entry.request_headers, entry.response_headers)
    if on.browser.config.redact:
        headers = (redact(entry.request_headers), redact(entry.response_headers))
    return RequestDetail(
        tab=on.tab.id, target=on.browser.name, id=entry.id, method=entry.method, url=entry.url,
        status=entry.status, status_text=entry.status_text, type=entry.type,
        mime_type=entry.mime_type, size=entry.size, duration_ms=entry.duration_ms,
        error=entry.error, request_headers=headers[0], response_headers=headers[1],
        timing=entry.timing, remote_address=entry.remote_address, protocol=entry.protocol,
        from_cache=entry.from_cache, request_body=request_body, response_body=response_body)


TOOLS = (network_requests, network_request)
