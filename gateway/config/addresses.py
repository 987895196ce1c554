"""Where a target's host and browser are: SSH destinations and CDP addresses (pure).

Both are parsed from what a user writes in an env var or the targets file, and
refused with a ``BadValue`` (the reason; whoever knows the source and key makes it
the ``ConfigError``) when they could not work or could be abused: an SSH
destination ends up as an asyncssh host argument and in log lines, a CDP address
in HTTP Host headers.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from gateway.config.text import BadValue, bad_char, show

__all__ = ["CdpAddress", "SshDestination", "host_port", "parse_cdp_address", "parse_port",
           "parse_ssh_destination"]


def host_port(host: str, port: int) -> str:
    """``host:port``, with an IPv6 literal in brackets so its colons do not eat the port."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


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
        host = self.host if self.port is None else host_port(self.host, self.port)
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


_PORT_RE = re.compile(r"[0-9]{1,5}")


def parse_port(text: str, *, what: str) -> int:
    """Parse a decimal port; ``int()`` alone would accept ``+22``, ``2_2`` or ``٢٢``."""
    if not _PORT_RE.fullmatch(text):
        raise BadValue(f"{what} {show(text)} is not a number in 1..65535")
    port = int(text)
    if not 1 <= port <= 65535:
        raise BadValue(f"{what} {port} is out of range; expected 1..65535")
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


def _check_ssh_host(host: str, *, text: str) -> None:
    if not host:
        raise BadValue(f"{show(text)} has no host; expected [user@]host[:port]")
    if host.startswith("-"):
        raise BadValue(f"host {show(host)} must not start with '-' (it would read as an option)")
    if ":" in host:
        if not _is_ipv6(host):
            raise BadValue(f"{show(host)} is not a valid IPv6 address")
        return
    if not _SSH_HOST_RE.fullmatch(host):
        raise BadValue(f"host {show(host)} has characters a host name or ssh alias cannot have; "
                       "expected letters, digits, '.', '-', '_'")


def _bracketed(text: str, part: str, expected: str) -> tuple[str, str]:
    """``part`` starting ``[``: the IPv6 address inside and what follows ``]``."""
    close = part.find("]")
    if close < 0:
        raise BadValue(f"{show(text)} has '[' without ']'; {expected}")
    return part[1:close], part[close + 1:]


def parse_ssh_destination(text: str) -> SshDestination:
    """Parse ``[user@]host[:port]``, ``[user@][ipv6][:port]``, bare IPv6 or ``ssh://...``.

    The value ends up as an asyncssh host argument and in log lines, so anything
    that could be read as an option (leading ``-``), split into several words
    (whitespace) or break a log line (control characters) is refused here.
    Surrounding whitespace is stripped: env values pasted with a newline are common.
    """
    text = text.strip()
    if not text:
        raise BadValue("SSH destination is empty; expected [user@]host[:port]")
    bad = bad_char(text)
    if bad is not None:
        raise BadValue(f"SSH destination {show(text)} contains whitespace or a control character "
                       f"({bad!r}); expected [user@]host[:port]")
    if text.startswith("-"):
        raise BadValue(
            f"SSH destination {show(text)} must not start with '-' (it would read as an option)")
    rest = text
    if rest.lower().startswith("ssh://"):
        rest = rest[len("ssh://") :].rstrip("/")
        if "/" in rest:
            raise BadValue(f"ssh:// URL {show(text)} must not have a path")

    user: str | None = None
    if "@" in rest:
        # OpenSSH splits at the last '@': user names may contain one (user@domain).
        user, _, rest = rest.rpartition("@")
        if not user:
            raise BadValue(f"{show(text)} has an empty user before '@'; expected user@host")
        if user.startswith("-"):
            raise BadValue(
                f"user {show(user)} must not start with '-' (it would read as an option)")
        if not _SSH_USER_RE.fullmatch(user):
            raise BadValue(f"user {show(user)} has characters a user name cannot have")

    port: int | None = None
    if rest.startswith("["):
        host, after = _bracketed(text, rest, "expected [ipv6]:port")
        if after:
            if not after.startswith(":"):
                raise BadValue(f"unexpected {show(after)} after ']'; expected [ipv6]:port")
            port = parse_port(after[1:], what="SSH port")
        if not host:
            raise BadValue(f"{show(text)} has empty brackets; expected [ipv6]:port")
    elif rest.count(":") == 1:
        host, _, port_text = rest.partition(":")
        port = parse_port(port_text, what="SSH port")
    elif rest.count(":") > 1:
        if not _is_ipv6(rest):
            raise BadValue(f"{show(rest)} is not an IPv6 address; to give a port with an IPv6 "
                           "address write [address]:port")
        host = rest
    else:
        host = rest
    _check_ssh_host(host, text=text)
    return SshDestination(host=host, user=user, port=port)


