"""``chrome-ssh-gateway live`` opening its link: the token stays off every command line."""

from __future__ import annotations

import sys
from pathlib import Path
from urllib.parse import urlparse

import pytest

from gateway.client import live

URL = "http://127.0.0.1:8123/live/#t=unspent-token-0123456789<"


def test_the_browser_gets_a_private_page_that_goes_on_to_the_link(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    opened: list[tuple[str, str, int]] = []

    def browser(url: str) -> bool:
        page = Path(urlparse(url).path)
        opened.append((url, page.read_text(), page.stat().st_mode & 0o777))
        return True

    monkeypatch.setattr(live, "live_link", lambda *_a, **_k: {"url": URL, "control": True})
    monkeypatch.setattr(live.webbrowser, "open", browser)
    monkeypatch.setattr(live, "REDIRECT_S", 0)
    monkeypatch.setenv("DISPLAY", ":0")
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert live.show_live_link(Path("/nonexistent"), 3) == 0
    [(argument, page, mode)] = opened
    assert "token" not in argument and argument.startswith("file:///")
    assert mode == 0o600
    assert 'content="0;url=http://127.0.0.1:8123/live/#t=unspent-token-0123456789&lt;"' in page
    assert 'location.replace("http://127.0.0.1:8123/live/#t=unspent-token-0123456789\\u003c")' \
        in page
    assert not Path(urlparse(argument).path).exists(), "the page is removed afterwards"
    assert "opened in your browser" in capsys.readouterr().err


def test_the_page_is_removed_when_the_browser_fails_too(monkeypatch: pytest.MonkeyPatch) -> None:
    pages: list[str] = []

    def broken(url: str) -> bool:
        pages.append(urlparse(url).path)
        raise OSError("no browser")

    monkeypatch.setattr(live.webbrowser, "open", broken)
    with pytest.raises(OSError), live.redirect_page(URL) as page:
        live.webbrowser.open(page)
    assert pages and not Path(pages[0]).exists()
