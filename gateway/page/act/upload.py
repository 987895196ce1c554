"""``upload``: files of the gateway's machine into a page's file input.

The paths are checked first (inside the directories ``save_to`` may write, regular
files, within the size limits: ``gateway.output.files``), then the ref: a file input
takes the files directly; any other element is clicked with the file chooser
intercepted (``Page.setInterceptFileChooserDialog``), and the input behind the
chooser (``Page.fileChooserOpened``'s ``backendNodeId``) takes them. Only then are
the files copied to the browser's host (``Uploads.stage``), so a refused step
copies nothing. ``DOM.setFileInputFiles`` fires the page's ``input`` and
``change`` events as a user's choice would.
"""

from __future__ import annotations

from collections.abc import Callable

from gateway.errors import ActionFailed, InvalidArgument
from gateway.output.files import MAX_UPLOAD_BYTES, Readable
from gateway.page.act.element import TabInput
from gateway.page.act.models import Upload
from gateway.page.js import script
from gateway.page.view import RefElement

__all__ = ["CHOOSER_WAIT_S", "Readables", "upload"]

CHOOSER_WAIT_S = 5.0  # how long a click gets to open a file chooser
_FILE_INPUT_JS = script("file_input.js")

Readables = Callable[[str], Readable]
"""Checks one path the agent named and returns it as a file the gateway may read."""


async def upload(tab_input: TabInput, action: Upload, readable: Readables, budget_s: float) -> None:
    files = [readable(path) for path in action.paths]
    total = sum(f.size for f in files)
    if total > MAX_UPLOAD_BYTES:
        raise InvalidArgument(f"these files are {total:,} bytes together, over the limit of "
                              f"{MAX_UPLOAD_BYTES:,} bytes per upload step")
    _, element = tab_input.ref(action.ref)
    what = f'{element.role} #{action.ref} "{element.name}"'
    kind = await tab_input.on(element, _FILE_INPUT_JS)
    if kind["file"]:
        if kind["disabled"]:
            raise ActionFailed(f"{what} is disabled")
        node, multiple = element.backend_node_id, bool(kind["multiple"])
    else:
        node, multiple = await _chooser(tab_input, action.ref, element, what, budget_s)
    if len(files) > 1 and not multiple:
        raise ActionFailed(f"{what} takes one file, not {len(files)}")
    paths = await tab_input.session.browser.pages.uploads.stage(tab_input.tab, files, budget_s)
    await tab_input.call("DOM.setFileInputFiles", {"files": list(paths), "backendNodeId": node},
                         element.session)


async def _chooser(tab_input: TabInput, ref: int, element: RefElement, what: str,
                   budget_s: float) -> tuple[int, bool]:
    """Click ``ref`` with file choosers intercepted: the chooser's input, and whether it
    takes several files."""
    await tab_input.call("Page.setInterceptFileChooserDialog", {"enabled": True}, element.session)
    opened = tab_input.tab.expect("Page.fileChooserOpened")
    try:
        await tab_input.click(ref)
        if not await opened.wait(min(CHOOSER_WAIT_S, budget_s)) or opened.dropped:
            raise ActionFailed(f"{what} is not a file input, and clicking it opened no file "
                               "chooser; upload needs a file input or a button that opens one")
    finally:
        opened.drop()
        await tab_input.undo("Page.setInterceptFileChooserDialog", {"enabled": False},
                        element.session)
    _, params = opened.result()
    return int(params["backendNodeId"]), params.get("mode") == "selectMultiple"
