"""Serving from a cold process: the browsers connect while the MCP SDK loads.

Importing the SDK and the tool families is most of a start (~400 ms here, all CPU in
this process), and a first connection over SSH ~100 ms, mostly waiting on sshd and
Chrome in theirs. So the registry starts first and the import runs in a worker thread
meanwhile: by the time the server is built the browsers are usually up.
While it connects, the loop thread imports only a few small modules the first time
they are used: h11 (``/json/version``), ``encodings.idna`` (an SSH host's name),
``anyio._core._subprocesses`` (a local launch), ``_strptime`` and ``importlib.readers``
(a host scan). The worker imports only the last of them too, and nothing that chain
imports (``importlib.resources.readers``, ``_itertools``) imports it back, so the two
threads cannot deadlock on import locks: the SSH, discovery and CDP modules come
with the registry. This module itself must not import the SDK.
"""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import anyio
import structlog

from gateway.config import GatewayConfig
from gateway.errors import ConfigError
from gateway.fleet.registry import Registry, open_registry
from gateway.live.hub import open_live
from gateway.mcp.call_log import CallLog
from gateway.mcp.reload import reload_on_hangup

if TYPE_CHECKING:
    from gateway.mcp.app import GatewayServer
    from gateway.tools.sets import Selection

__all__ = ["running_server", "serve_stdio"]

log = structlog.get_logger("gateway.mcp")
DEFAULT_TOOLS = GatewayConfig.model_fields["tools"].default  # names no unknown tool


@asynccontextmanager
async def running_server(config: GatewayConfig
                         ) -> AsyncIterator[tuple[GatewayServer, Registry]]:
    """Registry started, call log open, server built; all closed again on exit. A bad
    ``--tools`` fails first, before any browser is contacted: a spec of one's own is
    read (the tools imported) before the registry starts; only the default, which
    always offers tools, is read while the browsers connect. The live view (its page
    served on first use) lives as long."""
    call_log = CallLog.open(config.call_log)
    try:
        # A launch = true target would start a browser on its host for a start that
        # then ends with "unknown tool or set": a spec other than "all" costs the overlap.
        checked = (None if config.tools == DEFAULT_TOOLS
                   else await anyio.to_thread.run_sync(_offered, config))
        async with open_registry(config) as registry, \
                open_live(registry, call_log.recent, call_log.write) as live:
            selection = (checked if checked is not None
                         else await anyio.to_thread.run_sync(_offered, config))
            from gateway.mcp.app import build_server

            server = build_server(registry, call_log, selection, live)
            _collect_from_now_on()
            yield server, registry
    except* ConfigError as group:  # raised inside the registry's task group: itself again
        raise group.exceptions[0] from None
    finally:
        call_log.close()


def _offered(config: GatewayConfig) -> Selection:
    """Import the server (the SDK, every tool family) and read which tools to offer."""
    from gateway.mcp.app import offered_tools

    return offered_tools(config)


def _collect_from_now_on() -> None:
    """Turn on the collector the CLI paused for the start (``cli._serve_or_run``). What
    the start made lives as long as the process: frozen, no collection scans it again."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()


async def serve_stdio(config: GatewayConfig,
                      reload: Callable[[], GatewayConfig] | None = None) -> None:
    """Serve MCP on stdin/stdout until the client closes stdin; with ``reload``, a
    SIGHUP applies what it returns (see ``server.reload``)."""
    async with running_server(config) as (server, registry), anyio.create_task_group() as tg:
        if reload is not None:
            tg.start_soon(reload_on_hangup, registry, reload)
        await server.run_stdio_async()
        tg.cancel_scope.cancel()
    log.info("client went away; gateway stopped")
