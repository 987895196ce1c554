"""JavaScript in a tab: ``evaluate``."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, Field, WithJsonSchema

from gateway.browsers.session import TabSession
from gateway.config.policy import check_evaluate
from gateway.errors import JavaScriptError
from gateway.output.absent import absent
from gateway.output.sizing import DEFAULT_MAX_CHARS, fit
from gateway.page.js import script

from .args import MaxChars, TabArg, TimeoutArg
from .definition import TabCall, tab_tool

__all__ = ["TOOLS"]

# A JSON-safe copy of an object result, made in the page (see the script's comment).
SERIALIZE_JS = script("serialize.js")

JsonValue = Annotated[Any, WithJsonSchema({"anyOf": [
    {"type": t} for t in ("string", "number", "boolean", "object", "array", "null")]})]
"""Any JSON value, said as such: a bare ``Any`` publishes ``{}``, a schema that
constrains nothing (the MCP Inspector's ``--strict`` warns about it)."""


class EvaluateResult(BaseModel):
    tab: int
    target: str
    type: str
    value: JsonValue
    truncated: bool = absent(False)
    omitted_chars: int = absent(0)


def _exception_text(details: dict[str, Any]) -> str:
    exception = details.get("exception") or {}
    text = exception.get("description") or exception.get("value") or details.get("text", "")
    line = details.get("lineNumber")
    where = f" (line {line + 1}, column {details.get('columnNumber', 0) + 1})" if line else ""
    return f"JavaScript error: {text}{where}"


async def _by_value(session: TabSession, remote: dict[str, Any]) -> Any:
    """The JSON-safe value of a remote object, then release it."""
    object_id = remote["objectId"]
    try:
        result = await session.call("Runtime.callFunctionOn", {
            "objectId": object_id, "functionDeclaration": SERIALIZE_JS, "returnByValue": True})
    finally:
        await session.release(object_id)
    if "exceptionDetails" in result:
        return remote.get("description")
    return result.get("result", {}).get("value")


@tab_tool("Run JavaScript in a page", destructive=True, open_world=True)
async def evaluate(
    on: TabCall,
    expression: Annotated[str, Field(description="Its last statement's value is "
                                                 "returned; await works.")],
    tab: TabArg,
    await_promise: bool = True,
    timeout_s: TimeoutArg = None,
    max_chars: MaxChars = DEFAULT_MAX_CHARS,
) -> EvaluateResult:
    """Run JavaScript in a tab; gives its value as JSON."""
    check_evaluate(on.browser.config)
    result = await on.call("Runtime.evaluate", {
        "expression": expression, "awaitPromise": await_promise,
        "replMode": True, "userGesture": True, "returnByValue": False,
    }, timeout_s=on.budget, timeout_hint="the expression did not finish (a long loop, "
       "a promise that never settles, or an open dialog); raise timeout_s or pass "
       "await_promise=false")
    remote = result.get("result", {})
    if (await_promise and remote.get("subtype") == "promise"
            and "exceptionDetails" not in result):
        # REPL mode awaits top-level await, but hands a returned promise back as is.
        result = await on.call("Runtime.awaitPromise", {
            "promiseObjectId": remote["objectId"]}, timeout_s=on.budget,
            timeout_hint="the promise did not settle; raise timeout_s or pass "
            "await_promise=false")
        remote = result.get("result", {})
    if "exceptionDetails" in result:
        raise JavaScriptError(_exception_text(result["exceptionDetails"]))
    kind = remote.get("type", "undefined")
    if remote.get("subtype"):
        kind = f"{kind}/{remote['subtype']}"
    if "objectId" in remote:
        value = await _by_value(on, remote)
    elif "unserializableValue" in remote:
        value = remote["unserializableValue"]
    else:
        value = remote.get("value")
    fitted = fit(value, max_chars)
    return EvaluateResult(tab=on.tab.id, target=on.browser.name, type=kind, value=fitted.value,
                          truncated=fitted.truncated, omitted_chars=fitted.omitted_chars)


TOOLS = (evaluate,)
