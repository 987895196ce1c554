"""Text helpers of the view: whitespace, quoting, cutting, numbers and URL origins."""

from __future__ import annotations

from json.encoder import encode_basestring

__all__ = ["cut", "number_text", "origin_of", "quote", "squash"]


def squash(text: str) -> str:
    """Collapse runs of whitespace (newlines, tabs, no-break spaces) to one space."""
    return " ".join(text.split())


def quote(text: str, limit: int) -> str:
    """``text`` in double quotes, escaped as JSON escapes it, cut to ``limit`` characters."""
    return encode_basestring(text if len(text) <= limit else text[: limit - 1] + "…")


def cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def number_text(value: float) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def origin_of(url: str) -> str:
    """``scheme://host:port`` of a hierarchical URL, "" for others (about:, data:)."""
    scheme, sep, rest = url.partition("://")
    if not sep or not scheme.isalpha():
        return ""
    host = rest.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
    return f"{scheme}://{host}"
