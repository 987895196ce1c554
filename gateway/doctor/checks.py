"""``chrome-ssh-gateway doctor``: check each target step by step and say what to fix.

The steps, in order, each timed and bounded by the target's
``reconnect.connect_timeout_s``::

    config parsed → DNS resolution → TCP connect → host key known → authenticated
      → DevTools endpoint → websocket handshake → browser version → tab count

The first failing step ends a target's check (later ones are ``skipped``) and
carries a ``fix``: the command or setting that repairs it. Local targets skip
the four SSH steps.

Nothing here re-implements the gateway: the SSH login is ``SshHost``'s own
connect (its ``ConnectProgress`` splits it into "host key" and "authenticated"),
DevTools discovery is ``discover`` watched through a ``DiscoveryTrace``, and the
browser is asked through ``CdpConnection``. Only DNS and TCP are probed here
first, separately, because inside asyncssh they are one opaque call — and with
ProxyJump it is the jump host that must resolve and answer, so that is the one
probed. Two things differ from ``serve`` on purpose: ``accept-new`` accepts an
unknown host key for the check without writing known_hosts (a diagnosis
changes nothing), and the embedded ``local`` default never launches a browser:
finding none is reported as what ``serve`` would do (launch a headless one),
not as a failure, as long as a Chromium/Chrome binary is there to launch.

The report model and the text rendering at the bottom are pure.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import ipaddress
import os
import socket
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NoReturn

import anyio
import anyio.from_thread
import anyio.lowlevel
import asyncssh
from asyncssh.public_key import decode_ssh_public_key
from websockets.asyncio.client import ClientConnection

from gateway.browsers.cdp import CdpConnection
from gateway.browsers.discovery import DiscoveryTrace, discover
from gateway.browsers.endpoint import DEFAULT_PROFILE_DIRS, FALLBACK_ADDRESS, Endpoint
from gateway.browsers.launcher import find_chrome
from gateway.config.model import CdpAddress, GatewayConfig, TargetConfig, load_config
from gateway.errors import (
    ConfigError,
    GatewayError,
    HostError,
    HostKeyRejected,
    TargetUnavailable,
)
from gateway.hosts.base import Host
from gateway.hosts.known_hosts import HostKeyVerdict
from gateway.hosts.local import LocalHost
from gateway.hosts.ssh import SshHost

__all__ = [
    "STEPS",
    "Report",
    "Step",
    "TargetReport",
    "render_text",
    "run_doctor",
]

StepStatus = Literal["ok", "failed", "skipped"]

STEPS: tuple[tuple[str, str], ...] = (
    ("config", "config parsed"),
    ("dns", "DNS resolution"),
    ("tcp", "TCP connect"),
    ("host_key", "host key known"),
    ("auth", "authenticated"),
    ("endpoint", "DevTools endpoint"),
    ("websocket", "websocket handshake"),
    ("browser", "browser version"),
    ("tabs", "tab count"),
)
"""(JSON name, table label) of every step, in the order they run."""

SSH_STEPS = frozenset({"dns", "tcp", "host_key", "auth"})

Resolver = Callable[[str, int], list[tuple[Any, ...]]]
"""``getaddrinfo``-like: (host, port) → address infos; raises ``socket.gaierror``."""


# ----------------------------------------------------------------------------- report


@dataclass
class Step:
    name: str
    status: StepStatus = "skipped"
    ms: float | None = None
    detail: str = ""
    fix: str = ""


@dataclass
class TargetReport:
    name: str
    where: str                       # "ssh h1" / "local"
    steps: list[Step] = field(default_factory=lambda: [Step(name) for name, _ in STEPS])

    def step(self, name: str) -> Step:
        for step in self.steps:
            if step.name == name:
                return step
        raise KeyError(name)

    @property
    def up(self) -> bool:
        return not any(step.status == "failed" for step in self.steps)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "where": self.where,
            "up": self.up,
            "steps": [
                {"name": s.name, "status": s.status,
                 "ms": None if s.ms is None else round(s.ms, 1),
                 "detail": s.detail, "fix": s.fix or None}
                for s in self.steps
            ],
        }


@dataclass
class Report:
    source: str                      # where the configuration came from
    targets: list[TargetReport]

    @property
    def up(self) -> bool:
        return all(t.up for t in self.targets)

    def to_json(self) -> dict[str, Any]:
        return {"config": self.source, "up": self.up,
                "targets": [t.to_json() for t in self.targets]}


# ------------------------------------------------------------------------- fix texts


def dns_failure(name: str, alias: str, exc: OSError) -> tuple[str, str]:
    """(detail, fix) for a name that did not resolve."""
    code = exc.errno if isinstance(exc, socket.gaierror) else None
    reason = exc.strerror or str(exc)
    named = name if name == alias else f"{name} (HostName of {alias} in ~/.ssh/config)"
    if code == socket.EAI_AGAIN:
        return (f"cannot resolve {named}: {reason}",
                "temporary DNS failure: the DNS server did not answer — check the network "
                "connection or VPN, then retry")
    return (f"cannot resolve {named}: {reason}",
            f"{name} is not a known host name: check its spelling (HostName for {alias} in "
            "~/.ssh/config, or the targets file), /etc/hosts, or whether it is only known "
            "inside a VPN that is not connected")


def tcp_failure(host: str, port: int, exc: BaseException, timeout_s: float) -> tuple[str, str]:
    """(detail, fix) for a TCP connect to the SSH port that failed."""
    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    code = exc.errno if isinstance(exc, OSError) else None
    if isinstance(exc, TimeoutError) or code == errno.ETIMEDOUT:
        return (f"no answer from {where} within {timeout_s:g} s",
                f"host unreachable (no answer from {where}) — is the host up? check the VPN "
                "and any firewall between here and there")
    if code == errno.ECONNREFUSED:
        return (f"connection to {where} refused",
                f"sshd not listening on {where} — start it there (e.g. `sudo systemctl start "
                "ssh`), or check the Port for this host in ~/.ssh/config")
    if code in (errno.EHOSTUNREACH, errno.ENETUNREACH, errno.EHOSTDOWN):
        return (f"no route to {host} ({os.strerror(code or 0)})",
                "host unreachable (no route) — check VPN / network connection, and that "
                f"{host} is up")
    return (f"connect to {where} failed: {exc}",
            f"check that {host} is up and sshd listens on port {port}")


def host_key_fix(verdict: HostKeyVerdict, jump: str | None) -> str:
    """The commands that repair an unknown or changed host key."""
    scan = (f"`ssh-keyscan -p {verdict.port} {verdict.host} >> {verdict.known_hosts}`"
            if jump is None else f"`ssh {verdict.alias}` once (it goes through {jump})")
    if verdict.kind == "changed":
        return (f"if {verdict.host} was reinstalled (and only then — a changed key can be an "
                f"attack): `ssh-keygen -R {verdict.host} -f {verdict.known_hosts}`, then "
                f"record the new key with {scan} after checking that its fingerprint is "
                f"{verdict.fingerprint}")
    return (f"check that the host's key fingerprint is {verdict.fingerprint} (on the host: "
            f"`ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub`), then record it with {scan}; "
            'or set host_key_policy = "accept-new" for this target')


def auth_fix(user: str, alias: str, offered: Sequence[str]) -> str:
    """What to do when the server accepted none of the keys offered."""
    if not offered:
        return ("no key to offer: no ssh-agent (SSH_AUTH_SOCK unset) and no IdentityFile / "
                "default key (~/.ssh/id_ed25519, id_ecdsa, id_rsa) — create one with "
                f"`ssh-keygen -t ed25519` and install it with `ssh-copy-id {user}@{alias}`")
    return (f"check that {user} is the right login on {alias}, then add one of these public "
            f"keys to ~{user}/.ssh/authorized_keys there (e.g. `ssh-copy-id {user}@{alias}`); "
            f"or name the right key with IdentityFile and the login with User for {alias} in "
            "~/.ssh/config")


def _home_relative(directory: str) -> str:
    return directory if directory.startswith(("/", "~")) else f"~/{directory}"


def start_chrome_hint(user_data_dir: str = "<dir>", port: int = 0) -> str:
    return (f"start one with --remote-debugging-port={port} --user-data-dir={user_data_dir} "
            "(Chrome ≥136 needs --user-data-dir for remote debugging)")


# ----------------------------------------------------------------------- the checks


class _Stop(Exception):
    """A step failed: the target's check ends here."""


