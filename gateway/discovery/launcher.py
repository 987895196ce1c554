"""Starting a Chrome on a target's host when none is found (``launch = true``).

Any host: the same shell script (``launch_script``) runs on this machine or over
SSH, so the embedded ``local`` default and a dev VM three hops away launch the
same way.

* ``keep_running`` (the default for a configured target): the browser is
  detached from the session that started it (``Host.run``): it outlives an SSH
  drop and the gateway, and the next connect attaches to it again (``Launch`` in
  ``discovery`` looks in its profile first) instead of starting a second one.
* otherwise the script stays and holds it (``Host.hold``): the browser is stopped
  when the gateway lets go, exits or dies however it dies, or when its SSH
  connection goes (then the next connect starts another).

Two kinds of profile: persistent (the default for a configured target):
``launch_profile``, else ``~/.cache/chrome-ssh-gateway/<target>`` on the host, so
logins made there survive restarts; temporary (the embedded local default, always
held): a fresh 0700 directory per start, removed with the browser — and by the
next temporary launch on that host if its holder was killed too.

Only a browser this process started is ever stopped by it — by its pid, and only
while that pid still runs on the profile it was started on (the sweep of a
temporary launch also stops a browser left on a temporary profile whose holder is
gone: a gateway's that was killed with its script). A browser it
started that dies is started again by the supervisor, at most
``MAX_STARTS_PER_MINUTE`` times a minute; ``restarts`` counts those.
"""

from __future__ import annotations

import time

import structlog

from gateway.config import TargetConfig
from gateway.discovery.launch_script import (
    HELD,
    QUITTING,
    STOP,
    LaunchPlan,
    ScriptResult,
    launch_command,
    parse_script,
    stop_command,
)
from gateway.errors import DiscoveryError, HostError
from gateway.hosts.base import Host
from gateway.hosts.held import Held

__all__ = ["MAX_STARTS_PER_MINUTE", "ChromeLauncher", "launch_failure"]

log = structlog.get_logger("gateway.launcher")

MAX_STARTS_PER_MINUTE = 3
START_TIMEOUT_S = 20.0
STOP_TIMEOUT_S = 10.0
_SANDBOX_HINT = "No usable sandbox"


def launch_failure(result: ScriptResult, host: str, plan: LaunchPlan,
                   timeout_s: float) -> tuple[str, str] | None:
    """(what went wrong, what to do) when the launch (or probe) ``result`` gives no
    browser; None when it did (or, for a probe, would)."""
    if result.binary is None:
        return (f"no Chrome/Chromium binary found on {host} (tried "
                f"{', '.join(result.tried) or 'nothing'})",
                "install one there (`sudo apt install chromium`, or the vendor's package of "
                "Google Chrome or Microsoft Edge), or set CHROME_PATH to its binary in that "
                "host's environment")
    if result.locked_by is not None:
        return (f"the profile {plan.profile} on {host} is in use by a Chrome (pid "
                f"{result.locked_by}) without a DevTools port the gateway can reach",
                "close it, or set launch_profile to another directory")
    if result.outcome == "error":
        return (f"could not launch {result.binary} on {host}: {result.error}",
                "check the permissions of the profile's parent directory there")
    if result.outcome in ("exited", "slow"):
        said = result.stderr or "(nothing on stderr)"
        what = ("exited at once" if result.outcome == "exited" else
                f"wrote no DevToolsActivePort within {timeout_s:g} s")
        fix = "see its output above; fix the cause on the host or in chrome_args"
        if not plan.headless and any(w in said.lower() for w in ("display", "x server",
                                                                  "wayland")):
            fix = (f"the display {plan.display or ':0'} cannot be opened there: set display "
                   "to the host's running X (\":0\") or Wayland (\"wayland-0\") display that "
                   "the login user may use, or headless = true")
        elif _SANDBOX_HINT in said:
            fix = ("Chrome's sandbox is not usable on that host: enable unprivileged user "
                   "namespaces there, or add \"--no-sandbox\" to chrome_args")
        return f"launched {result.binary} on {host} but it {what}; its last output: {said}", fix
    return None


