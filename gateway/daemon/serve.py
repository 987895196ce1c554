"""The background gateway behind ``call``: MCP over HTTP on a private Unix socket.

A shell runs one command at a time; an agent session needs the same tab ids,
view refs and warm SSH connections across them. The daemon is an ordinary HTTP
gateway (``http.py``) on ``<runtime dir>/<config key>.sock`` that writes a pid
file naming itself and its version, and stops after ``idle_timeout`` seconds
without calls. Started by ``call`` (``control.py``) on first use.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

import structlog

from gateway import __version__
from gateway.config import GatewayConfig
from gateway.daemon.runtime_dir import (
    DaemonPaths,
    live_record,
    private_dir,
    process_start,
    remove_pid_file,
    write_pid_file,
)
from gateway.errors import DaemonError
from gateway.mcp.http import HttpAddress, bind, serve_http
from gateway.mcp.idle import Idle

__all__ = ["run_daemon"]

log = structlog.get_logger("gateway.daemon")


def _claim(paths: DaemonPaths) -> None:
    """Write our pid file; a stale one (its process gone) is replaced, a live one wins."""
    record = {"pid": os.getpid(), "version": __version__, "socket": str(paths.socket),
              "started": time.time(), "start_ticks": process_start(os.getpid())}
    for _ in range(2):
        if write_pid_file(paths.pid_file, record):
            return
        other = live_record(paths.pid_file)
        if other is not None:
            raise DaemonError(f"a gateway daemon is already running (pid {other['pid']})")
        log.info("stale pid file removed", path=str(paths.pid_file))
    raise DaemonError(f"could not write the pid file {paths.pid_file}")


async def run_daemon(paths: DaemonPaths, config: GatewayConfig,
                     load: Callable[[], GatewayConfig], idle_timeout: float,
                     follow: str | None = None) -> None:
    """Serve until SIGTERM or ``idle_timeout`` seconds without calls, then clean up;
    a call after the targets file ``follow`` changed reloads it first."""
    private_dir(paths.directory)
    _claim(paths)
    try:
        address = HttpAddress(path=str(paths.socket))
        sock = bind(address)
        await serve_http(config, address, None, reload=load, idle=Idle(idle_timeout), sock=sock,
                         settle=True, follow=follow)
    finally:
        remove_pid_file(paths.pid_file, os.getpid())
