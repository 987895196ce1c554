"""Browsers that live in someone else's engine: WebDriver endpoints and hosted websockets (pure).

Two ways a browser exists without a ``DevToolsActivePort`` to find it by:

- ``webdriver = "http://host:port[/base]"`` — chromedriver or a Selenium Grid router:
  the gateway creates a session (``POST /session``) and attaches to the browser its
  capabilities name. The host may be any name: it is resolved on the target host's
  side (the SSH host, or this machine), never sent to Chrome in a Host header.
- ``cdp = "ws(s)://host[:port]/path?query"`` — a hosted pool (browserless,
  Browserbase, Steel) that hands out one browser per websocket: connected to
  exactly as written, query kept, with the configured ``headers``.

Both commonly carry secrets (``?token=…``, ``Authorization: Bearer …``), often
from the environment: ``${VAR}`` expands at start (``expand_env``), and a missing
variable is a start-up error naming it. The secret values then live only inside
these objects: their ``str``/``repr`` show ``?token=[redacted]`` and header names
without values, so no log line, error text or tool result built from them can
leak one.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import Field, JsonValue, PlainValidator

from gateway.config.addresses import CdpAddress, host_port, parse_cdp_address, parse_port
from gateway.config.text import BadValue, bad_char, show
from gateway.errors import ConfigError

__all__ = [
    "DEFAULT_CAPABILITIES",
    "ENV_KEYS",
    "NO_HEADERS",
    "REDACTED",
    "Capabilities",
    "Headers",
    "HostedUrl",
    "SecretHeaders",
    "WebDriverUrl",
    "expand_env",
    "expand_target_tables",
    "is_hosted_url",
    "parse_cdp_or_hosted",
    "parse_hosted_url",
    "parse_webdriver_url",
    "redact_url",
    "remote_problem",
]

REDACTED = "[redacted]"
# Target keys whose strings may name ${VARIABLES} (headers: each value).
ENV_KEYS = ("cdp", "webdriver", "headers")
_VAR_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]{0,127})\}")
_HOST_RE = re.compile(r"[A-Za-z0-9._-]{1,253}|\[[0-9A-Fa-f:.%A-Za-z]{2,64}\]")
_HEADER_NAME_RE = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}")


def expand_env(text: str, *, source: str, key: str,
               env: Mapping[str, str] | None = None, secrets: set[str] | None = None) -> str:
    """``${VAR}`` replaced by the variable's value; a missing one is a ``ConfigError``
    naming it (a token that silently became "" would fail later, far less clearly).
    Each value put in is added to ``secrets``: an error about the result must not show it."""
    environ = os.environ if env is None else env

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in environ:
            raise ConfigError(source, key, f"environment variable {name} is not set "
                              f"(named as ${{{name}}}); export it before starting the gateway")
        if secrets is not None and environ[name]:
            secrets.add(environ[name])
        return environ[name]

    return _VAR_RE.sub(value, text)


def expand_target_tables(data: dict[str, Any], source: str,
                         env: Mapping[str, str] | None = None,
                         secrets: set[str] | None = None) -> dict[str, Any]:
    """The parsed targets file with ``${VAR}`` expanded in each target's ``ENV_KEYS``
    (strings, and the values of a ``headers`` table); other keys are left as written.
    The values put in are added to ``secrets`` (see ``expand_env``)."""
    targets = data.get("targets")
    if not isinstance(targets, dict):
        return data
    expanded: dict[str, Any] = {}
    for name, table in targets.items():
        if isinstance(table, dict):
            table = dict(table)
            for key in ENV_KEYS:
                value, where = table.get(key), f"targets.{name}.{key}"
                if isinstance(value, str):
                    table[key] = expand_env(value, source=source, key=where, env=env,
                                            secrets=secrets)
                elif isinstance(value, dict):
                    table[key] = {k: expand_env(v, source=source, key=f"{where}.{k}", env=env,
                                                secrets=secrets)
                                  if isinstance(v, str) else v for k, v in value.items()}
        expanded[name] = table
    return {**data, "targets": expanded}


def redact_url(url: str) -> str:
    """``wss://h/p?token=s3cr3t&x=1`` → ``wss://h/p?token=[redacted]&x=[redacted]``, and
    ``user:password@`` dropped: every query value and userinfo may be a credential. An
    item with no ``=`` (``?s3cr3t``) is all value; names are kept as written."""
    parts = urlsplit(url)
    netloc = parts.netloc.rpartition("@")[2]
    query = "&".join(f"{item.partition('=')[0]}={REDACTED}" if "=" in item else REDACTED
                     for item in parts.query.split("&") if item)
    shown = f"{parts.scheme}://{netloc}{parts.path}"
    return shown + (f"?{query}" if query else "")


def _split(text: str, schemes: tuple[str, ...], *,
           what: str) -> tuple[str, str, int | None, str, str]:
    """(scheme, host, port or None, path, query) of an absolute URL, checked."""
    bad = bad_char(text)
    if bad is not None:
        raise BadValue(f"{what} contains whitespace or a control "
                       f"character ({bad!r})")
    scheme, sep, rest = text.partition("://")
    if not sep or scheme.lower() not in schemes:
        raise BadValue(f"{what} {show(redact_url(text))} must start with "
                       f"{' or '.join(s + '://' for s in schemes)}")
    cut = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    authority, tail = rest[:cut], rest[cut:]
    if "@" in authority:
        raise BadValue(f"{what} must not contain user@ (put credentials in "
                       "headers or the query)")
    if "#" in tail:
        raise BadValue(f"{what} must not have a #fragment")
    path, _, query = tail.partition("?")
    host, port_text = authority, ""
    if authority.startswith("["):
        close = authority.find("]")
        host, port_text = authority[:close + 1], authority[close + 2:] if close > 0 else ""
    elif ":" in authority:
        host, _, port_text = authority.partition(":")
    # Labels of 1-63 characters: what the IDNA codec encodes (it raises UnicodeError
    # at every connect otherwise).
    labels = host.removesuffix(".").split(".") if not host.startswith("[") else ["ip"]
    if not _HOST_RE.fullmatch(host) or host.startswith("-") or not all(
            0 < len(label) <= 63 for label in labels):
        raise BadValue(f"{what} host {show(host)} is not a host name or "
                       "IP address")
    port = parse_port(port_text, what=f"{what} port") \
        if port_text else None
    return scheme.lower(), host.strip("[]"), port, path, query


@dataclass(frozen=True)
class WebDriverUrl:
    """A WebDriver endpoint, as seen from the target host: ``http://host:port/base``."""

    host: str
    port: int
    base: str = ""  # "/wd/hub" for an old Grid; "" for chromedriver and Grid 4

    def __str__(self) -> str:
        return f"http://{host_port(self.host, self.port)}{self.base}"


