"""JavaScript dialogs (alert, confirm, prompt, beforeunload)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field

from gateway.errors import InvalidArgument

from .args import TabArg
from .definition import TabCall, tab_tool

__all__ = ["TOOLS"]


class DialogResult(BaseModel):
    tab: int
    target: str
    type: str
    message: str
    default_prompt: str | None
    accepted: bool
    closed: bool


# No tab lock: a call blocked behind the dialog may hold it.
@tab_tool("Answer a page's dialog", destructive=True, open_world=True, lock=False)
async def handle_dialog(
    on: TabCall,
    tab: TabArg,
    accept: Annotated[bool, Field(description="true: OK / Leave; false: Cancel / "
                                              "Stay.")],
    prompt_text: Annotated[str | None, Field(description="The prompt() answer.",
                                               max_length=100_000)] = None,
) -> DialogResult:
    """Answer a tab's open alert/confirm/prompt/beforeunload dialog (other tab tools
    fail until then)."""
    dialog = on.tab.dialog
    if dialog is None:
        raise InvalidArgument(f"tab {tab} has no open dialog")
    params: dict[str, object] = {"accept": accept}
    if prompt_text is not None:
        params["promptText"] = prompt_text
    await on.call("Page.handleJavaScriptDialog", params)
    on.tab.dialog_answered()
    return DialogResult(tab=on.tab.id, target=on.browser.name, type=dialog.get("type", ""),
                        message=dialog.get("message", ""),
                        default_prompt=dialog.get("defaultPrompt"), accepted=accept,
                        closed=True)


TOOLS = (handle_dialog,)
