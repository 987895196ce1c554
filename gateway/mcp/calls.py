"""One tool call, start to end: the one place a call's whole lifecycle is written.

``Calls`` holds the tools a gateway offers (``gateway.tools.TOOLS`` less what
``--tools`` / ``--read-only`` leave out) and, for each, what is published of it
(``published``: its schemas made once, from its arguments model and result type,
then compacted by ``schemas.py``). ``Calls.call`` then runs one call in this order:

1. the tool: one not offered is refused with the flag that offers it (``withheld``),
   one that does not exist as the SDK always said it;
2. the arguments: names the tool does not take are refused with the right one
   (``unknown_arguments``: the SDK would drop them silently); the rest are validated
   by the tool's arguments model, a failure read as one line per argument
   (``describe_invalid``);
3. the tab: resolved to a browser and tab (``_on``: a ``TabCall`` or ``BrowserCall``)
   with the call's time budget (``timeout_s``, else the target's
   ``command_timeout_s``); the hold policy (``_refuse_if_held``) before and after
   taking the tab's lock;
4. the handler, with the client's progress bound (``gateway.progress``) and its roots
   reachable (``Gateway.roots``);
5. the result's shape (``as_call_result``) and the files it links (``ServedFiles``);
6. errors: a ``GatewayError`` — also raised under task groups, in (nested)
   exception groups (``failure_of``) — is a tool error with its own text; anything
   else is a tool error that says it is a gateway bug, and the server keeps serving;
7. the call-log line, for every call, refused or run.
"""

from __future__ import annotations

import difflib
import functools
import itertools
import json
import time
import typing
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

import anyio
import structlog
from mcp.types import CallToolResult, ContentBlock, TextContent, ToolAnnotations
from mcp.types import Tool as Published
from pydantic import BaseModel, ValidationError

from gateway.browsers.session import TabSession
from gateway.errors import GatewayError, TabHeld
from gateway.live.hold import held
from gateway.mcp.call_log import CallLog
from gateway.mcp.schemas import compact_description, compact_input, compact_output
from gateway.mcp.served_files import ServedFiles
from gateway.progress import reporting
from gateway.tools.definition import (
    BrowserCall,
    FallsShort,
    Gateway,
    Hints,
    Reach,
    ReadsAsText,
    TabCall,
    TabMode,
    Tool,
    WritesFiles,
)
from gateway.tools.links import file_link
from gateway.tools.sets import Selection

if TYPE_CHECKING:
    from mcp.server.session import ServerSession

    from gateway.browsers.browser import Browser
    from gateway.fleet.registry import Registry
    from gateway.live.hub import Live
    from gateway.tabs.tab import Tab

__all__ = ["MAX_ERROR_CHARS", "Calls", "as_call_result", "describe_invalid", "error_text",
           "failure_of", "published", "shortfall_of", "unknown_arguments"]

log = structlog.get_logger("gateway.mcp")

MAX_ERROR_CHARS = 10_000
"""Longest error text a client gets: an error may quote what was sent (V8 repeats a
10 MB identifier in its ReferenceError), and the text lands in a model's context."""
ROOTS_TIMEOUT_S = 5.0


