"""A person's input on a live view → the CDP input command for the tab.

Pure. The live page never speaks CDP: it sends one of a fixed set of input events
(``ViewerInput``), each field bounded, and this module turns one into exactly one
``Input.*`` command (or, for the answer to a JavaScript dialog, which frames do not
show, ``Page.handleJavaScriptDialog``). Anything else is refused before it reaches a
browser.

Coordinates arrive in the pixels of the frame image the person clicked on (``x``,
``y``, with the image's width ``w``). A frame shows the tab's visual viewport,
``deviceWidth`` by ``deviceHeight`` device-independent pixels scaled to fit the
screencast's bounds (``zoom = w / deviceWidth``), below ``offsetTop`` pixels of browser
chrome (mobile emulation's top bar; 0 on a desktop tab), magnified by
``pageScaleFactor`` (a pinch zoom). Input events take CSS pixels of the layout
viewport (measured: with a page scale of 2, ``x: 400`` arrives as ``clientX`` 400,
where the frame shows it at 800), so the point is ``(x / zoom) / pageScaleFactor``,
``(y / zoom - offsetTop) / pageScaleFactor`` — what DevTools' own screencast view
does. (A pinch-zoomed view panned away from the layout viewport's corner would be off
by that pan, which no frame metadata says.)
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from gateway.errors import InvalidArgument

__all__ = ["DialogAnswer", "Event", "KeyPress", "Mouse", "Text", "ViewerInput", "Wheel",
           "input_command", "parse_input"]

MAX_PIXELS = 100_000
"""The largest coordinate, size or offset taken from a page or a frame's metadata."""
MIN_SCALE = 0.01
"""A pinch zoom's bounds (``pageScaleFactor``, 1/100 to 100; Chrome keeps to 1/4 to 5)."""
Pixel = Annotated[float, Field(ge=0, le=MAX_PIXELS)]
Modifiers = Annotated[int, Field(ge=0, le=15)]  # Alt 1, Control 2, Meta 4, Shift 8


class _Event(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


class _Pointed(_Event):
    x: Pixel
    y: Pixel
    w: Annotated[float, Field(ge=1, le=MAX_PIXELS)]  # the image's width: a pixel at least
    modifiers: Modifiers = 0


class Mouse(_Pointed):
    kind: Literal["mouse"]
    type: Literal["mousePressed", "mouseReleased", "mouseMoved"]
    button: Literal["none", "left", "middle", "right"] = "none"
    clickCount: Annotated[int, Field(ge=0, le=3)] = 0


class Wheel(_Pointed):
    kind: Literal["wheel"]
    dx: Annotated[float, Field(ge=-10_000, le=10_000)] = 0
    dy: Annotated[float, Field(ge=-10_000, le=10_000)] = 0


class KeyPress(_Event):
    kind: Literal["key"]
    type: Literal["keyDown", "keyUp"]
    key: Annotated[str, Field(min_length=1, max_length=32)]
    code: Annotated[str, Field(max_length=32)] = ""
    keyCode: Annotated[int, Field(ge=0, le=255)] = 0
    text: Annotated[str, Field(max_length=4)] = ""
    modifiers: Modifiers = 0


class Text(_Event):
    kind: Literal["text"]
    text: Annotated[str, Field(min_length=1, max_length=10_000)]


class DialogAnswer(_Event):
    """OK or Cancel on the page's alert/confirm/prompt, which no frame shows."""

    kind: Literal["dialog"]
    accept: bool
    text: Annotated[str, Field(max_length=10_000)] = ""


Event = Mouse | Wheel | KeyPress | Text | DialogAnswer
ViewerInput = Annotated[Event, Field(discriminator="kind")]
_ADAPTER: TypeAdapter[Event] = TypeAdapter(ViewerInput)


def parse_input(raw: str | bytes) -> Event:
    """One input event from a live page's JSON; ``InvalidArgument`` for anything else."""
    try:
        return _ADAPTER.validate_json(raw)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"]) or "event"
        raise InvalidArgument(f"not an input event the live view accepts: {where}: "
                              f"{first['msg'][:200]}") from None


def input_command(event: Event, metadata: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The CDP command (method, params) for ``event`` on a tab whose last frame carried
    ``metadata``; ``InvalidArgument`` for a pointer event before any frame."""
    if isinstance(event, Text):
        return "Input.insertText", {"text": event.text}
    if isinstance(event, DialogAnswer):
        answer: dict[str, Any] = {"accept": event.accept}
        if event.text:
            answer["promptText"] = event.text
        return "Page.handleJavaScriptDialog", answer
    if isinstance(event, KeyPress):
        params: dict[str, Any] = {
            "type": "keyUp" if event.type == "keyUp" else
                    "keyDown" if event.text else "rawKeyDown",
            "key": event.key, "code": event.code, "windowsVirtualKeyCode": event.keyCode,
            "modifiers": event.modifiers}
        if event.text and event.type == "keyDown":
            params["text"] = params["unmodifiedText"] = event.text
        return "Input.dispatchKeyEvent", params
    x, y = viewport_point(event, metadata)
    if isinstance(event, Wheel):
        return "Input.dispatchMouseEvent", {"type": "mouseWheel", "x": x, "y": y,
                                            "deltaX": event.dx, "deltaY": event.dy,
                                            "modifiers": event.modifiers}
    return "Input.dispatchMouseEvent", {"type": event.type, "x": x, "y": y,
                                        "button": event.button,
                                        "clickCount": event.clickCount,
                                        "modifiers": event.modifiers}


def viewport_point(event: Mouse | Wheel, metadata: dict[str, Any]) -> tuple[float, float]:
    """Where in the tab's viewport (CSS pixels) the person pointed on the frame image,
    always inside the viewport: metadata that is missing, not finite or absurd (a frame
    from a hostile or broken page process) refuses the event rather than sending Chrome
    a point a million screens away."""
    width = _number(metadata, "deviceWidth", 0)
    height = _number(metadata, "deviceHeight", 0)
    if width < 1 or height < 1:
        raise InvalidArgument("no frame shown yet: point at the page once it appears")
    zoom = event.w / width
    scale = min(max(_number(metadata, "pageScaleFactor", 1) or 1, MIN_SCALE), 1 / MIN_SCALE)
    top = _number(metadata, "offsetTop", 0)
    x = min(max(event.x / zoom, 0), width) / scale
    y = min(max(event.y / zoom - top, 0), height) / scale
    return round(x, 2), round(y, 2)


def _number(metadata: dict[str, Any], key: str, default: float) -> float:
    """``metadata[key]`` if it is a finite number from 0 to ``MAX_PIXELS``, else ``default``."""
    value = metadata.get(key)
    if isinstance(value, int | float) and not isinstance(value, bool) \
            and math.isfinite(value) and 0 <= value <= MAX_PIXELS:
        return float(value)
    return default
