"""Turn the environment and an optional TOML targets file into a ``GatewayConfig``.

This module is pure: apart from reading the targets file it touches nothing,
and it reads the environment only through the mapping it is given, so every
rule is testable on literals. Everything is validated here, at start-up, so a
typo is refused with a message naming the file, the dotted key and what is
expected, instead of surfacing later as a failed SSH connect mid-session.

Where the targets come from, first match wins:

1. a targets file (``--config`` / ``CHROME_SSH_GATEWAY_CONFIG``) — then the
   single-target env vars (``SSH_PROXY_TO``, ``CDP_URL``, ``SSH_PROXY_PORT``)
   are refused rather than silently ignored;
2. ``SSH_PROXY_TO`` — one SSH target named ``default`` (``CDP_URL`` and
   ``SSH_PROXY_PORT`` refine it);
3. ``CDP_URL`` alone — one local target named ``local`` at that address;
4. nothing — the embedded default: one local target ``local`` that discovers a
   running Chrome or launches a headless Chromium.

The call log (``MCP_DEBUG_LOG`` or ``[gateway] call_log``) is independent of
where the targets come from; a non-empty env value wins over the file.
"""

from __future__ import annotations

import ipaddress
import json
import math
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Literal, cast

from gateway.errors import ConfigError

__all__ = [
    "ENV_CALL_LOG",
    "ENV_CDP_URL",
    "ENV_CONFIG",
    "ENV_READ_ONLY",
    "ENV_SSH_PROXY_PORT",
    "ENV_SSH_PROXY_TO",
    "HOST_KEY_POLICIES",
    "MAX_SECONDS",
    "OPT_IN_SCHEMES",
    "TARGET_KEYS",
    "TARGET_NAME_RE",
    "CdpAddress",
    "GatewayConfig",
    "HostKeyPolicy",
    "ReconnectPolicy",
    "SshDestination",
    "TargetConfig",
    "default_call_log_path",
    "load_config",
    "parse_cdp_address",
    "parse_ssh_destination",
]

HostKeyPolicy = Literal["strict", "accept-new"]
HOST_KEY_POLICIES: tuple[HostKeyPolicy, ...] = ("strict", "accept-new")

# Target names appear in tool arguments, log lines and socket file names: keep
# them short, lower-case and free of anything a shell or a path would interpret.
TARGET_NAME_RE = re.compile(r"^[a-z0-9_-]{1,32}$")

# Upper bound for every timeout / delay: larger values are almost surely a unit
# mistake (milliseconds written as seconds) and would make a call look hung.
MAX_SECONDS = 3600.0

# Per-tab console / network ring sizes: enough for a busy page, bounded in memory.
MIN_BUFFER = 10
MAX_BUFFER = 100_000

ENV_CONFIG = "CHROME_SSH_GATEWAY_CONFIG"
ENV_SSH_PROXY_TO = "SSH_PROXY_TO"
ENV_CDP_URL = "CDP_URL"
ENV_SSH_PROXY_PORT = "SSH_PROXY_PORT"
ENV_CALL_LOG = "MCP_DEBUG_LOG"
ENV_READ_ONLY = "CHROME_SSH_GATEWAY_READ_ONLY"

# URL schemes a tab is never sent to unless its target lists them in
# ``allow_schemes``: they read the remote host's files or change the browser itself.
OPT_IN_SCHEMES = frozenset({"file", "chrome", "chrome-extension", "devtools", "view-source"})
# ``cdp_allow`` entries: a whole domain (``Runtime.*``) or one method (``Page.reload``).
_CDP_PATTERN_RE = re.compile(r"[A-Z][A-Za-z0-9]{0,63}\.(\*|[a-z][A-Za-z0-9]{0,127})")

_TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
_FALSE_WORDS = frozenset({"", "0", "false", "no", "off"})


# --------------------------------------------------------------------------- model


@dataclass(frozen=True)
class SshDestination:
    """Where to SSH to, exactly as the user wrote it, split into parts.

    ``host`` may be an ``~/.ssh/config`` alias: it is handed to asyncssh, which
    resolves it with the user's config, so it is not checked to be a hostname.
    ``user``/``port`` are ``None`` when not given, leaving the choice to that config.
    """

    host: str
    user: str | None
    port: int | None

    def __str__(self) -> str:
        host = self.host
        if self.port is not None:
            # An IPv6 literal needs brackets, or its colons eat the port.
            host = f"[{host}]:{self.port}" if ":" in host else f"{host}:{self.port}"
        return f"{self.user}@{host}" if self.user is not None else host