class Calls:
    """The tools offered and the calls to them: every call crosses ``call``."""

    def __init__(self, tools: Sequence[Tool], registry: Registry, call_log: CallLog, *,
                 selection: Selection | None = None, live: Live | None = None) -> None:
        self._tools = {tool.name: tool for tool in tools
                       if selection is None or tool.name in selection.offered}
        self.published = [published(tool) for tool in self._tools.values()]
        """What ``tools/list`` answers: made once, as the tools never change."""
        self._registry = registry
        self._live = live
        self._call_log = call_log
        self._selection = selection
        self._call_ids = itertools.count(1)
        self.files = ServedFiles()
        """The files results linked, which ``resources/read`` serves (``app.py``)."""

    async def call(self, name: str, arguments: dict[str, Any], peer: ServerSession, *,
                   client: str | None = None, structured: bool = False) -> CallToolResult:
        """Run one call from ``peer`` (the client's session: its roots, its progress);
        ``client`` names it in the call log (None: the only one), ``structured`` asks
        for a text result's structured form too (``as_call_result``)."""
        start = time.perf_counter()
        tool = self._tools.get(name)
        try:
            if tool is None:
                withheld = self._selection.withheld.get(name) if self._selection else None
                raise _Refused(withheld or f"Unknown tool: {name}")
            values = _validated(tool, arguments)
        except _Refused as refused:
            self._record(next(self._call_ids), name, arguments, start, "error", str(refused),
                         None, client)
            return _error_result(str(refused))
        call_id = next(self._call_ids)
        outcome, error, result = "ok", None, None
        try:
            gateway = Gateway(self._registry, self._live, functools.partial(_client_roots, peer),
                              client)
            with reporting(peer.report_progress):
                result = await _run(tool, dict(values), gateway)
            answer = as_call_result(result, structured=structured)
            self.files.note(answer)
            shortfall = shortfall_of(result)
            if shortfall is not None:  # did part of its work: an error, said so
                outcome, error = "error", error_text(shortfall)
            return answer
        except anyio.get_cancelled_exc_class():
            outcome = "cancelled"
            raise
        except Exception as exc:
            failure = failure_of(exc)
            if isinstance(failure, GatewayError):
                outcome, error = "error", error_text(failure)
                return _error_result(f"Error executing tool {name}: {error}")
            outcome, error = "crash", f"{type(failure).__name__}: {error_text(failure)}"
            log.exception("tool crashed", tool=name, call_id=call_id)
            return _error_result(f"Error executing tool {name}: internal gateway error in "
                                 f"{name} ({error}); the gateway is still running — retry, "
                                 "and report this if it repeats")
        finally:
            self._record(call_id, name, values, start, outcome, error, result, client)

    def _record(
        self, call_id: int, tool: str, arguments: dict[str, Any], start: float,
        outcome: str, error: str | None, result: BaseModel | None, client: str | None,
    ) -> None:
        duration_ms = round((time.perf_counter() - start) * 1000, 3)
        if outcome != "ok":
            log.info("call failed", call_id=call_id, tool=tool, outcome=outcome, error=error,
                     duration_ms=duration_ms)
        record = {
            "ts": time.time(),
            "call_id": call_id,
            "session": client,
            "tool": tool,
            "target": arguments.get("target") or getattr(result, "target", None),
            "tab": arguments.get("tab") or getattr(result, "tab", None),
            "arguments": arguments,
            "duration_ms": duration_ms,
            "outcome": outcome,
            "error": error,
        }
        if not self._call_log.enabled:  # the live view's outline only: no result sized
            self._call_log.remember(record)
            return
        self._call_log.write({
            **record,
            "result_bytes": len(result.model_dump_json()) if result is not None else 0,
        })


class _Refused(Exception):
    """A call refused before its tool runs (its text is the client's)."""


def _validated(tool: Tool, arguments: dict[str, Any]) -> dict[str, Any]:
    """The arguments as the handler takes them (defaults filled in, nested models kept
    as models), or ``_Refused``."""
    fields = tool.arguments.model_fields
    refusal = unknown_arguments(tool.name, list(fields), arguments)
    if refusal is not None:
        raise _Refused(refusal)
    try:
        model = tool.arguments.model_validate(_pre_parsed(fields, arguments))
    except ValidationError as exc:
        raise _Refused(describe_invalid(tool.name, exc)) from None
    return {name: getattr(model, name) for name in fields}


