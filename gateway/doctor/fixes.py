"""What failed → what to do: the texts of ``doctor``'s failed steps.

Pure functions of what the checks saw (an errno, a host key verdict, what
discovery tried), so that every wording is in one place and can be tested
without a network. Each returns the ``fix`` (and, where the wording of the
failure depends on the same facts, the ``detail`` with it).
"""

from __future__ import annotations

import errno
import os
import socket
from collections.abc import Sequence

from gateway.cdp.endpoint import (
    DEFAULT_PROFILE_DIRS,
    FALLBACK_ADDRESS,
    REMOTE_DEBUGGING_SETTING,
    SETTING_SINCE,
    Endpoint,
    ProfileDir,
    seen_from_wsl,
)
from gateway.config import CdpAddress, TargetConfig, host_port
from gateway.discovery.scan import Candidate
from gateway.hosts.known_hosts import HostKeyVerdict
from gateway.hosts.os_words import os_reason

__all__ = [
    "BROWSER_HUNG_FIX",
    "DNS_TIMEOUT_FIX",
    "PERSONAL_NOTE",
    "SCAN_FIX",
    "SHARES_DIR_FIX",
    "SHARES_LIST_FIX",
    "SHARE_FIX",
    "TABS_FIX",
    "auth_fix",
    "dns_failure",
    "endpoint_failure",
    "handshake_fix",
    "host_key_fix",
    "ignored_port_failure",
    "login_fix",
    "not_sshd_fix",
    "personal_found",
    "proxy_jump_fix",
    "scan_fix",
    "scan_summary",
    "shares_summary",
    "ssh_config_fix",
    "stale_notes",
    "start_chrome_hint",
    "tcp_failure",
    "websocket_fix",
]

DNS_TIMEOUT_FIX = "the DNS server does not answer — check the network connection or VPN"
BROWSER_HUNG_FIX = ("the browser accepted the websocket but does not answer commands: it may "
                    "be hung — restart it")
TABS_FIX = "the browser does not list its tabs: restart it"


# -- SSH


def ssh_config_fix(alias: str) -> str:
    return f"fix ~/.ssh/config (`ssh -G {alias}` shows how OpenSSH reads it)"


def proxy_jump_fix(host: str) -> str:
    return f"fix ProxyJump / the {host} entry in ~/.ssh/config"


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
    where = host_port(host, port)
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
    return (f"connect to {where} failed: {os_reason(exc)}",
            f"check that {host} is up and sshd listens on port {port}")


def not_sshd_fix(host: str, port: int) -> str:
    return f"port {port} on {host} is not sshd: check the Port for this host in ~/.ssh/config"


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


def handshake_fix(alias: str) -> str:
    return (f"the SSH server at {alias} broke off before keys were exchanged: check its "
            "sshd log")


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


def login_fix(user: str, alias: str) -> str:
    return f"check the sshd log on {alias} for why the login of {user} failed"


# -- the browser


TURN_ON = (f"the person opens {REMOTE_DEBUGGING_SETTING} in their Chrome and turns on "
           "\"Allow remote debugging for this browser instance\" (it stays on across "
           "restarts); Chrome then asks them once for each connection")
PERSONAL_NOTE = ("not opened: Chrome would ask the person \"Allow remote debugging?\" — the "
                 "gateway asks once, when it first connects, and keeps that connection; "
                 "meanwhile list_targets says \"waiting for the person to allow\"; if they "
                 "click Cancel it says they declined, and only a later call asks again")


def personal_found(endpoint: Endpoint) -> str:
    """The endpoint step's detail for a person's own Chrome (never opened by doctor)."""
    return (f"{endpoint.found_by}: port {endpoint.port} — the person's own Chrome, its "
            f"remote debugging turned on ({REMOTE_DEBUGGING_SETTING})")


def _usual_dir(path: str | None) -> str | None:
    """Which of the usual profile directories ``path`` is (``~/…`` or absolute), if any."""
    return next((d for d in DEFAULT_PROFILE_DIRS if path is not None
                 and (path in (d, f"~/{d}") or path.endswith(f"/{d}"))), None)


