"""This machine as a host: commands in a local shell, files read directly, loopback TCP.

Files to upload need no copy: the browser reads them where they are, once they are
checked to be still the files the agent's paths resolved to; a download comes back by a
plain copy."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

import anyio
import anyio.abc

from gateway.errors import ExceptionMap, HostError, NothingListens, map_exceptions
from gateway.hosts.base import FileText, HostKind, Route, Staged
from gateway.hosts.held import Held, hold_here
from gateway.hosts.http import ByteStream, HttpResponse, request
from gateway.hosts.os_words import os_reason
from gateway.hosts.shell import WILDCARD, expand
from gateway.hosts.transfer import fetch_here
from gateway.output.files import Readable, open_readable

__all__ = ["LocalHost", "connect_tcp", "socket_errors"]


def socket_errors(*, unix: bool) -> ExceptionMap:
    """This machine's socket failures (anyio's, over the OS's) as ``HostError``, in the
    gateway's words (``os_reason``). A Unix socket refused or missing is
    ``NothingListens`` (a share's socket whose sharer is gone)."""

    def failed(exc: BaseException) -> HostError:
        if unix and isinstance(exc, (ConnectionRefusedError, FileNotFoundError)):
            return NothingListens(f"nothing listens there ({os_reason(exc)})")
        return HostError(os_reason(exc))

    # anyio's BrokenResourceError says only that the stream broke; the OS's error is its cause
    return {anyio.BrokenResourceError: lambda exc: failed(exc.__cause__ or exc),
            OSError: failed}


async def connect_tcp(host: str, port: int) -> anyio.abc.SocketStream:
    """anyio's TCP connect, failing with the OS's own error: anyio raises "All connection
    attempts failed" with the attempts' errors as its cause, and those say which address
    refused, and why (``errno``); of several (IPv4 and IPv6), the first."""
    try:
        return await anyio.connect_tcp(host, port)
    except OSError as exc:
        cause = exc.__cause__
        if isinstance(cause, ExceptionGroup):
            cause = next((e for e in cause.exceptions if isinstance(e, OSError)), None)
        if isinstance(cause, OSError):
            raise cause from None
        raise


def _command_errors(timeout_s: float) -> ExceptionMap:
    return {TimeoutError: lambda _: HostError(f"a local command timed out after {timeout_s:g} s"),
            anyio.DelimiterNotFound: lambda _: HostError("a local command printed a line over "
                                                         "64 kB"),
            OSError: lambda exc: HostError(f"could not run a local command "
                                           f"({os_reason(exc)})")}


class LocalHost:
    """A browser on this machine needs no tunnel: routes are the address itself."""

    kind: HostKind = "local"
    label = "this machine"

    async def connect(self) -> None:
        return None

    async def run(self, command: str, timeout_s: float) -> str:
        with map_exceptions(_command_errors(timeout_s)), anyio.fail_after(timeout_s):
            done = await anyio.run_process(["/bin/sh", "-c", command], check=False,
                                           stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return done.stdout.decode("utf-8", "replace")

    async def hold(self, command: str, until: str, timeout_s: float) -> tuple[str, Held | None]:
        with map_exceptions(_command_errors(timeout_s)):
            return await hold_here(command, until, timeout_s)

    async def read_files(self, paths: Sequence[str], timeout_s: float) -> dict[str, FileText]:
        found = {}
        for asked in paths:
            path = Path.home() / Path(asked).expanduser()  # an absolute path stays itself
            pattern = WILDCARD in asked
            for each in expand(str(path)) if pattern else [str(path)]:
                try:
                    found[each if pattern else asked] = FileText(each, Path(each).read_text())
                except (OSError, UnicodeDecodeError):
                    continue
        return found

    async def stage_files(self, files: Sequence[Readable], timeout_s: float) -> Staged:
        for file in files:  # still the files checked: not swapped while the chooser opened
            open_readable(file).close()
        return Staged(None, tuple(str(f.path) for f in files))

    async def fetch_file(self, path: str, into: BinaryIO, max_bytes: int,
                         timeout_s: float) -> int:
        with map_exceptions({TimeoutError: lambda _: HostError(
                f"copying {path} timed out after {timeout_s:g} s; raise timeout_s for large "
                "files")}), anyio.fail_after(timeout_s):
            return await fetch_here(os.path.expanduser(path), into, max_bytes)

    async def http_request(self, host: str, port: int, path: str, timeout_s: float, *,
                           method: str = "GET", body: bytes | None = None,
                           socket: str | None = None) -> HttpResponse:
        async def connect() -> ByteStream:
            if socket is not None:
                return await anyio.connect_unix(os.path.expanduser(socket))
            return await connect_tcp(host, port)

        return await request(connect, host, port, path, timeout_s,
                             socket_errors(unix=socket is not None), method=method, body=body)

    async def route(self, host: str, port: int, *, socket: str | None = None) -> Route:
        return Route(host, port, unix_path=None if socket is None
                     else os.path.expanduser(socket))

    def release(self, host: str, port: int, *, socket: str | None = None) -> None:
        return None

    async def expose(self, local_port: int, host: str, port: int) -> None:
        return None  # the browser already listens on this machine's loopback

    async def alive(self, host: str, port: int, timeout_s: float) -> bool:
        return True  # loopback does not go down; a silent Chrome is a hung page

    async def aclose(self) -> None:
        return None
