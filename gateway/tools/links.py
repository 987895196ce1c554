"""Resource links for the files a tool wrote, beside their paths.

A path is text on the gateway's machine; an MCP ``resource_link`` is something a
client can open (Claude Code and VS Code do), read through ``resources/read`` from
this server whichever machine the client runs on. Every file a result names (a
saved screenshot, a trace, a heap snapshot, a body) comes back as both.
"""

from __future__ import annotations

import mimetypes
from pathlib import Path

from mcp.types import ResourceLink

__all__ = ["file_link", "mime_type_of"]

_TYPES = {".heapsnapshot": "application/json", ".gz": "application/gzip"}


def mime_type_of(path: Path) -> str:
    """The file's media type by its name (a gzipped trace is gzip)."""
    if path.suffix in _TYPES:
        return _TYPES[path.suffix]
    guessed, _ = mimetypes.guess_type(path.name)
    return guessed or "application/octet-stream"


def file_link(path: Path) -> ResourceLink:
    """A link to ``path`` (absolute, written by the gateway), with its size."""
    size = path.stat().st_size if path.exists() else None
    return ResourceLink(type="resource_link", uri=path.as_uri(), name=path.name,
                        mime_type=mime_type_of(path), size=size)