def _pre_parsed(fields: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    """``arguments`` with a JSON text given for a list or object parsed: some clients
    send ``'["a", "b"]'`` for a list (as the SDK has always accepted)."""
    parsed = dict(arguments)
    for name, value in arguments.items():
        field = fields.get(name)
        if field is None or not isinstance(value, str) or field.annotation is str:
            continue
        try:
            loaded = json.loads(value)
        except (ValueError, RecursionError):
            continue
        if not isinstance(loaded, str | int | float):
            parsed[name] = loaded
    return parsed


def unknown_arguments(tool: str, known: list[str], arguments: dict[str, Any]) -> str | None:
    """The refusal for arguments the tool does not take, else None.

    The SDK would drop them silently, so ``timeout=5`` instead of ``timeout_s=5``
    would just not apply; an agent is better served by hearing the right name.
    """
    unknown = [name for name in arguments if name not in known]
    if not unknown:
        return None
    parts = []
    for name in unknown[:5]:
        close = difflib.get_close_matches(str(name), known, n=1)
        shown = repr(str(name)[:60])
        if name == "target" and "tab" in known:  # tools once took both; habits stay
            shown += " (a tab id names its target: leave target out)"
        elif close:
            shown += f" (did you mean {close[0]!r}?)"
        parts.append(shown)
    return (f"unknown argument{'s' if len(unknown) > 1 else ''} for {tool}: "
            f"{', '.join(parts)}; it takes {', '.join(known) or 'no arguments'}")


def describe_invalid(tool: str, error: ValidationError) -> str:
    """Pydantic's findings as one line per argument, without its type codes and URLs."""
    problems = []
    for item in error.errors(include_url=False)[:5]:
        where = ".".join(str(part) for part in item["loc"]) or "arguments"
        got = "" if item["type"] == "missing" else f" (got {_short(item.get('input'))})"
        problems.append(f"{where}: {item['msg']}{got}")
    more = error.error_count() - len(problems)
    tail = f"; and {more} more" if more > 0 else ""
    return f"invalid arguments for {tool}: {'; '.join(problems)}{tail}"


def _short(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + f"… ({len(text)} chars)"


async def _run(tool: Tool, arguments: dict[str, Any], gateway: Gateway) -> BaseModel:
    """The handler's result: for a tab tool, on its tab, under the hold policy and (if
    it takes it) the tab's lock."""
    if tool.tab is None:
        result: BaseModel = await tool.handler(gateway, **arguments)
        return result
    if tool.check is not None:
        tool.check(arguments)
    on = await _on(tool.tab, arguments, gateway)
    reach = tool.reach(arguments)
    context = arguments.get("context")
    _refuse_if_held(on, reach, context, tool.browser_wide)
    if tool.lock and isinstance(on, TabSession):
        async with on.tab.lock:
            _refuse_if_held(on, reach, context, tool.browser_wide)
            result = await tool.handler(on, **arguments)
            return result
    result = await tool.handler(on, **arguments)
    return result


async def _on(mode: TabMode, arguments: dict[str, Any],
              gateway: Gateway) -> TabCall | BrowserCall:
    """The browser and tab a call means; for ``for_url``, ``arguments["url"]``
    becomes the URL as the target's checks passed it."""
    registry, target = gateway.registry, arguments.get("target")
    if mode == "for_url" and arguments.get("url") is not None:
        browser, page, arguments["url"] = await registry.tab_for_url(
            arguments.get("tab"), target, arguments["url"], arguments.get("context"))
    elif mode == "optional" and arguments.get("tab") is None:
        browser = registry.browser(target)
        return BrowserCall(browser, _budget(browser, arguments), gateway=gateway)
    else:
        browser, page = await registry.tab(arguments["tab"], target)
    return TabCall(browser, _budget(browser, arguments), page, gateway=gateway)


def _budget(browser: Browser, arguments: dict[str, Any]) -> float:
    timeout_s: float | None = arguments.get("timeout_s")
    return timeout_s or browser.config.command_timeout_s


def _refuse_if_held(on: TabCall | BrowserCall, reach: Reach, context: str | None,
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


async def _client_roots(peer: ServerSession) -> list[Path]:
    """The file:// roots the MCP client declared, if it declares any."""
    try:
        caps = peer.client_capabilities
        if caps is None or caps.roots is None:
            return []
        with warnings.catch_warnings(), anyio.fail_after(ROOTS_TIMEOUT_S):
            warnings.simplefilter("ignore")  # roots are deprecated in the newest protocol
            result = await peer.list_roots()
    except Exception as exc:  # a client that cannot answer still gets the temp dir
        log.debug("could not list client roots", error=str(exc))
        return []
    roots = []
    for root in result.roots:
        url = urlsplit(str(root.uri))
        if url.scheme == "file":
            roots.append(Path(unquote(url.path)))
    return roots


@functools.cache
def published(tool: Tool) -> Published:
    """What a client is told of ``tool``, made once per tool: its schemas from its
    arguments model and result type, compacted (``schemas.py``); a result a model reads
    as text (``ReadsAsText``) publishes none (``as_call_result``)."""
    output = (None if issubclass(tool.result, ReadsAsText)
              else compact_output(_root_inlined(tool.result.model_json_schema())))
    return Published(name=tool.name, title=tool.hints.title,
                     description=compact_description(tool.description),
                     input_schema=compact_input(tool.arguments.model_json_schema(by_alias=True)),
                     output_schema=output, annotations=_annotations(tool.hints))


def _root_inlined(schema: dict[str, Any]) -> dict[str, Any]:
    """An output schema whose root is a bare ``$ref`` (a self-referential model) with its
    definition at the root: an output schema's root must be an object."""
    ref = schema.get("$ref")
    if not isinstance(ref, str) or not ref.startswith("#/$defs/"):
        return schema
    return {**schema["$defs"][ref.removeprefix("#/$defs/")],
            **{k: v for k, v in schema.items() if k != "$ref"}}


def _annotations(hints: Hints) -> ToolAnnotations:
    """Every hint said, none left to MCP's defaults (which assume the worst: destructive,
    open world): clients differ in what they do with a missing one. A read-only tool
    destroys nothing, and reading again changes nothing."""
    return ToolAnnotations(title=hints.title, read_only_hint=hints.read_only,
                           destructive_hint=hints.destructive and not hints.read_only,
                           idempotent_hint=hints.idempotent or hints.read_only,
                           open_world_hint=hints.open_world)


def failure_of(exc: BaseException) -> BaseException:
    """What a failure really is: the first ``GatewayError`` anywhere inside (nested)
    exception groups; else a group's only leaf; else ``exc`` itself.

    A task group reports a child's failure as an ``ExceptionGroup``; the client must
    still hear "tab 3 has an open alert dialog …", not "ExceptionGroup".
    """
    if isinstance(exc, BaseExceptionGroup):
        leaves = _leaves(exc)
        for leaf in leaves:
            if isinstance(leaf, GatewayError):
                return leaf
        if len(leaves) == 1:
            return leaves[0]
    return exc


def _leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    leaves: list[BaseException] = []
    for inner in group.exceptions:
        leaves.extend(_leaves(inner) if isinstance(inner, BaseExceptionGroup) else [inner])
    return leaves


def error_text(exc: BaseException | str) -> str:
    """``str(exc)``, cut to ``MAX_ERROR_CHARS`` with a note saying so."""
    text = str(exc)
    if len(text) <= MAX_ERROR_CHARS:
        return text
    return (f"{text[:MAX_ERROR_CHARS]}… [error text cut: {len(text) - MAX_ERROR_CHARS} more "
            "characters]")


def _error_result(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(text=text)], is_error=True)


def as_call_result(result: BaseModel, *, structured: bool = False) -> CallToolResult:
    """What the client gets for a tool's result, the same for every kind of client.

    Clients differ in what they hand the model: Claude Code and Codex give it the
    structured content alone when there is any (as one JSON text), text-first
    clients the text content. So a result a model reads as text (``ReadsAsText``: a
    page view) is text only — in a JSON string its lines would arrive as one line of
    escaped quotes and newlines — and its tool publishes no output schema; its
    structured form is added only when the request asked for it (``structured``:
    ``call --json``, tests). Any other result is its compact JSON (no spaces, fields
    that do not apply left out) as both structured content and text. Each file a
    result names (``WritesFiles``) is linked after it.

    A result that fell short (``FallsShort``) is a tool error carrying all of the above,
    its first text opening with what was not done: for an error, Claude Code hands the
    model the first text block alone — not the structured content — so that block holds
    the whole story (``shortfall_of`` is the same sentence, for the call log)."""
    if isinstance(result, CallToolResult):
        return result  # the tool built its own content (screenshot: an image)
    reads_as_text, writes_files, _ = _shape(type(result))
    text = result.as_text() if reads_as_text else result.model_dump_json()  # type: ignore[attr-defined]
    shortfall = shortfall_of(result)
    if shortfall is not None:
        text = f"{shortfall}\n{text}"
    content: list[ContentBlock] = [TextContent(text=text)]
    if writes_files:
        content += [file_link(Path(path)) for path in result.written()]  # type: ignore[attr-defined]
    dumped = result.model_dump(mode="json") if structured or not reads_as_text else None
    return CallToolResult(content=content, structured_content=dumped,
                          is_error=shortfall is not None)


def shortfall_of(result: BaseModel | None) -> str | None:
    """What a result left undone (``FallsShort``), else None."""
    if result is None or not _shape(type(result))[2]:
        return None
    return typing.cast(FallsShort, result).shortfall()


@functools.cache
def _shape(cls: type) -> tuple[bool, bool, bool]:
    """Whether a result class reads as text, writes files, and can fall short: a check
    against a runtime Protocol costs ~20 µs, so it is made once per class, not per call."""
    return (issubclass(cls, ReadsAsText), issubclass(cls, WritesFiles),
            issubclass(cls, FallsShort))
