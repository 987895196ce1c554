"""``chrome-ssh-gateway doctor``: check each target step by step and say what to fix.

The steps, in order, each timed and bounded by the target's
``reconnect.connect_timeout_s``::

    config parsed → DNS resolution → TCP connect → host key known → authenticated
      → DevTools endpoint → websocket handshake → browser version → tab count

The first failing step ends a target's check (later ones are ``skipped``) and
carries a ``fix``: the command or setting that repairs it. Local targets skip
the four SSH steps. This module runs the targets concurrently and each one's
steps in order: the SSH steps are ``ssh_steps``, the browser steps
``browser_steps``, the wording of every fix ``fixes``, the report ``report``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

import anyio

from gateway.config import GatewayConfig, TargetConfig, load_config
from gateway.doctor.browser_steps import BrowserSteps
from gateway.doctor.probes import Resolver, system_resolver
from gateway.doctor.report import SSH_STEPS, Recorder, Report, StopCheck, TargetReport
from gateway.doctor.ssh_steps import SshSteps
from gateway.errors import ConfigError
from gateway.hosts.local import LocalHost

__all__ = ["check_target", "run_doctor", "select_targets"]


async def check_target(config: TargetConfig, source: str, config_ms: float,
                       resolver: Resolver = system_resolver) -> TargetReport:
    """Every step of one target, up to the first that fails; closes all it opened."""
    where = f"ssh {config.ssh}" if config.ssh is not None else "local"
    record = Recorder(TargetReport(config.name, where))
    record.ok("config", config_ms, f"target {config.name!r} from {source}")
    ssh = SshSteps(config, record, resolver) if config.ssh is not None else None
    if ssh is None:
        record.note(SSH_STEPS, "local target: no SSH")
    try:
        if ssh is not None:
            await ssh.run()
            await BrowserSteps(config, record).run(ssh.link)
        else:
            await BrowserSteps(config, record).run(LocalHost())
    except StopCheck:
        pass
    finally:
        with anyio.CancelScope(shield=True):
            if ssh is not None:
                await ssh.link.aclose()
    return record.report


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
    resolver: Resolver = system_resolver,
) -> Report:
    """Load the configuration and check the targets (concurrently); ``ConfigError`` if bad."""
    start = time.monotonic()
    config = load_config(environ, config_path)
    config_ms = (time.monotonic() - start) * 1000
    targets = select_targets(config, names)
    reports: dict[int, TargetReport] = {}

    async def check(index: int, target: TargetConfig) -> None:
        reports[index] = await check_target(target, config.source, config_ms, resolver)

    async with anyio.create_task_group() as tg:
        for index, target in enumerate(targets):
            tg.start_soon(check, index, target)
    return Report(config.source, [reports[i] for i in range(len(targets))])
