"""Every library exception a host or browser operation can meet comes out as the gateway's.

The libraries' exceptions are mapped once per library (``map_exceptions`` and a table:
asyncssh's in ``hosts/ssh.py``, this machine's sockets in ``hosts/local.py``,
websockets' in ``cdp/connection.py``). These tests raise each exception type of those
libraries — every ``asyncssh.Error`` subclass, every ``OSError`` subclass (``TimeoutError``
among them), every websockets exception, anyio's broken stream — through the tables, and
through the operations themselves with the library call failing, and check a gateway
error comes out: one the tool layer shows as a clear tool error, never an internal one.
"""

from __future__ import annotations

import contextlib
import errno
import inspect
import io
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import asyncssh
import pytest
import websockets.exceptions
from websockets.datastructures import Headers
from websockets.http11 import Response

from gateway.cdp.connection import open_websocket, websocket_errors
from gateway.config import ReconnectPolicy, load_config, parse_ssh_destination
from gateway.errors import (
    DiscoveryError,
    GatewayError,
    HostError,
    HostKeyRejected,
    NothingListens,
    StagingFailed,
    TargetUnavailable,
    map_exceptions,
)
from gateway.fleet.registry import open_registry
from gateway.hosts.http import CLOSED_UNANSWERED, ChannelStream, request_over
from gateway.hosts.local import LocalHost, socket_errors
from gateway.hosts.ssh import SshHost
from gateway.hosts.ssh_errors import ssh_errors


def subclasses(base: type[BaseException]) -> Iterator[type[BaseException]]:
    yield base
    for sub in base.__subclasses__():
        yield from subclasses(sub)


LIBRARY = "csgw-library-words"
"""The text every library exception here is made with: the gateway's messages must not
repeat it (they say what happened in words of their own)."""


