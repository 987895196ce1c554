"""``screenshot``: real images of remote tabs, of the right size, saved only where allowed.

Sizes are read from the image headers (PNG IHDR, JPEG SOF, WEBP VP8/VP8L/VP8X) and
compared with what the page itself reports (``innerWidth``/``innerHeight`` times
``devicePixelRatio``; the tall page's ``scrollHeight``).

Element screenshots (``ref=`` from the page view of issue 3) are not covered here:
the page view and its refs do not exist yet, so no ref can be obtained.
"""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from tests.e2e.helpers import (
    ERROR_BOUND,
    call_err,
    call_ok,
    data_url,
    open_gateway,
    wait_for_targets,
)
from tests.e2e.page_server import TALL_HEIGHT
from tests.e2e.pages import (
    DevtoolsEnv,
    devtools_gateway,
    file_mode,
    image_of,
    image_size,
    open_page,
    raw_call,
)
from tests.topology import Topology

pytestmark = pytest.mark.anyio

MAGIC = {"png": b"\x89PNG\r\n\x1a\n", "jpeg": b"\xff\xd8\xff", "webp": b"RIFF"}


@pytest.fixture(scope="module")
async def env(
    topology: Topology, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[DevtoolsEnv]:
    async with devtools_gateway(topology, tmp_path_factory.mktemp("devtools-screenshot"),
                                hosts=("h1",)) as e:
        yield e


@pytest.fixture(scope="module")
async def tall(env: DevtoolsEnv) -> AsyncIterator[int]:
    tab = await open_page(env.client, env.site("h1"), "/tall.html", "h1")
    yield tab
    await call_ok(env.client, "close_tab", {"tab": tab})


@pytest.fixture
def outside() -> Iterator[Path]:
    """A directory outside every allowed one (not under the temp dir), removed afterwards."""
    path = Path("/var/tmp") / f"csgw-outside-{uuid.uuid4().hex}"
    assert not path.resolve().is_relative_to(Path(tempfile.gettempdir()).resolve())
    path.mkdir(mode=0o700)
    try:
        yield path
    finally:
        for child in path.iterdir():
            child.unlink()
        path.rmdir()


async def shot(client: Client, tab: int, **args: Any) -> tuple[dict[str, Any], bytes, str]:
    """(structured fields, decoded image, mime type) of a screenshot."""
    result, text = await raw_call(client, "screenshot", {"tab": tab, **args})
    assert not result.is_error, f"screenshot({args}) failed: {text[:500]}"
    info = result.structured_content
    assert isinstance(info, dict), f"screenshot returned no structured fields: {text[:500]}"
    data, mime = image_of(result)
    return info, data, mime


async def page_px(client: Client, tab: int) -> dict[str, float]:
    result = await call_ok(client, "evaluate", {"tab": tab, "expression": (
        "({w: innerWidth, h: innerHeight, dpr: devicePixelRatio,"
        " cw: document.documentElement.clientWidth,"
        " sw: document.documentElement.scrollWidth,"
        " sh: document.documentElement.scrollHeight})")})
    return dict(result["value"])


def assert_fields(info: dict[str, Any], data: bytes, width: int, height: int) -> None:
    assert (info["width"], info["height"]) == (width, height), info
    assert info["bytes"] == len(data), info


# ----------------------------------------------------------------------------- sizes


async def test_viewport_png_is_the_viewport(env: DevtoolsEnv, tall: int) -> None:
    info, data, mime = await shot(env.client, tall)
    px = await page_px(env.client, tall)

    assert mime == "image/png" and data.startswith(MAGIC["png"])
    width, height = round(px["w"] * px["dpr"]), round(px["h"] * px["dpr"])
    assert image_size(data) == ("png", width, height)
    assert_fields(info, data, width, height)
    assert not info.get("path"), "nothing is saved unless asked"


@pytest.mark.parametrize("fmt", ["jpeg", "webp"])
async def test_other_formats(env: DevtoolsEnv, tall: int, fmt: str) -> None:
    info, data, mime = await shot(env.client, tall, format=fmt)
    px = await page_px(env.client, tall)

    assert mime == f"image/{fmt}" and data.startswith(MAGIC[fmt])
    width, height = round(px["w"] * px["dpr"]), round(px["h"] * px["dpr"])
    assert image_size(data) == (fmt, width, height)
    assert_fields(info, data, width, height)


async def test_jpeg_quality_changes_the_size(env: DevtoolsEnv, tall: int) -> None:
    _, low, _ = await shot(env.client, tall, format="jpeg", quality=5)
    _, high, _ = await shot(env.client, tall, format="jpeg", quality=95)
    assert image_size(low)[1:] == image_size(high)[1:]
    assert len(low) < len(high)


async def test_full_page_is_taller_than_the_viewport(env: DevtoolsEnv, tall: int) -> None:
    px = await page_px(env.client, tall)
    info, data, _ = await shot(env.client, tall, full_page=True)

    fmt, width, height = image_size(data)
    assert fmt == "png"
    assert px["sh"] == TALL_HEIGHT
    assert height == round(TALL_HEIGHT * px["dpr"]) > round(px["h"] * px["dpr"])
    assert width in (round(px["sw"] * px["dpr"]), round(px["w"] * px["dpr"])), (width, px)
    assert_fields(info, data, width, height)


async def test_full_page_leaves_the_layout_as_it_was(env: DevtoolsEnv) -> None:
    """A screenshot is read-only: the page's viewport and layout width stay the same
    (a full-page capture must not, e.g., leave the page without its scrollbar)."""
    tab = await open_page(env.client, env.site("h1"), "/tall.html", "h1")
    try:
        before = await page_px(env.client, tab)
        await shot(env.client, tab, full_page=True)
        after = await page_px(env.client, tab)
        assert after == before
    finally:
        await call_ok(env.client, "close_tab", {"tab": tab})


async def test_max_width_scales_down(env: DevtoolsEnv, tall: int) -> None:
    px = await page_px(env.client, tall)
    full_w, full_h = round(px["w"] * px["dpr"]), round(px["h"] * px["dpr"])
    target = 300
    assert full_w > target

    info, data, _ = await shot(env.client, tall, max_width=target)

    _, width, height = image_size(data)
    assert width == target
    assert abs(height - full_h * target / full_w) <= 1, (width, height, full_w, full_h)
    assert_fields(info, data, width, height)


async def test_max_width_wider_than_the_page_does_not_scale_up(
    env: DevtoolsEnv, tall: int
) -> None:
    px = await page_px(env.client, tall)
    _, data, _ = await shot(env.client, tall, max_width=5000)
    assert image_size(data)[1:] == (round(px["w"] * px["dpr"]), round(px["h"] * px["dpr"]))


async def test_full_page_scaled(env: DevtoolsEnv, tall: int) -> None:
    _, whole, _ = await shot(env.client, tall, full_page=True)
    _, full_w, full_h = image_size(whole)

    _, data, _ = await shot(env.client, tall, full_page=True, max_width=200, format="jpeg")

    fmt, width, height = image_size(data)
    assert (fmt, width) == ("jpeg", 200)
    assert abs(height - full_h * 200 / full_w) <= 1, (width, height, full_w, full_h)


async def test_an_unknown_tab_is_refused(env: DevtoolsEnv) -> None:
    error = await call_err(env.client, "screenshot", {"tab": 999_999}, timeout=ERROR_BOUND)
    assert "999999" in error


# ------------------------------------------------------------------------- save_to


async def test_save_to_in_the_temp_dir(env: DevtoolsEnv, tall: int, tmp_path: Path) -> None:
    path = tmp_path / "shot.png"
    info, data, _ = await shot(env.client, tall, save_to=str(path))

    assert path.read_bytes() == data
    assert file_mode(path) == 0o600
    assert info["path"] == str(path.resolve())
    assert info["bytes"] == path.stat().st_size


async def test_save_to_never_replaces_a_file(
    env: DevtoolsEnv, tall: int, tmp_path: Path
) -> None:
    """screenshot is offered as read-only (clients run it without asking): it must not be
    able to overwrite a file, a project's or its own earlier one."""
    path = tmp_path / "again.jpeg"
    path.write_bytes(b"old")
    os.chmod(path, 0o644)
    error = await call_err(env.client, "screenshot", {"tab": tall, "format": "jpeg",
                                                      "save_to": str(path)}, timeout=ERROR_BOUND)
    assert "exists already; the gateway never replaces a file — name a new one" in error
    assert path.read_bytes() == b"old" and file_mode(path) == 0o644


@pytest.mark.parametrize("where", ["/etc", "/root"])
async def test_save_to_outside_allowed_dirs_is_refused(
    env: DevtoolsEnv, tall: int, where: str
) -> None:
    path = Path(where) / f"csgw-{uuid.uuid4().hex}.png"
    try:
        error = await call_err(env.client, "screenshot", {"tab": tall, "save_to": str(path)},
                               timeout=ERROR_BOUND)
        assert str(Path(tempfile.gettempdir()).resolve()) in error, (
            f"a refused path names the allowed directories: {error}")
        assert not path.exists()
    finally:
        if path.exists():
            path.unlink()


async def test_save_to_a_plain_outside_dir_is_refused(
    env: DevtoolsEnv, tall: int, outside: Path
) -> None:
    path = outside / "shot.png"
    error = await call_err(env.client, "screenshot", {"tab": tall, "save_to": str(path)},
                           timeout=ERROR_BOUND)
    assert "allowed" in error.lower() and "/tmp" in error
    assert not path.exists()


async def test_a_symlinked_dir_out_of_temp_is_refused(
    env: DevtoolsEnv, tall: int, tmp_path: Path, outside: Path
) -> None:
    link = tmp_path / "escape"
    link.symlink_to(outside, target_is_directory=True)

    error = await call_err(env.client, "screenshot",
                           {"tab": tall, "save_to": str(link / "shot.png")}, timeout=ERROR_BOUND)

    assert "/tmp" in error
    assert list(outside.iterdir()) == [], "nothing was written through the link"


async def test_a_symlinked_file_out_of_temp_is_refused(
    env: DevtoolsEnv, tall: int, tmp_path: Path, outside: Path
) -> None:
    victim = outside / "victim.txt"
    victim.write_text("untouched")
    link = tmp_path / "shot.png"
    link.symlink_to(victim)

    await call_err(env.client, "screenshot", {"tab": tall, "save_to": str(link)},
                   timeout=ERROR_BOUND)

    assert victim.read_text() == "untouched"
    assert link.is_symlink()


async def test_a_relative_path_is_refused(env: DevtoolsEnv, tall: int) -> None:
    name = f"csgw-relative-{uuid.uuid4().hex}.png"
    await call_err(env.client, "screenshot", {"tab": tall, "save_to": name},
                   timeout=ERROR_BOUND)
    assert not Path(name).exists()


async def test_background_tabs_can_be_captured(topology: Topology) -> None:
    """Chrome paints only the active tab: without bringing a tab to the front first, a
    capture of any tab but the newest waited for a frame that never came (30 s)."""
    env = topology.client_env() | {"SSH_PROXY_TO": "h1"}
    async with open_gateway(env) as gw:
        await wait_for_targets(gw, {"default": "up"})
        tabs = [(await call_ok(gw, "navigate", {"url": data_url(f"bg{i}")}))["tab"]
                for i in range(4)]
        for tab in tabs:  # oldest first: all but the last are background tabs
            info = await call_ok(gw, "screenshot", {"tab": tab, "timeout_s": 10,
                                                    "inline": False, "max_width": 100})
            assert info["width"] == 100 and info["tab"] == tab
        for tab in tabs:
            await call_ok(gw, "close_tab", {"tab": tab})
