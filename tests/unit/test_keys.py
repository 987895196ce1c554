"""Key chord parsing and the CDP key events it produces."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.errors import InvalidArgument
from gateway.page.act.keys import chord_events, parse_chord


def test_plain_enter_types_a_carriage_return() -> None:
    bits, key = parse_chord("Enter")
    events = chord_events(bits, key)
    assert [e["type"] for e in events] == ["keyDown", "keyUp"]
    assert events[0]["text"] == "\r" and events[0]["windowsVirtualKeyCode"] == 13


def test_control_a_is_a_shortcut_without_text() -> None:
    bits, key = parse_chord("Control+A")
    assert bits == 2
    events = chord_events(bits, key)
    assert [(e["type"], e["key"]) for e in events] == [
        ("rawKeyDown", "Control"), ("rawKeyDown", "a"), ("keyUp", "a"), ("keyUp", "Control")]
    assert all("text" not in e for e in events)
    assert events[1]["modifiers"] == 2 and events[1]["code"] == "KeyA"
    assert events[-1]["modifiers"] == 0


def test_shift_tab_and_shifted_characters() -> None:
    bits, key = parse_chord("Shift+Tab")
    assert bits == 8 and key.key == "Tab" and key.text == ""
    bits, key = parse_chord("Shift+a")
    assert key.key == "A" and key.text == "A"
    bits, key = parse_chord("Shift+1")
    assert key.text == "!" and key.code == "Digit1"


@pytest.mark.parametrize(("chord", "bits", "key"), [
    ("ctrl+shift+k", 2 | 8, "K"), ("Cmd+Enter", 4, "Enter"), ("Alt+ArrowDown", 1, "ArrowDown"),
    ("Meta", 0, "Meta"), ("+", 0, "+"), ("Control++", 2, "+"), ("F5", 0, "F5"),
    ("Space", 0, " "), ("PageDown", 0, "PageDown"),
])
def test_chords(chord: str, bits: int, key: str) -> None:
    got_bits, got_key = parse_chord(chord)
    assert (got_bits, got_key.key) == (bits, key)


@pytest.mark.parametrize(("chord", "says"), [
    ("", "1-64"), ("Hyper+A", "unknown modifier"), ("Control+", "names no key"),
    ("NotAKey", "unknown key"), ("x" * 65, "1-64"),
])
def test_bad_chords_say_why(chord: str, says: str) -> None:
    with pytest.raises(InvalidArgument, match=says):
        parse_chord(chord)


@given(st.text(max_size=70))
def test_any_text_parses_or_is_refused_cleanly(text: str) -> None:
    try:
        bits, key = parse_chord(text)
    except InvalidArgument:
        return
    events = chord_events(bits, key)
    assert events[-1]["modifiers"] == 0 or not bits
    downs = sum(e["type"] != "keyUp" for e in events)
    assert downs == sum(e["type"] == "keyUp" for e in events)