def instance(kind: type[BaseException]) -> BaseException:
    """An exception of ``kind``, its constructor's parameters filled by name (any text
    with ``LIBRARY``)."""
    params = [p for p in list(inspect.signature(kind.__init__).parameters.values())[1:]
              if (p.default is p.empty or p.name == "max_size")
              and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    fill: dict[str, Any] = {"code": 1, "response": Response(403, "Forbidden", Headers()),
                            "rcvd": None, "sent": None, "env": None, "command": None,
                            "subsystem": None, "exit_status": 1, "exit_signal": None,
                            "returncode": 1, "stdout": b"", "stderr": b"", "pos": 0,
                            "size_or_message": 10, "max_size": 5, "max_fragments": 1}
    if not params and issubclass(kind, OSError):
        return kind(errno.ECONNRESET, LIBRARY)
    if not params:
        return kind(LIBRARY)
    return kind(*[fill.get(p.name, LIBRARY) for p in params])


def named(kind: type[BaseException]) -> str:
    return f"{kind.__module__}.{kind.__qualname__}"


def unique(kinds: Iterator[type[BaseException]]) -> list[type[BaseException]]:
    return sorted(set(kinds), key=named)


ASYNCSSH = unique(subclasses(asyncssh.Error))
OS = unique(k for k in subclasses(OSError) if k.__module__ in ("builtins", "socket", "ssl"))
"""The OS's errors (and the ssl module's): what sockets, files and processes raise."""
WEBSOCKETS = unique(subclasses(websockets.exceptions.WebSocketException))


def test_the_lists_hold_what_the_libraries_raise() -> None:
    """So the tests below cannot pass on an empty list."""
    assert {asyncssh.ChannelOpenError, asyncssh.PermissionDenied, asyncssh.SFTPError} \
        <= set(ASYNCSSH)
    assert {TimeoutError, ConnectionRefusedError, FileNotFoundError} <= set(OS)
    assert {websockets.exceptions.InvalidStatus, websockets.exceptions.ConnectionClosed} \
        <= set(WEBSOCKETS)


def mapped(table: Any, exc: BaseException) -> GatewayError:
    with pytest.raises(GatewayError) as caught, map_exceptions(table):
        raise exc
    return caught.value


# ----------------------------------------------------------------- the tables themselves


@pytest.mark.parametrize("kind", ASYNCSSH + OS, ids=named)
def test_asyncssh_and_socket_errors_become_host_errors(kind: type[BaseException]) -> None:
    table = ssh_errors(lambda why: f"could not do it ({why})", "it timed out")
    error = mapped(table, instance(kind))
    assert type(error) is HostError
    if issubclass(kind, TimeoutError):
        assert str(error) == "it timed out"
    else:  # what happened, in the gateway's words: never the library's
        assert str(error).startswith("could not do it (") and str(error) != "could not do it ()"
        assert LIBRARY not in str(error), str(error)


@pytest.mark.parametrize("kind", WEBSOCKETS + OS, ids=named)
def test_websocket_errors_become_discovery_errors(kind: type[BaseException]) -> None:
    error = mapped(websocket_errors("t", "ws://h:1/x", 2), instance(kind))
    assert isinstance(error, DiscoveryError) and error.target == "t"
    assert str(error).startswith("target 't' unreachable (DevTools websocket ws://h:1/x ")
    assert LIBRARY not in str(error), str(error)  # which may quote a secret of the URL


def test_a_refused_websocket_handshake_names_the_status_and_what_to_check() -> None:
    error = mapped(websocket_errors("t", "wss://h/x?token=[redacted]", 2),
                   instance(websockets.exceptions.InvalidStatus))
    assert error.cause == ("DevTools websocket wss://h/x?token=[redacted] refused: HTTP 403 — "
                           "the credentials (token or headers) were refused; check them")


@pytest.mark.parametrize("kind", [*OS, anyio.BrokenResourceError], ids=named)
def test_this_machines_socket_errors_become_host_errors(kind: type[BaseException]) -> None:
    for unix in (False, True):
        error = mapped(socket_errors(unix=unix), instance(kind))
        refused = unix and issubclass(kind, (ConnectionRefusedError, FileNotFoundError))
        assert type(error) is (NothingListens if refused else HostError), (kind, unix)
        assert LIBRARY not in str(error) and str(error), str(error)


def test_a_broken_stream_says_what_the_os_error_under_it_means() -> None:
    try:
        raise anyio.BrokenResourceError from ConnectionResetError(errno.ECONNRESET, LIBRARY)
    except anyio.BrokenResourceError as exc:
        assert str(mapped(socket_errors(unix=False), exc)) == (
            "the connection was reset by the other end")


def test_what_a_table_does_not_name_passes_through_as_itself() -> None:
    """A bug stays a bug (its traceback shows where), the gateway's own errors keep
    their text, and a cancellation is never turned into an error."""
    table = ssh_errors(lambda why: why, "timed out")
    for exc in (KeyError("k"), HostKeyRejected("changed key"), ValueError("not asyncssh's")):
        with pytest.raises(type(exc)) as caught, map_exceptions(table):
            raise exc
        assert caught.value is exc

    async def cancelled() -> None:
        with anyio.CancelScope() as scope, map_exceptions({BaseException: HostError}):  # type: ignore[dict-item]
            scope.cancel()
            await anyio.sleep(1)
        assert scope.cancelled_caught

    anyio.run(cancelled)


# ----------------------------------------------------------- through the operations


class Failing:
    """An asyncssh connection whose every call fails with ``exc``."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    async def fail(self, *args: object, **kwargs: object) -> Any:
        raise self.exc

    run = open_connection = open_unix_connection = fail
    forward_local_path_to_port = forward_local_path = fail

    def start_sftp_client(self) -> Failing:
        return self

    async def __aenter__(self) -> None:
        raise self.exc

    async def __aexit__(self, *exc_info: object) -> None:
        return None


def operations(host: SshHost) -> dict[str, Callable[[], Any]]:
    return {"run": lambda: host.run("true", 5),
            "read_files": lambda: host.read_files(["~/x"], 5),
            "stage_files": lambda: host.stage_files([], 5),
            "http_request": lambda: host.http_request("127.0.0.1", 9222, "/json/version", 5),
            "share request": lambda: host.http_request("127.0.0.1", 0, "/", 5, socket="/s"),
            "route": lambda: host.route("127.0.0.1", 9222),
            "share route": lambda: host.route("127.0.0.1", 0, socket="/s")}


@pytest.mark.parametrize("kind", ASYNCSSH + OS, ids=named)
def test_an_ssh_operation_meeting_a_library_error_fails_with_a_host_error(
        kind: type[BaseException], monkeypatch: pytest.MonkeyPatch) -> None:
    host = SshHost(parse_ssh_destination("u@h"), "strict",
                   ReconnectPolicy())
    exc = instance(kind)

    async def connection() -> Failing:
        return Failing(exc)

    monkeypatch.setattr(host, "connection", connection)

    async def main() -> None:
        for name, operation in operations(host).items():
            with pytest.raises(HostError) as caught:
                await operation()
            error = caught.value
            assert not isinstance(error, StagingFailed), name  # no directory was made
            if isinstance(exc, asyncssh.ChannelOpenError) and name.endswith("request"):
                assert isinstance(error, NothingListens), name
            assert str(error), name

    anyio.run(main)


def test_a_local_request_to_a_socket_nobody_serves_says_nothing_listens(tmp_path: Any) -> None:
    async def main() -> None:
        with pytest.raises(NothingListens, match=r"nothing listens there \(no such file"):
            await LocalHost().http_request("127.0.0.1", 0, "/", 2, socket=str(tmp_path / "s"))

    anyio.run(main)


def test_a_websocket_to_a_socket_nobody_serves_is_a_discovery_error(tmp_path: Any) -> None:
    async def main() -> None:
        with pytest.raises(DiscoveryError, match=r"refused: no such file or socket"):
            await open_websocket("ws://127.0.0.1:1/devtools/browser/x",
                                 unix_path=str(tmp_path / "s"), target="t", timeout_s=2)

    anyio.run(main)


# ------------------------------------------------- in the gateway's words, with a next step

NEXT_STEP = re.compile(r"\b(retry|check|call|restart|raise|fix|give|free|must)\b")
"""Words a message uses to say what to do next (``retry``, ``check …``, ``call list_tabs``)."""


@pytest.mark.parametrize("kind", ASYNCSSH + OS, ids=named)
def test_an_ssh_operation_says_what_happened_in_its_own_words(
        kind: type[BaseException], monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever asyncssh (or the socket under it) said stays out of the message; the
    operations a tool runs mid-call (copying a download back, staging an upload) say what
    to do next themselves — the others reach a client through the target's error, which
    says it (``test_a_target_that_cannot_connect_says_why_and_what_to_do``)."""
    host = SshHost(parse_ssh_destination("u@h"), "strict", ReconnectPolicy())
    exc = instance(kind)

    async def connection() -> Failing:
        return Failing(exc)

    monkeypatch.setattr(host, "connection", connection)
    mid_call = {"stage_files": lambda: host.stage_files([], 5),
                "fetch_file": lambda: host.fetch_file("/tmp/x.zip", io.BytesIO(), 10, 5)}

    async def main() -> None:
        for name, operation in {**operations(host), **mid_call}.items():
            with pytest.raises(HostError) as caught:
                await operation()
            text = str(caught.value)
            assert LIBRARY not in text, (name, text)
            if name in mid_call:
                assert NEXT_STEP.search(text), (name, text)

    anyio.run(main)


async def _serve_unix(path: Path, answer: bytes) -> None:
    """Take each connection on ``path``, read the request, send ``answer``, close."""
    async def handle(stream: anyio.abc.SocketStream) -> None:
        async with stream:
            with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError):
                await stream.receive()
                if answer:
                    await stream.send(answer)

    listener = await anyio.create_unix_listener(path)
    await listener.serve(handle)


