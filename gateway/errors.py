"""One exception hierarchy for the whole gateway.

Library exceptions (asyncssh, websockets, OSError, json) are translated into
these once, at the boundary where they happen (``ssh.py``, ``cdp.py``,
``discovery.py``), by ``map_exceptions`` and one table per library there.
Everything above that layer speaks only ``GatewayError``, and the tool layer turns
any ``GatewayError`` into an MCP tool error whose text is ``str(error)``: what
happened, then what to do next.

::

    GatewayError
    ├── ConfigError            bad targets file / env value (refused at start)
    ├── InvalidArgument        a tool argument the gateway refuses
    ├── NotAllowed             the target's policy forbids it (allow_cdp, cdp_allow, …)
    ├── TargetNotFound         no target of that name
    ├── TargetAmbiguous        several targets and none named
    ├── TargetRemoved          the target was taken off the registry while serving
    ├── TargetUnavailable      target is down (reason inside); also the base of
    │   ├── TunnelError        SSH connect / auth / forward failed
    │   │   └── HostKeyError   unknown or changed host key
    │   └── DiscoveryError     no DevTools endpoint found on the host
    ├── HostError              a host could not run, read or connect (reason only: a
    │   ├── HostKeyRejected    host serves several targets; ``TargetUnavailable.of`` names one)
    │   ├── LoginRefused       the SSH server accepted none of the keys offered
    │   ├── NothingListens     no program listens at the address asked for, on the host
    │   └── StagingFailed      files to upload not copied, and their directory left there
    ├── BrowserClosed          the CDP websocket went away mid-call
    ├── CdpError               Chrome answered a command with an error
    ├── CdpTimeout             Chrome did not answer in time
    ├── MalformedReply         a reply of the wrong shape (a proxy corrupting CDP?)
    ├── TabNotFound            unknown / closed / pre-restart tab id
    ├── NavigationError        the browser could not load a URL
    ├── DialogOpen             a JavaScript dialog blocks the tab
    ├── StaleRef               a view ref whose element or document is gone
    ├── ActionFailed           an element cannot take the action (hidden, disabled, …)
    ├── JavaScriptError        evaluated code threw or rejected
    ├── CaptureFailed          a performance trace or heap snapshot could not be taken
    ├── DaemonError            the background gateway of ``call`` could not be used
    └── ShareRefused           DEST cannot take a share (name live there, unsafe directory)
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any

__all__ = [
    "ActionFailed",
    "BrowserClosed",
    "CaptureFailed",
    "CdpError",
    "CdpTimeout",
    "ConfigError",
    "ConsentNotGiven",
    "DaemonError",
    "DialogOpen",
    "DiscoveryError",
    "ExceptionMap",
    "GatewayError",
    "HostError",
    "HostKeyError",
    "HostKeyRejected",
    "InvalidArgument",
    "JavaScriptError",
    "LoginRefused",
    "MalformedReply",
    "NavigationError",
    "NotAllowed",
    "NothingListens",
    "ShareRefused",
    "StagingFailed",
    "StaleRef",
    "TabHeld",
    "TabNotFound",
    "TargetAmbiguous",
    "TargetNotFound",
    "TargetRemoved",
    "TargetUnavailable",
    "TunnelError",
    "map_exceptions",
]


class GatewayError(Exception):
    """Base of every error the gateway reports; ``str()`` is the user-facing text."""

    @property
    def cause(self) -> str:
        """What went wrong, without the wrapper a subclass puts around it (``target 'x'
        unreachable (…)``): for messages that name the target themselves."""
        return str(self)


class ConfigError(GatewayError):
    """A targets file or environment value is malformed.

    Carries where (``source``: file path or env var, ``key``) so the message at
    start-up points at the exact line to fix.
    """

    def __init__(self, source: str, key: str, reason: str) -> None:
        self.source = source
        self.key = key
        self.reason = reason
        where = f"{source}: {key}" if key else source
        super().__init__(f"{where}: {reason}")


class InvalidArgument(GatewayError):
    """A tool argument that is well-typed but not acceptable (method name, URL, id)."""


class NotAllowed(GatewayError):
    """Well-formed, but the target's configuration forbids it (``allow_cdp = false``,
    ``cdp_allow``, ``allow_evaluate = false``, ``allow_schemes``). The text names the
    setting, so the operator knows what to change and the agent knows to stop retrying."""


class TargetNotFound(GatewayError):
    def __init__(self, name: str, known: list[str]) -> None:
        self.name = name
        listing = ", ".join(known) if known else "none configured"
        super().__init__(
            f"unknown target {name!r}; configured targets: {listing}. "
            "Call list_targets to see them."
        )


class TargetAmbiguous(GatewayError):
    def __init__(self, known: list[str]) -> None:
        super().__init__(
            f"several targets are configured ({', '.join(known)}); "
            "pass target=<name> (see list_targets)"
        )


class TargetUnavailable(GatewayError):
    """The target cannot serve calls now; the message carries the last reason."""

    def __init__(self, target: str, reason: str) -> None:
        self.target = target
        self.reason = reason
        super().__init__(f"target {target!r} unreachable ({reason})")

    @property
    def cause(self) -> str:
        return self.reason


class TargetRemoved(TargetNotFound):
    """A target that existed, taken off the registry while the gateway serves (its
    browser went away for good, or the targets file no longer names it)."""

    def __init__(self, name: str, why: str, known: list[str]) -> None:
        self.name = name
        listing = ", ".join(known) if known else "none left"
        GatewayError.__init__(self, f"target {name!r} {why}; targets now: {listing}. "
                              "Call list_targets to see them.")


class TunnelError(TargetUnavailable):
    """SSH connection, authentication or port forward failed."""

    @classmethod
    def of(cls, target: str, exc: HostError) -> TunnelError:
        """The target-level error for a host failure met on ``target``'s behalf."""
        kind = HostKeyError if isinstance(exc, HostKeyRejected) else cls
        return kind(target, exc.reason)