def _setting_failure(used: ProfileDir, host: str, running: bool) -> tuple[str, str] | None:
    """(detail, fix) for the person's own Chrome in a usual profile that is not
    debuggable (``running``: a browser runs in it now), or None when it says nothing."""
    where = _home_relative(used.directory)
    other = f"or for a browser of the agent's own, {start_chrome_hint()}"
    if not running:
        if used.remote_debugging:
            return (f"remote debugging is on in {where} on {host}, but that Chrome is not "
                    "running", "start Chrome there: the gateway finds it by itself")
        return None
    if used.major is not None and used.major < SETTING_SINCE:
        return (f"Chrome {used.version} runs in {where} on {host}: older than "
                f"{SETTING_SINCE}, which has no remote-debugging setting",
                f"update Chrome to {SETTING_SINCE} or later, then {TURN_ON}; {other}")
    if not used.remote_debugging:
        return (f"Chrome runs in {where} on {host} with remote debugging turned off",
                f"{TURN_ON}; {other}")
    return (f"Chrome runs in {where} on {host} with remote debugging on, but wrote no "
            "DevToolsActivePort", "the person quits Chrome and starts it again")


def ignored_port_failure(pids: Sequence[int], host: str) -> tuple[str, str]:
    """(detail, fix) for a Chrome started with --remote-debugging-port on its default
    profile, which Chrome ignores since 136 (it listens nowhere)."""
    shown = ", ".join(str(pid) for pid in pids)
    return (f"Chrome (pid {shown}) on {host} was started with --remote-debugging-port on its "
            "default profile, which Chrome ignores since 136",
            f"turn on remote debugging instead: {TURN_ON} (Chrome {SETTING_SINCE}+); or start "
            "Chrome with a --user-data-dir of its own as well")


def start_chrome_hint(user_data_dir: str = "<dir>", port: int = 0) -> str:
    return (f"start one with --remote-debugging-port={port} --user-data-dir={user_data_dir} "
            "(Chrome ≥136 needs --user-data-dir for remote debugging)")


def websocket_fix(endpoint: Endpoint, host: str, why: str = "") -> str:
    if "nothing listens at" in why:
        return (f"nothing listens at {endpoint.address} on {host}: check the port in the "
                "cdp URL, and that the browser or pool proxy there is running")
    if endpoint.scheme == "wss" or endpoint.headers or "?" in endpoint.browser_path:
        return (f"the hosted endpoint {endpoint.address} refused the handshake: check the "
                "token in the cdp URL and the headers (and their ${VARIABLES}), and for a "
                "private certificate set ca_file")
    return (f"the browser at {endpoint.address} on {host} was found but refused its DevTools "
            "websocket: restart it, and check that no proxy or other program holds that port")


def _profile_dir(endpoint: Endpoint) -> str:
    """The profile directory of an endpoint found by its DevToolsActivePort."""
    return endpoint.found_by.removeprefix("DevToolsActivePort in ")


def _home_relative(directory: str) -> str:
    return directory if directory.startswith(("/", "~")) else f"~/{directory}"


def stale_notes(stale: Sequence[tuple[Endpoint, str]]) -> str:
    """The stale DevToolsActivePort files discovery passed over on its way to a browser."""
    return "; ".join(f"ignored stale DevToolsActivePort in {_profile_dir(e)} (port {e.port})"
                     for e, _ in stale)