@pytest.mark.parametrize(("answer", "said"), [
    (b"", CLOSED_UNANSWERED),  # a share's socket whose sharer just went
    (b"SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n", "what answered is not HTTP (it began "
                                           "'SSH-2.0-OpenSSH_9.2p1 Debian-2..'): the "
                                           "address is another program's, not the one asked "
                                           "for"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n{\"a\"",
     "the connection closed before the answer ended: retry"),
], ids=["closed-unanswered", "not-http", "cut-short"])
def test_an_http_answer_that_is_not_one_is_said_in_our_words(
        tmp_path: Path, answer: bytes, said: str) -> None:
    """Through a real socket and h11: h11's own words ("can't handle event type
    ConnectionClosed when role=SERVER and state=SEND_RESPONSE", "illegal status line:
    bytearray(…)") never reach the message."""
    path = tmp_path / "s.sock"

    async def main() -> str:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_serve_unix, path, answer)
            while not path.exists():
                await anyio.sleep(0.01)
            with pytest.raises(HostError) as caught:
                await LocalHost().http_request("localhost", 80, "/json/version", 5,
                                               socket=str(path))
            tg.cancel_scope.cancel()
        return str(caught.value)

    text = anyio.run(main)
    assert text == said
    for h11_words in ("can't handle", "role=", "state=", "illegal", "bytearray", "h11"):
        assert h11_words not in text, text


