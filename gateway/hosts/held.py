"""Commands left running on a host for exactly as long as the gateway holds them.

A browser the gateway launched to be stopped on exit must not outlive it, however
it ends — a SIGKILL, an OOM kill, a Ctrl-C during start-up — and no code of the
gateway runs then. What does happen is that the kernel closes the gateway's pipes,
and sshd closes the channels of a connection whose client is gone. So the launch
script stays on the host reading its stdin (``launch_command(held=True)``), and this
module keeps the writing end: the script stops the browser when it reads a word or
the end of its input, whichever comes first. Over SSH the same holds for the
session's channel, so such a browser is tied to its SSH connection too.
"""

from __future__ import annotations

import subprocess
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol

import anyio
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from gateway.errors import HostError

if TYPE_CHECKING:  # imported by its only caller, ``SshHost``: a local gateway never needs it
    import asyncssh

__all__ = ["Held", "Sessions", "hold_here", "hold_over_ssh"]

_MAX_LINE = 64 * 1024


class Held(Protocol):
    """A command that runs until released (or until the gateway is gone)."""

    @property
    def gone(self) -> bool:
        """Whether the command has ended already (killed, or its connection lost)."""

    async def release(self, word: str, timeout_s: float) -> None:
        """Write ``word`` on its stdin, close it and wait up to ``timeout_s`` for the
        command to end; never raises (the far end may be gone already)."""


class Sessions:
    """The sessions of one connection (sshd refuses more than ``MaxSessions``): a
    command takes one while it runs (``async with``); a held command keeps one for as
    long as it is held, and is refused when holds would leave commands fewer than
    ``for_commands``."""

    def __init__(self, total: int, for_commands: int) -> None:
        self._free = anyio.Semaphore(total)
        self._most_held = total - for_commands
        self._held = 0

    async def __aenter__(self) -> None:
        await self._free.acquire()

    async def __aexit__(self, *exc_info: object) -> None:
        self._free.release()

    async def hold(self, start: Callable[[], Awaitable[tuple[str, Held | None]]],
                   where: str) -> tuple[str, Held | None]:
        """``start()`` (a ``hold_…``) in a session kept until its hold is released."""
        if self._held >= self._most_held:
            raise HostError(f"{self._held} launched browsers are held over {where} "
                            "already, the most that leaves room for commands; set "
                            "keep_running = true for some of its targets")
        self._held += 1
        await self._free.acquire()
        held: Held | None = None
        try:
            output, held = await start()
        finally:
            if held is None:
                self._give_back()
        return output, (_Slot(held, self._give_back) if held is not None else None)

    def _give_back(self) -> None:
        self._held -= 1
        self._free.release()


class _Slot:
    """A hold that gives its session back once released."""

    def __init__(self, held: Held, give_back: Callable[[], None]) -> None:
        self._held: Held | None = held
        self._give_back = give_back

    @property
    def gone(self) -> bool:
        return self._held is None or self._held.gone

    async def release(self, word: str, timeout_s: float) -> None:
        held, self._held = self._held, None
        if held is None:
            return
        try:
            await held.release(word, timeout_s)
        finally:
            self._give_back()


class _HeldHere:
    def __init__(self, process: Process) -> None:
        self._process = process

    @property
    def gone(self) -> bool:
        return self._process.returncode is not None

    async def release(self, word: str, timeout_s: float) -> None:
        stdin = self._process.stdin
        with anyio.move_on_after(timeout_s, shield=True):
            try:
                if stdin is not None:
                    await stdin.send(word.encode() + b"\n")
                    await stdin.aclose()
            except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass  # it ended already
            await self._process.wait()


class _HeldOverSsh:
    def __init__(self, process: asyncssh.SSHClientProcess[bytes]) -> None:
        self._process = process

    @property
    def gone(self) -> bool:
        return self._process.is_closing() or self._process.exit_status is not None

    async def release(self, word: str, timeout_s: float) -> None:
        import asyncssh

        with anyio.move_on_after(timeout_s, shield=True):
            try:
                self._process.stdin.write(word.encode() + b"\n")
                self._process.stdin.write_eof()
                await self._process.wait_closed()
            except (OSError, asyncssh.Error):
                pass  # the channel (or the connection) is gone: so is the command
        self._process.close()


async def hold_here(command: str, until: str, timeout_s: float) -> tuple[str, Held | None]:
    """Run ``command`` in this machine's ``/bin/sh`` with its stdin held; what it
    printed before the line ``until`` and the hold — or all it printed and None when
    it ended first. ``TimeoutError`` when it says nothing in time (the caller maps
    library errors: ``LocalHost``)."""
    process = await anyio.open_process(["/bin/sh", "-c", command], stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert process.stdout is not None
    lines = BufferedByteReceiveStream(process.stdout)
    printed: list[str] = []
    try:
        with anyio.fail_after(timeout_s):
            while True:
                try:
                    line = (await lines.receive_until(b"\n", _MAX_LINE)).decode("utf-8",
                                                                                "replace")
                except (anyio.IncompleteRead, anyio.EndOfStream):  # ended unheld
                    printed.append(bytes(lines.buffer).decode("utf-8", "replace"))
                    await process.wait()
                    return "".join(printed), None
                if line == until:
                    return "".join(printed), _HeldHere(process)
                printed.append(line + "\n")
    except BaseException:
        if process.stdin is not None:  # it ends on its own once it reads the end
            with anyio.CancelScope(shield=True):
                await process.stdin.aclose()
        raise


async def hold_over_ssh(conn: asyncssh.SSHClientConnection, command: str, until: str,
                        timeout_s: float) -> tuple[str, Held | None]:
    """``hold_here`` over the SSH connection ``conn``: the command's stdin is its
    session's channel, which sshd closes when the connection goes (``SshHost`` maps
    asyncssh's errors)."""
    printed: list[str] = []
    process: asyncssh.SSHClientProcess[bytes] | None = None
    try:
        with anyio.fail_after(timeout_s):
            process = await conn.create_process(command, encoding=None)
            while True:
                raw = await process.stdout.readline()
                if not raw:
                    process.close()
                    return "".join(printed), None
                line = raw.decode("utf-8", "replace").rstrip("\n")
                if line == until:
                    return "".join(printed), _HeldOverSsh(process)
                printed.append(line + "\n")
    except BaseException:
        if process is not None:  # the channel's end is the command's end of input
            process.close()
        raise
