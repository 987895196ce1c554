"""Sign-in state: a browser context's cookies and localStorage saved to, loaded from, or
cleared — as a Playwright storage-state file (``gateway.page.storage.file``).

Which context: the ``tab``'s, the named isolated ``context`` (made now if new: load a
state into a fresh context and its next tab is signed in), else the default context of
``target``'s browser. Saved on one target's browser, the file loads into another's.

The file is written where ``save_to`` may write (never replacing a file, 0600) and
read from where ``upload`` may read (``gateway.output.files``), bounded in size. The
results name what moved (cookie names, origins, counts), never a value: those are
credentials, and results reach the model and the call log.

One tool, not three: the arguments are the same, and each of save, load and clear is
rarely called. Not read-only (load and clear change the browser; clear loses what was
there for good): a client asks before running it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from gateway.browsers.session import TabSession
from gateway.errors import InvalidArgument
from gateway.output.absent import absent
from gateway.output.files import read_checked, resolve_read_path, write_private
from gateway.page.storage.file import MAX_STATE_BYTES, StorageState, parse_state
from gateway.page.storage.state import clear_state, context_id, load_state, read_state

from .args import ContextArg, OptionalTab, TargetArg, TimeoutArg
from .definition import BrowserCall, Gateway, Reach, TabCall, tab_tool
from .saving import allowed_dirs, save_path

__all__ = ["TOOLS"]

MAX_NAMES = 200  # cookie names listed in a result; the count is always whole


class OriginSummary(BaseModel):
    origin: str
    items: int


class StorageResult(BaseModel):
    target: str
    action: str
    context: str | None = absent()
    tab: int | None = absent()
    path: str | None = absent()
    cookies: int
    cookie_names: list[str] = Field(default_factory=list)
    origins: list[OriginSummary] = Field(default_factory=list)
    unread: list[str] | None = absent()  # origins whose tab did not answer (a dialog, a hung page)
    refused: list[str] | None = absent()  # cookies loaded that Chrome did not keep

    def written(self) -> list[str]:
        """The state file, for a save (``WritesFiles``)."""
        return [self.path] if self.path and self.action == "save" else []

    def shortfall(self) -> str | None:
        """What of the state did not move (``FallsShort``): a saved file without the
        localStorage of an origin whose tab did not answer, or cookies Chrome did not keep
        from a loaded one — a sign-in that may not hold."""
        if self.unread:
            return (f"saved without the localStorage of {', '.join(self.unread)}: its tab "
                    "did not answer (an open dialog, a hung page); answer or close it "
                    "(list_tabs, handle_dialog) and save again to a new path")
        if self.refused:
            return (f"Chrome did not keep the cookies {', '.join(self.refused)} (invalid, "
                    "expired, or SameSite=None without Secure); the others loaded — fix "
                    "those in the file and load it again")
        return None


def _check(arguments: dict[str, Any]) -> None:
    if arguments.get("tab") is not None and arguments.get("context") is not None:
        raise InvalidArgument("pass tab or context, not both: a tab is in one context already")
    if arguments["action"] != "clear" and arguments.get("path") is None:
        raise InvalidArgument(f"action={arguments['action']!r} needs path: the storage-state "
                              "file (absolute)")
    if arguments["action"] == "clear" and arguments.get("path") is not None:
        raise InvalidArgument("clear takes no path: it deletes the context's cookies and "
                              "localStorage")


def _changes(arguments: dict[str, Any]) -> Reach:
    """A save reads; a load or clear changes a whole context (and its held tabs)."""
    return "nothing" if arguments["action"] == "save" else "context"


async def _read_file(gateway: Gateway, requested: str) -> StorageState:
    """The storage state in ``requested``: a file where uploads may come from, bounded."""
    file = resolve_read_path(requested, await allowed_dirs(gateway),
                             allow_any=gateway.registry.config.allow_any_path, what="path")
    if file.size > MAX_STATE_BYTES:
        raise InvalidArgument(f"{file.path} is {file.size:,} bytes, over the limit of "
                              f"{MAX_STATE_BYTES:,} for a storage-state file")
    return parse_state(b"".join(read_checked(file, 1 << 20)), str(file.path))


def _what(state: StorageState) -> dict[str, Any]:
    """What a state holds, without a value: cookie count and names, origins and items."""
    return {"cookies": len(state.cookies),
            "cookie_names": sorted({c.name for c in state.cookies})[:MAX_NAMES],
            "origins": [OriginSummary(origin=o.origin, items=len(o.local_storage))
                        for o in state.origins]}


@tab_tool("Save, load or clear sign-in state", destructive=True, lock=False,
          tab="optional", check=_check, changes=_changes)
async def storage_state(
    on: BrowserCall | TabCall,
    action: Literal["save", "load", "clear"],
    path: Annotated[str | None, Field(description="The file (absolute); not for clear.",
                                      max_length=4096)] = None,
    tab: OptionalTab = None,
    context: ContextArg = None,
    target: TargetArg = None,
    timeout_s: TimeoutArg = None,
) -> StorageResult:
    """Save a context's cookies and localStorage as a Playwright storage-state
    file (sign-in state), load one (its next page is signed in), or clear them;
    the tab's context, else `context`, else the default."""
    browser = on.browser
    page = on.tab if isinstance(on, TabSession) else None
    known: dict[str, Any] = {"target": browser.name, "action": action, "tab": tab,
                             "context": page.context if page is not None else context}
    if action == "clear":
        cookies, cleared = await clear_state(browser, await context_id(
            on, context, make=False), on.budget)
        return StorageResult(**known, cookies=cookies,
                             origins=[OriginSummary(origin=o, items=0) for o in cleared])
    if action == "save":
        file = await save_path(on.gateway, path, "path")  # before any browser work
        state, unread = await read_state(browser, await context_id(on, context, make=False),
                                         on.budget)
        assert file is not None  # path is checked present (_check)
        write_private(file, state.to_json())
        return StorageResult(**known, **_what(state), path=str(file), unread=unread or None)
    assert path is not None  # _check
    state = await _read_file(on.gateway, path)
    refused = await load_state(browser, await context_id(on, context, make=True), state,
                               on.budget)
    return StorageResult(**known, **_what(state), path=path, refused=refused or None)


TOOLS = (storage_state,)