@dataclass(frozen=True)
class CdpAddress:
    """Where Chrome's DevTools endpoint listens, as seen from the target host.

    ``browser_path`` keeps ``/devtools/browser/<id>`` from a ``ws://`` URL so the
    gateway can connect without asking ``/json/version`` (which Chrome's
    chrome://inspect mode does not serve).
    """

    host: str
    port: int
    browser_path: str | None = None


@dataclass(frozen=True)
class ReconnectPolicy:
    """How a target's link is kept alive and re-established (asyncssh never does).

    The supervisor retries after ``initial_delay_s``, doubling up to ``max_delay_s``
    (kept short so a target is back within seconds of its host, without a call).
    ``call_wait_s`` is how long a tool call waits for a target that is connecting or
    down to come up before it fails with the last reason; 0 fails at once.
    """

    initial_delay_s: float = 0.5
    max_delay_s: float = 5.0
    connect_timeout_s: float = 10.0
    keepalive_interval_s: float = 15.0
    keepalive_count_max: int = 3
    call_wait_s: float = 10.0


@dataclass(frozen=True)
class TargetConfig:
    """One named browser: how to reach its host and where its Chrome listens."""

    name: str
    ssh: SshDestination | None
    cdp: CdpAddress | None
    profile: str | None = None
    host_key_policy: HostKeyPolicy = "strict"
    expose_port: int | None = None
    redact: bool = True
    command_timeout_s: float = 30.0
    launch: bool = False
    reconnect: ReconnectPolicy = field(default_factory=ReconnectPolicy)
    console_buffer: int = 1000          # console entries kept per tab
    network_buffer: int = 1000          # network requests kept per tab
    allow_cdp: bool = True              # cdp_command may be used at all
    cdp_allow: tuple[str, ...] | None = None   # Domain.* / Domain.method; None = any
    allow_evaluate: bool = True         # evaluate, and CDP methods that run page JS
    allow_schemes: frozenset[str] = frozenset()  # of OPT_IN_SCHEMES, e.g. {"file"}

    @property
    def transport(self) -> Literal["ssh", "local"]:
        """``"ssh"`` when the browser runs on another host, ``"local"`` otherwise."""
        return "ssh" if self.ssh is not None else "local"


@dataclass(frozen=True)
class GatewayConfig:
    """Everything the gateway needs at start-up; ``source`` says where it came from."""

    targets: tuple[TargetConfig, ...]
    call_log: Path | None
    source: str
    allow_any_path: bool = False        # save_to may write outside the allowed directories
    read_only: bool = False             # serve only the tools that change nothing


# Keys a ``[targets.<name>]`` table may hold, in the order the docs list them.
TARGET_KEYS: tuple[str, ...] = (
    "ssh",
    "cdp",
    "profile",
    "host_key_policy",
    "expose",
    "redact",
    "command_timeout_s",
    "launch",
    "reconnect",
    "console_buffer",
    "network_buffer",
    "allow_cdp",
    "cdp_allow",
    "allow_evaluate",
    "allow_schemes",
)
_RECONNECT_KEYS: tuple[str, ...] = tuple(f.name for f in fields(ReconnectPolicy))
_GATEWAY_KEYS: tuple[str, ...] = ("call_log", "allow_any_path", "read_only")
_TOP_LEVEL_KEYS: tuple[str, ...] = ("gateway", "targets")


# --------------------------------------------------------------------------- helpers


def _show(text: str, limit: int = 80) -> str:
    """Quote a user value for an error message without flooding it."""
    shown = text if len(text) <= limit else text[:limit] + "…"
    return repr(shown)


def _bad_char(text: str) -> str | None:
    """Return the first whitespace or control character in ``text``, if any."""
    for ch in text:
        if ch.isspace() or ord(ch) < 0x20 or 0x7F <= ord(ch) < 0xA0:
            return ch
    return None


_PORT_RE = re.compile(r"[0-9]{1,5}")


def _parse_port(text: str, *, source: str, key: str, what: str) -> int:
    """Parse a decimal port; ``int()`` alone would accept ``+22``, ``2_2`` or ``٢٢``."""
    if not _PORT_RE.fullmatch(text):
        raise ConfigError(source, key, f"{what} {_show(text)} is not a number in 1..65535")
    port = int(text)
    if not 1 <= port <= 65535:
        raise ConfigError(source, key, f"{what} {port} is out of range; expected 1..65535")
    return port


