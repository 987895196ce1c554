"""MCP over the SDK's streamable HTTP transport, on a TCP port or a Unix socket.

One gateway, many sessions: every MCP client connected here shares the same
registry (targets, SSH connections, tab ids) and call log; the call log names
each call's client session (``app._session_of``). The listening socket
is made here rather than by uvicorn so that a Unix socket is 0600 from the
first moment (uvicorn would make it 0666) and a TCP port of 0 can be asked for.
TCP binds loopback unless the user names another address and gives a token
(``auth.py``); a token is always required on TCP.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import signal
import socket
import stat
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio
import structlog
import uvicorn
from mcp.server.transport_security import TransportSecuritySettings

from gateway.config import GatewayConfig, host_port
from gateway.errors import ConfigError
from gateway.live.app import issuing_links, with_live
from gateway.live.web import QuietServer
from gateway.mcp.auth import Guard, generate_token, read_token_file
from gateway.mcp.follow import FollowFile
from gateway.mcp.idle import Idle
from gateway.mcp.reload import reload_on_hangup
from gateway.mcp.start import running_server

__all__ = ["HttpAddress", "bind", "parse_http_address", "resolve_token", "serve_http"]

log = structlog.get_logger("gateway.http")

MCP_PATH = "/mcp"


@dataclass(frozen=True)
class HttpAddress:
    """Where to listen: ``host``/``port`` for TCP, or ``path`` for a Unix socket."""

    host: str = ""
    port: int = 0
    path: str | None = None

    @property
    def loopback(self) -> bool:
        if self.path is not None or self.host == "localhost":
            return True
        return ipaddress.ip_address(self.host).is_loopback

    def url(self) -> str:
        where = "localhost" if self.path is not None else host_port(self.host, self.port)
        return f"http://{where}{MCP_PATH}"

    def __str__(self) -> str:
        return f"unix:{self.path}" if self.path is not None else host_port(self.host, self.port)


def parse_http_address(text: str) -> HttpAddress:
    """``HOST:PORT`` (an IP literal or ``localhost``; IPv6 in brackets) or ``unix:PATH``."""
    text = text.strip()
    if text.startswith("unix:"):
        path = text[5:]
        if not path.startswith("/"):
            raise ConfigError("--http", text, "a Unix socket path must be absolute")
        return HttpAddress(path=path)
    host, sep, port_text = text.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not sep or not port_text.isdigit() or int(port_text) > 65535:
        raise ConfigError("--http", text, "expected HOST:PORT (e.g. 127.0.0.1:8931) or "
                                          "unix:/path/to/socket")
    if host != "localhost":
        try:
            ipaddress.ip_address(host)
        except ValueError:
            raise ConfigError("--http", text, "the host must be an IP address or localhost "
                                              "(a name could resolve elsewhere)") from None
    return HttpAddress(host=host, port=int(port_text))


def resolve_token(address: HttpAddress, token_file: str | None) -> str | None:
    """The token the server requires: none on a Unix socket; from ``token_file`` or fresh
    (printed to stderr) on loopback TCP; a non-loopback bind without a file is refused."""
    if address.path is not None:
        return None
    if token_file is not None:
        return read_token_file(token_file)
    if not address.loopback:
        raise ConfigError("--http", str(address),
                          "a non-loopback address is reachable from other machines; give "
                          "--token-file FILE (a 0600 file holding the token) to serve there")
    token = generate_token()
    print(f"chrome-ssh-gateway: HTTP token (send Authorization: Bearer <token>): {token}",
          file=sys.stderr, flush=True)
    return token


def bind(address: HttpAddress) -> socket.socket:
    """The listening socket: TCP, or a Unix socket created 0600 (a stale socket file
    nobody listens on is replaced; anything else at the path is refused)."""
    if address.path is None:
        family = socket.AF_INET6 if ":" in address.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # Inherited by accepted connections. Without it a reply written in two pieces
        # waits for the client's delayed ACK: 50 ms per call instead of 3 (measured).
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            sock.bind((address.host, address.port))
        except OSError as exc:
            sock.close()
            raise ConfigError("--http", str(address), f"cannot listen: {exc.strerror}") from None
    else:
        _clear_stale_socket(address.path)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            sock.bind(address.path)
        except OSError as exc:
            sock.close()
            raise ConfigError("--http", str(address), f"cannot listen: {exc.strerror}") from None
        finally:
            os.umask(old)
        os.chmod(address.path, 0o600)
    sock.listen(128)
    sock.set_inheritable(False)
    return sock


def _clear_stale_socket(path: str) -> None:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(info.st_mode):
        raise ConfigError("--http", f"unix:{path}", "something other than a socket is there; "
                                                    "remove it or choose another path")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.settimeout(1.0)
        probe.connect(path)
    except OSError:
        os.unlink(path)  # left behind by a gateway that died: nobody answers on it
        return
    finally:
        probe.close()
    raise ConfigError("--http", f"unix:{path}", "another server is listening there")


def _security(address: HttpAddress) -> TransportSecuritySettings:
    """The SDK's Host check (against DNS rebinding) on loopback; elsewhere the token is
    the protection, and the Host a remote client uses is not known in advance."""
    if address.path is not None or address.loopback:
        return TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*", "localhost"],
            allowed_origins=[])
    return TransportSecuritySettings(enable_dns_rebinding_protection=False)


async def serve_http(config: GatewayConfig, address: HttpAddress, token: str | None, *,
                     reload: Callable[[], GatewayConfig] | None = None,
                     idle: Idle | None = None, sock: socket.socket | None = None,
                     settle: bool = False, follow: str | None = None) -> None:
    """Serve MCP at ``address`` until SIGTERM/SIGINT (or cancellation); with ``reload``,
    SIGHUP applies what it returns; with ``idle``, the server stops after its timeout
    without requests. ``sock`` is an already bound listening socket. With ``settle``,
    the first request waits for the targets' first connection attempts (``call``).
    With ``follow`` (a targets file) and ``reload``, a request after the file changed
    reloads first (``call``'s daemon: see ``follow.py``)."""
    sock = sock if sock is not None else bind(address)
    try:
        async with running_server(config) as (server, registry):
            if settle:
                await registry.settled()  # meanwhile callers queue in the listen backlog
            app: Any = server.streamable_http_app(streamable_http_path=MCP_PATH,
                                                  transport_security=_security(address))
            if follow is not None and reload is not None:
                app = FollowFile(app, follow, registry, reload)
            if server.live is not None:
                app = issuing_links(app, server.live)
                if idle is not None:
                    idle.busy_while(server.live.watched)
            asgi: Any = Guard(idle.wrap(app) if idle is not None else app, token)
            if server.live is not None and address.path is None and address.loopback:
                live = server.live  # a browser can open the page here: served here
                live.mounted(f"http://{host_port(address.host, sock.getsockname()[1])}")
                asgi = with_live(asgi, live)
            web = QuietServer(uvicorn.Config(asgi, log_level="warning", lifespan="on",
                                             timeout_graceful_shutdown=5, ws_max_size=65_536,
                                             ws_per_message_deflate=False))  # live frames
            async with anyio.create_task_group() as tg:
                if reload is not None:
                    tg.start_soon(reload_on_hangup, registry, reload)
                tg.start_soon(_stop_on_signal, web)
                if idle is not None:
                    tg.start_soon(_stop_when_idle, idle, web)
                log.info("serving MCP over HTTP", url=address.url(), listen=str(address))
                await web.serve(sockets=[sock])
                tg.cancel_scope.cancel()
    finally:
        sock.close()
        if address.path is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(address.path)
    log.info("HTTP server stopped")


async def _stop_on_signal(web: uvicorn.Server) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for signum in signals:
            log.info("stopping", signal=signal.Signals(signum).name)
            web.should_exit = True


async def _stop_when_idle(idle: Idle, web: uvicorn.Server) -> None:
    await idle.wait()
    log.info("no calls for a while; stopping", idle_timeout_s=idle.timeout)
    web.should_exit = True
