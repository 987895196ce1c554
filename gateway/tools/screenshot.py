"""Screenshots of a tab: viewport, full page, scaled down to save tokens."""

from __future__ import annotations

import base64
from typing import Annotated, Any, Literal

from mcp.types import CallToolResult, ContentBlock, ImageContent, TextContent
from pydantic import BaseModel, Field

from gateway.browsers.session import TabSession
from gateway.errors import InvalidArgument
from gateway.output.absent import absent
from gateway.output.files import write_private
from gateway.output.images import image_size
from gateway.page.act.actions import element_box
from gateway.page.emulation import overrides_sent
from gateway.page.js import script

from .args import TabArg, TimeoutArg
from .definition import TabCall, tab_tool
from .links import file_link
from .saving import save_path

__all__ = ["TOOLS"]

# Chrome cannot rasterise beyond this many pixels in one dimension.
MAX_CAPTURE_PX = 16_384


class ScreenshotInfo(BaseModel):
    tab: int
    target: str
    format: str
    width: int
    height: int
    bytes: int
    path: str | None = absent()
    clipped: bool = absent(False)


_VIEWPORT_JS = script("viewport.js")


async def _clip(session: TabSession, full_page: bool, ref: int | None,
                max_width: int | None) -> tuple[dict[str, Any] | None, bool]:
    """The capture region, or None for the plain viewport (one round trip, fastest).

    The viewport region is the window's inner size (scrollbar included), exactly
    what a capture without a clip shows. An element's region is its box, scrolled
    into view, in page coordinates.
    """
    if not full_page and max_width is None and ref is None:
        return None, False
    if ref is not None:
        left, top, width, height = await element_box(session, ref)
        found = await session.call("Runtime.evaluate", {"expression": _VIEWPORT_JS,
                                                        "returnByValue": True})
        page_x, page_y, _, _, dpr = found["result"]["value"]
        x, y = left + page_x, top + page_y
    elif full_page:
        metrics = await session.call("Page.getLayoutMetrics")
        css, device = metrics["cssVisualViewport"], metrics.get("visualViewport", {})
        dpr = device.get("clientWidth", css["clientWidth"]) / (css["clientWidth"] or 1) or 1.0
        content = metrics["cssContentSize"]
        x, y, width, height = 0.0, 0.0, content["width"], content["height"]
    else:
        found = await session.call("Runtime.evaluate", {"expression": _VIEWPORT_JS,
                                                        "returnByValue": True})
        x, y, width, height, dpr = found["result"]["value"]
    if width < 1 or height < 1:
        what = f"ref #{ref}" if ref is not None else "the page"
        raise InvalidArgument(f"{what} has no area to capture")
    clipped = height * dpr > MAX_CAPTURE_PX
    height = min(height, MAX_CAPTURE_PX / dpr)
    scale = min(1.0, max_width / (width * dpr)) if max_width else 1.0
    return {"x": x, "y": y, "width": width, "height": height, "scale": scale}, clipped


_METRICS = "Emulation.setDeviceMetricsOverride"


async def _capture(session: TabSession, params: dict[str, Any], full_page: bool,
                   timeout_s: float | None) -> dict[str, Any]:
    """Capture; for a full page, through a temporary window as tall as the page.

    ``captureBeyondViewport`` would be one call, but in Chrome 156 it leaves the
    page's scrollbar hidden afterwards — a read-only tool must not change the
    layout. Resizing the emulated window and clearing the override restores it.

    The tab is brought to the front first: Chrome paints only the active tab of
    a window, and a capture of any other waits for a frame that never comes
    (measured here: every tab but the first and the newest timed out).
    """
    tab = session.tab
    await session.call("Page.bringToFront")
    if not full_page:
        return await session.call("Page.captureScreenshot", params, timeout_s=timeout_s)
    clip = params["clip"]
    emulated = overrides_sent(tab).get(_METRICS)  # the emulate tool's viewport: kept, made taller
    await session.call(_METRICS, {
        **(emulated or {"width": 0, "deviceScaleFactor": 0, "mobile": False}),
        "height": int(clip["height"] + 0.5)})
    try:
        return await session.call("Page.captureScreenshot", params, timeout_s=timeout_s)
    finally:
        if emulated is not None:
            await session.call(_METRICS, emulated)
        else:
            await session.call("Emulation.clearDeviceMetricsOverride")


# A full page resizes the window for a moment: under a person's hand, refused.
@tab_tool("Take a screenshot", read_only=True,
          changes=lambda arguments: "tab" if arguments.get("full_page") else "nothing")
async def screenshot(
    on: TabCall,
    tab: TabArg,
    full_page: Annotated[bool, Field(description="Not just the viewport.")] = False,
    ref: Annotated[int | None, Field(description="Only this element (a view ref).",
                                         ge=1)] = None,
    format: Literal["png", "jpeg", "webp"] = "png",
    quality: Annotated[int | None, Field(description="jpeg/webp only.", ge=0,
                                         le=100)] = None,
    max_width: Annotated[int | None, Field(description="Scale down to this width.", ge=16,
                                           le=10_000)] = None,
    save_to: Annotated[str | None, Field(description="Also write it to this absolute path.",
                                         max_length=4096)] = None,
    inline: Annotated[bool, Field(description="false: only path and size.")] = True,
    timeout_s: TimeoutArg = None,
) -> Annotated[CallToolResult, ScreenshotInfo]:
    """Screenshot a tab as an image: far more tokens than browse_view (max_width and
    format="jpeg" keep it small).
    """
    path = await save_path(on.gateway, save_to)
    params: dict[str, Any] = {"format": format}
    if quality is not None and format != "png":
        params["quality"] = quality
    if ref is not None and full_page:
        raise InvalidArgument("pass either ref or full_page, not both")
    clip, clipped = await _clip(on, full_page, ref, max_width)
    if clip is not None:
        params["clip"] = clip
    shot = await _capture(on, params, full_page, on.budget)
    data = base64.b64decode(shot["data"])
    kind, width, height = image_size(data)
    if path is not None:
        write_private(path, data)
    info = ScreenshotInfo(tab=on.tab.id, target=on.browser.name, format=kind, width=width,
                          height=height, bytes=len(data),
                          path=str(path) if path is not None else None, clipped=clipped)
    content: list[ContentBlock] = [TextContent(text=info.model_dump_json())]
    if inline or path is None:
        content.insert(0, ImageContent(data=shot["data"], mime_type=f"image/{kind}"))
    if path is not None:
        content.append(file_link(path))
    return CallToolResult(content=content, structured_content=info.model_dump())


TOOLS = (screenshot,)
