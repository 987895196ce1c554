"""``pdf``'s pure parts (gateway.page.capture.printing, gateway.tools.pdf): the page ranges
Chrome is sent, the print parameters, and the page count read off a streamed PDF."""

from __future__ import annotations

import pytest

from gateway.errors import CaptureFailed, CdpError, InvalidArgument
from gateway.page.capture.printing import (
    MAX_RANGES,
    PAPER_INCHES,
    PageCounter,
    _refusal,
    page_ranges,
)
from gateway.tools.pdf import _print_params


@pytest.mark.parametrize(("given", "sent"), [
    ("1", "1"), ("1-3,5", "1-3,5"), (" 2 - 4 , 7 ", "2-4,7"), ("3-3", "3-3")])
def test_page_ranges_are_sent_as_chrome_reads_them(given: str, sent: str) -> None:
    assert page_ranges(given) == sent


@pytest.mark.parametrize("bad", [
    "", "0", "3-1", "1-", "-2", "a", "1,,2", "1;2", "1-2-3", "1.5", "99999999"])
def test_a_bad_page_range_is_refused_with_the_form_to_use(bad: str) -> None:
    with pytest.raises(InvalidArgument, match="pages"):
        page_ranges(bad)


def test_too_many_ranges_are_refused() -> None:
    page_ranges(",".join(["1"] * MAX_RANGES))
    with pytest.raises(InvalidArgument, match=f"at most {MAX_RANGES}"):
        page_ranges(",".join(["1"] * (MAX_RANGES + 1)))


def test_print_params_say_only_what_was_asked() -> None:
    assert _print_params(False, None, None, False, None) == {
        "landscape": False, "printBackground": False}
    params = _print_params(True, "a4", 0.5, True, "2-3")
    assert params == {"landscape": True, "printBackground": True,
                      "paperWidth": PAPER_INCHES["a4"][0], "paperHeight": PAPER_INCHES["a4"][1],
                      "marginTop": 0.5, "marginBottom": 0.5, "marginLeft": 0.5,
                      "marginRight": 0.5, "pageRanges": "2-3"}


PDF = (b"%PDF-1.4\n1 0 obj\n<</Type /Catalog /Pages 2 0 R>>\nendobj\n"
       b"2 0 obj\n<</Type /Pages /Count 3 /Kids [3 0 R 4 0 R 5 0 R]>>\nendobj\n"
       b"3 0 obj\n<</Type /Page /Parent 2 0 R>>\nendobj\n"
       b"4 0 obj\n<</Type/Page/Parent 2 0 R>>\nendobj\n"
       b"5 0 obj\n<</Type /Page\n/Parent 2 0 R>>\nendobj\n%%EOF\n")


@pytest.mark.parametrize("piece", [1, 3, 7, 11, len(PDF)])
def test_pages_are_counted_however_the_stream_is_cut(piece: int) -> None:
    counter = PageCounter()
    for at in range(0, len(PDF), piece):
        counter.feed(PDF[at:at + piece])
    assert counter.pages == 3  # not /Pages, each /Page once


def test_a_pdf_that_hides_its_pages_counts_none() -> None:
    counter = PageCounter()
    counter.feed(b"%PDF-1.7\n1 0 obj\n<</Type /ObjStm /Filter /FlateDecode>>\nstream\nx\n")
    assert counter.pages == 0


def test_chrome_with_a_window_is_told_apart() -> None:
    """Headful Chrome's answer (as puppeteer, Playwright and chromedp users report it)."""
    error = _refusal(CdpError("Page.printToPDF", -32000, "PrintToPDF is not implemented"), {})
    assert isinstance(error, CaptureFailed) and "headless" in str(error)
    past = _refusal(CdpError("Page.printToPDF", -32000, "Page range exceeds page count"),
                    {"pageRanges": "500"})
    assert isinstance(past, InvalidArgument) and "'500'" in str(past)
    other = _refusal(CdpError("Page.printToPDF", -32000, "Printing failed"), {})
    assert isinstance(other, CaptureFailed) and "Printing failed" in str(other)
