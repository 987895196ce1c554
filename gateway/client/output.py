"""What ``call`` prints for a tool result, the same for the daemon and ``--no-daemon``.

Text blocks go to stdout as they are (the structured result, as JSON, is one of
them); an image is written to a file of its own (0600, in the temp directory)
and its path printed instead of kilobytes of base64, as chrome-devtools-mcp's
CLI does. ``--json`` prints the structured result alone, with the image paths
under ``"image_files"``. A tool error goes to stderr with exit status 1; one that
still carries a result (a call that did part of its work: a ``browse_act`` step that
failed) prints that result too under ``--json``, so a script sees where things stand.
"""

from __future__ import annotations

import base64
import json
import os
import sys
import tempfile
from typing import Any

__all__ = ["print_result"]

_SUFFIXES = {"image/png": ".png", "image/jpeg": ".jpg", "image/webp": ".webp"}


def print_result(result: dict[str, Any], *, as_json: bool) -> int:
    """Print ``result`` (a ``CallToolResult`` as sent: camelCase) and return the exit status."""
    content = result.get("content") or []
    if result.get("isError"):
        text = " ".join(str(block.get("text", "")) for block in content)
        print(f"error: {text}", file=sys.stderr)
        if as_json and result.get("structuredContent") is not None:
            sys.stdout.write(json.dumps(result["structuredContent"], indent=2,
                                        ensure_ascii=False) + "\n")
        return 1
    images = [_save_image(block) for block in content if block.get("type") == "image"]
    if as_json:
        payload: Any = result.get("structuredContent")
        if payload is None:
            payload = [block for block in content if block.get("type") != "image"]
        if images:
            payload = {"result": payload, "image_files": images} if not isinstance(
                payload, dict) else payload | {"image_files": images}
        sys.stdout.write(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
        return 0
    for block in content:
        if block.get("type") == "text":
            sys.stdout.write(str(block.get("text", "")).rstrip("\n") + "\n")
    for path in images:
        sys.stdout.write(f"image saved: {path}\n")
    return 0


def _save_image(block: dict[str, Any]) -> str:
    data = base64.b64decode(str(block.get("data", "")))
    suffix = _SUFFIXES.get(str(block.get("mimeType")), ".img")
    fd, path = tempfile.mkstemp(prefix="chrome-ssh-gateway-", suffix=suffix)
    with os.fdopen(fd, "wb") as file:
        file.write(data)
    return path
