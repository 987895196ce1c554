"""The stdio transport's read side, made to answer every request it cannot read.

The MCP SDK drops a line it cannot parse — e.g. JSON nested deeper than its
parser allows (~200 levels) — and logs it: no reply ever goes out, so the
client's call waits forever. JSON-RPC asks for an error response instead.
``AnsweringReadStream`` wraps the SDK's read stream: a parse failure whose line
still shows the request's ``id`` is answered with a JSON-RPC error naming the
problem; everything else passes through untouched (no extra task, no copy).
"""

from __future__ import annotations

import re
from types import TracebackType
from typing import Any, Self

import anyio
import structlog
from mcp.shared.message import SessionMessage
from mcp.types import INVALID_REQUEST, ErrorData, JSONRPCError
from pydantic import ValidationError

__all__ = ["AnsweringReadStream", "request_id_of"]

log = structlog.get_logger("gateway.stdio")

# The top-level id of a request whose body could not be parsed, looked for only
# before "params": an "id" inside the arguments must never be taken for it (that
# would fail some other call in flight). Clients write id before params.
_ID_RE = re.compile(r'^\s*\{[^{}\[\]]*?"id"\s*:\s*(-?[0-9]{1,18}|"(?:[^"\\]|\\.){0,256}")\s*[,}]')


def request_id_of(line: str) -> int | str | None:
    """The JSON-RPC id of an unparsable request line, when it can be told for sure."""
    head = line[:2048]
    cut = head.find('"params"')
    match = _ID_RE.match(head if cut < 0 else head[:cut])
    if match is None:
        return None
    token = match.group(1)
    if token.startswith('"'):
        return re.sub(r"\\(.)", r"\1", token[1:-1])
    return int(token)


def _unparsable_line(exc: Exception) -> tuple[str, str] | None:
    """(line, reason) of a parse failure the SDK's reader passed on, else None."""
    if not isinstance(exc, ValidationError):
        return None
    errors = exc.errors(include_url=False)
    line = errors[0].get("input") if errors else None
    if not isinstance(line, str):
        return None
    return line, "; ".join(str(e.get("msg", "")) for e in errors[:3])


class AnsweringReadStream:
    """Delegates to the SDK's read stream; answers the requests it could not parse."""

    def __init__(self, inner: Any, write_stream: Any) -> None:
        self._inner = inner
        self._write = write_stream

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        while True:
            item = await self._inner.receive()
            if not (isinstance(item, Exception) and await self._answer(item)):
                return item

    async def _answer(self, exc: Exception) -> bool:
        found = _unparsable_line(exc)
        request_id = request_id_of(found[0]) if found is not None else None
        if found is None or request_id is None:
            return False
        reason = found[1][:300]
        log.info("unreadable request answered", request_id=request_id, reason=reason)
        hint = ("arguments nested more than about 200 levels deep are not accepted — send "
                "flatter JSON" if "recursion limit" in reason else "send one valid JSON-RPC "
                "message per line")
        message = f"request could not be read ({reason}); {hint}"
        error = JSONRPCError(jsonrpc="2.0", id=request_id,
                             error=ErrorData(code=INVALID_REQUEST, message=message))
        await self._write.send(SessionMessage(error))
        return True

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc_val: BaseException | None, exc_tb: TracebackType | None) -> None:
        await self.aclose()
