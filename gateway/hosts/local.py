"""This machine as a host: commands in a local shell, files read directly, loopback TCP.

Files to upload need no copy: the browser reads them where they are, once they are
checked to be still the files the agent's paths resolved to."""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

import anyio

from gateway.errors import HostError, NothingListens
from gateway.hosts.base import FileText, HostKind, Route, Staged
from gateway.hosts.held import Held, hold_here
from gateway.hosts.http import HttpResponse, request_over
from gateway.output.files import Readable, open_readable

__all__ = ["LocalHost"]


class LocalHost:
    """A browser on this machine needs no tunnel: routes are the address itself."""

    kind: HostKind = "local"
    label = "this machine"

    async def connect(self) -> None:
        return None

    async def run(self, command: str, timeout_s: float) -> str:
        try:
            with anyio.fail_after(timeout_s):
                done = await anyio.run_process(["/bin/sh", "-c", command], check=False,
                                               stdin=subprocess.DEVNULL,
                                               stderr=subprocess.DEVNULL)
        except TimeoutError:
            raise HostError(f"a local command timed out after {timeout_s:g} s") from None
        except OSError as exc:
            raise HostError(f"could not run a local command ({exc})") from None
        return done.stdout.decode("utf-8", "replace")

    async def hold(self, command: str, until: str, timeout_s: float) -> tuple[str, Held | None]:
        return await hold_here(command, until, timeout_s)

    async def read_files(self, paths: Sequence[str], timeout_s: float) -> dict[str, FileText]:
        found = {}
        for asked in paths:
            path = Path.home() / Path(asked).expanduser()  # an absolute path stays itself
            try:
                found[asked] = FileText(str(path), path.read_text())
            except (OSError, UnicodeDecodeError):
                continue
        return found

    async def stage_files(self, files: Sequence[Readable], timeout_s: float) -> Staged:
        for file in files:  # still the files checked: not swapped while the chooser opened
            open_readable(file).close()
        return Staged(None, tuple(str(f.path) for f in files))

    async def http_request(self, host: str, port: int, path: str, timeout_s: float, *,
                           method: str = "GET", body: bytes | None = None,
                           socket: str | None = None) -> HttpResponse:
        try:
            with anyio.fail_after(timeout_s):
                if socket is not None:
                    reader, writer = await asyncio.open_unix_connection(
                        os.path.expanduser(socket))
                else:
                    reader, writer = await asyncio.open_connection(host, port)
                return await request_over(reader, writer, host, port, path,
                                          method=method, body=body)
        except TimeoutError:
            raise HostError(f"no HTTP answer within {timeout_s:g} s") from None
        except (ConnectionRefusedError, FileNotFoundError) as exc:
            if socket is None:
                raise HostError(str(exc)) from None
            raise NothingListens(f"nothing listens there ({exc.strerror})") from None
        except (OSError, ValueError) as exc:
            raise HostError(str(exc) or type(exc).__name__) from None

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