_SCOPE_RE = re.compile(r"[A-Za-z0-9_.-]+")


def _is_ipv6(text: str) -> bool:
    """An IPv6 literal, optionally with a zone (``fe80::1%eth0``) made of name characters.

    ``ipaddress`` accepts any characters after ``%``; a zone is an interface
    name or number, so anything else is refused before it reaches a socket call.
    """
    _, percent, scope = text.partition("%")
    if percent and not _SCOPE_RE.fullmatch(scope):
        return False
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True


# Hostnames and ~/.ssh/config aliases: letters, digits and the few punctuation
# marks real names use. Anything else (quotes, ``%``, ``/``) is a typo or an attempt
# to smuggle ssh_config tokens through.
_SSH_HOST_RE = re.compile(r"[A-Za-z0-9_.+~-]+")
# POSIX portable user names plus the characters directory services add
# (``@`` for user@domain, ``\`` for DOMAIN\user).
_SSH_USER_RE = re.compile(r"[A-Za-z0-9_.@\\$+-]+")


def _check_ssh_host(host: str, *, source: str, key: str, text: str) -> None:
    if not host:
        raise ConfigError(source, key, f"{_show(text)} has no host; expected [user@]host[:port]")
    if host.startswith("-"):
        raise ConfigError(
            source, key, f"host {_show(host)} must not start with '-' (it would read as an option)"
        )
    if ":" in host:
        if not _is_ipv6(host):
            raise ConfigError(source, key, f"{_show(host)} is not a valid IPv6 address")
        return
    if not _SSH_HOST_RE.fullmatch(host):
        raise ConfigError(
            source,
            key,
            f"host {_show(host)} has characters a host name or ssh alias cannot have; "
            "expected letters, digits, '.', '-', '_'",
        )


def parse_ssh_destination(text: str, *, source: str, key: str) -> SshDestination:
    """Parse ``[user@]host[:port]``, ``[user@][ipv6][:port]``, bare IPv6 or ``ssh://...``.

    The value ends up as an asyncssh host argument and in log lines, so anything
    that could be read as an option (leading ``-``), split into several words
    (whitespace) or break a log line (control characters) is refused here.
    Surrounding whitespace is stripped: env values pasted with a newline are common.
    """
    text = text.strip()
    if not text:
        raise ConfigError(source, key, "SSH destination is empty; expected [user@]host[:port]")
    bad = _bad_char(text)
    if bad is not None:
        raise ConfigError(
            source,
            key,
            f"SSH destination {_show(text)} contains whitespace or a control character "
            f"({bad!r}); expected [user@]host[:port]",
        )
    if text.startswith("-"):
        raise ConfigError(
            source,
            key,
            f"SSH destination {_show(text)} must not start with '-' (it would read as an option)",
        )
    rest = text
    if rest.lower().startswith("ssh://"):
        rest = rest[len("ssh://") :].rstrip("/")
        if "/" in rest:
            raise ConfigError(source, key, f"ssh:// URL {_show(text)} must not have a path")

    user: str | None = None
    if "@" in rest:
        # OpenSSH splits at the last '@': user names may contain one (user@domain).
        user, _, rest = rest.rpartition("@")
        if not user:
            raise ConfigError(
                source, key, f"{_show(text)} has an empty user before '@'; expected user@host"
            )
        if user.startswith("-"):
            raise ConfigError(
                source,
                key,
                f"user {_show(user)} must not start with '-' (it would read as an option)",
            )
        if not _SSH_USER_RE.fullmatch(user):
            raise ConfigError(
                source, key, f"user {_show(user)} has characters a user name cannot have"
            )

    port: int | None = None
    if rest.startswith("["):
        close = rest.find("]")
        if close < 0:
            raise ConfigError(
                source, key, f"{_show(text)} has '[' without ']'; expected [ipv6]:port"
            )
        host = rest[1:close]
        after = rest[close + 1 :]
        if after:
            if not after.startswith(":"):
                raise ConfigError(
                    source, key, f"unexpected {_show(after)} after ']'; expected [ipv6]:port"
                )
            port = _parse_port(after[1:], source=source, key=key, what="SSH port")
        if not host:
            raise ConfigError(
                source, key, f"{_show(text)} has empty brackets; expected [ipv6]:port"
            )
    elif rest.count(":") == 1:
        host, _, port_text = rest.partition(":")
        port = _parse_port(port_text, source=source, key=key, what="SSH port")
    elif rest.count(":") > 1:
        if not _is_ipv6(rest):
            raise ConfigError(
                source,
                key,
                f"{_show(rest)} is not an IPv6 address; to give a port with an IPv6 "
                "address write [address]:port",
            )
        host = rest
    else:
        host = rest
    _check_ssh_host(host, source=source, key=key, text=text)
    return SshDestination(host=host, user=user, port=port)


