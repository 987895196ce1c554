"""What an SSH login to a destination will do, and what it did — for ``doctor``.

``doctor`` times each step of a connect apart (name lookup, TCP, host key, login), but
inside asyncssh they are one opaque call. So it first reads the plan of the login here —
``~/.ssh/config`` applied: the address, the first ProxyJump hop, a ProxyCommand, the
user, the keys that will be offered — and after the login, which key was accepted.
asyncssh's types stay in this layer: the doctor sees plain values and ``HostError``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from gateway.errors import HostError
from gateway.hosts.asyncssh_import import asyncssh
from gateway.hosts.known_hosts import ConnectProgress
from gateway.hosts.ssh import SshHost
from gateway.hosts.ssh_errors import reason

__all__ = ["LoginPlan", "accepted_key", "first_hop", "plan_login", "server_key"]

_CONFIG_ERRORS = (OSError, ValueError, asyncssh.Error)  # an ssh config that cannot apply


@dataclass(frozen=True)
class LoginPlan:
    """A connect's options, read before it is made."""

    host: str
    port: int
    username: str
    jump: str | None           # the first ProxyJump hop, as written
    proxy_command: str | None  # the ProxyCommand that connects instead of TCP
    offered: list[str]         # the client keys offered, as ``_describe_key`` names them
    _options: Any = field(repr=False, compare=False)


async def plan_login(link: SshHost) -> LoginPlan:
    """``link``'s connect options as a ``LoginPlan``; ``HostError`` for an ssh config or
    key file that cannot be applied (the reason as the config parser gave it)."""
    try:
        options = await link.connect_options()
    except _CONFIG_ERRORS as exc:
        raise HostError(reason(exc)) from None
    tunnel = options.tunnel
    jump = tunnel.split(",")[0].strip() if isinstance(tunnel, str) and tunnel else None
    command = options.proxy_command
    return LoginPlan(str(options.host), int(options.port), str(options.username), jump,
                     " ".join(str(p) for p in command) if command else None,
                     _offered_keys(options), options)


async def first_hop(user: str, host: str, port: int | None) -> tuple[str, int]:
    """The host and port that a ProxyJump hop connects to, with ``~/.ssh/config``
    applied to it; ``HostError`` for a config that cannot be applied."""
    try:
        jump = await asyncssh.SSHClientConnectionOptions.construct(
            None, config=(), host=host, port=port if port is not None else (),
            username=user or ())
    except _CONFIG_ERRORS as exc:
        raise HostError(reason(exc)) from None
    return str(jump.host), int(jump.port)


def server_key(progress: ConnectProgress) -> str | None:
    """The host key a connect accepted, as ``ssh-ed25519 SHA256:…``; None before one."""
    key = progress.server_key
    return None if key is None else f"{key.get_algorithm()} {key.get_fingerprint()}"


def accepted_key(link: SshHost, plan: LoginPlan) -> str:
    """The key the server accepted on ``link``'s connection, when it can be told.

    asyncssh has no public "which key authenticated": it pops keys off the front
    of its list as it tries them, so the accepted one is the last offered key
    no longer in that list. Any surprise in that private state → "" (unknown).
    """
    remaining = getattr(link.connected, "_client_keys", None)
    keys = list(plan._options.client_keys or [])
    if not isinstance(remaining, list) or not keys:
        return ""
    left = {k.public_data for k in remaining}
    used = [k for k in keys if k.public_data not in left]
    if not used:
        return "a key from ssh-agent"
    return _describe_key(used[-1])


def _describe_key(keypair: asyncssh.SSHKeyPair) -> str:
    """``/home/a/.ssh/id_ed25519 (ssh-ed25519 SHA256:…)`` — the file when there is one."""
    try:
        public = asyncssh.public_key.decode_ssh_public_key(keypair.public_data)
        fingerprint = public.get_fingerprint()
    except (asyncssh.KeyImportError, ValueError):
        fingerprint = ""
    # asyncssh keeps a local key pair's file name only on its private key object.
    inner = getattr(keypair, "_key", None)
    filename = inner.get_filename() if inner is not None else None
    name = (filename.decode(errors="replace") if isinstance(filename, bytes)
            else keypair.get_comment() or "agent key")
    return f"{name} ({keypair.get_algorithm()} {fingerprint})".replace(" )", ")")


def _offered_keys(options: asyncssh.SSHClientConnectionOptions) -> list[str]:
    """What a login with ``options`` offers the server, as ``_describe_key`` names it."""
    offered = [_describe_key(k) for k in (options.client_keys or [])]
    if os.environ.get("SSH_AUTH_SOCK") and options.client_keys is not None:
        offered.insert(0, "the keys in ssh-agent (SSH_AUTH_SOCK)")
    return offered