class HostKeyError(TunnelError):
    """The host's key is unknown or differs from known_hosts: never connect silently."""


class HostError(GatewayError):
    """A host (this machine, or one over SSH) could not do what was asked.

    Carries only the reason: one host serves the browsers of several targets, so
    the browser layer, which knows which target it was working for, turns it into
    a ``TargetUnavailable`` (``TunnelError.of``, ``DiscoveryError``)."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


class HostKeyRejected(HostError):
    """The host offered a key known_hosts does not trust (unknown, or changed)."""


class LoginRefused(HostError):
    """The SSH server accepted none of the keys offered: the login itself was refused."""


class NothingListens(HostError):
    """The host answered that nothing listens at the address (over SSH: the channel open
    was refused) — the link works, the port is wrong or its program is not running."""


class StagingFailed(HostError):
    """Copying files to upload failed after their private directory was made on the
    host, and removing it failed too (the link went): ``directory`` is left for the
    browser's next sweep of staged files to remove."""

    def __init__(self, reason: str, directory: str) -> None:
        self.directory = directory
        super().__init__(reason)


class DiscoveryError(TargetUnavailable):
    """The SSH link works but no DevTools endpoint answered on the host."""


class ConsentNotGiven(DiscoveryError):
    """A person's own Chrome was asked to allow remote debugging and did not: they
    declined, or nobody answered. Never retried by itself — each try is a new dialog."""


class BrowserClosed(GatewayError):
    """The browser's websocket closed while a command was in flight."""


class CdpError(GatewayError):
    """Chrome answered a command with ``{"error": {...}}``."""

    def __init__(self, method: str, code: int, message: str) -> None:
        self.method = method
        self.code = code
        self.message = message
        super().__init__(f"{method} failed: {message} (CDP error {code})")


class CdpTimeout(GatewayError):
    def __init__(self, method: str, timeout_s: float, hint: str = "") -> None:
        self.method = method
        self.timeout_s = timeout_s
        text = f"{method} got no answer within {timeout_s:g} s"
        super().__init__(f"{text}; {hint}" if hint else text)


