"""The raw escape hatch: any CDP command, browser-level or on a tab."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BaseModel, Field

from gateway.browsers.session import TabSession
from gateway.config.policy import check_cdp_command, check_own_tabs
from gateway.errors import CdpError, InvalidArgument
from gateway.output.absent import absent
from gateway.output.redact import redact
from gateway.output.sizing import DEFAULT_MAX_CHARS, fit

from .args import MaxChars, OptionalTab, TargetArg, TimeoutArg
from .definition import BrowserCall, TabCall, tab_tool

__all__ = ["METHOD_RE", "TOOLS"]

METHOD_RE = re.compile(r"^[A-Z][A-Za-z0-9]{0,63}\.[a-z][A-Za-z0-9]{0,127}$")
_METHOD_NOT_FOUND = -32601


class CdpResult(BaseModel):
    target: str
    tab: int | None
    method: str
    result: dict[str, Any] | str  # a str: the start of its JSON text, when truncated
    truncated: bool = absent(False)
    omitted_chars: int = absent(0)


@tab_tool("Send a raw CDP command", destructive=True, open_world=True,
          tab="optional", browser_wide=True)
async def cdp_command(
    on: BrowserCall | TabCall,
    method: Annotated[str, Field(description="e.g. Page.reload, Browser.getVersion.",
                                 max_length=200)],
    params: dict[str, Any] | None = None,
    target: TargetArg = None,
    tab: OptionalTab = None,
    timeout_s: TimeoutArg = None,
    max_chars: MaxChars = DEFAULT_MAX_CHARS,
) -> CdpResult:
    """Send a raw Chrome DevTools Protocol command: to the browser (Browser.*,
    Target.*), or with `tab` to that page (Page.*, DOM.*, …)."""
    if not METHOD_RE.match(method):
        raise InvalidArgument(f"method {method[:80]!r} is not a CDP method name; use "
                              "Domain.method, e.g. Page.navigate or Target.getTargets")
    browser = on.browser
    check_cdp_command(browser.config, method, params)
    if browser.pages.scope.agent_only:
        check_own_tabs(browser.name, method, params, on_tab=isinstance(on, TabSession))
    if isinstance(on, TabSession):
        result = await on.call(method, params, timeout_s=on.budget)
    else:
        try:
            result = await browser.browser_call(method, params, timeout_s=on.budget)
        except CdpError as exc:
            if exc.code != _METHOD_NOT_FOUND:
                raise
            raise CdpError(method, exc.code, f"{exc.message} at browser level; page "
                           "domains (Page, Runtime, DOM, …) need tab=<id>") from None
    fitted = fit(redact(result) if browser.config.redact else result, max_chars)
    return CdpResult(target=browser.name, tab=tab, method=method, result=fitted.value,
                     truncated=fitted.truncated, omitted_chars=fitted.omitted_chars)


TOOLS = (cdp_command,)
