"""One SSH connection's sessions shared by commands and held launches
(``gateway.hosts.held.Sessions``): a hold keeps its session until released, and holds
never take the last sessions commands need."""

from __future__ import annotations

import anyio
import pytest

from gateway.errors import HostError
from gateway.hosts.held import Held, Sessions

pytestmark = pytest.mark.anyio


class _Held:
    def __init__(self) -> None:
        self.words: list[str] = []

    @property
    def gone(self) -> bool:
        return bool(self.words)

    async def release(self, word: str, timeout_s: float) -> None:
        self.words.append(word)


async def test_holds_keep_a_session_each_and_leave_commands_theirs() -> None:
    sessions = Sessions(4, 2)
    made: list[_Held] = []

    async def start() -> tuple[str, Held | None]:
        made.append(_Held())
        return "out", made[-1]

    first = await sessions.hold(start, "devvm")
    second = await sessions.hold(start, "devvm")
    with pytest.raises(HostError, match="2 launched browsers are held over devvm already"):
        await sessions.hold(start, "devvm")
    # Two sessions left for commands; a third command waits for one of them.
    async with sessions, sessions:
        with anyio.move_on_after(0.2) as waited:
            async with sessions:
                pass
        assert waited.cancelled_caught
    assert first[1] is not None and second[1] is not None
    assert not first[1].gone
    await first[1].release("stop", 1)
    await first[1].release("stop", 1)  # once only
    assert made[0].words == ["stop"] and first[1].gone
    async with sessions, sessions, sessions:  # the released session is back
        pass
    await sessions.hold(start, "devvm")  # and a hold may take it again


async def test_a_command_that_ended_unheld_or_failed_gives_its_session_back() -> None:
    sessions = Sessions(3, 2)

    async def ended() -> tuple[str, Held | None]:
        return "exited", None

    async def failed() -> tuple[str, Held | None]:
        raise HostError("could not run a command over SSH")

    assert await sessions.hold(ended, "devvm") == ("exited", None)
    with pytest.raises(HostError):
        await sessions.hold(failed, "devvm")
    async with sessions, sessions, sessions:
        pass
