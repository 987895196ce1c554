"""A tab as a PDF file: ``pdf``.

Like ``screenshot`` with ``save_to`` and ``performance_trace``, it reads the page and
changes nothing in it, but writes a file: offered as read-only, and the file goes only
where ``save_to`` may write, new, 0600. Chrome streams the PDF back
(``gateway.page.capture.printing``); progress is the bytes read, and a cancelled or failed
call leaves no partial file (``save_new``) and no stream open in Chrome.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from gateway.output.absent import absent
from gateway.page.capture.printing import PAPER_INCHES, page_ranges, print_pdf

from .args import TabArg, TimeoutArg
from .definition import TabCall, tab_tool
from .saving import save_new, save_path

__all__ = ["TOOLS"]

Paper = Literal["letter", "legal", "tabloid", "a3", "a4", "a5"]


class PdfFile(BaseModel):
    tab: int
    target: str
    path: str
    bytes: int
    pages: int | None = absent()

    def written(self) -> list[str]:
        """The PDF file (``WritesFiles``)."""
        return [self.path]


def _print_params(landscape: bool, paper: str | None, margins: float | None,
                  background: bool, pages: str | None) -> dict[str, Any]:
    """``Page.printToPDF`` parameters; Chrome's own defaults where nothing was asked."""
    params: dict[str, Any] = {"landscape": landscape, "printBackground": background}
    if paper is not None:
        params["paperWidth"], params["paperHeight"] = PAPER_INCHES[paper]
    if margins is not None:
        params.update(dict.fromkeys(("marginTop", "marginBottom", "marginLeft",
                                     "marginRight"), margins))
    if pages is not None:
        params["pageRanges"] = page_ranges(pages)
    return params


@tab_tool("Save a page as PDF", read_only=True)
async def pdf(
    on: TabCall,
    tab: TabArg,
    save_to: Annotated[str, Field(description="New file's absolute path.",
                                  min_length=1, max_length=4096)],
    landscape: bool = False,
    paper: Paper | None = None,
    margins: Annotated[float | None, Field(description="Inches, all four sides.",
                                           ge=0, le=4)] = None,
    background: Annotated[bool, Field(description="Print CSS backgrounds.")] = False,
    pages: Annotated[str | None, Field(description="Page ranges, e.g. '1-3,5'.",
                                       min_length=1, max_length=400)] = None,
    timeout_s: TimeoutArg = None,
) -> PdfFile:
    """Print a tab to a PDF file (headless Chrome); returns its path, size, pages."""
    params = _print_params(landscape, paper, margins, background, pages)
    path = await save_path(on.gateway, save_to)
    pages_seen: int | None = None

    async def write(file: Any) -> int:
        nonlocal pages_seen
        size, pages_seen = await print_pdf(on, file, params, on.budget)
        return size

    saved, size = await save_new(path, "pdf", ".pdf", write)
    return PdfFile(tab=on.tab.id, target=on.browser.name, path=str(saved), bytes=size,
                   pages=pages_seen)


TOOLS = (pdf,)
