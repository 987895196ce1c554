"""The few probes ``doctor`` makes itself, because inside asyncssh they are one
opaque call: the name lookup, the TCP connect with the SSH banner, the first
ProxyJump hop, and which client keys were offered and accepted.

Each network wait is bounded by the timeout it is given.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from collections.abc import Callable
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel
import asyncssh
from anyio.streams.buffered import BufferedByteReceiveStream
from asyncssh.public_key import decode_ssh_public_key

from gateway.hosts.local import connect_tcp

__all__ = [
    "Resolver",
    "describe_key",
    "first_hop",
    "offered_keys",
    "parse_hop",
    "read_banner",
    "resolve",
    "system_resolver",
    "used_key",
]

Resolver = Callable[[str, int], list[tuple[Any, ...]]]
"""``getaddrinfo``-like: (host, port) → address infos; raises ``socket.gaierror``."""


def system_resolver(host: str, port: int) -> list[tuple[Any, ...]]:
    return socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)


async def resolve(resolver: Resolver, host: str, port: int, timeout_s: float) -> list[str]:
    """The addresses of ``host``, looked up on a daemon thread.

    ``getaddrinfo`` cannot be cancelled: on a worker thread that is joined at exit,
    a resolver stuck on an unreachable DNS server would hold the doctor up long
    after its timeout. A daemon thread is simply abandoned.
    """
    done = anyio.Event()
    outcome: dict[str, Any] = {}
    token = anyio.lowlevel.current_token()

    def work() -> None:
        try:
            outcome["infos"] = resolver(host, port)
        except OSError as exc:
            outcome["error"] = exc
        with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits any more
            anyio.from_thread.run_sync(done.set, token=token)

    threading.Thread(target=work, name=f"resolve {host}", daemon=True).start()
    with anyio.fail_after(timeout_s):
        await done.wait()
    if "error" in outcome:
        raise outcome["error"]
    addresses: list[str] = []
    for info in outcome["infos"]:
        address = str(info[4][0])
        if address not in addresses:
            addresses.append(address)
    return addresses


BANNER_MAX = 64 * 1024  # more than this without a newline is no SSH banner


async def read_banner(address: str, port: int, timeout_s: float) -> str:
    """Connect and read the server's first line (sshd speaks first), or what came before
    the server closed; ``OSError`` (the OS's own, for its errno) or ``TimeoutError``."""
    with anyio.fail_after(timeout_s):
        async with await connect_tcp(address, port) as stream:
            buffered = BufferedByteReceiveStream(stream)
            try:
                line = await buffered.receive_until(b"\n", BANNER_MAX)
            except (anyio.IncompleteRead, anyio.DelimiterNotFound):
                line = bytes(buffered.buffer)
            except anyio.BrokenResourceError as exc:  # anyio's wrapper of the OS's error
                raise (exc.__cause__ or exc) from None
    return line.decode(errors="replace").strip()


def parse_hop(hop: str) -> tuple[str, str, int | None]:
    """``[user@]host[:port]`` (one ProxyJump hop) → (user or "", host, port or None)."""
    user, _, hostport = hop.rpartition("@")
    host, sep, port_text = hostport.rpartition(":")
    if not sep or not port_text.isdigit():
        return user, hostport, None
    return user, host, int(port_text)


async def first_hop(user: str, host: str, port: int | None) -> tuple[str, int]:
    """The host and port that a ProxyJump hop connects to, with ``~/.ssh/config``
    applied to it. Raises ``OSError``/``ValueError``/``asyncssh.Error`` for a
    config that cannot be applied."""
    jump = await asyncssh.SSHClientConnectionOptions.construct(
        None, config=(), host=host, port=port if port is not None else (),
        username=user or ())
    return str(jump.host), int(jump.port)


def describe_key(keypair: asyncssh.SSHKeyPair) -> str:
    """``/home/a/.ssh/id_ed25519 (ssh-ed25519 SHA256:…)`` — the file when there is one."""
    try:
        fingerprint = decode_ssh_public_key(keypair.public_data).get_fingerprint()
    except (asyncssh.KeyImportError, ValueError):
        fingerprint = ""
    # asyncssh keeps a local key pair's file name only on its private key object.
    inner = getattr(keypair, "_key", None)
    filename = inner.get_filename() if inner is not None else None
    name = (filename.decode(errors="replace") if isinstance(filename, bytes)
            else keypair.get_comment() or "agent key")
    return f"{name} ({keypair.get_algorithm()} {fingerprint})".replace(" )", ")")


def offered_keys(options: asyncssh.SSHClientConnectionOptions) -> list[str]:
    """What a login with ``options`` offers the server, as ``describe_key`` names it."""
    offered = [describe_key(k) for k in (options.client_keys or [])]
    if os.environ.get("SSH_AUTH_SOCK") and options.client_keys is not None:
        offered.insert(0, "the keys in ssh-agent (SSH_AUTH_SOCK)")
    return offered


def used_key(conn: asyncssh.SSHClientConnection,
             options: asyncssh.SSHClientConnectionOptions) -> str:
    """The key the server accepted, when it can be told.

    asyncssh has no public "which key authenticated": it pops keys off the front
    of its list as it tries them, so the accepted one is the last offered key
    no longer in that list. Any surprise in that private state → "" (unknown).
    """
    remaining = getattr(conn, "_client_keys", None)
    keys = list(options.client_keys or [])
    if not isinstance(remaining, list) or not keys:
        return ""
    left = {k.public_data for k in remaining}
    used = [k for k in keys if k.public_data not in left]
    if not used:
        return "a key from ssh-agent"
    return describe_key(used[-1])
