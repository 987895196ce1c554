"""What a target lets an agent do beyond reading and browsing pages.

Pure. The per-target switches (``allow_cdp``, ``cdp_allow``, ``allow_evaluate``,
``allow_schemes``) are enforced here, once, for every tool that could get
around them: ``evaluate`` and ``cdp_command`` both run page JavaScript, and
``cdp_command`` can navigate a tab just as ``navigate`` does. The gateway's own
internal CDP use (views, clicks, screenshots) is not restricted: it is what
the tools are for.
"""

from __future__ import annotations

from typing import Any

from gateway.config.model import TargetConfig
from gateway.config.urls import check_url
from gateway.errors import NotAllowed

__all__ = ["JS_METHODS", "NAVIGATION_METHODS", "check_cdp_command", "check_evaluate",
           "check_own_tabs"]

# CDP methods that run JavaScript of the caller's choosing in a page: turned off
# together with ``evaluate`` by ``allow_evaluate = false``.
JS_METHODS = frozenset({
    "Runtime.evaluate", "Runtime.callFunctionOn", "Runtime.compileScript",
    "Runtime.runScript", "Debugger.evaluateOnCallFrame", "Debugger.setScriptSource",
    "Page.addScriptToEvaluateOnNewDocument", "Page.addScriptToEvaluateOnLoad",
})
# CDP methods that load a URL of the caller's choosing: the same scheme rules as navigate.
NAVIGATION_METHODS = frozenset({"Page.navigate", "Target.createTarget"})
# What reaches past one tab into the rest of a person's browser, refused on a browser
# whose tabs are the person's (``tabs = "agent"``) even on the agent's own tab: other
# pages (Target), the whole browser (Browser, SystemInfo, Extensions), the profile's
# storage of every site (Storage, DOMStorage, IndexedDB, CacheStorage, ServiceWorker,
# BackgroundService), and every site's cookies.
_BEYOND_A_TAB_DOMAINS = frozenset({
    "Target", "Browser", "SystemInfo", "Extensions", "Storage", "DOMStorage", "IndexedDB",
    "CacheStorage", "ServiceWorker", "BackgroundService", "Tethering", "PWA"})
_BEYOND_A_TAB_METHODS = frozenset({
    "Network.getAllCookies", "Network.setCookie", "Network.setCookies",
    "Network.deleteCookies", "Network.clearBrowserCookies", "Network.clearBrowserCache"})


def check_evaluate(config: TargetConfig) -> None:
    """Refuse running page JavaScript on a target with ``allow_evaluate = false``."""
    if not config.allow_evaluate:
        raise NotAllowed(f"running JavaScript is turned off for target {config.name!r} "
                         "(allow_evaluate = false in its config); read the page with "
                         "browse_view and act on it with browse_act instead")


def _allowed_by(patterns: tuple[str, ...], method: str) -> bool:
    domain = method.partition(".")[0]
    return any(p == method or p == f"{domain}.*" for p in patterns)


def check_cdp_command(config: TargetConfig, method: str, params: dict[str, Any] | None) -> None:
    """Refuse a raw CDP command the target's policy does not allow.

    ``method`` is already known to look like ``Domain.method``.
    """
    if not config.allow_cdp:
        raise NotAllowed(f"cdp_command is turned off for target {config.name!r} "
                         "(allow_cdp = false in its config); use the dedicated tools "
                         "(evaluate, browse, screenshot, console_messages, …)")
    if config.cdp_allow is not None and not _allowed_by(config.cdp_allow, method):
        raise NotAllowed(f"{method} is not allowed on target {config.name!r}; its cdp_allow "
                         f"permits only {', '.join(config.cdp_allow)}")
    if method in JS_METHODS:
        check_evaluate(config)
    if method in NAVIGATION_METHODS and params is not None:
        url = params.get("url")
        if isinstance(url, str):
            check_url(url, config.allow_schemes)


def check_own_tabs(target: str, method: str, params: dict[str, Any] | None, *,
                   on_tab: bool) -> None:
    """Refuse a raw CDP command on a browser whose tabs are the person's
    (``tabs = "agent"``) when it could reach past the agent's own tab: any browser-level
    command, and on a tab the domains and methods that reach other pages, the whole
    browser or every site's storage and cookies (``Network.getCookies`` only for the
    tab's own pages: not with ``urls``)."""
    domain = method.partition(".")[0]
    if not on_tab:
        why = "a browser-level command reaches every tab, the person's too"
    elif domain in _BEYOND_A_TAB_DOMAINS or method in _BEYOND_A_TAB_METHODS:
        why = f"{method} reaches past the agent's own tab"
    elif method == "Network.getCookies" and params and "urls" in params:
        why = "Network.getCookies with urls reads other sites' cookies"
    else:
        return
    raise NotAllowed(f"{why}, and on target {target!r} the agent sees only its own tabs "
                     "(tabs = \"agent\": the person's own browser); send page commands "
                     "with tab=<id> of a tab the agent opened, or use the dedicated tools")