class MalformedReply(GatewayError):
    """The browser answered a command with a reply of the wrong shape.

    Not a ``CdpError``: callers read a ``CdpError`` as "Chrome refused" (a stale
    node, a body no longer held) and would explain this one wrongly. Whether the
    command took effect is unknown, so the text says to check before retrying.
    """

    def __init__(self, method: str, target: str, detail: str) -> None:
        self.method = method
        self.target = target
        super().__init__(
            f"the browser sent a malformed reply to {method} on target {target!r} ({detail}); "
            "whether the command took effect is unknown — check, then retry; if it repeats, "
            "whatever sits between the gateway and the browser is corrupting CDP traffic")


class TabNotFound(GatewayError):
    def __init__(self, tab: int, reason: str) -> None:
        self.tab = tab
        super().__init__(f"tab {tab} {reason}; call list_tabs for the current tab ids")


class TabHeld(GatewayError):
    """A person holds the tab (``handoff``): the agent's tools that would change it are
    refused at once (reads go on) until the person is done."""

    def __init__(self, tab: int, reason: str) -> None:
        self.tab = tab
        super().__init__(f"tab {tab} is with a person {self.asked(reason)}; call handoff "
                         "with wait: true to wait for them to press Done")

    @staticmethod
    def asked(reason: str) -> str:
        """What the person was asked, quoted as the agent wrote it: words of ours around
        it would read as part of it ("sign in, then press Done, then press Done")."""
        return f"(asked: {reason!r})"


class NavigationError(GatewayError):
    """Chrome reported that loading a URL failed (``errorText``), or the tab went away."""


class DialogOpen(GatewayError):
    """An alert/confirm/prompt/beforeunload dialog is open: the page runs nothing until
    it is answered, so calls fail fast instead of timing out behind it."""

    def __init__(self, tab: int, kind: str, message: str) -> None:
        self.tab = tab
        text = message if len(message) <= 200 else message[:199] + "…"
        super().__init__(f"tab {tab} has an open {kind} dialog ({text!r}); answer it with "
                         f"handle_dialog(tab={tab}, accept=true|false), then retry")


class StaleRef(GatewayError):
    """A ref that is not in the tab's current view, or whose document is gone."""


class ActionFailed(GatewayError):
    """The element exists but cannot take the action: hidden, disabled, covered, …"""


class JavaScriptError(GatewayError):
    """The evaluated expression threw, or its promise rejected."""


class CaptureFailed(GatewayError):
    """A performance trace or heap snapshot could not be taken or saved: one already
    running, none to stop, the tab gone mid-capture, larger than ``max_capture_mb``."""


class DaemonError(GatewayError):
    """The background gateway ``call`` uses could not be started, reached or stopped, or
    its runtime directory or pid file looks tampered with."""


class ShareRefused(GatewayError):
    """``share``: DEST cannot take this share — the name is live there, the shares
    directory or the socket sshd made is not private, sshd refuses Unix sockets — and
    trying again would not help, so ``share`` exits with this."""


ExceptionMap = Mapping[type[Exception] | tuple[type[Exception], ...],
                       Callable[[Any], GatewayError]]
"""A library's exception types → what makes the gateway's error of one (its text says
what to do next). The first entry that matches wins: a subclass goes before its base
(``TimeoutError`` before ``OSError``)."""


@contextlib.contextmanager
def map_exceptions(table: ExceptionMap) -> Iterator[None]:
    """Raise the gateway's error for a library exception of the block, as ``table`` says.

    Anything ``table`` does not name passes through as itself — a ``GatewayError``, a
    bug, the caller's cancellation (not an ``Exception``) — so a table lists exactly the
    library's failures an operation can meet, and a test can check each of them.
    """
    try:
        yield
    except Exception as exc:
        for kind, error in table.items():
            if isinstance(exc, kind):
                raise error(exc) from None
        raise
