"""What a tool is: one value (``Tool``) — its name, hints, how it finds its tab, its
arguments model, its handler — made where its family defines it, with no server in sight.

A family decorates a module-level function with ``tool(...)`` or, for a tool that works
on a tab, ``tab_tool(...)``, and lists the values it gets in its ``TOOLS``. The
function's first parameter is what the call works on: a ``Gateway`` (the registry, the
live page, the client's roots) for a plain tool; a ``TabCall`` (a ``TabSession`` with
its ``gateway``) for a tab tool, or a ``BrowserCall`` for ``tab="optional"`` called
without a tab. Its other parameters are the tool's MCP arguments (names, types, defaults,
descriptions): they are read once, here, into the tool's arguments model; the docstring
is its description, the return annotation its result type.

Everything around a call — arguments checked, the tab resolved, the hold policy, the
lock, the budget, errors, the call log, the result's shape — is the server's business
(``gateway.mcp.calls``), read off these values. Dependencies point one way: the
server imports the tools, never the reverse.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, ConfigDict, create_model

from gateway.browsers.session import BrowserSession, TabSession

if TYPE_CHECKING:
    from gateway.fleet.registry import Registry
    from gateway.live.hub import Live

__all__ = ["BrowserCall", "Changes", "Check", "FallsShort", "Gateway", "Hints", "Reach",
           "ReadsAsText", "TabCall", "TabMode", "Tool", "WritesFiles", "tab_tool", "tool"]

R = TypeVar("R")
Handler = Callable[..., Awaitable[Any]]

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


async def _no_roots() -> list[Path]:
    return []


@dataclass(frozen=True)
class Gateway:
    """What a call reaches beyond its tab: the ``registry`` of targets, the ``live`` page
    (None: a gateway built without one), and ``roots()``, the directories the calling
    MCP client declared (where ``save_to`` may write: ``saving.py``), and ``client``, which
    client called (None: the only one, in process or on stdio) — what a page view says it
    holds is that client's. One per call: the roots are the calling client's."""

    registry: Registry
    live: Live | None = None
    roots: Callable[[], Awaitable[list[Path]]] = _no_roots
    client: str | None = None


@dataclass(frozen=True, kw_only=True)
class BrowserCall(BrowserSession):
    """A ``tab="optional"`` tool's call without a tab: the browser session and its
    ``gateway``."""

    gateway: Gateway


@dataclass(frozen=True, kw_only=True)
class TabCall(TabSession):
    """A tab tool's call: the tab session and its ``gateway``."""

    gateway: Gateway


class Arguments(BaseModel):
    """The base of every tool's arguments model."""

    model_config = ConfigDict(arbitrary_types_allowed=True)


@dataclass(frozen=True, eq=False)
class Tool:
    """One tool, whole: what the server publishes (name, description, hints, the
    arguments model's schema, the result type's) and how a call to it runs (its tab
    mode and hold policy, then ``handler``). ``tab`` None: a plain tool, whose handler
    gets a ``Gateway``. See ``tab_tool`` for the rest."""

    name: str
    category: str
    """Its ``--tools`` category: the family (module) that defines it."""
    description: str
    hints: Hints
    handler: Handler
    arguments: type[BaseModel]
    result: type[BaseModel]
    """What the handler returns (for a result the tool builds itself, an image: the
    type of its structured content)."""
    tab: TabMode | None = None
    lock: bool = True
    check: Check | None = None
    while_held: bool = False
    browser_wide: bool = False
    changes: Changes | None = None

    def reach(self, arguments: dict[str, Any]) -> Reach:
        """What this call changes, for the hold check."""
        if self.changes is not None:
            return self.changes(arguments)
        return "nothing" if self.hints.read_only or self.while_held else "tab"


def tool(
    title: str, *, read_only: bool = False, destructive: bool = False,
    idempotent: bool = False, open_world: bool = False,
) -> Callable[[Handler], Tool]:
    """A tool that needs no tab: its handler gets the call's ``Gateway`` (``Hints``)."""
    hints = Hints(title, read_only, destructive, idempotent, open_world)
    return lambda handler: _tool(handler, hints, None)


def tab_tool(
    title: str, *, read_only: bool = False, destructive: bool = False,
    idempotent: bool = False, open_world: bool = False, lock: bool = True,
    tab: TabMode = "required", check: Check | None = None, while_held: bool = False,
    browser_wide: bool = False, changes: Changes | None = None,
) -> Callable[[Handler], Tool]:
    """A tool whose handler takes ``on`` (a ``TabCall``; a ``BrowserCall`` too for
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
    hints = Hints(title, read_only, destructive, idempotent, open_world)
    return lambda handler: _tool(handler, hints, tab, lock=lock, check=check,
                                 while_held=while_held, browser_wide=browser_wide,
                                 changes=changes)


def _tool(handler: Handler, hints: Hints, tab: TabMode | None, **policy: Any) -> Tool:
    """The ``Tool`` of ``handler``: its parameters after the first, read once into an
    arguments model (annotations evaluated in the handler's own module)."""
    annotations = typing.get_type_hints(handler, include_extras=True)
    fields: dict[str, Any] = {}
    for parameter in list(inspect.signature(handler).parameters.values())[1:]:
        name, default = parameter.name, parameter.default
        assert not hasattr(BaseModel, name), f"{handler.__name__}: {name} shadows the model's"
        kind = annotations[name]
        fields[name] = kind if default is inspect.Parameter.empty else (kind, default)
    arguments = create_model(f"{handler.__name__}Arguments", __base__=Arguments, **fields)
    return Tool(name=handler.__name__, category=handler.__module__.rsplit(".", 1)[-1],
                description=handler.__doc__ or "", hints=hints, handler=handler,
                arguments=arguments, result=_result_type(annotations.get("return")),
                tab=tab, **policy)


def _result_type(returned: Any) -> type[BaseModel]:
    """The result class a return annotation names: ``Annotated[CallToolResult, X]``
    (a tool that builds its own content) names ``X``."""
    if typing.get_origin(returned) is Annotated:
        return typing.cast(type[BaseModel], typing.get_args(returned)[1])
    assert isinstance(returned, type) and issubclass(returned, BaseModel), returned
    return returned
