"""The SSH steps of one target: DNS resolution → TCP connect → host key known → authenticated.

The login is ``SshHost``'s own connect (its ``ConnectProgress`` splits it into
"host key" and "authenticated"). Only DNS and TCP are probed here first,
separately, because inside asyncssh they are one opaque call — and with
ProxyJump it is the jump host that must resolve and answer, so that is the one
probed. ``accept-new`` accepts an unknown host key for the check without
writing known_hosts (``record_new_keys=False``): a diagnosis changes nothing.
"""

from __future__ import annotations

import ipaddress
import time

import anyio

import gateway.doctor.fixes as fixes
from gateway.config import TargetConfig, host_port
from gateway.doctor.probes import Resolver, parse_hop, read_banner, resolve
from gateway.doctor.report import Recorder
from gateway.errors import GatewayError, HostError, HostKeyRejected, LoginRefused
from gateway.hosts.known_hosts import HostKeyVerdict
from gateway.hosts.ssh import SshHost
from gateway.hosts.ssh_login import LoginPlan, accepted_key, first_hop, plan_login, server_key

__all__ = ["SshSteps"]


class SshSteps:
    """Runs the four SSH steps into a ``Recorder``; ``link`` is then logged in.

    The caller closes ``link`` whatever happened.
    """

    def __init__(self, config: TargetConfig, record: Recorder, resolver: Resolver) -> None:
        assert config.ssh is not None
        self.config = config
        self.alias = config.ssh.host
        self.record = record
        self.resolver = resolver
        self.timeout_s = config.reconnect.connect_timeout_s
        self.link = SshHost(config.ssh, config.host_key_policy, config.reconnect,
                            record_new_keys=False)
        self.jump: str | None = None   # the first ProxyJump hop, as written

    async def run(self) -> None:
        plan = await self._plan()
        host, port = await self._hop(plan)
        addresses = await self._dns(plan, host, port)
        await self._tcp(addresses, host, port)
        await self._login(plan)

    async def _plan(self) -> LoginPlan:
        start = time.monotonic()
        try:
            with anyio.fail_after(self.timeout_s):
                return await plan_login(self.link)
        except HostError as exc:
            self.record.fail("dns", Recorder.since(start), f"cannot apply ~/.ssh/config: {exc}",
                             fixes.ssh_config_fix(self.alias))

    async def _hop(self, plan: LoginPlan) -> tuple[str, int]:
        """The host and port a TCP connection really goes to: the first ProxyJump hop's."""
        if plan.jump is None:
            return plan.host, plan.port
        self.jump = plan.jump
        start = time.monotonic()
        user, host, port = parse_hop(self.jump)
        try:
            return await first_hop(user, host, port)
        except HostError as exc:
            self.record.fail("dns", Recorder.since(start), f"ProxyJump {self.jump}: {exc}",
                             fixes.proxy_jump_fix(host))

    async def _dns(self, plan: LoginPlan, host: str, port: int) -> list[str]:
        """The addresses to probe: [] when a ProxyCommand connects instead."""
        alias, record = self.alias, self.record
        start = time.monotonic()
        via = f"ProxyJump {self.jump}: checking the jump host — " if self.jump else ""
        if plan.proxy_command:
            record.note(("dns", "tcp"), f"ProxyCommand `{plan.proxy_command}` connects; not "
                        "checked separately")
            return []
        named = host if (host == alias or self.jump) else f"{host} (HostName of {alias})"
        try:
            ipaddress.ip_address(host)
        except ValueError:
            pass
        else:
            record.ok("dns", Recorder.since(start), f"{via}{named} is an IP address, port {port}")
            return [host]
        try:
            addresses = await resolve(self.resolver, host, port, self.timeout_s)
        except TimeoutError:
            record.fail("dns", Recorder.since(start),
                        f"{via}no answer resolving {host} within {self.timeout_s:g} s",
                        fixes.DNS_TIMEOUT_FIX)
        except OSError as exc:
            detail, fix = fixes.dns_failure(host, self.jump or alias, exc)
            record.fail("dns", Recorder.since(start), via + detail, fix)
        record.ok("dns", Recorder.since(start), f"{via}{named} → {', '.join(addresses)}")
        return addresses

    async def _tcp(self, addresses: list[str], host: str, port: int) -> None:
        if not addresses:  # ProxyCommand: nothing of ours to probe
            return
        start = time.monotonic()
        failure: tuple[str, BaseException] | None = None
        for address in addresses:
            try:
                banner = await read_banner(address, port, self.timeout_s)
            except (OSError, TimeoutError) as exc:
                failure = failure or (address, exc)
                continue
            where = host_port(address, port)
            if not banner.startswith("SSH-"):
                self.record.fail(
                    "tcp", Recorder.since(start),
                    f"{where} answered, but not with an SSH banner ({banner[:60]!r})",
                    fixes.not_sshd_fix(host, port))
            self.record.ok("tcp", Recorder.since(start), f"{where} answered: {banner}")
            return
        assert failure is not None
        detail, fix = fixes.tcp_failure(failure[0], port, failure[1], self.timeout_s)
        self.record.fail("tcp", Recorder.since(start), detail, fix)

    async def _login(self, plan: LoginPlan) -> None:
        link, alias, record = self.link, self.alias, self.record
        since = Recorder.since
        offered, user = plan.offered, plan.username
        start = time.monotonic()
        try:
            with anyio.fail_after(self.timeout_s + 2):  # SshHost bounds it at timeout + 1
                await link.connection()
        except (GatewayError, TimeoutError) as exc:
            progress = link.progress
            verdict = progress.host_key
            reason = exc.cause if isinstance(exc, GatewayError) else str(exc)
            if isinstance(exc, HostKeyRejected) and verdict is not None:
                what = ("is NOT the one in" if verdict.kind == "changed" else "is not in")
                record.fail("host_key", since(start),
                            f"{verdict.named} offers {verdict.fingerprint}, which {what} "
                            f"{verdict.known_hosts}", fixes.host_key_fix(verdict, self.jump))
            if progress.auth_started is None:
                record.fail("host_key", since(start), f"SSH handshake failed: {reason}",
                            fixes.handshake_fix(alias))
            self._host_key_ok(start, progress.auth_started, verdict, server_key(progress))
            if isinstance(exc, LoginRefused):
                tried = "; ".join(offered) if offered else "none"
                record.fail("auth", since(progress.auth_started),
                            f"{user}@{alias} accepted none of the keys offered: {tried}",
                            fixes.auth_fix(user, alias, offered))
            record.fail("auth", since(progress.auth_started), f"login as {user} failed: {reason}",
                        fixes.login_fix(user, alias))
        auth_started = link.progress.auth_started
        self._host_key_ok(start, auth_started, link.progress.host_key, server_key(link.progress))
        used = accepted_key(link, plan)
        record.ok("auth", since(auth_started if auth_started is not None else start),
                  f"as {user}" + (f" with {used}" if used else ""))

    def _host_key_ok(self, start: float, auth_started: float | None,
                     verdict: HostKeyVerdict | None, key: str | None) -> None:
        ms = Recorder.since(start, auth_started)
        if verdict is not None:  # accept-new took a key known_hosts did not have
            self.record.ok("host_key", ms, f"{verdict.fingerprint} is not in "
                           f"{verdict.known_hosts} yet; host_key_policy accept-new: `serve` "
                           "records it on its first connect")
            return
        files = [f for f in self.link.known_hosts_files if f != "/dev/null"]
        self.record.ok("host_key", ms, f"{key or 'key'} matches {', '.join(files)}")