_CDP_SCHEMES = ("http", "https", "ws", "wss")
_BROWSER_PATH_PREFIX = "/devtools/browser/"
_BROWSER_PATH_RE = re.compile(r"/devtools/browser/[A-Za-z0-9._-]+")


def parse_cdp_address(text: str, *, source: str, key: str) -> CdpAddress:
    """Parse where Chrome listens: ``host:port``, ``http(s)://host:port[/...]`` or a ws URL.

    The host must be an IP literal or ``localhost`` because Chrome answers
    ``/json/*`` only for such Host headers; a port is required because guessing
    80 would point at the wrong service. The scheme is accepted for convenience
    (users paste what ``chrome://inspect`` or ``/json/version`` shows) but not kept.
    """
    text = text.strip()
    expected = "expected host:port, http://host:port or ws://host:port/devtools/browser/<id>"
    if not text:
        raise ConfigError(source, key, f"CDP address is empty; {expected}")
    bad = _bad_char(text)
    if bad is not None:
        raise ConfigError(
            source,
            key,
            f"CDP address {_show(text)} contains whitespace or a control character ({bad!r})",
        )
    scheme = ""
    rest = text
    if "://" in text:
        scheme, _, rest = text.partition("://")
        scheme = scheme.lower()
        if scheme not in _CDP_SCHEMES:
            raise ConfigError(
                source,
                key,
                f"CDP address scheme {_show(scheme)} is not one of {', '.join(_CDP_SCHEMES)}",
            )
    cut = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    authority, tail = rest[:cut], rest[cut:]
    if "@" in authority:
        raise ConfigError(source, key, f"CDP address {_show(text)} must not contain user@")
    path = tail
    if "?" in path or "#" in path:
        raise ConfigError(
            source, key, f"CDP address {_show(text)} must not have a query or fragment"
        )

    if authority.startswith("["):
        close = authority.find("]")
        if close < 0:
            raise ConfigError(source, key, f"{_show(text)} has '[' without ']'; {expected}")
        host = authority[1:close]
        after = authority[close + 1 :]
        if not after.startswith(":"):
            raise ConfigError(source, key, f"CDP address {_show(text)} needs a port; {expected}")
        port_text = after[1:]
    elif authority.count(":") == 1:
        host, _, port_text = authority.partition(":")
    elif authority.count(":") > 1:
        raise ConfigError(
            source, key, f"{_show(text)}: write an IPv6 address in brackets, e.g. [::1]:9222"
        )
    else:
        raise ConfigError(source, key, f"CDP address {_show(text)} needs a port; {expected}")

    if host.lower() == "localhost":
        host = "localhost"
    else:
        try:
            ipaddress.IPv4Address(host)
        except ValueError:
            if not _is_ipv6(host):
                raise ConfigError(
                    source,
                    key,
                    f"CDP host {_show(host)} must be an IP address or 'localhost' "
                    "(Chrome refuses DevTools requests for other host names)",
                ) from None
    port = _parse_port(port_text, source=source, key=key, what="CDP port")

    browser_path: str | None = None
    if scheme in ("ws", "wss") and path.startswith(_BROWSER_PATH_PREFIX):
        if not _BROWSER_PATH_RE.fullmatch(path):
            raise ConfigError(
                source,
                key,
                f"browser path {_show(path)} is malformed; expected /devtools/browser/<id>",
            )
        browser_path = path
    return CdpAddress(host=host, port=port, browser_path=browser_path)


def _expand_home(text: str, environ: Mapping[str, str]) -> str:
    """Expand a leading ``~`` with the given environment's HOME (pure, unlike os.path)."""
    if text == "~" or text.startswith("~/"):
        home = environ.get("HOME")
        if home:
            return home + text[1:]
    return os.path.expanduser(text) if text.startswith("~") else text


def default_call_log_path(environ: Mapping[str, str]) -> Path:
    """``$XDG_CACHE_HOME/chrome-ssh-gateway/calls.jsonl``, falling back to ``~/.cache``.

    A function of ``environ`` rather than a constant so tests and the caller see
    the same value the process environment would give.
    """
    cache = environ.get("XDG_CACHE_HOME", "")
    if not cache or not os.path.isabs(cache):  # XDG: relative values are ignored
        cache = os.path.join(_expand_home("~", environ), ".cache")
    return Path(cache) / "chrome-ssh-gateway" / "calls.jsonl"


