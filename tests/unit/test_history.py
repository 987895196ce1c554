"""Which history entry a step goes to, and the error at either end (``gateway.page.history``)."""

from __future__ import annotations

import pytest

from gateway.errors import NavigationError
from gateway.page.history import history_entry

# A Page.getNavigationHistory answer: about:blank, then two pages; the middle one shown.
HISTORY = {"currentIndex": 1, "entries": [
    {"id": 7, "url": "about:blank"}, {"id": 9, "url": "http://a/1"},
    {"id": 12, "url": "http://a/2"}]}


def test_back_and_forward_are_the_neighbouring_entries() -> None:
    assert history_entry(HISTORY, "back") == 7
    assert history_entry(HISTORY, "forward") == 12


def test_back_at_the_first_entry_says_so_and_what_to_do() -> None:
    with pytest.raises(NavigationError, match=r"already at the first page.*navigate to a URL"):
        history_entry({**HISTORY, "currentIndex": 0}, "back")


def test_forward_at_the_last_entry_says_so_and_what_to_do() -> None:
    with pytest.raises(NavigationError, match=r"already at the last page.*history='back'"):
        history_entry({**HISTORY, "currentIndex": 2}, "forward")


def test_an_empty_history_has_no_step_either_way() -> None:
    for step in ("back", "forward"):
        with pytest.raises(NavigationError):
            history_entry({"currentIndex": 0, "entries": []}, step)  # type: ignore[arg-type]