def test_a_request_http_cannot_carry_is_said_so(tmp_path: Path) -> None:
    """h11's ``LocalProtocolError`` (our side's) is not the peer's fault: not "not HTTP"."""
    async def main() -> str:
        with pytest.raises(HostError) as caught:
            await request_over(ChannelStream(_Silent(), _Silent()), "127.0.0.1", 9222,
                               "/json/version x\r\n")
        return str(caught.value)

    assert anyio.run(main) == ("GET '/json/version x\\r\\n' cannot be sent as HTTP (a "
                               "character a path or header may not hold)")


class _Silent:
    """A channel's reader and writer that take anything and answer nothing."""

    async def read(self, n: int = -1) -> bytes:
        return b""

    def write(self, data: bytes) -> None:
        return None

    async def drain(self) -> None:
        return None

    def close(self) -> None:
        return None


async def _closes_at_once(stream: anyio.abc.SocketStream) -> None:
    await stream.aclose()


@pytest.mark.parametrize("serve", ["nothing", "closes"], ids=["nothing-listens",
                                                              "closed-in-the-handshake"])
def test_a_target_that_cannot_connect_says_why_and_what_to_do(tmp_path: Path,
                                                               serve: str) -> None:
    """A real ``Browser`` whose websocket cannot open: the client hears what happened in
    the gateway's words (not websockets' "did not receive a valid HTTP response", not
    "[Errno 111] Connect call failed") and what to do next."""
    async def main() -> str:
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
        port = listener.extra(anyio.abc.SocketAttribute.local_port)
        async with anyio.create_task_group() as tg:
            if serve == "closes":
                tg.start_soon(listener.serve, _closes_at_once)
            else:
                await listener.aclose()
            targets = tmp_path / "targets.toml"
            targets.write_text(f'[targets.p]\ncdp = "ws://127.0.0.1:{port}/devtools/browser/x"\n'
                               "[targets.p.reconnect]\ncall_wait_s = 5\n")
            async with open_registry(load_config({}, str(targets))) as registry:
                with pytest.raises(TargetUnavailable) as caught:
                    await registry.browsers["p"].connection()
            tg.cancel_scope.cancel()
        return str(caught.value)

    text = anyio.run(main)
    said = ("the connection was refused: nothing listens there" if serve == "nothing" else
            "what answered is not a DevTools websocket (the opening handshake failed)")
    assert text.startswith("target 'p' unreachable (DevTools websocket "
                           "127.0.0.1:"), text
    assert said in text, text
    assert "retry shortly, or check list_targets" in text, text
    for library_words in ("Errno", "did not receive", "Connect call failed", "InvalidMessage"):
        assert library_words not in text, text