class _Trace(DiscoveryTrace):
    """Records discovery's progress with timestamps (see ``discover``)."""

    def __init__(self) -> None:
        self.dirs: list[str] = []
        self.found: list[tuple[str, int, str]] = []
        self.stale: list[tuple[Endpoint, str]] = []   # DevToolsActivePort said, nobody there
        self.refused: tuple[Endpoint, str] | None = None  # other endpoints whose socket failed
        self.unanswered_at: list[tuple[CdpAddress, str]] = []
        self.last: str = ""
        self.trying_since: float | None = None

    def listed(self, dirs: list[str], found: list[tuple[str, int, str]]) -> None:
        self.dirs, self.found, self.last = dirs, found, "listed"

    def trying(self, endpoint: Endpoint) -> None:
        self.trying_since, self.last = time.monotonic(), "trying"

    def rejected(self, endpoint: Endpoint, reason: str) -> None:
        self.last = "rejected"
        if endpoint.found_by.startswith("DevToolsActivePort"):
            self.stale.append((endpoint, reason))
        else:
            self.refused = (endpoint, reason)

    def unanswered(self, address: CdpAddress, reason: str) -> None:
        self.last = "unanswered"
        self.unanswered_at.append((address, reason))


async def _resolve(resolver: Resolver, host: str, port: int, timeout_s: float) -> list[str]:
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