class ChromeLauncher:
    """The browser of one target that the gateway starts on the target's host."""

    def __init__(self, host: Host, config: TargetConfig) -> None:
        self._host = host
        self._target = config.name
        self._keep_running = config.keep_running
        self.plan = LaunchPlan(config.launch_dir, config.cdp.port if config.cdp else 0,
                               config.headless, config.display, tuple(config.chrome_args))
        self.profile: str | None = config.launch_dir  # where to look for one running
        self.pid: int | None = None                    # the browser this process started
        self.restarts = 0
        self.attached = False   # the current browser is the launched one
        self._served = False    # some browser was served from the profile already
        self._starts: list[float] = []
        self._held: Held | None = None  # the launch script holding it (not keep_running)

    @property
    def stops_on_exit(self) -> bool:
        """Whether ``aclose`` stops a browser (one this process started is running)."""
        return self.pid is not None and not self._keep_running

    def serving(self) -> None:
        """The browser found is the launched one (``Launch`` found it)."""
        self.attached = self._served = True

    async def probe(self, timeout_s: float) -> tuple[ScriptResult, tuple[str, str] | None]:
        """Which binary a launch would use and whether the profile is locked — without
        starting or writing anything (``doctor``); with the failure text, if any."""
        output = await self._host.run(launch_command(self.plan, timeout_s, start=False),
                                      timeout_s)
        result = parse_script(output)
        return result, launch_failure(result, self._host.label, self.plan, timeout_s)

    async def start(self, timeout_s: float = START_TIMEOUT_S) -> str:
        """Start the browser and return its profile (as the host resolved it) once its
        DevToolsActivePort is written; ``DiscoveryError`` with the reason otherwise."""
        now = time.monotonic()
        self._starts = [t for t in self._starts if now - t < 60]
        if len(self._starts) >= MAX_STARTS_PER_MINUTE:
            wait_s = 60 - (now - self._starts[0])
            raise DiscoveryError(self._target, f"the browser the gateway launched on "
                                 f"{self._host.label} stopped {len(self._starts)} times within "
                                 f"a minute; starting it again in {wait_s:.0f} s (its log: "
                                 f"{self.profile}/chrome-ssh-gateway.log on that host)")
        await self.aclose()  # a temporary profile of a browser that died goes first
        self._starts.append(now)
        try:
            if self._keep_running:
                output = await self._host.run(launch_command(self.plan, timeout_s),
                                              timeout_s + 5)
            else:
                output, self._held = await self._host.hold(
                    launch_command(self.plan, timeout_s, held=True), HELD, timeout_s + 5)
        except HostError as exc:
            raise DiscoveryError(self._target, f"launching Chrome on {self._host.label} "
                                 f"failed: {exc.reason}") from None
        result = parse_script(output)
        if result.profile is not None:
            self.profile = result.profile
        self.pid = result.pid
        failure = launch_failure(result, self._host.label, self.plan, timeout_s)
        if failure is not None:  # a held one was stopped by its script; a kept one runs on
            raise DiscoveryError(self._target, "; ".join(failure))
        if self._served:
            self.restarts += 1
        log.info("launched browser", target=self._target, host=self._host.label,
                 binary=result.binary, pid=result.pid, profile=self.profile,
                 restarts=self.restarts)
        if self.profile is None:  # a temporary one the script did not name: cannot happen
            raise DiscoveryError(self._target, "the launch script named no profile")
        return self.profile

    async def reclaim(self) -> None:
        """Before looking for the browser again: if the script holding the one this
        process started is gone — its SSH connection dropped (sshd may not even know
        yet), or it was killed — stop that browser now, so that it is not served unheld
        (or killed under a new session later); the next launch starts a fresh one."""
        if self._held is not None and self._held.gone:
            await self.aclose()

    async def aclose(self, *, quitting: bool = False) -> None:
        """Stop the browser this process started, unless it is to keep running; a
        temporary profile goes with it. ``quitting``: it was asked to quit already."""
        pid, self.pid = self.pid, None
        held, self._held = self._held, None
        profile = self.profile
        if self.plan.profile is None:
            self.profile = None
        if held is None:
            return
        if held.gone and pid is not None and profile is not None:
            await self._stop_unheld(pid, profile)
        await held.release(QUITTING if quitting else STOP, STOP_TIMEOUT_S * 2)
        log.info("let go of the launched browser", target=self._target, pid=pid)

    async def _stop_unheld(self, pid: int, profile: str) -> None:
        """Stop a browser whose holding script is gone (killed, or its SSH connection
        lost) with a command of its own, over the connection there is now."""
        try:
            await self._host.run(stop_command(pid, profile,
                                              remove_profile=self.plan.profile is None),
                                 STOP_TIMEOUT_S * 2)
        except HostError as exc:
            log.warning("could not stop the browser whose holder is gone", target=self._target,
                        pid=pid, host=self._host.label, error=exc.reason)
