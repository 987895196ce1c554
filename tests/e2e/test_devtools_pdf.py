"""``pdf``: a remote tab printed by h1's real (headless) Chromium, streamed back into a
new 0600 file where ``save_to`` may write, with a resource link beside the result."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from mcp.types import ResourceLink

from tests.e2e.helpers import call_err, call_ok
from tests.e2e.pages import DevtoolsEnv, file_mode, open_page, page_fixtures, raw_call

pytestmark = pytest.mark.anyio

env, tabs = page_fixtures("devtools-pdf")

MEDIA_BOX = re.compile(rb"/MediaBox\s*\[\s*0 0 ([\d.]+) ([\d.]+)\s*\]")


async def shop(env: DevtoolsEnv, tabs: list[int]) -> int:
    tab = await open_page(env.client, env.site("h1"), "/browse/shop.html", "h1")
    tabs.append(tab)
    return tab


async def test_a_page_printed_to_a_new_private_file(env: DevtoolsEnv, tabs: list[int]) -> None:
    tab = await shop(env, tabs)
    path = env.tmp / "shop.pdf"
    result, _ = await raw_call(env.client, "pdf", {"tab": tab, "save_to": str(path)})
    assert not result.is_error, result
    info = result.structured_content
    assert info is not None
    data = path.read_bytes()
    assert data.startswith(b"%PDF-") and data.rstrip().endswith(b"%%EOF")
    assert info["path"] == str(path) and info["bytes"] == len(data)
    assert info["pages"] >= 2  # the long shop page does not fit on one
    assert info["pages"] == len(MEDIA_BOX.findall(data))  # one media box per page
    assert file_mode(path) == 0o600
    [link] = [b for b in result.content if isinstance(b, ResourceLink)]
    assert link.uri == path.as_uri()


async def test_pages_paper_and_landscape(env: DevtoolsEnv, tabs: list[int]) -> None:
    tab = await shop(env, tabs)
    path = env.tmp / "first-page-a4-landscape.pdf"
    info = await call_ok(env.client, "pdf", {"tab": tab, "save_to": str(path), "pages": "1",
                                             "paper": "a4", "landscape": True, "margins": 0.4})
    assert info["pages"] == 1
    [(width, height)] = MEDIA_BOX.findall(path.read_bytes())
    # A4 is 8.27 by 11.69 in, 72 points an inch: landscape puts the long side across
    assert abs(float(width) - 11.69 * 72) < 2 and abs(float(height) - 8.27 * 72) < 2


async def test_an_existing_file_is_never_replaced(env: DevtoolsEnv, tabs: list[int]) -> None:
    tab = await shop(env, tabs)
    path = env.tmp / "mine.pdf"
    path.write_bytes(b"the user's own file")
    error = await call_err(env.client, "pdf", {"tab": tab, "save_to": str(path)})
    assert "exists already" in error, error
    assert path.read_bytes() == b"the user's own file"


@pytest.mark.parametrize(("pages", "says"), [("3-1", "first to last"),
                                             ("1;2", "like '1-3,5'"),
                                             ("500", "past the end")])
async def test_a_bad_pages_string_is_refused(env: DevtoolsEnv, tabs: list[int], pages: str,
                                             says: str) -> None:
    tab = await shop(env, tabs)
    path = env.tmp / f"bad-{len(list(env.tmp.iterdir()))}.pdf"
    error = await call_err(env.client, "pdf", {"tab": tab, "save_to": str(path),
                                               "pages": pages})
    assert says in error and "pages" in error, error
    assert not path.exists()  # no partial file left


async def test_save_to_outside_the_allowed_directories_is_refused(
    env: DevtoolsEnv, tabs: list[int]
) -> None:
    tab = await shop(env, tabs)
    error = await call_err(env.client, "pdf", {"tab": tab, "save_to": "/var/csgw-nope.pdf"})
    assert "outside the allowed directories" in error, error
    assert not Path("/var/csgw-nope.pdf").exists()