def _call_log_from_text(value: str, environ: Mapping[str, str], *, source: str) -> Path | None:
    """Read ``MCP_DEBUG_LOG``: an on/off word, or a path to log to."""
    word = value.strip().lower()
    if word in _TRUE_WORDS:
        return default_call_log_path(environ)
    if word in _FALSE_WORDS:
        return None
    if "\x00" in value or "\n" in value or "\r" in value:
        raise ConfigError(source, "", "call log path must not contain NUL or newline characters")
    return Path(_expand_home(value.strip(), environ))


# --------------------------------------------------------------------------- file values


_BARE_KEY_RE = re.compile(r"[A-Za-z0-9_-]+")


def _dotted(prefix: str, name: str) -> str:
    """Join a dotted key the way TOML would write it, quoting odd names so the
    message stays one readable line (a key may hold dots, spaces or newlines)."""
    part = name if _BARE_KEY_RE.fullmatch(name) else json.dumps(name)
    return f"{prefix}.{part}" if prefix else part


def _type_name(value: object) -> str:
    """TOML's name for a parsed value's type, for 'expected X, got Y' messages."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "table"
    if isinstance(value, list):
        return "array"
    return type(value).__name__  # dates and times


def _want_str(value: object, *, source: str, key: str) -> str:
    if not isinstance(value, str):
        raise ConfigError(source, key, f"expected a string, got {_type_name(value)}")
    return value


def _want_bool(value: object, *, source: str, key: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(source, key, f"expected true or false, got {_type_name(value)}")
    return value


def _want_int(value: object, *, source: str, key: str) -> int:
    # bool is a subclass of int: `expose = true` must not mean port 1.
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(source, key, f"expected an integer, got {_type_name(value)}")
    return value


def _want_seconds(value: object, *, source: str, key: str, zero_ok: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(source, key, f"expected a number of seconds, got {_type_name(value)}")
    seconds = float(value)
    low_ok = seconds >= 0 if zero_ok else seconds > 0
    if not math.isfinite(seconds) or not low_ok or seconds > MAX_SECONDS:
        low = ">= 0" if zero_ok else "> 0"
        raise ConfigError(
            source,
            key,
            f"{value} is not a sane duration; expected seconds {low} and <= {MAX_SECONDS:g}",
        )
    return seconds


def _want_str_list(value: object, *, source: str, key: str) -> list[str]:
    if not isinstance(value, list):
        raise ConfigError(source, key, f"expected an array of strings, got {_type_name(value)}")
    for item in value:
        if not isinstance(item, str):
            raise ConfigError(source, key, f"expected an array of strings, found "
                              f"{_type_name(item)}")
    return cast(list[str], value)


def _parse_cdp_allow(value: object, *, source: str, key: str) -> tuple[str, ...]:
    patterns = _want_str_list(value, source=source, key=key)
    if not patterns:
        raise ConfigError(source, key, "an empty cdp_allow allows nothing; "
                          "write allow_cdp = false to turn cdp_command off")
    for pattern in patterns:
        if not _CDP_PATTERN_RE.fullmatch(pattern):
            raise ConfigError(source, key, f"{_show(pattern)} is not a CDP method pattern; "
                              "expected Domain.* or Domain.method, e.g. \"Runtime.*\"")
    return tuple(patterns)


def _parse_schemes(value: object, *, source: str, key: str) -> frozenset[str]:
    schemes = _want_str_list(value, source=source, key=key)
    for scheme in schemes:
        if scheme == "javascript":
            raise ConfigError(source, key, "javascript: URLs are never navigated to; "
                              "run code with evaluate instead")
        if scheme not in OPT_IN_SCHEMES:
            raise ConfigError(source, key, f"{_show(scheme)} cannot be allowed; expected any "
                              f"of {', '.join(sorted(OPT_IN_SCHEMES))} (http, https, about, "
                              "data and blob are always allowed)")
    return frozenset(schemes)


def _want_table(value: object, *, source: str, key: str) -> dict[str, object]:
    if not isinstance(value, dict):
        raise ConfigError(source, key, f"expected a table, got {_type_name(value)}")
    return cast(dict[str, object], value)


def _check_keys(
    table: Mapping[str, object], allowed: tuple[str, ...], *, source: str, prefix: str
) -> None:
    for name in table:
        if name not in allowed:
            raise ConfigError(
                source, _dotted(prefix, name), f"unknown key; allowed keys: {', '.join(allowed)}"
            )


def _check_profile(value: str, *, source: str, key: str) -> str:
    """A profile is a path on the target host: refuse what could escape or break it."""
    if "\x00" in value or "\n" in value or "\r" in value:
        raise ConfigError(source, key, "profile path must not contain NUL or newline characters")
    if not (value.startswith("/") or value.startswith("~/")):
        raise ConfigError(
            source, key, f"profile {_show(value)} must be an absolute path or start with '~/'"
        )
    if ".." in value.split("/"):
        raise ConfigError(source, key, f"profile {_show(value)} must not contain '..' segments")
    return value


def _parse_reconnect(value: object, *, source: str, key: str) -> ReconnectPolicy:
    table = _want_table(value, source=source, key=key)
    _check_keys(table, _RECONNECT_KEYS, source=source, prefix=key)
    defaults = ReconnectPolicy()
    seconds: dict[str, float] = {}
    for name in _RECONNECT_KEYS:
        if name == "keepalive_count_max":
            continue
        seconds[name] = (
            _want_seconds(table[name], source=source, key=f"{key}.{name}",
                          zero_ok=name == "call_wait_s")
            if name in table
            else float(getattr(defaults, name))
        )
    count = defaults.keepalive_count_max
    if "keepalive_count_max" in table:
        count_key = f"{key}.keepalive_count_max"
        count = _want_int(table["keepalive_count_max"], source=source, key=count_key)
        if not 1 <= count <= 100:
            raise ConfigError(source, count_key, f"{count} is out of range; expected 1..100")
    if seconds["max_delay_s"] < seconds["initial_delay_s"]:
        raise ConfigError(
            source,
            f"{key}.max_delay_s",
            f"max_delay_s ({seconds['max_delay_s']:g}) is smaller than "
            f"initial_delay_s ({seconds['initial_delay_s']:g})",
        )
    return ReconnectPolicy(
        initial_delay_s=seconds["initial_delay_s"],
        max_delay_s=seconds["max_delay_s"],
        connect_timeout_s=seconds["connect_timeout_s"],
        keepalive_interval_s=seconds["keepalive_interval_s"],
        keepalive_count_max=count,
        call_wait_s=seconds["call_wait_s"],
    )


def _parse_target(name: str, value: object, *, source: str) -> TargetConfig:
    prefix = _dotted("targets", name)
    if not TARGET_NAME_RE.fullmatch(name):
        raise ConfigError(
            source,
            prefix,
            f"target name {_show(name)} is invalid; expected 1-32 characters of a-z, 0-9, '_', '-'",
        )
    table = _want_table(value, source=source, key=prefix)
    _check_keys(table, TARGET_KEYS, source=source, prefix=prefix)

    def key(k: str) -> str:
        return f"{prefix}.{k}"

    ssh = None
    if "ssh" in table:
        ssh = parse_ssh_destination(
            _want_str(table["ssh"], source=source, key=key("ssh")), source=source, key=key("ssh")
        )
    cdp = None
    if "cdp" in table:
        cdp = parse_cdp_address(
            _want_str(table["cdp"], source=source, key=key("cdp")), source=source, key=key("cdp")
        )
    profile = None
    if "profile" in table:
        profile = _check_profile(
            _want_str(table["profile"], source=source, key=key("profile")),
            source=source,
            key=key("profile"),
        )
    policy: HostKeyPolicy = "strict"
    if "host_key_policy" in table:
        text = _want_str(table["host_key_policy"], source=source, key=key("host_key_policy"))
        if text not in HOST_KEY_POLICIES:
            raise ConfigError(
                source,
                key("host_key_policy"),
                f"{_show(text)} is not a host key policy; expected one of "
                + ", ".join(repr(p) for p in HOST_KEY_POLICIES),
            )
        policy = text
    expose = None
    if "expose" in table:
        expose = _want_int(table["expose"], source=source, key=key("expose"))
        if not 1 <= expose <= 65535:
            raise ConfigError(
                source, key("expose"), f"port {expose} is out of range; expected 1..65535"
            )
    redact = True
    if "redact" in table:
        redact = _want_bool(table["redact"], source=source, key=key("redact"))
    timeout = 30.0
    if "command_timeout_s" in table:
        timeout = _want_seconds(
            table["command_timeout_s"], source=source, key=key("command_timeout_s")
        )
    launch = False
    if "launch" in table:
        launch = _want_bool(table["launch"], source=source, key=key("launch"))
        if launch and ssh is not None:
            raise ConfigError(
                source,
                key("launch"),
                "launch applies only to local targets (no 'ssh'); "
                "start Chrome on the remote host yourself",
            )
    reconnect = ReconnectPolicy()
    if "reconnect" in table:
        reconnect = _parse_reconnect(table["reconnect"], source=source, key=key("reconnect"))
    options: dict[str, int | bool] = {}  # keys whose defaults live in TargetConfig
    for name_ in ("console_buffer", "network_buffer"):
        if name_ in table:
            size = _want_int(table[name_], source=source, key=key(name_))
            if not MIN_BUFFER <= size <= MAX_BUFFER:
                raise ConfigError(source, key(name_), f"{size} is out of range; expected "
                                  f"{MIN_BUFFER}..{MAX_BUFFER} entries")
            options[name_] = size
    for name_ in ("allow_cdp", "allow_evaluate"):
        if name_ in table:
            options[name_] = _want_bool(table[name_], source=source, key=key(name_))
    cdp_allow = None
    if "cdp_allow" in table:
        cdp_allow = _parse_cdp_allow(table["cdp_allow"], source=source, key=key("cdp_allow"))
    schemes: frozenset[str] = frozenset()
    if "allow_schemes" in table:
        schemes = _parse_schemes(table["allow_schemes"], source=source,
                                 key=key("allow_schemes"))
    return TargetConfig(
        name=name,
        ssh=ssh,
        cdp=cdp,
        profile=profile,
        host_key_policy=policy,
        expose_port=expose,
        redact=redact,
        command_timeout_s=timeout,
        launch=launch,
        reconnect=reconnect,
        cdp_allow=cdp_allow,
        allow_schemes=schemes,
        **options,  # type: ignore[arg-type]  # each key checked above
    )


def _read_toml(path: str) -> dict[str, object]:
    """Read and parse the targets file, translating every failure to ConfigError."""
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        raise ConfigError(path, "", "targets file not found") from None
    except IsADirectoryError:
        raise ConfigError(path, "", "is a directory, expected a TOML targets file") from None
    except OSError as exc:
        raise ConfigError(path, "", f"cannot read targets file: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            path, "", f"not UTF-8 text (byte {exc.start}); TOML files are UTF-8"
        ) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        # tomllib's message already carries "(at line L, column C)".
        raise ConfigError(path, "", f"TOML syntax error: {exc}") from None
    except ValueError as exc:  # an integer beyond Python's 4300-digit conversion limit
        raise ConfigError(path, "", f"TOML value rejected: {exc}") from None
    except RecursionError:  # tomllib recurses on nested arrays / inline tables
        raise ConfigError(path, "", "TOML arrays or inline tables nested too deeply") from None


def _load_file(path: str, environ: Mapping[str, str]) -> GatewayConfig:
    """Everything a targets file says; ``call_log`` is None when absent or false."""
    data = _read_toml(path)
    for name in data:
        if name not in _TOP_LEVEL_KEYS:
            raise ConfigError(
                path,
                _dotted("", name),
                "unknown top-level key; expected only [gateway] and [targets.<name>]",
            )
    call_log: Path | None = None
    switches: dict[str, bool] = {}
    if "gateway" in data:
        gateway = _want_table(data["gateway"], source=path, key="gateway")
        _check_keys(gateway, _GATEWAY_KEYS, source=path, prefix="gateway")
        for name in ("allow_any_path", "read_only"):
            if name in gateway:
                switches[name] = _want_bool(gateway[name], source=path, key=f"gateway.{name}")
        if "call_log" in gateway:
            value = gateway["call_log"]
            if isinstance(value, bool):
                call_log = default_call_log_path(environ) if value else None
            elif isinstance(value, str):
                if not value.strip():
                    raise ConfigError(
                        path, "gateway.call_log", "empty path; use false to turn the call log off"
                    )
                if "\x00" in value or "\n" in value or "\r" in value:
                    raise ConfigError(
                        path, "gateway.call_log", "path must not contain NUL or newline characters"
                    )
                call_log = Path(_expand_home(value.strip(), environ))
            else:
                raise ConfigError(
                    path,
                    "gateway.call_log",
                    f"expected a path string or true/false, got {_type_name(value)}",
                )
    targets_table = _want_table(data.get("targets", {}), source=path, key="targets")
    if not targets_table:
        raise ConfigError(
            path, "targets", "no targets defined; add at least one [targets.<name>] table"
        )
    targets: list[TargetConfig] = []
    exposed: dict[int, str] = {}
    for name, value in targets_table.items():
        target = _parse_target(name, value, source=path)
        if target.expose_port is not None:
            other = exposed.get(target.expose_port)
            if other is not None:
                raise ConfigError(
                    path,
                    _dotted(_dotted("targets", name), "expose"),
                    f"port {target.expose_port} is already exposed by target {other!r}",
                )
            exposed[target.expose_port] = name
        targets.append(target)
    return GatewayConfig(targets=tuple(targets), call_log=call_log, source=path, **switches)


def _env(environ: Mapping[str, str], name: str) -> str | None:
    """An env var's value, with "set but empty" treated as unset (MCP clients emit that)."""
    value = environ.get(name, "")
    return value if value != "" else None