def endpoint_failure(
    config: TargetConfig, host: str, reason: str, *, listed: bool,
    stale: Sequence[tuple[Endpoint, str]], unanswered: Sequence[tuple[CdpAddress, str]],
    profiles: Sequence[ProfileDir] = (), running: Sequence[Candidate] = (),
) -> tuple[str, str]:
    """(detail, fix) when discovery found no browser on ``host``.

    ``listed``: the profile directories could be read at all; ``stale``: the
    DevToolsActivePort files whose port nobody answered; ``unanswered``: the
    addresses whose ``/json/version`` gave nothing; ``reason``: discovery's own;
    ``profiles``: the usual profile directories read; ``running``: the browsers a host
    scan saw.
    """
    if isinstance(config.cdp, CdpAddress):
        address = config.cdp
        where = f"{address.host}:{address.port}"
        if any("answered HTTP 404" in why for _, why in unanswered):
            fix = (f"the browser at {where} serves no /json (Chrome's chrome://inspect "
                   f"remote debugging, 144+): set cdp = \"ws://{where}/devtools/browser/"
                   "<id>\" with the id from the second line of its DevToolsActivePort")
        else:
            fix = (f"no Chrome DevTools at {where} on {host}: "
                   + start_chrome_hint(port=address.port) + ", or fix `cdp`")
        return reason, fix
    if not listed:  # reading the profiles failed (SSH exec error or timeout)
        return reason, f"check that commands can run over SSH on {host}"
    fallback = (f"{FALLBACK_ADDRESS.host}:{FALLBACK_ADDRESS.port}: "
                + ("; ".join(why.split(": ", 1)[-1] for _, why in unanswered) or "not tried"))
    if stale:
        parts = [f"stale DevToolsActivePort in {_profile_dir(e)} (port {e.port}: {why})"
                 for e, why in stale]
        # Default profile directories are relative to the (remote) home.
        first = _home_relative(_profile_dir(stale[0][0]))
        detail = "; ".join(parts) + f"; nothing at {fallback}"
        if seen_from_wsl(first):
            return detail, (f"that is Windows' Chrome (in {first}), and from WSL 2 Windows' "
                            "127.0.0.1 is reachable only with networkingMode=mirrored in "
                            "%UserProfile%\\.wslconfig (then `wsl --shutdown`); or run "
                            "`chrome-ssh-gateway share <this machine>` on Windows instead")
        if stale[0][0].personal:
            return detail, (f"the person's own Chrome that wrote DevToolsActivePort in {first} "
                            "is not running: start it again (the setting stays on)")
        fix = (f"the Chrome that wrote DevToolsActivePort in {first} is gone "
               "(it crashed or was killed and left the file behind): start Chrome again "
               f"on {host} with --remote-debugging-port=0 --user-data-dir={first}")
        return detail, fix
    if config.profile:
        detail = f"no DevToolsActivePort in {config.profile}; nothing at {fallback}"
        fix = (f"no Chrome runs with --user-data-dir={config.profile} on {host}: "
               + start_chrome_hint(config.profile) + ", or fix `profile`")
        return detail, fix
    # Google Chrome (not Chromium) ignores the port on its default profile since 136.
    ignored = [c.pid for c in running if c.program == "google-chrome" and c.port is not None
               and _usual_dir(c.profile) is not None]
    if ignored:
        return ignored_port_failure(ignored, host)
    in_use = {_usual_dir(c.profile) for c in running if c.port is None}
    for used in (p for p in profiles if p.used):
        said = _setting_failure(used, host, _usual_dir(used.directory) in in_use)
        if said is not None:
            return said
    shown = ", ".join(f"~/{d}" for d in DEFAULT_PROFILE_DIRS[:4] if "beta" not in d
                      and "unstable" not in d)
    detail = (f"no DevToolsActivePort in the usual profile directories ({shown}, …); "
              f"nothing at {fallback}")
    fix = (f"no Chrome found in {shown} on {host}: for the person's own Chrome (144+), "
           f"{TURN_ON}; for a browser of the agent's own, {start_chrome_hint()}")
    return detail, fix


SCAN_FIX = ("the scan is one `sh` command over SSH: check that the login user's shell runs "
            "commands (`ssh HOST true`) and that /proc (Linux) or ps (macOS) is readable")


def scan_summary(found: Sequence[Candidate]) -> str:
    """What one host scan saw: each browser, and how it would be attached to or why not."""
    if not found:
        return "the scan found no Chrome/Chromium/Edge process"
    parts = []
    for c in found:
        who = f" ({c.started_by})" if c.started_by else ""
        how = f"port {c.active_port}" if c.problem is None else "not attachable"
        parts.append(f"pid {c.pid} {c.program}{who}: {how}")
    attachable = sum(1 for c in found if c.problem is None)
    return f"{len(found)} browsers, {attachable} attachable: {'; '.join(parts)}"


def scan_fix(found: Sequence[Candidate]) -> str:
    """The fix when no scanned browser could be attached to: the first reason's own fix."""
    problems = [f"pid {c.pid} {c.problem}" for c in found if c.problem is not None]
    if problems:
        return problems[0]
    return ("no debuggable browser runs on the host: start one with --remote-debugging-port=0 "
            "and a --user-data-dir (test frameworks do), and it is found within "
            "scan_interval_s")


SHARES_LIST_FIX = ("the listing is one `sh` command over SSH: check that the login user's shell "
                   "runs commands (`ssh HOST true`)")
SHARES_DIR_FIX = ("the shares directory must be a directory of the login user's own that "
                  "nobody else can write; fix or remove it (share makes it again)")
SHARE_FIX = ("no share answers: its sharer lost its link or was stopped without cleaning up; "
             "run `chrome-ssh-gateway share <this host>` again on the browser's machine (a "
             "stale socket of the same name is replaced)")


def shares_summary(directory: str | None, seen: Sequence[tuple[str, str | None]]) -> str:
    """The shares one listing saw, and whether each answers (``None``) or why not."""
    if not seen:
        return (f"no share in {directory or 'the shares directory'} (run `chrome-ssh-gateway "
                "share <this host>` on the browser's machine)")
    parts = [f"{name}: answers" if why is None else f"{name}: {why}" for name, why in seen]
    answering = sum(1 for _, why in seen if why is None)
    count = f"{len(seen)} share{'s' if len(seen) != 1 else ''}"
    return f"{count}, {answering} answering: {'; '.join(parts)}"
