"""A tab printed to PDF, streamed back into a file.

``Page.printToPDF`` with ``transferMode: ReturnAsStream`` makes Chrome keep the PDF on
its side and hand over a stream handle, read back in pieces
(``gateway.page.io_stream``) straight into the file: a long page's PDF (tens of MB
of images) is never held whole, nor base64'd into one CDP message. Bounded by
``MAX_PDF_MB`` (or the target's ``max_capture_mb``, if lower).

Chrome prints only in headless mode: a browser with a window answers an error, said
here as what to change. The page count is read off the bytes as they pass (Chrome's
PDF writer puts each page in an object of ``/Type /Page``); when it cannot be seen
(compressed object streams) it is left unknown rather than guessed.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, BinaryIO

from gateway.errors import CaptureFailed, CdpError, InvalidArgument
from gateway.page.io_stream import read_stream

if TYPE_CHECKING:
    from gateway.browsers.session import TabSession

__all__ = ["MAX_PDF_MB", "PAPER_INCHES", "PageCounter", "page_ranges", "print_pdf"]

MAX_PDF_MB = 256
PAPER_INCHES = {
    "letter": (8.5, 11.0), "legal": (8.5, 14.0), "tabloid": (11.0, 17.0),
    "a3": (11.69, 16.54), "a4": (8.27, 11.69), "a5": (5.83, 8.27),
}
"""Named paper sizes → (width, height) in inches, as ``Page.printToPDF`` takes them."""
MAX_RANGES = 100

_RANGE = re.compile(r"\s*(\d{1,6})\s*(?:-\s*(\d{1,6})\s*)?")
_PAGE = re.compile(rb"/Type\s*/Page(?![A-Za-z])")
_TAIL = 16  # bytes kept between pieces: a "/Type /Page" split across two is still seen


def page_ranges(pages: str) -> str:
    """``pages`` as Chrome's ``pageRanges`` ("1-3,5"), or ``InvalidArgument``: page
    numbers from 1, each range first-to-last, at most ``MAX_RANGES`` of them."""
    ranges = pages.split(",")
    if len(ranges) > MAX_RANGES:
        raise InvalidArgument(f"pages has {len(ranges)} ranges; at most {MAX_RANGES}")
    out = []
    for part in ranges:
        found = _RANGE.fullmatch(part)
        if found is None:
            raise InvalidArgument(f"pages {pages[:100]!r}: {part.strip()[:40]!r} is not a page "
                                  "or a range; write them like '1-3,5' (pages count from 1)")
        first, last = int(found[1]), int(found[2] or found[1])
        if first < 1 or last < first:
            raise InvalidArgument(f"pages {pages[:100]!r}: {part.strip()!r} is not a range "
                                  "of pages (they count from 1, first to last)")
        out.append(f"{first}-{last}" if found[2] else str(first))
    return ",".join(out)


class PageCounter:
    """Counts ``/Type /Page`` objects in a PDF fed in pieces."""

    def __init__(self) -> None:
        self.pages = 0
        self._tail = b""

    def feed(self, data: bytes) -> None:
        text = self._tail + data
        # A match counts once the byte after it is seen (so "/Pages" cut after "/Page"
        # is not one): those ending before the kept tail's last byte counted already.
        self.pages += sum(1 for m in _PAGE.finditer(text)
                          if len(self._tail) <= m.end() < len(text))
        self._tail = text[-_TAIL:]


async def print_pdf(session: TabSession, file: BinaryIO, params: dict[str, Any],
                    budget: float) -> tuple[int, int | None]:
    """Print the tab with ``Page.printToPDF`` ``params`` into ``file``: (bytes, pages —
    None when the PDF does not show them)."""
    try:
        printed = await session.call("Page.printToPDF", {
            **params, "transferMode": "ReturnAsStream"}, timeout_s=budget)
    except CdpError as exc:
        raise _refusal(exc, params) from None
    handle = printed.get("stream")
    if not handle:
        raise CaptureFailed("Chrome printed the page without a stream to read; retry")
    counter = PageCounter()

    def take(data: bytes) -> None:
        file.write(data)
        counter.feed(data)

    max_bytes = min(MAX_PDF_MB, session.browser.config.max_capture_mb) << 20
    size = await read_stream(session, handle, take, what="PDF", budget=budget,
                             max_bytes=max_bytes,
                             too_large=f"the PDF is larger than {max_bytes >> 20} MB (the lower "
                             f"of {MAX_PDF_MB} MB and max_capture_mb, a target setting); print "
                             "fewer pages (pages) or without backgrounds")
    return size, counter.pages or None


def _refusal(exc: CdpError, params: dict[str, Any]) -> Exception:
    """Chrome's refusal to print, said as what to do."""
    message = exc.message
    if "range" in message.lower() and params.get("pageRanges"):
        return InvalidArgument(f"pages {params['pageRanges']!r}: Chrome says {message!r} "
                               "(a page past the end of this document?); pass pages within it, "
                               "or leave pages out for all")
    if "not implemented" in message.lower() or "not available" in message.lower():
        return CaptureFailed(f"Chrome prints to PDF only in headless mode, and this target's "
                             f"Chrome has a window (Chrome says {message!r}); use a headless "
                             "target (headless = true, the default, in its [targets.NAME] "
                             "table), or take a screenshot instead")
    return CaptureFailed(f"Chrome could not print the page ({message}); retry, or take a "
                         "screenshot instead")