def load_config(
    environ: Mapping[str, str], config_path: str | None = None, *, read_only: bool = False
) -> GatewayConfig:
    """Build the gateway's configuration from ``environ`` and an optional targets file.

    ``config_path`` is the ``--config`` argument; it overrides
    ``CHROME_SSH_GATEWAY_CONFIG``. ``read_only`` is the ``--read-only`` flag; the
    env var and ``[gateway] read_only`` can only turn read-only mode on, never off.
    Raises ``ConfigError`` on anything invalid — the only exception this function raises.
    """
    config = _load_targets(environ, config_path)
    env_read_only = _env(environ, ENV_READ_ONLY)
    if env_read_only is not None:
        word = env_read_only.strip().lower()
        if word not in _TRUE_WORDS | _FALSE_WORDS:
            raise ConfigError(ENV_READ_ONLY, "", f"{_show(env_read_only)} is not a switch; "
                              "expected 1/0, true/false, yes/no or on/off")
        read_only = read_only or word in _TRUE_WORDS
    return replace(config, read_only=True) if read_only else config


def _load_targets(environ: Mapping[str, str], config_path: str | None) -> GatewayConfig:
    """``load_config`` without the read-only switch: where the targets come from."""
    ssh_text = _env(environ, ENV_SSH_PROXY_TO)
    cdp_text = _env(environ, ENV_CDP_URL)
    port_text = _env(environ, ENV_SSH_PROXY_PORT)
    log_text = _env(environ, ENV_CALL_LOG)

    env_log: Path | None = None
    if log_text is not None:
        env_log = _call_log_from_text(log_text, environ, source=ENV_CALL_LOG)

    path = config_path if config_path is not None else _env(environ, ENV_CONFIG)
    path_source = "--config" if config_path is not None else ENV_CONFIG
    if path is not None:
        if not path.strip():
            raise ConfigError(path_source, "", "empty path; expected a TOML targets file")
        if "\x00" in path:
            raise ConfigError(path_source, "", "path contains a NUL character")
        for name, value in (
            (ENV_SSH_PROXY_TO, ssh_text),
            (ENV_CDP_URL, cdp_text),
            (ENV_SSH_PROXY_PORT, port_text),
        ):
            if value is not None:
                raise ConfigError(
                    name,
                    "",
                    f"set either {name} or a targets file ({path}), not both; "
                    "move this setting into the file",
                )
        path = _expand_home(path, environ)
        config = _load_file(path, environ)
        return replace(config, call_log=env_log) if log_text is not None else config

    cdp = parse_cdp_address(cdp_text, source=ENV_CDP_URL, key="") if cdp_text is not None else None
    if ssh_text is not None:
        ssh = parse_ssh_destination(ssh_text, source=ENV_SSH_PROXY_TO, key="")
        expose = None
        if port_text is not None:
            expose = _parse_port(port_text.strip(), source=ENV_SSH_PROXY_PORT, key="", what="port")
        target = TargetConfig(name="default", ssh=ssh, cdp=cdp, expose_port=expose)
        return GatewayConfig(targets=(target,), call_log=env_log, source=f"env {ENV_SSH_PROXY_TO}")
    if port_text is not None:
        raise ConfigError(
            ENV_SSH_PROXY_PORT, "", f"only applies together with {ENV_SSH_PROXY_TO}; set that too"
        )
    if cdp is not None:
        target = TargetConfig(name="local", ssh=None, cdp=cdp, launch=False)
        return GatewayConfig(targets=(target,), call_log=env_log, source=f"env {ENV_CDP_URL}")
    target = TargetConfig(name="local", ssh=None, cdp=None, launch=True)
    return GatewayConfig(targets=(target,), call_log=env_log, source="embedded default")
