"""Playwright's storage-state file, exactly: what ``storage_state`` writes and reads.

The shape is Playwright's ``BrowserContext.storageState()`` (and ``newContext({
storageState })``), so a sign-in saved here loads in a Playwright test and one saved by
Playwright loads here::

    {"cookies": [{"name", "value", "domain", "path", "expires", "httpOnly", "secure",
                  "sameSite"}],
     "origins": [{"origin", "localStorage": [{"name", "value"}]}]}

``expires`` is Unix seconds, -1 for a session cookie; ``sameSite`` is "Strict", "Lax" or
"None" (Chrome leaves it out of a cookie set without one, and treats that as "Lax": so
does Playwright, and so does this file). Keys Playwright may add that this gateway does
not use (a cookie's ``partitionKey``, an origin's ``indexedDB``) are read and ignored.

A file that is not a storage state is refused with *where* it is wrong and *what* is
wrong — never with the value found there: the values are cookies.
"""

from __future__ import annotations

import json
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from gateway.errors import InvalidArgument

__all__ = ["MAX_STATE_BYTES", "Cookie", "OriginStorage", "StorageItem", "StorageState",
           "parse_state"]

MAX_STATE_BYTES = 32 * 1024 * 1024
"""A storage-state file larger than this is refused unread (localStorage holds at most
some 5 MB per origin in Chrome; a sign-in is far smaller)."""

SameSite = Literal["Strict", "Lax", "None"]


class _Entry(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class Cookie(_Entry):
    name: str
    value: str
    domain: str = Field(min_length=1)
    path: str
    expires: int | float  # an int stays one: -1, not -1.0, as Playwright writes it
    http_only: bool = Field(alias="httpOnly")
    secure: bool
    same_site: SameSite = Field(alias="sameSite")

    @classmethod
    def from_cdp(cls, cookie: dict[str, Any]) -> Cookie:
        """A CDP ``Network.Cookie`` (``Storage.getCookies``) as Playwright writes it: -1
        for a session cookie; no SameSite attribute is Chrome's default, Lax."""
        return cls(name=cookie["name"], value=cookie["value"], domain=cookie["domain"],
                   path=cookie["path"],
                   expires=-1 if cookie.get("session") else cookie.get("expires", -1),
                   httpOnly=cookie.get("httpOnly", False), secure=cookie.get("secure", False),
                   sameSite=cookie.get("sameSite", "Lax"))

    def to_cdp(self) -> dict[str, Any]:
        """The CDP ``Network.CookieParam`` (``Storage.setCookies``): a session cookie has
        no ``expires``."""
        param: dict[str, Any] = {"name": self.name, "value": self.value, "domain": self.domain,
                                 "path": self.path, "httpOnly": self.http_only,
                                 "secure": self.secure, "sameSite": self.same_site}
        if self.expires > 0:
            param["expires"] = self.expires
        return param


class StorageItem(_Entry):
    name: str
    value: str


class OriginStorage(_Entry):
    origin: str
    local_storage: list[StorageItem] = Field(alias="localStorage")

    @field_validator("origin")
    @classmethod
    def _is_origin(cls, origin: str) -> str:
        """``scheme://host[:port]`` of http or https, nothing after it: where a page can be."""
        url = urlsplit(origin)
        if url.scheme not in ("http", "https") or not url.hostname or url.path or url.query \
                or url.fragment or url.username is not None:
            raise ValueError("an origin is http(s)://host[:port], with nothing after it")
        return origin


class StorageState(_Entry):
    cookies: list[Cookie]
    origins: list[OriginStorage]

    def to_json(self) -> bytes:
        """The file's bytes, with Playwright's field names, indented as Playwright does."""
        return json.dumps(self.model_dump(by_alias=True), indent=2,
                          ensure_ascii=False).encode()


def parse_state(data: bytes, source: str) -> StorageState:
    """The storage state in ``data`` (the file ``source``), or ``InvalidArgument`` saying
    what is wrong with it and where (never the values there)."""
    if len(data) > MAX_STATE_BYTES:
        raise InvalidArgument(f"{source} is {len(data):,} bytes, over the limit of "
                              f"{MAX_STATE_BYTES:,} for a storage-state file")
    try:
        raw: Any = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        where = f" (line {exc.lineno}, column {exc.colno})" if isinstance(
            exc, json.JSONDecodeError) else ""
        raise InvalidArgument(f"{source} is not JSON{where}; a storage-state file is "
                              "Playwright's JSON: {\"cookies\": [...], \"origins\": [...]}"
                              ) from None
    try:
        return StorageState.model_validate(raw)
    except ValidationError as exc:
        problems = [f"{'.'.join(str(p) for p in error['loc']) or 'the top level'}: "
                    f"{error['msg']}" for error in exc.errors(include_input=False)[:5]]
        more = f" (and {exc.error_count() - 5} more)" if exc.error_count() > 5 else ""
        raise InvalidArgument(f"{source} is not a Playwright storage-state file: "
                              f"{'; '.join(problems)}{more}") from None
