"""asyncssh's failures as the gateway's errors: one table, as httpcore maps its own.

Every SSH operation (``ssh.py``, a share's SFTP step) runs under ``map_exceptions``
with this table, saying only what its failure and its timeout mean. What went wrong is
said in the gateway's words (``reason``), read off the kind of error asyncssh raised
(or the OS's errno under it) — never asyncssh's own text, which names its internals.
"""

from __future__ import annotations

from collections.abc import Callable

from gateway.errors import ExceptionMap, HostError, NothingListens
from gateway.hosts.asyncssh_import import asyncssh
from gateway.hosts.os_words import os_reason

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
    """What an asyncssh (or socket) failure means, in the gateway's words; a config
    value asyncssh could not use (``ValueError``) is quoted: it is the user's."""
    if isinstance(exc, asyncssh.ChannelOpenError):
        return _CHANNEL_CODES.get(exc.code, "the SSH server refused to open a channel")
    for kinds, words in _SSH_WORDS:
        if isinstance(exc, kinds):
            return words
    if isinstance(exc, ValueError) and not isinstance(exc, OSError):  # (ssl's errors are both)
        return f"an SSH setting cannot be used ({exc})"
    return os_reason(exc)


_CHANNEL_CODES = {
    asyncssh.OPEN_ADMINISTRATIVELY_PROHIBITED: "the SSH server refused to connect to it, or "
    "its sshd_config forbids forwarding (AllowTcpForwarding, AllowStreamLocalForwarding)",
    asyncssh.OPEN_CONNECT_FAILED: "the SSH server could not connect to it",
    asyncssh.OPEN_RESOURCE_SHORTAGE: "the SSH server has no channel to spare (its MaxSessions)",
}
_SSH_WORDS: tuple[tuple[type[Exception] | tuple[type[Exception], ...], str], ...] = (
    (asyncssh.TimeoutError, "the command timed out"),
    (asyncssh.ProcessError, "the command failed"),
    (asyncssh.ConnectionLost, "the SSH connection was lost"),
    (asyncssh.PermissionDenied, "the SSH server refused the login"),
    (asyncssh.HostKeyNotVerifiable, "the SSH host key could not be verified"),
    (asyncssh.IllegalUserName, "the SSH user name is not valid"),
    ((asyncssh.KeyExchangeFailed, asyncssh.MACError, asyncssh.CompressionError,
      asyncssh.ProtocolNotSupported, asyncssh.ProtocolError, asyncssh.ServiceNotAvailable),
     "the SSH server and the gateway could not agree on the protocol (version, key "
     "exchange, ciphers)"),
    (asyncssh.DisconnectError, "the SSH server closed the connection"),
    ((asyncssh.SFTPNoSuchFile, asyncssh.SFTPNoSuchPath), "no such file there"),
    ((asyncssh.SFTPPermissionDenied, asyncssh.SFTPWriteProtect), "permission denied there"),
    ((asyncssh.SFTPNoSpaceOnFilesystem, asyncssh.SFTPQuotaExceeded), "no space left there"),
    ((asyncssh.SFTPConnectionLost, asyncssh.SFTPNoConnection, asyncssh.SFTPEOFError),
     "the SFTP session was lost"),
    (asyncssh.SFTPOpUnsupported, "the SSH server's SFTP cannot do this"),
    (asyncssh.SFTPError, "the SSH server's SFTP refused it"),
    (asyncssh.Error, "the SSH connection failed"),
)
"""asyncssh's errors, most specific first (a subclass before its base)."""


CHANNEL_ERRORS: ExceptionMap = {
    asyncssh.ChannelOpenError: lambda exc: NothingListens(f"nothing listens there ({reason(exc)})"),
    (OSError, asyncssh.Error): lambda exc: HostError(reason(exc))}
"""An HTTP request's channel: sshd refusing it means nothing listens at the address
(``request`` says what a timeout means)."""
