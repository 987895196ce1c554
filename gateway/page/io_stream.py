"""Reading a stream Chrome keeps on its side (a CDP ``IO`` handle) back over the link.

Captures too large for one CDP message — a trace (``Tracing.end``), a PDF
(``Page.printToPDF`` with ``transferMode: ReturnAsStream``) — are handed over as a
stream handle: ``IO.read`` brings it back in ``READ_BYTES`` pieces until ``eof``. Each
piece goes to the caller's ``take`` in a worker thread (a file write, a parser), so
the capture is never held whole and the event loop stays free for other calls. The
bytes read are the call's progress, and the last report says all of them. The size is
bounded: past ``max_bytes`` the read stops. The handle is closed however the read
ends — bounded and shielded, so a cancelled call leaves nothing open in Chrome.
"""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING

import anyio
import anyio.to_thread

from gateway import progress
from gateway.errors import CaptureFailed, GatewayError

if TYPE_CHECKING:
    from gateway.browsers.session import TabSession

__all__ = ["READ_BYTES", "read_stream"]

READ_BYTES = 1 << 20
CLOSE_S = 2.0  # how long closing the handle may take, even while cancelled


async def read_stream(session: TabSession, handle: str, take: Callable[[bytes], None],
                      *, what: str, budget: float, max_bytes: int, too_large: str) -> int:
    """Read the stream ``handle`` into ``take``, then close it: its size in bytes.

    ``what`` names it in progress ("trace"); past ``max_bytes`` the read fails with
    ``CaptureFailed(too_large)``, which says the bound and how to get a smaller one."""
    size = 0
    try:
        while True:
            got = await session.call("IO.read", {"handle": handle, "size": READ_BYTES},
                                     timeout_s=budget)
            text = got.get("data", "")
            data = base64.b64decode(text) if got.get("base64Encoded") else text.encode()
            before, size = size, size + len(data)
            if size > max_bytes:
                raise CaptureFailed(too_large)
            await anyio.to_thread.run_sync(take, data)
            if got.get("eof"):
                break
            # the bytes before this piece: the final report (all of them) must be larger,
            # and the last piece may come empty
            await progress.report(before, None, f"reading the {what}: {before / 2**20:.1f} MB")
        await progress.report(size, size, f"{what} read: {size / 2**20:.1f} MB", final=True)
    finally:
        with contextlib.suppress(GatewayError), anyio.move_on_after(CLOSE_S, shield=True):
            await session.call("IO.close", {"handle": handle}, timeout_s=CLOSE_S)
    return size