def parse_webdriver_url(text: str) -> WebDriverUrl:
    """``http://host[:port][/base]`` (port 4444, a Grid's, when omitted). HTTPS is refused:
    the request goes over the host's byte stream without TLS — reach an HTTPS Grid
    through ``ssh`` to a machine that sees its plain port."""
    scheme, host, port, path, query = _split(text.strip(), ("http", "https"), what="webdriver URL")
    if scheme == "https":
        raise BadValue("webdriver over https is not supported; give the "
                       "plain http:// address, through ssh = \"...\" if it is not reachable")
    if query:
        raise BadValue("webdriver URL must not have a query")
    return WebDriverUrl(host, port or 4444, path.rstrip("/"))


@dataclass(frozen=True)
class HostedUrl:
    """A hosted browser's websocket URL, kept exactly as written (query included).

    ``str()`` and ``repr()`` redact the query values: the object can be logged."""

    scheme: str  # "ws" or "wss"
    host: str
    port: int
    target: str = field(repr=False)  # path and query, as sent in the request line

    @property
    def url(self) -> str:
        """The real URL, secrets included: only for opening the websocket."""
        return f"{self.scheme}://{host_port(self.host, self.port)}{self.target}"

    def __str__(self) -> str:
        return redact_url(self.url)

    def __repr__(self) -> str:
        return f"HostedUrl({str(self)!r})"


