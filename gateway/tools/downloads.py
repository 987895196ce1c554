"""A browser's downloads: ``downloads`` lists them and copies one back to this machine.

Every download a served browser makes is saved on its own host (``gateway.browsers.
downloads``). Listing reads the gateway's record; ``fetch`` copies one file back — over
the target's SSH connection (SFTP), or a plain copy on this machine — byte for byte,
bounded in size, reporting the bytes as progress. Like ``pdf`` it changes nothing in
the browser but writes a file: offered as read-only, the file only where ``save_to``
may write (else a fresh temp file), new, 0600; a copy that fails leaves none.
The name a site suggested is shown and gives the temp file its extension, nothing more.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BaseModel, Field

from gateway.browsers.downloads import Download, DownloadState
from gateway.browsers.session import TabSession
from gateway.errors import InvalidArgument
from gateway.output.absent import absent

from .args import OptionalTab, TargetArg, TimeoutArg
from .definition import BrowserCall, TabCall, tab_tool
from .saving import save_new, save_path

__all__ = ["TOOLS"]

_SUFFIX = re.compile(r"\.[A-Za-z0-9]{1,10}$")


class DownloadItem(BaseModel):
    id: int
    name: str
    state: DownloadState
    bytes: int
    total: int | None = absent()
    url: str
    tab: int | None = absent()
    why: str | None = absent()  # why fetch cannot bring it back (or why it was cancelled)


class DownloadsResult(BaseModel):
    target: str
    downloads: list[DownloadItem] | None = absent()
    dropped: int = absent(0)
    unreachable: str | None = absent()  # why files cannot be copied back from there
    id: int | None = absent()
    path: str | None = absent()
    bytes: int | None = absent()

    def written(self) -> list[str]:
        """The file copied back (``WritesFiles``)."""
        return [self.path] if self.path else []


def _item(entry: Download) -> DownloadItem:
    return DownloadItem(id=entry.id, name=entry.name, state=entry.state, bytes=entry.bytes,
                        total=entry.total if entry.total != entry.bytes else None,
                        url=entry.url[:300], tab=entry.tab, why=entry.why_not)


def _check(arguments: dict[str, Any]) -> None:
    if arguments.get("save_to") is not None and arguments.get("fetch") is None:
        raise InvalidArgument("save_to needs fetch: the id of the download to copy back "
                              "(call downloads without either to list them)")


@tab_tool("List or copy back downloads", read_only=True, lock=False,
          tab="optional", check=_check)
async def downloads(
    on: BrowserCall | TabCall,
    tab: OptionalTab = None,
    target: TargetArg = None,
    fetch: Annotated[int | None, Field(description="Id of one to copy here.", ge=1)] = None,
    save_to: Annotated[str | None, Field(description="New file's absolute path.",
                                         max_length=4096)] = None,
    timeout_s: TimeoutArg = None,
) -> DownloadsResult:
    """List the browser's downloads (on its host; a tab's with `tab`), or fetch one
    here."""
    browser, record = on.browser, on.browser.downloads
    if fetch is None:
        page = on.tab.id if isinstance(on, TabSession) else None
        return DownloadsResult(
            target=browser.name, dropped=record.dropped, unreachable=record.unreachable,
            downloads=[_item(e) for e in record.entries if page in (None, e.tab)])
    path = await save_path(on.gateway, save_to)  # before anything else
    entry = record.get(fetch)
    suffix = _SUFFIX.search(entry.name)

    async def write(file: Any) -> int:
        return await record.fetch(entry, file, browser.config.max_capture_mb, on.budget)

    saved, size = await save_new(path, "download", suffix[0] if suffix else "", write)
    return DownloadsResult(target=browser.name, id=entry.id, path=str(saved), bytes=size)


TOOLS = (downloads,)
