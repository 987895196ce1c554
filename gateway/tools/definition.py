"""How a tool family defines its tools, without knowing the MCP server they land on.

A family gets a ``Tools`` and decorates its functions with ``tools.tool(...)`` or,
for a tool that works on a tab, ``tools.tab_tool(...)``. The second does once what
every tab tool needs before its own work: resolve the tab id (and target) to a
``Browser`` and ``Tab``, take the tab's lock, and settle the time budget (the
call's ``timeout_s``, else the target's ``command_timeout_s``). The body receives
that as its first parameter, ``on``; the rest of its signature is exactly the
tool's MCP signature (names, types, defaults, descriptions), so what a client sees
is read off the body, minus ``on``.

Where the tools go, and what happens around each call (error mapping, call log,
read-only filter), is the server's business: it hands in a ``ToolRegistrar``.
Dependencies point one way: the server imports the tools, never the reverse.
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, ParamSpec, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel

from gateway.browsers.session import BrowserSession, TabSession
from gateway.errors import TabHeld
from gateway.live.hold import held

if TYPE_CHECKING:
    from gateway.browsers.browser import Browser
    from gateway.browsers.registry import Registry
    from gateway.browsers.tab import Tab

__all__ = ["Changes", "FallsShort", "Hints", "Reach", "ReadsAsText", "TabMode",
           "ToolRegistrar", "Tools", "WritesFiles"]

P = ParamSpec("P")
R = TypeVar("R", bound=BaseModel)
Body = Callable[..., Awaitable[R]]

TabMode = Literal["required", "optional", "for_url"]
"""How a tab tool finds its tab: ``required`` from its ``tab`` argument; ``optional``
from ``tab`` when given, else just the browser of ``target`` (no tab, no lock);
``for_url`` the ``tab`` given or a fresh one, for loading its (checked) ``url`` — and
when ``url`` is None (navigate's history steps), the ``tab`` given, as ``required``."""
Check = Callable[[dict[str, Any]], None]
Reach = Literal["nothing", "tab", "context"]
"""What a call changes, for the hold check (``handoff``): ``nothing`` (a read); its
``tab`` (for a ``browser_wide`` tool without one, any tab of its browser); or the
browser ``context`` of its tab, else of its ``context`` argument, else the default one."""
Changes = Callable[[dict[str, Any]], Reach]


@runtime_checkable
class ReadsAsText(Protocol):
    """A result a model reads better as text than as JSON (a page view): the server
    sends ``as_text()`` as the text content, the fields stay structured content."""

    def as_text(self) -> str: ...


@runtime_checkable
class FallsShort(Protocol):
    """A result of a call that can do part of its work and not the rest (a batch of steps
    that stopped at one that failed, a state saved without an origin that did not answer).

    ``shortfall()`` says what was not done and what to do about it, or None when all was.
    The server sends a result that fell short as a tool error (``isError``) that still
    carries the whole result: clients mark the call failed and agents and scripts branch
    on that, while the model still sees where things stand (the view after the steps)."""

    def shortfall(self) -> str | None: ...


@dataclass(frozen=True)
class Hints:
    """What a client may assume of a tool (MCP's annotations), chosen for each tool.

    Clients act on them: VS Code and Codex run a ``read_only`` tool without asking
    (Codex refuses any other under ``approval_policy = "never"``); VS Code asks the
    user to confirm what an ``open_world`` tool returns. So ``open_world`` marks the
    tools that make the browser reach past the page it is on (load a URL, click,
    run a script, answer a dialog, a raw CDP command) — not those that only read what
    is already loaded, which would make every re-read of a page wait for a person
    (what a page says is untrusted either way; the first view of a page comes from
    ``browse``, which is open-world). ``destructive``: something
    may be lost for good (a tab closed; whatever a click, a script, a dialog's OK
    or a CDP command does on a site). ``idempotent``: the same call again changes
    nothing more. ``title``: how a client names the tool to a person."""

    title: str
    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False
    open_world: bool = False


@runtime_checkable
class WritesFiles(Protocol):
    """A result that names files the call wrote: the server links each one
    (``gateway.tools.links``) beside the result."""

    def written(self) -> list[str]: ...


class ToolRegistrar(Protocol):
    """What the server offers: put one function on it as a tool, behind its boundary."""

    def tool(
        self, hints: Hints
    ) -> Callable[[Callable[P, Awaitable[R]]], Callable[P, Awaitable[R]]]: ...


class Tools:
    """The tool definitions of every family, registered on ``registrar``; tab tools
    resolve their tabs in ``registry``."""

    def __init__(self, registrar: ToolRegistrar, registry: Registry) -> None:
        self._registrar = registrar
        self._registry = registry

    def tool(
        self, title: str, *, read_only: bool = False, destructive: bool = False,
        idempotent: bool = False, open_world: bool = False,
    ) -> Callable[[Callable[P, Awaitable[R]]], Callable[P, Awaitable[R]]]:
        """A tool that needs no tab: the function is registered as it is (``Hints``)."""
        return self._registrar.tool(Hints(title, read_only, destructive, idempotent,
                                          open_world))

    def tab_tool(
        self, title: str, *, read_only: bool = False, destructive: bool = False,
        idempotent: bool = False, open_world: bool = False, lock: bool = True,
        tab: TabMode = "required", check: Check | None = None, while_held: bool = False,
        browser_wide: bool = False, changes: Changes | None = None,
    ) -> Callable[[Body[R]], Callable[..., Awaitable[R]]]:
        """A tool whose body takes ``on`` (an ``TabSession``; an ``BrowserSession`` too for
        ``tab="optional"``) before its MCP arguments.

        ``check`` sees the arguments first and raises for a combination the schema
        cannot express (one of two arguments): before a ``for_url`` call opens a tab.

        ``lock=False`` is for tools that must work while another call holds the tab
        (close_tab, handle_dialog) or only read the gateway's own records.

        While a person holds the tab (``handoff``), a tool that is not ``read_only`` is
        refused at once (``TabHeld``), before it waits for the lock, and again once it
        has the lock (a hold that began while it waited) — unless ``while_held``
        (``handoff`` itself, which waits for the person). A ``browser_wide`` tool called
        without a tab (a browser-level ``cdp_command``, which can close or drive any
        tab) is refused while any tab of its browser is held. ``changes`` says, per
        call, what it changes (``Reach``) where that depends on its arguments: a read
        action of a changing tool goes on, a read-only tool's changing option is
        refused, a change to a whole context is refused while any tab in it is held.
        """
        register = self.tool(title, read_only=read_only, destructive=destructive,
                             idempotent=idempotent, open_world=open_world)

        def define(body: Body[R]) -> Callable[..., Awaitable[R]]:
            @functools.wraps(body)
            async def call(**arguments: Any) -> R:
                if check is not None:
                    check(arguments)
                on = await self._resolve(tab, arguments)
                reach: Reach = "nothing" if read_only or while_held else "tab"
                if changes is not None:
                    reach = changes(arguments)
                _refuse_if_held(on, reach, arguments.get("context"), browser_wide)
                if lock and isinstance(on, TabSession):
                    async with on.tab.lock:
                        _refuse_if_held(on, reach, arguments.get("context"), browser_wide)
                        return await body(on, **arguments)
                return await body(on, **arguments)

            signature = _without_first(body)
            call.__signature__ = signature  # type: ignore[attr-defined]
            call.__annotations__ = {
                **{p.name: p.annotation for p in signature.parameters.values()},
                "return": signature.return_annotation}
            return register(call)

        return define

    async def _resolve(self, mode: TabMode, arguments: dict[str, Any]) -> BrowserSession:
        """The browser and tab a call means; for ``for_url``, ``arguments["url"]``
        becomes the URL as the target's checks passed it."""
        target = arguments.get("target")
        if mode == "for_url" and arguments.get("url") is not None:
            browser, page, arguments["url"] = await self._registry.tab_for_url(
                arguments.get("tab"), target, arguments["url"], arguments.get("context"))
        elif mode == "optional" and arguments.get("tab") is None:
            browser = self._registry.browser(target)
            return BrowserSession(browser, _budget(browser, arguments))
        else:
            browser, page = await self._registry.tab(arguments["tab"], target)
        return TabSession(browser, _budget(browser, arguments), page)


def _refuse_if_held(on: BrowserSession, reach: Reach, context: str | None,
                    browser_wide: bool) -> None:
    """``TabHeld`` for a call that changes what a person holds (``Reach``): its tab (for
    a ``browser_wide`` call without a tab: any tab of its browser), or any tab in the
    browser context it changes (its tab's, else ``context``, None being the default)."""
    tabs: list[Tab] = []
    if reach == "context":
        where = on.tab.context if isinstance(on, TabSession) else context
        tabs = [t for t in on.browser.tabs.values() if t.context == where]
    elif reach == "tab" and isinstance(on, TabSession):
        tabs = [on.tab]
    elif reach == "tab" and browser_wide:
        tabs = list(on.browser.tabs.values())
    for tab in tabs:
        hold = held(tab)
        if hold is not None:
            raise TabHeld(tab.id, hold.reason)


def _budget(browser: Browser, arguments: dict[str, Any]) -> float:
    timeout_s: float | None = arguments.get("timeout_s")
    return timeout_s or browser.config.command_timeout_s


def _without_first(body: Callable[..., Any]) -> inspect.Signature:
    """``body``'s signature without ``on``, its annotations evaluated in its own module
    (the wrapper lives here, where the tool module's names do not resolve)."""
    hints = typing.get_type_hints(body, include_extras=True)
    signature = inspect.signature(body)
    parameters = [p.replace(annotation=hints.get(p.name, p.annotation))
                  for p in list(signature.parameters.values())[1:]]
    return signature.replace(parameters=parameters,
                             return_annotation=hints.get("return", signature.return_annotation))
