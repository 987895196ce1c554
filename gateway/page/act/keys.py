"""Key chords (``Control+A``, ``Shift+Tab``, ``Enter``) → CDP key events.

Pure. Real key events (``Input.dispatchKeyEvent``) rather than synthetic DOM
events, so pages that check ``isTrusted`` or listen for ``keydown`` behave as
they do for a person. Layout is US, as in Puppeteer and Playwright.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gateway.errors import InvalidArgument

__all__ = ["MODIFIERS", "Key", "chord_events", "parse_chord"]

# CDP modifier bits, and the key each modifier is itself.
MODIFIERS: dict[str, tuple[int, str, str, int]] = {
    "alt": (1, "Alt", "AltLeft", 18),
    "control": (2, "Control", "ControlLeft", 17),
    "meta": (4, "Meta", "MetaLeft", 91),
    "shift": (8, "Shift", "ShiftLeft", 16),
}
_MODIFIER_ALIASES = {"ctrl": "control", "cmd": "meta", "command": "meta", "option": "alt",
                     "super": "meta", "win": "meta"}


@dataclass(frozen=True)
class Key:
    key: str          # KeyboardEvent.key
    code: str         # KeyboardEvent.code
    key_code: int     # windowsVirtualKeyCode
    text: str = ""    # what typing it inserts ("" for non-printing keys)


_NAMED: dict[str, Key] = {k.key.lower(): k for k in (
    Key("Enter", "Enter", 13, "\r"), Key("Tab", "Tab", 9), Key("Backspace", "Backspace", 8),
    Key("Delete", "Delete", 46), Key("Escape", "Escape", 27), Key("Insert", "Insert", 45),
    Key("ArrowUp", "ArrowUp", 38), Key("ArrowDown", "ArrowDown", 40),
    Key("ArrowLeft", "ArrowLeft", 37), Key("ArrowRight", "ArrowRight", 39),
    Key("Home", "Home", 36), Key("End", "End", 35), Key("PageUp", "PageUp", 33),
    Key("PageDown", "PageDown", 34), Key(" ", "Space", 32, " "),
    *(Key(f"F{n}", f"F{n}", 111 + n) for n in range(1, 13)),
)}
_NAMED.update({"space": _NAMED[" "], "esc": _NAMED["escape"], "return": _NAMED["enter"],
               "up": _NAMED["arrowup"], "down": _NAMED["arrowdown"],
               "left": _NAMED["arrowleft"], "right": _NAMED["arrowright"],
               "del": _NAMED["delete"], "pgup": _NAMED["pageup"], "pgdn": _NAMED["pagedown"]})

# Printable ASCII punctuation: key → (code, keyCode, shifted key).
_PUNCTUATION: dict[str, tuple[str, int, str]] = {
    "-": ("Minus", 189, "_"), "=": ("Equal", 187, "+"), "[": ("BracketLeft", 219, "{"),
    "]": ("BracketRight", 221, "}"), "\\": ("Backslash", 220, "|"),
    ";": ("Semicolon", 186, ":"), "'": ("Quote", 222, '"'), ",": ("Comma", 188, "<"),
    ".": ("Period", 190, ">"), "/": ("Slash", 191, "?"), "`": ("Backquote", 192, "~"),
}
_DIGIT_SHIFTED = ")!@#$%^&*("


def _single(name: str, shift: bool) -> Key:
    named = _NAMED.get(name.lower())
    if named is not None:
        return named
    if len(name) != 1:
        raise InvalidArgument(f"unknown key {name!r}; use a character or a key name such as "
                              "Enter, Tab, Escape, Backspace, ArrowDown, PageUp, F5")
    if name.isascii() and name.isalpha():
        upper = name.upper()
        text = upper if shift else name.lower()
        return Key(text, f"Key{upper}", ord(upper), text)
    if name.isdigit() and name.isascii():
        text = _DIGIT_SHIFTED[int(name)] if shift else name
        return Key(text, f"Digit{name}", ord(name), text)
    if name in _PUNCTUATION:
        code, key_code, shifted = _PUNCTUATION[name]
        text = shifted if shift else name
        return Key(text, code, key_code, text)
    return Key(name, "", 0, name)  # any other character: typed as text


def parse_chord(chord: str) -> tuple[int, Key]:
    """``"Control+Shift+K"`` → (modifier bits, key). ``"+"`` alone is the plus key."""
    if not chord or len(chord) > 64:
        raise InvalidArgument("key must be 1-64 characters, e.g. Enter or Control+A")
    parts = [chord] if chord == "+" else chord.split("+")
    if chord.endswith("++"):
        parts = [*chord[:-2].split("+"), "+"]
    *mods, last = parts
    bits = 0
    for mod in mods:
        name = _MODIFIER_ALIASES.get(mod.lower(), mod.lower())
        if name not in MODIFIERS:
            raise InvalidArgument(f"unknown modifier {mod!r} in {chord!r}; use Control, Shift, "
                                  "Alt or Meta")
        bits |= MODIFIERS[name][0]
    if not last:
        raise InvalidArgument(f"key chord {chord!r} names no key")
    name = _MODIFIER_ALIASES.get(last.lower(), last.lower())
    if name in MODIFIERS:  # a modifier pressed on its own
        _, key, code, key_code = MODIFIERS[name]
        return bits, Key(key, code, key_code)
    return bits, _single(last, shift=bool(bits & 8))


def chord_events(bits: int, key: Key) -> list[dict[str, Any]]:
    """``Input.dispatchKeyEvent`` params: modifiers down, key down/up, modifiers up."""
    events: list[dict[str, Any]] = []
    held = 0
    pressed = [m for m in MODIFIERS.values() if bits & m[0]]
    for bit, name, code, key_code in pressed:
        held |= bit
        events.append({"type": "rawKeyDown", "modifiers": held, "key": name, "code": code,
                       "windowsVirtualKeyCode": key_code})
    # With Control/Alt/Meta held a key is a shortcut, not typing: send no text.
    text = key.text if not bits & (1 | 2 | 4) else ""
    down: dict[str, Any] = {"type": "keyDown" if text else "rawKeyDown", "modifiers": bits,
                            "key": key.key, "code": key.code,
                            "windowsVirtualKeyCode": key.key_code}
    if text:
        down["text"] = down["unmodifiedText"] = text
    events.append(down)
    events.append({"type": "keyUp", "modifiers": bits, "key": key.key, "code": key.code,
                   "windowsVirtualKeyCode": key.key_code})
    for bit, name, code, key_code in reversed(pressed):
        held &= ~bit
        events.append({"type": "keyUp", "modifiers": held, "key": name, "code": code,
                       "windowsVirtualKeyCode": key_code})
    return events
