"""Targets reloaded while serving: ``SIGHUP`` reads the configuration again.

Editing the targets file of a running gateway is how a user adds a dev VM or
retires a CI runner without restarting the agent's session: on ``SIGHUP``
the configuration is loaded again from the same sources, and the registry
adds what is new, removes what is gone and starts over what changed; the
targets left alone keep their connections and tab ids. A file that does not
load leaves everything as it was, with the reason logged. Gateway-wide
settings that are fixed at start (the call log, read-only mode) need a
restart, and a change to them is logged as such.
"""

from __future__ import annotations

import signal
from collections.abc import Callable

import anyio
import structlog

from gateway.config import GatewayConfig
from gateway.errors import ConfigError
from gateway.fleet.registry import Registry

__all__ = ["reload_on_hangup"]

log = structlog.get_logger("gateway.mcp")

_FIXED_AT_START = ("call_log", "read_only")


async def reload_on_hangup(registry: Registry, load: Callable[[], GatewayConfig]) -> None:
    """Apply ``load()`` to ``registry`` on every SIGHUP, until cancelled."""
    with anyio.open_signal_receiver(signal.SIGHUP) as signals:
        async for _ in signals:
            await reload(registry, load)


async def reload(registry: Registry, load: Callable[[], GatewayConfig]) -> None:
    """Load the configuration again and make the registry follow it."""
    try:
        config = load()
    except ConfigError as exc:
        log.warning("configuration not reloaded; the targets stay as they were",
                    error=str(exc))
        return
    kept = [key for key in _FIXED_AT_START
            if getattr(config, key) != getattr(registry.config, key)]
    if kept:
        log.warning("changed settings take effect at the next start", settings=kept)
        config = config.model_copy(update={k: getattr(registry.config, k) for k in kept})
    await registry.apply(config)
    log.info("configuration reloaded", source=config.source,
             targets=sorted(registry.browsers))