_CDP_SCHEMES = ("http", "https", "ws", "wss")
_BROWSER_PATH_PREFIX = "/devtools/browser/"
_BROWSER_PATH_RE = re.compile(r"/devtools/browser/[A-Za-z0-9._-]+")


def parse_cdp_address(text: str) -> CdpAddress:
    """Parse where Chrome listens: ``host:port``, ``http(s)://host:port[/...]`` or a ws URL.

    The host must be an IP literal or ``localhost`` because Chrome answers
    ``/json/*`` only for such Host headers; a port is required because guessing
    80 would point at the wrong service. The scheme is accepted for convenience
    (users paste what ``chrome://inspect`` or ``/json/version`` shows) but not kept.
    """
    text = text.strip()
    expected = "expected host:port, http://host:port or ws://host:port/devtools/browser/<id>"
    if not text:
        raise BadValue(f"CDP address is empty; {expected}")
    bad = bad_char(text)
    if bad is not None:
        raise BadValue(
            f"CDP address {show(text)} contains whitespace or a control character ({bad!r})")
    scheme = ""
    rest = text
    if "://" in text:
        scheme, _, rest = text.partition("://")
        scheme = scheme.lower()
        if scheme not in _CDP_SCHEMES:
            raise BadValue(
                f"CDP address scheme {show(scheme)} is not one of {', '.join(_CDP_SCHEMES)}")
    cut = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    authority, tail = rest[:cut], rest[cut:]
    if "@" in authority:
        raise BadValue(f"CDP address {show(text)} must not contain user@")
    path = tail
    if "?" in path or "#" in path:
        raise BadValue(f"CDP address {show(text)} must not have a query or fragment")

    if authority.startswith("["):
        host, after = _bracketed(text, authority, expected)
        if not after.startswith(":"):
            raise BadValue(f"CDP address {show(text)} needs a port; {expected}")
        port_text = after[1:]
    elif authority.count(":") == 1:
        host, _, port_text = authority.partition(":")
    elif authority.count(":") > 1:
        raise BadValue(f"{show(text)}: write an IPv6 address in brackets, e.g. [::1]:9222")
    else:
        raise BadValue(f"CDP address {show(text)} needs a port; {expected}")

    if host.lower() == "localhost":
        host = "localhost"
    else:
        try:
            ipaddress.IPv4Address(host)
        except ValueError:
            if not _is_ipv6(host):
                raise BadValue(f"CDP host {show(host)} must be an IP address or 'localhost' "
                               "(Chrome refuses DevTools requests for other host names)") from None
    port = parse_port(port_text, what="CDP port")

    browser_path: str | None = None
    if scheme in ("ws", "wss") and path.startswith(_BROWSER_PATH_PREFIX):
        if not _BROWSER_PATH_RE.fullmatch(path):
            raise BadValue(
                f"browser path {show(path)} is malformed; expected /devtools/browser/<id>")
        browser_path = path
    return CdpAddress(host=host, port=port, browser_path=browser_path)
