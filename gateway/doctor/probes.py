"""The few probes ``doctor`` makes itself, because inside an SSH connect they are one
opaque call: the name lookup and the TCP connect with the SSH banner (what the login
will do and did is ``gateway.hosts.ssh_login``'s).

Each network wait is bounded by the timeout it is given.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel
from anyio.streams.buffered import BufferedByteReceiveStream

from gateway.hosts.local import connect_tcp

__all__ = [
    "Resolver",
    "parse_hop",
    "read_banner",
    "resolve",
    "system_resolver",
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
