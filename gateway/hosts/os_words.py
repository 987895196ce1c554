"""What a socket, file or TLS failure means, in the gateway's words.

An ``OSError``'s text is whatever raised it wrote (``[Errno 104] Connection reset by
peer``, asyncio's "Multiple exceptions: …", OpenSSL's ``[SSL:
CERTIFICATE_VERIFY_FAILED] …``): the maps (``ssh_errors``, ``socket_errors``,
``websocket_errors``) say it with this instead, read off what the error *is* — its
errno, its kind — so a client hears the same words whichever library was underneath.
"""

from __future__ import annotations

import errno
import os
import socket
import ssl

__all__ = ["os_reason"]

_ERRNO: dict[int, str] = {
    errno.ECONNREFUSED: "the connection was refused: nothing listens there",
    errno.ECONNRESET: "the connection was reset by the other end",
    errno.ECONNABORTED: "the connection was aborted",
    errno.EPIPE: "the connection broke while sending",
    errno.ETIMEDOUT: "the connection timed out",
    errno.EHOSTUNREACH: "there is no route to the host",
    errno.ENETUNREACH: "the network is unreachable",
    errno.EHOSTDOWN: "the host is down",
    errno.ENOENT: "no such file or socket",
    errno.EACCES: "permission denied",
    errno.EPERM: "not permitted",
    errno.EADDRINUSE: "the address is already in use",
    errno.EADDRNOTAVAIL: "the address is not available on this machine",
    errno.EMFILE: "too many open files in the gateway",
    errno.ENFILE: "too many open files on this machine",
    errno.ENOSPC: "no space left on the disk",
    errno.ENAMETOOLONG: "the path is too long",
    errno.EISDIR: "it is a directory",
    errno.ENOTDIR: "a part of the path is not a directory",
    errno.EEXIST: "it exists already",
    errno.ENOTCONN: "the connection is not open",
}


def os_reason(exc: BaseException) -> str:
    """What ``exc`` (an ``OSError``, or an error wrapping one as its cause) means."""
    if isinstance(exc, ssl.SSLCertVerificationError):
        return "the endpoint's TLS certificate is not trusted (not signed by a known CA)"
    if isinstance(exc, ssl.SSLError):
        return "the TLS handshake failed (is it TLS at all? is the certificate right?)"
    if isinstance(exc, socket.gaierror):
        return "the host name does not resolve"
    if isinstance(exc, TimeoutError):
        return "the connection timed out"
    if isinstance(exc, OSError) and exc.errno is not None:
        return _ERRNO.get(exc.errno) or os.strerror(exc.errno).lower()
    cause = exc.__cause__ or exc.__context__
    if isinstance(cause, OSError):
        return os_reason(cause)
    return "the connection failed"
