"""The files this gateway wrote for its clients, readable through ``resources/read``.

A tool result links each file it wrote (``resource_link``, ``gateway.output.links``);
a client that opens one asks this server for its URI. Only those files are served —
never any other path, whatever URI is asked for — the most recent
``MAX_FILES``, each up to ``MAX_READ_BYTES`` (a resource is sent whole, base64, in one
message: a bigger file is refused with its path to copy it from).
"""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path
from urllib.parse import unquote, urlsplit

from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver.exceptions import ResourceError
from mcp.types import CallToolResult, ResourceLink

from gateway.output.links import mime_type_of

__all__ = ["MAX_FILES", "MAX_READ_BYTES", "ServedFiles"]

MAX_FILES = 256
MAX_READ_BYTES = 32 * 1024 * 1024


class ServedFiles:
    """File URIs a result linked, newest last, at most ``MAX_FILES``."""

    def __init__(self) -> None:
        self._paths: OrderedDict[str, Path] = OrderedDict()

    def note(self, result: CallToolResult) -> None:
        """Remember the files ``result`` links to."""
        for block in result.content:
            if isinstance(block, ResourceLink) and str(block.uri).startswith("file://"):
                uri = str(block.uri)
                self._paths[uri] = Path(unquote(urlsplit(uri).path))
                self._paths.move_to_end(uri)
                while len(self._paths) > MAX_FILES:
                    self._paths.popitem(last=False)

    def serves(self, uri: str) -> bool:
        return uri in self._paths

    def read(self, uri: str) -> list[ReadResourceContents]:
        """The file behind ``uri`` as one blob (bytes), or ``ResourceError`` saying why not."""
        path = self._paths[uri]
        try:
            size = path.stat().st_size
            if size > MAX_READ_BYTES:
                raise ResourceError(f"{path} is {size:,} bytes, more than the "
                                    f"{MAX_READ_BYTES:,} a resource read sends; copy it from "
                                    "the gateway's machine instead")
            data = path.read_bytes()
        except OSError as exc:
            raise ResourceError(f"{path} can no longer be read ({exc.strerror}); call the "
                                "tool again for a new file") from None
        return [ReadResourceContents(content=data, mime_type=mime_type_of(path))]
