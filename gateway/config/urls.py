"""Which URLs a tab may be sent to.

Pure. ``javascript:`` is always refused because it runs code in whatever page
is open, which ``evaluate`` does explicitly; ``file:`` and browser-internal
schemes (``chrome:``, ``devtools:``, extensions, ``view-source:``) are refused
unless the target lists them in ``allow_schemes``, because they read the remote
host's files or change the browser itself — not what an agent browsing a site
needs by default.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from gateway.config.model import OPT_IN_SCHEMES
from gateway.errors import InvalidArgument, NotAllowed

__all__ = ["ALLOWED_SCHEMES", "check_url"]

ALLOWED_SCHEMES = frozenset({"http", "https", "about", "data", "blob"})
MAX_URL_CHARS = 2 * 1024 * 1024  # Chrome's own limit for a URL


def check_url(url: str, extra_schemes: frozenset[str] = frozenset()) -> str:
    """Return ``url`` if a tab may navigate to it, else raise ``InvalidArgument``
    (malformed) or ``NotAllowed`` (a scheme the target has not opted into).

    ``extra_schemes`` are the target's ``allow_schemes``."""
    url = url.strip()
    if not url:
        raise InvalidArgument("url is empty; pass a full URL such as https://example.com/")
    if len(url) > MAX_URL_CHARS:
        raise InvalidArgument(f"url is {len(url)} characters; Chrome accepts at most "
                              f"{MAX_URL_CHARS}")
    try:
        scheme = urlsplit(url).scheme.lower() if ":" in url else ""
    except ValueError as exc:  # "http://[x": an IPv6 host never closed
        raise InvalidArgument(f"url {url[:200]!r} is malformed ({exc})") from None
    if scheme == "javascript":
        raise InvalidArgument("javascript: URLs are not navigated to; run the code with "
                              "evaluate(expression=..., tab=...) instead")
    if scheme in OPT_IN_SCHEMES and scheme not in extra_schemes:
        raise NotAllowed(f"url scheme {scheme!r} is not allowed on this target; use http, "
                         "https, about, data or blob URLs (the target's config can allow it: "
                         f"allow_schemes = [\"{scheme}\"])")
    if scheme not in ALLOWED_SCHEMES | extra_schemes:
        if not scheme or "." in scheme or scheme == "localhost" or scheme.isdigit():
            raise InvalidArgument(f"url {url[:200]!r} has no scheme; add one, e.g. "
                                  f"https://{url[:200]}")
        raise InvalidArgument(f"url scheme {scheme!r} is not allowed; use http, https, "
                              "about, data or blob URLs")
    return url