def is_hosted_url(text: str) -> bool:
    """Whether a ``cdp`` value names a hosted endpoint rather than a Chrome's own
    address: ``wss://``, a query, a host name, or a path other than Chrome's."""
    scheme, sep, rest = text.strip().partition("://")
    if not sep or scheme.lower() not in ("ws", "wss"):
        return False
    authority = re.split(r"[/?#]", rest, maxsplit=1)[0]
    path = rest[len(authority):]
    host = re.sub(r":[0-9]*$", "", authority) if not authority.endswith("]") else authority
    named = host.lower() != "localhost" and not re.fullmatch(r"[0-9.]+|\[.*\]", host)
    return (scheme.lower() == "wss" or "?" in rest or named
            or (path not in ("", "/") and not path.startswith("/devtools/browser/")))


def parse_hosted_url(text: str) -> HostedUrl:
    scheme, host, port, path, query = _split(text.strip(), ("ws", "wss"), what="cdp URL")
    target = (path or "/") + (f"?{query}" if query else "")
    return HostedUrl(scheme, host, port or (443 if scheme == "wss" else 80), target)


def parse_cdp_or_hosted(text: str) -> CdpAddress | HostedUrl:
    """A ``cdp`` value: a Chrome's own address, or a hosted pool's websocket URL."""
    if is_hosted_url(text):
        return parse_hosted_url(text)
    return parse_cdp_address(text)


class SecretHeaders(tuple[tuple[str, str], ...]):
    """Extra websocket handshake headers (``Authorization``, ``X-Api-Key``, …); every
    value is treated as a secret, so ``repr`` shows the names only."""

    __slots__ = ()

    @classmethod
    def of(cls, value: object) -> SecretHeaders:
        if isinstance(value, SecretHeaders):
            return value
        if not isinstance(value, Mapping):
            raise ValueError("headers must be a table of name = \"value\" strings")
        pairs = []
        for name, text in value.items():
            if not isinstance(name, str) or not _HEADER_NAME_RE.fullmatch(name):
                raise ValueError(f"header name {show(str(name))} is not a valid HTTP "
                                 "header name")
            if not isinstance(text, str) or bad_char(text.replace(" ", "")) is not None:
                raise ValueError(f"header {name} must be a one-line string")
            pairs.append((name, text))
        return cls(pairs)

    @property
    def values(self) -> list[str]:
        return [text for _, text in self if text]

    def __repr__(self) -> str:
        return "{" + ", ".join(f"{name!r}: {REDACTED!r}" for name, _ in self) + "}"

    __str__ = __repr__


NO_HEADERS = SecretHeaders()
DEFAULT_CAPABILITIES: dict[str, JsonValue] = {"browserName": "chrome"}
Headers = Annotated[SecretHeaders, PlainValidator(SecretHeaders.of)]
Capabilities = Annotated[dict[str, JsonValue], Field(strict=False)]


def remote_problem(settings: Any) -> tuple[str, str] | None:
    """What in a target's settings cannot go with ``webdriver`` or a hosted ``cdp``:
    (reason, key to fix), or None."""
    if settings.webdriver is not None:
        for key in ("cdp", "profile", "launch", "expose_port"):
            if getattr(settings, key):
                return f"webdriver creates its own browsers; drop {key!r}", key
    hosted = isinstance(settings.cdp, HostedUrl)
    tls = hosted and settings.cdp.scheme == "wss"
    for key, needs, ok in (("capabilities", "webdriver", settings.webdriver is not None),
                           ("sessions", "webdriver", settings.webdriver is not None),
                           ("headers", 'cdp = "ws(s)://…"', hosted),
                           ("ca_file", 'cdp = "wss://…"', tls)):
        if not ok and key in settings.model_fields_set:
            return f"{key} only applies with {needs}", key
    return None
