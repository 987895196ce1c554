"""Blank out credentials in JSON-like values before they are logged or returned.

The call log records every tool call's arguments and results, and tool results
go into a model's context; both routinely carry CDP payloads with cookies and
``Authorization`` headers. ``redact`` replaces exactly the header-shaped places
where such secrets live, and nothing else, so the log stays useful:

* a dict key that is a secret header name (``Cookie``, ``Set-Cookie``,
  ``Authorization``, ``Proxy-Authorization``, any case) — its value, whatever
  its type, becomes ``REDACTED``. Covers ``{"headers": {...}}`` in request and
  response events and ``Network.setExtraHTTPHeaders`` params. The CDP key
  ``cookieLine`` (raw ``Set-Cookie`` line in ``blockedCookies``) is treated the same.
  So is CDP's ``associatedCookies[].cookie``: its key is a header name, so the
  whole cookie object goes, name and domain included — crude, but never leaky;
* a header entry ``{"name": <secret header>, "value": ...}`` — ``value`` is
  redacted (HAR, ``Fetch.continueRequest`` / ``fulfillRequest`` header arrays);
* a cookie object: a dict with ``name`` and ``value`` and one of ``domain`` /
  ``url`` / ``path`` (``Network.setCookie`` params, ``Network.getCookies``
  results, ``associatedCookies[].cookie``), and every dict with a ``value`` in a
  list under a ``cookies`` key (``Network.setCookies``, HAR) — ``value`` is redacted;
* raw header text: lines ``Cookie: ...`` / ``authorization: ...`` inside strings
  (``requestHeadersText``, ``headersText``, pasted header blocks) keep their
  name and lose their value.

Not covered, on purpose: bearer-looking strings elsewhere, credentials in URLs,
request bodies, ``binaryResponseHeaders``, ``document.cookie`` in scripts.
Guessing at those would blank ordinary page text the model needs. Text typed
into password fields is redacted where it is typed (the input layer knows the
field type); this module does not.

Speed: the walk is copy-on-write. Containers and strings with nothing to redact
are returned as the very same objects, so the common case allocates nothing
and the result may share sub-objects with the input (treat both as read-only).
Strings are scanned for header lines only when they are the value of a
header-text key (any size) or shorter than ``TEXT_SCAN_LIMIT`` and contain
"cookie" or "authorization" — a big page text or base64 screenshot costs at
most one ``lower()``, and over the limit nothing at all.

Depth: containers nested deeper than ``MAX_DEPTH`` are replaced by
``TOO_DEEP``, so hostile or cyclic input cannot exhaust the stack.
"""

from __future__ import annotations

import re

__all__ = [
    "MAX_DEPTH",
    "REDACTED",
    "SECRET_HEADERS",
    "TEXT_SCAN_LIMIT",
    "TOO_DEEP",
    "redact",
]

REDACTED = "[redacted]"
TOO_DEEP = "[too deep]"
SECRET_HEADERS = frozenset({"cookie", "set-cookie", "authorization", "proxy-authorization"})

MAX_DEPTH = 64
TEXT_SCAN_LIMIT = 64 * 1024

# Keys whose value is a secret whatever it looks like: the header names, plus
# CDP's raw Set-Cookie line in Network.responseReceivedExtraInfo.blockedCookies.
_SECRET_KEYS = SECRET_HEADERS | {"cookieline"}
# Any of these next to name+value makes a dict a cookie rather than, say, a
# form field or a RemoteObject property.
_COOKIE_MARKERS = ("domain", "url", "path")

# A header line: optional indent, a secret header name, a colon; the rest of
# the line (up to CR/LF) is the value. Linear: no nested quantifiers.
_HEADER_LINE_RE = re.compile(
    r"^([ \t]*(?:proxy-authorization|authorization|set-cookie|cookie)[ \t]*:[ \t]*)[^\r\n]*",
    re.IGNORECASE | re.MULTILINE | re.ASCII,
)


def redact(value: object) -> object:
    """Return ``value`` with secrets replaced by ``REDACTED``; the input is never mutated.

    Walks dicts, lists and tuples (rebuilt as the same kind only when something
    inside changed); strings are checked for header lines; every other object
    (numbers, None, models) is returned as is. When nothing needed redacting
    the result *is* ``value``.
    """
    return _walk(value, 0, False)


def _walk(value: object, depth: int, header_text: bool) -> object:
    if isinstance(value, str):
        return _redact_text(value, header_text)
    if isinstance(value, dict):
        if depth >= MAX_DEPTH:
            return TOO_DEEP
        return _walk_dict(value, depth, False)
    if isinstance(value, list | tuple):
        if depth >= MAX_DEPTH:
            return TOO_DEEP
        return _walk_list(value, depth, False)
    return value


def _walk_dict(d: dict[object, object], depth: int, in_cookie_list: bool) -> object:
    """Redact one dict; ``in_cookie_list`` is set for the items of a ``cookies`` list."""
    redact_value = "value" in d and (in_cookie_list or _is_cookie_or_header_entry(d))
    changed: dict[object, object] | None = None
    for key, item in d.items():
        new: object
        if redact_value and key == "value":
            new = REDACTED
        elif isinstance(key, str):
            lowered = key.lower()
            if lowered in _SECRET_KEYS:
                new = REDACTED
            elif lowered == "cookies" and isinstance(item, list | tuple):
                new = TOO_DEEP if depth + 1 >= MAX_DEPTH else _walk_list(item, depth + 1, True)
            else:
                header_text = lowered == "headers" or lowered.endswith("headerstext")
                new = _walk(item, depth + 1, header_text)
        else:
            new = _walk(item, depth + 1, False)
        if new is not item and changed is None:
            changed = dict(d)
        if changed is not None:
            changed[key] = new
    return d if changed is None else changed


def _walk_list(items: list[object] | tuple[object, ...], depth: int, cookies: bool) -> object:
    """Redact a list or tuple; ``cookies`` marks the items as cookie objects."""
    out: list[object] | None = None
    for index, item in enumerate(items):
        if cookies and isinstance(item, dict):
            new = TOO_DEEP if depth + 1 >= MAX_DEPTH else _walk_dict(item, depth + 1, True)
        else:
            new = _walk(item, depth + 1, False)
        if new is not item and out is None:
            out = list(items)
        if out is not None:
            out[index] = new
    if out is None:
        return items
    return tuple(out) if isinstance(items, tuple) else out


def _is_cookie_or_header_entry(d: dict[object, object]) -> bool:
    """True for ``{"name": "Cookie", "value": ...}`` and ``{name, value, domain|url|path}``."""
    name = d.get("name")
    if name is None:
        return False
    if isinstance(name, str) and name.lower() in SECRET_HEADERS:
        return True
    return any(marker in d for marker in _COOKIE_MARKERS)


def _redact_text(text: str, header_text: bool) -> str:
    """Blank the value of secret header lines in ``text``; see the module docstring."""
    if not header_text and len(text) > TEXT_SCAN_LIMIT:
        return text
    lowered = text.lower()
    if "cookie" not in lowered and "authorization" not in lowered:
        return text
    result, count = _HEADER_LINE_RE.subn(r"\g<1>" + REDACTED, text)
    return result if count else text