def _system_resolver(host: str, port: int) -> list[tuple[Any, ...]]:
    return socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)


def _describe_key(keypair: asyncssh.SSHKeyPair) -> str:
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


class _TargetCheck:
    """Runs the steps for one target and fills its ``TargetReport``."""

    def __init__(self, config: TargetConfig, source: str, config_ms: float,
                 resolver: Resolver) -> None:
        self.config = config
        self.name = config.name
        self.timeout_s = config.reconnect.connect_timeout_s
        self.resolver = resolver
        where = f"ssh {config.ssh}" if config.ssh is not None else "local"
        self.report = TargetReport(config.name, where)
        self._ok("config", config_ms, f"target {config.name!r} from {source}")
        self.link: SshHost | None = None
        self.jump: str | None = None
        if config.ssh is None:
            for name in SSH_STEPS:
                self.report.step(name).detail = "local target: no SSH"

    # -- recording

    def _ok(self, name: str, ms: float, detail: str) -> None:
        step = self.report.step(name)
        step.status, step.ms, step.detail = "ok", ms, detail

    def _fail(self, name: str, ms: float, detail: str, fix: str) -> NoReturn:
        step = self.report.step(name)
        step.status, step.ms, step.detail, step.fix = "failed", ms, detail, fix
        raise _Stop

    @staticmethod
    def _since(start: float, end: float | None = None) -> float:
        return ((end if end is not None else time.monotonic()) - start) * 1000

    # -- the run

    async def run(self) -> TargetReport:
        try:
            if self.config.ssh is not None:
                options = await self._options()
                host, port = await self._hop(options)
                addresses = await self._dns(options, host, port)
                await self._tcp(addresses, host, port)
                await self._login(options)
                assert self.link is not None
                await self._browser(self.link)
            else:
                await self._browser(LocalHost())
        except _Stop:
            pass
        finally:
            with anyio.CancelScope(shield=True):
                if self.link is not None:
                    await self.link.aclose()
        return self.report

    # -- SSH

    async def _options(self) -> asyncssh.SSHClientConnectionOptions:
        assert self.config.ssh is not None
        start = time.monotonic()
        self.link = SshHost(self.config.ssh, self.config.host_key_policy,
                            self.config.reconnect, record_new_keys=False)
        try:
            with anyio.fail_after(self.timeout_s):
                return await self.link.connect_options()
        except (OSError, ValueError, asyncssh.Error) as exc:
            self._fail("dns", self._since(start), f"cannot apply ~/.ssh/config: {exc}",
                       f"fix ~/.ssh/config (`ssh -G {self.config.ssh.host}` shows how OpenSSH "
                       "reads it)")

    async def _hop(self, options: asyncssh.SSHClientConnectionOptions) -> tuple[str, int]:
        """The host and port a TCP connection really goes to: the first ProxyJump hop's."""
        tunnel = options.tunnel
        if not isinstance(tunnel, str) or not tunnel:
            return options.host, options.port
        first = tunnel.split(",")[0].strip()
        self.jump = first
        user, _, hostport = first.rpartition("@")
        host, sep, port_text = hostport.rpartition(":")
        if not sep or not port_text.isdigit():
            host, port_text = hostport, ""
        start = time.monotonic()
        try:
            jump = await asyncssh.SSHClientConnectionOptions.construct(
                None, config=(), host=host, port=int(port_text) if port_text else (),
                username=user or ())
        except (OSError, ValueError, asyncssh.Error) as exc:
            self._fail("dns", self._since(start), f"ProxyJump {first}: {exc}",
                       f"fix ProxyJump / the {host} entry in ~/.ssh/config")
        return str(jump.host), int(jump.port)

    async def _dns(self, options: asyncssh.SSHClientConnectionOptions,
                   host: str, port: int) -> list[str]:
        assert self.config.ssh is not None
        alias = self.config.ssh.host
        start = time.monotonic()
        via = f"ProxyJump {self.jump}: checking the jump host — " if self.jump else ""
        if options.proxy_command:
            command = " ".join(str(part) for part in options.proxy_command)
            for name in ("dns", "tcp"):
                self.report.step(name).detail = (f"ProxyCommand `{command}` connects; not "
                                                  "checked separately")
            return []
        named = host if (host == alias or self.jump) else f"{host} (HostName of {alias})"
        try:
            ipaddress.ip_address(host)
        except ValueError:
            pass
        else:
            self._ok("dns", self._since(start), f"{via}{named} is an IP address, port {port}")
            return [host]
        try:
            addresses = await _resolve(self.resolver, host, port, self.timeout_s)
        except TimeoutError:
            self._fail("dns", self._since(start),
                       f"{via}no answer resolving {host} within {self.timeout_s:g} s",
                       "the DNS server does not answer — check the network connection or VPN")
        except OSError as exc:
            detail, fix = dns_failure(host, self.jump or alias, exc)
            self._fail("dns", self._since(start), via + detail, fix)
        self._ok("dns", self._since(start), f"{via}{named} → {', '.join(addresses)}")
        return addresses

    async def _tcp(self, addresses: list[str], host: str, port: int) -> None:
        if not addresses:  # ProxyCommand: nothing of ours to probe
            return
        start = time.monotonic()
        failure: tuple[str, BaseException] | None = None
        for address in addresses:
            try:
                banner = await self._banner(address, port)
            except (OSError, TimeoutError) as exc:
                failure = failure or (address, exc)
                continue
            where = f"[{address}]:{port}" if ":" in address else f"{address}:{port}"
            if not banner.startswith("SSH-"):
                self._fail("tcp", self._since(start),
                           f"{where} answered, but not with an SSH banner ({banner[:60]!r})",
                           f"port {port} on {host} is not sshd: check the Port for this host "
                           "in ~/.ssh/config")
            self._ok("tcp", self._since(start), f"{where} answered: {banner}")
            return
        assert failure is not None
        detail, fix = tcp_failure(failure[0], port, failure[1], self.timeout_s)
        self._fail("tcp", self._since(start), detail, fix)

    async def _banner(self, address: str, port: int) -> str:
        """Connect and read the server's first line (sshd speaks first)."""
        with anyio.fail_after(self.timeout_s):
            reader, writer = await asyncio.open_connection(address, port)
            try:
                line = await reader.readline()
            finally:
                writer.close()
        return line.decode(errors="replace").strip()

    async def _login(self, options: asyncssh.SSHClientConnectionOptions) -> None:
        assert self.link is not None and self.config.ssh is not None
        link, alias = self.link, self.config.ssh.host
        offered = [_describe_key(k) for k in (options.client_keys or [])]
        if os.environ.get("SSH_AUTH_SOCK") and options.client_keys is not None:
            offered.insert(0, "the keys in ssh-agent (SSH_AUTH_SOCK)")
        user = str(options.username)
        start = time.monotonic()
        try:
            with anyio.fail_after(self.timeout_s + 2):  # SshHost bounds it at timeout + 1
                conn = await link.connection()
        except (GatewayError, TimeoutError) as exc:
            progress = link.progress
            verdict = progress.host_key
            reason = exc.reason if isinstance(exc, HostError) else str(exc)
            if isinstance(exc, HostKeyRejected) and verdict is not None:
                what = ("is NOT the one in" if verdict.kind == "changed" else "is not in")
                self._fail("host_key", self._since(start),
                           f"{verdict.named} offers {verdict.fingerprint}, which {what} "
                           f"{verdict.known_hosts}", host_key_fix(verdict, self.jump))
            if progress.auth_started is None:
                self._fail("host_key", self._since(start), f"SSH handshake failed: {reason}",
                           f"the SSH server at {alias} broke off before keys were exchanged: "
                           "check its sshd log")
            self._host_key_ok(start, progress.auth_started, verdict, progress.server_key)
            denied = isinstance(exc.__context__, asyncssh.PermissionDenied)
            if denied:
                tried = "; ".join(offered) if offered else "none"
                self._fail("auth", self._since(progress.auth_started),
                           f"{user}@{alias} accepted none of the keys offered: {tried}",
                           auth_fix(user, alias, offered))
            self._fail("auth", self._since(progress.auth_started),
                       f"login as {user} failed: {reason}",
                       f"check the sshd log on {alias} for why the login of {user} failed")
        auth_started = link.progress.auth_started
        self._host_key_ok(start, auth_started, link.progress.host_key,
                          link.progress.server_key)
        used = self._used_key(conn, options)
        self._ok("auth", self._since(auth_started if auth_started is not None else start),
                 f"as {user}" + (f" with {used}" if used else ""))

    def _host_key_ok(self, start: float, auth_started: float | None,
                     verdict: HostKeyVerdict | None,
                     key: asyncssh.SSHKey | None = None) -> None:
        assert self.link is not None
        ms = self._since(start, auth_started)
        if verdict is not None:  # accept-new took a key known_hosts did not have
            self._ok("host_key", ms, f"{verdict.fingerprint} is not in {verdict.known_hosts} "
                     "yet; host_key_policy accept-new: `serve` records it on its first "
                     "connect")
            return
        files = [f for f in self.link.known_hosts_files if f != "/dev/null"]
        shown = f"{key.get_algorithm()} {key.get_fingerprint()}" if key is not None else "key"
        self._ok("host_key", ms, f"{shown} matches {', '.join(files)}")

    @staticmethod
    def _used_key(conn: asyncssh.SSHClientConnection,
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
        return _describe_key(used[-1])

    # -- the browser

    async def _browser(self, host: Host) -> None:
        trace = _Trace()
        start = time.monotonic()
        try:
            # Every read, request and websocket open inside is bounded by timeout_s;
            # this outer bound only caps the sum over the candidates tried.
            with anyio.fail_after(self.timeout_s * 4 + 1):
                endpoint, ws = await discover(host, self.config, self.timeout_s, trace)
        except (TargetUnavailable, TimeoutError) as exc:
            self._discovery_failed(host, trace, start, exc)
        found_ms = self._since(start, trace.trying_since)
        notes = "; ".join(f"ignored stale DevToolsActivePort in "
                          f"{e.found_by.removeprefix('DevToolsActivePort in ')} (port {e.port})"
                          for e, _ in trace.stale)
        self._ok("endpoint", found_ms, f"{endpoint.found_by}: port {endpoint.port}"
                 + (f" ({notes})" if notes else ""))
        self._ok("websocket", self._since(trace.trying_since or start),
                 f"ws://{endpoint.address}{endpoint.browser_path}")
        await self._ask_browser(ws)

    def _discovery_failed(self, where: Host, trace: _Trace, start: float,
                          exc: BaseException) -> NoReturn:
        reason = exc.reason if isinstance(exc, TargetUnavailable) else (
            f"discovery took longer than {self.timeout_s * 4 + 1:g} s")
        host = where.label
        refused = trace.refused
        if trace.last == "rejected" and refused is not None and trace.trying_since is not None:
            # Found (by /json/version or the configured ws:// URL), but the socket refused.
            endpoint, why = refused
            self._ok("endpoint", self._since(start, trace.trying_since),
                     f"{endpoint.found_by}: port {endpoint.port}")
            self._fail("websocket", self._since(trace.trying_since), why,
                       f"the browser at {endpoint.address} on {host} was found but refused its "
                       "DevTools websocket: restart it, and check that no proxy or other "
                       "program holds that port")
        if self.config.launch and not trace.found and not trace.stale:
            binary = find_chrome()
            if binary is not None:
                self._ok("endpoint", self._since(start),
                         f"no running Chrome found; `serve` would launch a headless one "
                         f"({binary})")
                for name in ("websocket", "browser", "tabs"):
                    self.report.step(name).detail = "no browser running to check"
                raise _Stop
            self._fail("endpoint", self._since(start),
                       "no running Chrome found, and no Chrome/Chromium binary to launch",
                       "install chromium (or Google Chrome), or set CHROME_PATH to its binary")
        self._fail("endpoint", self._since(start), *self._endpoint_failure(host, trace, reason))

    def _endpoint_failure(self, host: str, trace: _Trace, reason: str) -> tuple[str, str]:
        config = self.config
        parts = [f"stale DevToolsActivePort in {e.found_by.removeprefix('DevToolsActivePort in ')}"
                 f" (port {e.port}: {why})" for e, why in trace.stale]
        if config.cdp is not None:
            address = config.cdp
            where = f"{address.host}:{address.port}"
            http_404 = any("answered HTTP 404" in why for _, why in trace.unanswered_at)
            if http_404:
                fix = (f"the browser at {where} serves no /json (Chrome's chrome://inspect "
                       f"remote debugging, 144+): set cdp = \"ws://{where}/devtools/browser/"
                       "<id>\" with the id from the second line of its DevToolsActivePort")
            else:
                fix = (f"no Chrome DevTools at {where} on {host}: "
                       + start_chrome_hint(port=address.port) + ", or fix `cdp`")
            return reason, fix
        if not trace.dirs:  # reading the profiles failed (SSH exec error or timeout)
            return reason, f"check that commands can run over SSH on {host}"
        fallback = (f"{FALLBACK_ADDRESS.host}:{FALLBACK_ADDRESS.port}: "
                    + ("; ".join(why.split(": ", 1)[-1] for _, why in trace.unanswered_at)
                       or "not tried"))
        if trace.stale:
            # Default profile directories are relative to the (remote) home.
            stale_dirs = [_home_relative(e.found_by.removeprefix("DevToolsActivePort in "))
                          for e, _ in trace.stale]
            detail = "; ".join(parts) + f"; nothing at {fallback}"
            fix = (f"the Chrome that wrote DevToolsActivePort in {stale_dirs[0]} is gone "
                   "(it crashed or was killed and left the file behind): start Chrome again "
                   f"on {host} with --remote-debugging-port=0 --user-data-dir={stale_dirs[0]}")
            return detail, fix
        if config.profile:
            detail = f"no DevToolsActivePort in {config.profile}; nothing at {fallback}"
            fix = (f"no Chrome runs with --user-data-dir={config.profile} on {host}: "
                   + start_chrome_hint(config.profile) + ", or fix `profile`")
            return detail, fix
        shown = ", ".join(f"~/{d}" for d in DEFAULT_PROFILE_DIRS[:4] if "beta" not in d
                          and "unstable" not in d)
        detail = (f"no DevToolsActivePort in the usual profile directories ({shown}, …); "
                  f"nothing at {fallback}")
        fix = f"no Chrome found in {shown} on {host}; {start_chrome_hint()}"
        return detail, fix

    async def _ask_browser(self, ws: ClientConnection) -> None:
        cdp = CdpConnection(ws, name=self.name)
        async with anyio.create_task_group() as tg:
            tg.start_soon(cdp.run)
            try:
                start = time.monotonic()
                try:
                    version = await cdp.send("Browser.getVersion", timeout_s=self.timeout_s)
                except GatewayError as exc:
                    self._fail("browser", self._since(start), str(exc),
                               "the browser accepted the websocket but does not answer "
                               "commands: it may be hung — restart it")
                self._ok("browser", self._since(start),
                         f"{version.get('product', '?')} (protocol "
                         f"{version.get('protocolVersion', '?')})")
                start = time.monotonic()
                try:
                    infos = (await cdp.send("Target.getTargets",
                                            timeout_s=self.timeout_s))["targetInfos"]
                except GatewayError as exc:
                    self._fail("tabs", self._since(start), str(exc),
                               "the browser does not list its tabs: restart it")
                pages = sum(1 for info in infos if info.get("type") == "page")
                self._ok("tabs", self._since(start), f"{pages} tab{'s' if pages != 1 else ''}")
            finally:
                await cdp.aclose()
                tg.cancel_scope.cancel()


# ------------------------------------------------------------------------- entry


def select_targets(config: GatewayConfig, names: Sequence[str]) -> list[TargetConfig]:
    """The targets ``--target`` names, in the order given (all when none)."""
    if not names:
        return list(config.targets)
    known = {t.name: t for t in config.targets}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ConfigError("--target", "", f"unknown target {unknown[0]!r}; configured "
                          f"targets in {config.source}: {', '.join(sorted(known))}")
    return [known[n] for n in dict.fromkeys(names)]


async def run_doctor(
    environ: Mapping[str, str], config_path: str | None, names: Sequence[str] = (),
    resolver: Resolver = _system_resolver,
) -> Report:
    """Load the configuration and check the targets (concurrently); ``ConfigError`` if bad."""
    start = time.monotonic()
    config = load_config(environ, config_path)
    config_ms = (time.monotonic() - start) * 1000
    checks = [_TargetCheck(t, config.source, config_ms, resolver)
              for t in select_targets(config, names)]
    async with anyio.create_task_group() as tg:
        for check in checks:
            tg.start_soon(check.run)
    return Report(config.source, [c.report for c in checks])


# ------------------------------------------------------------------------ rendering

_STATUS_TEXT = {"ok": "ok", "failed": "FAIL", "skipped": "skip"}


def render_text(report: Report) -> str:
    """The human-readable report: per target a table, then the fix lines under it."""
    labels = dict(STEPS)
    width = max(len(label) for label in labels.values())
    out: list[str] = [f"configuration: {report.source}", ""]
    for target in report.targets:
        verdict = "UP" if target.up else "DOWN"
        out.append(f"{target.name} ({target.where}): {verdict}")
        out.append(f"  {'step':<{width}}  {'status':<6}  {'ms':>7}  detail")
        for step in target.steps:
            ms = "" if step.ms is None else f"{step.ms:.1f}"
            out.append(f"  {labels[step.name]:<{width}}  {_STATUS_TEXT[step.status]:<6}  "
                       f"{ms:>7}  {step.detail}".rstrip())
        for step in target.steps:
            if step.fix:
                out.append(f"  fix ({labels[step.name]}): {step.fix}")
        out.append("")
    up = sum(1 for t in report.targets if t.up)
    out.append(f"{len(report.targets)} target{'s' if len(report.targets) != 1 else ''}: "
               f"{up} up, {len(report.targets) - up} down")
    return "\n".join(out) + "\n"
