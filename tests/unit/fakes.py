"""One fake CDP connection and one fake host for the unit tests, instead of a twin per file.

``FakeCdp`` offers what ``gateway.cdp.connection.CdpConnection`` offers its users: ``send``
(each command recorded as Chrome would get it, answered from a table or a callable per
method, a ``CdpError`` when the table says so), ``notify``, ``listen`` returning a remover
and ``fail_session``; ``emit`` hands an event to the listeners as Chrome's would arrive.
``FakeHost`` records what a ``gateway.hosts.base.Host`` is asked to run and copy;
``TabBrowser`` is the browser a ``TabSession`` calls through, onto a ``FakeCdp``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO

import anyio

from gateway.errors import HostError, StagingFailed
from gateway.hosts.base import Staged
from gateway.output.files import Readable
from gateway.tabs.tab import Tab

Listener = Callable[[str, dict[str, Any]], None]
Answer = dict[str, Any] | Exception | Callable[[dict[str, Any], str | None], Any]
Hook = Callable[[str, str | None], Awaitable[Any] | None]


@dataclass(frozen=True)
class Sent:
    """One command as it went to Chrome."""

    method: str
    params: dict[str, Any]
    session_id: str | None


class FakeCdp:
    """A browser connection: ``answers[method]`` is the result (a dict), an exception to
    raise, or a callable of (params, session) giving either; unlisted methods answer
    ``{}``. ``hook(method, session)`` runs first and may raise, or return an awaitable the
    reply waits for."""

    is_open = True

    def __init__(self, answers: dict[str, Answer] | None = None,
                 hook: Hook | None = None) -> None:
        self.answers: dict[str, Answer] = dict(answers or {})
        self.hook = hook
        self.commands: list[Sent] = []
        self.notified: list[Sent] = []
        self.listeners: dict[str | None, list[Listener]] = {}
        self.failed: list[tuple[str, str]] = []  # (session, why what waited there failed)

    def listen(self, session_id: str | None, listener: Listener,
               take: object = None) -> Callable[[], None]:
        self.listeners.setdefault(session_id, []).append(listener)

        def remove() -> None:
            if listener in self.listeners.get(session_id, []):
                self.listeners[session_id].remove(listener)

        return remove

    def emit(self, method: str, params: dict[str, Any], session_id: str | None = None) -> None:
        """An event from Chrome, to every listener of its session (None: the browser's)."""
        for listener in list(self.listeners.get(session_id, [])):
            listener(method, params)

    async def send(self, method: str, params: dict[str, Any] | None = None, *,
                   session_id: str | None = None, timeout_s: float = 5.0,
                   timeout_hint: str = "") -> dict[str, Any]:
        params = params or {}
        self.commands.append(Sent(method, params, session_id))
        if self.hook is not None:
            waiting = self.hook(method, session_id)
            if waiting is not None:
                await waiting
        answer = self.answers.get(method, {})
        if callable(answer):
            answer = answer(params, session_id)
        if isinstance(answer, Exception):
            raise answer
        return answer

    async def notify(self, method: str, params: dict[str, Any] | None = None, *,
                     session_id: str | None = None) -> None:
        self.notified.append(Sent(method, params or {}, session_id))

    def fail_session(self, session_id: str, error: Exception, _keep: Any) -> None:
        self.failed.append((session_id, str(error)))

    # What the tests compare, in the two shapes they use.
    def sent(self) -> list[tuple[str, dict[str, Any]]]:
        return [(c.method, c.params) for c in self.commands]

    def sessions(self) -> list[tuple[str, str | None]]:
        return [(c.method, c.session_id) for c in self.commands]

    def methods(self) -> list[str]:
        return [c.method for c in self.commands]


class TabBrowser:
    """What a ``TabSession`` asks of its browser, straight onto the fake connection."""

    name = "devvm"

    def __init__(self, cdp: FakeCdp) -> None:
        self.cdp = cdp

    async def tab_call(self, tab: Tab, method: str, params: dict[str, Any] | None = None, *,
                       timeout_s: float | None = None, timeout_hint: str = "",
                       session: str | None = None) -> dict[str, Any]:
        return await self.cdp.send(method, params, session_id=session or tab.session_id,
                                   timeout_s=timeout_s or 5.0, timeout_hint=timeout_hint)

    async def release_object(self, object_id: str, session: str | None) -> None:
        await self.cdp.notify("Runtime.releaseObject", {"objectId": object_id},
                              session_id=session)


class FakeHost:
    """A host: records the commands run and the files fetched; ``run`` answers
    ``prepared``; ``stage_files`` stages into numbered directories (``release_copy`` holds
    the copy, ``break_off`` makes the link go mid-copy); ``fail_runs`` runs fail first."""

    label = "alice@devvm"

    def __init__(self, prepared: str = "", label: str | None = None) -> None:
        if label is not None:
            self.label = label
        self.prepared = prepared
        self.commands: list[str] = []
        self.fetched: list[tuple[str, int]] = []
        self.timeouts: list[float] = []
        self.staged: list[str] = []
        self.copying = anyio.Event()
        self.release_copy: anyio.Event | None = None
        self.fail_runs = 0
        self.break_off = False

    async def run(self, command: str, timeout_s: float) -> str:
        if self.fail_runs:
            self.fail_runs -= 1
            raise HostError("unreachable")
        self.commands.append(command)
        return self.prepared

    async def fetch_file(self, path: str, into: BinaryIO, max_bytes: int,
                         timeout_s: float) -> int:
        self.fetched.append((path, max_bytes))
        self.timeouts.append(timeout_s)
        into.write(b"data")
        return 4

    async def stage_files(self, files: Sequence[Readable], timeout_s: float) -> Staged:
        directory = f"/tmp/csgw-upload-{len(self.staged)}"
        if self.break_off:
            self.staged.append(directory)
            raise StagingFailed("connection lost", directory)
        self.copying.set()
        if self.release_copy is not None:
            await self.release_copy.wait()
        self.staged.append(directory)
        return Staged(directory, tuple(f"{directory}/0/{f.path.name}" for f in files))
