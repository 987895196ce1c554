"""asyncssh's failures as the gateway's errors: one table, as httpcore maps its own.

Every SSH operation (``ssh.py``, a share's SFTP step) runs under ``map_exceptions``
with this table, saying only what its failure and its timeout mean; asyncssh's own
reason, or the OS's words under it, is kept in the text.
"""

from __future__ import annotations

from collections.abc import Callable

from gateway.errors import ExceptionMap, HostError, NothingListens
from gateway.hosts.asyncssh_import import asyncssh

__all__ = ["CHANNEL_ERRORS", "command_errors", "reason", "ssh_errors"]


def ssh_errors(failed: Callable[[str], str], timed_out: str, *,
               error: Callable[[str], HostError] = HostError, first: ExceptionMap | None = None,
               also: tuple[type[Exception], ...] = ()) -> ExceptionMap:
    """asyncssh's failures, and the socket's under it, as ``error`` (a ``HostError``): the
    one table of asyncssh's, each operation saying what ``failed`` (given the reason)
    and what ``timed_out``; ``first``: failures an operation tells apart; ``also``: more
    exception types it can meet (a connect's ``ValueError``: an unusable ssh config)."""
    return {**(first or {}), TimeoutError: lambda _: error(timed_out),
            (OSError, asyncssh.Error, *also): lambda exc: error(failed(reason(exc)))}


def command_errors(timeout_s: float) -> ExceptionMap:
    """A shell command's (``run``, ``hold``)."""
    return ssh_errors(lambda why: f"could not run a command over SSH ({why})",
                      f"a command over SSH timed out after {timeout_s:g} s")


def reason(exc: Exception) -> str:
    """asyncssh's own reason, else the OS's words, else at least the exception's name."""
    return getattr(exc, "reason", "") or str(exc) or type(exc).__name__


CHANNEL_ERRORS: ExceptionMap = {
    asyncssh.ChannelOpenError: lambda exc: NothingListens(f"nothing listens there ({exc.reason})"),
    (OSError, asyncssh.Error): lambda exc: HostError(reason(exc))}
"""An HTTP request's channel: sshd refusing it means nothing listens at the address
(``request`` says what a timeout means)."""
