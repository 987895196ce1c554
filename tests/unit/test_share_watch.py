"""``ShareWatch``: the shares of a host followed as targets — run over this machine
(``LocalHost``: the real listing script, by a real ``sh``, in a HOME made here), with a
registry that records what the watch asks of it."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from gateway.config import TargetConfig
from gateway.discovery.strategy import Strategy
from gateway.fleet.share_watch import ShareWatch
from gateway.fleet.shared_socket import SharedSocket
from gateway.hosts.local import LocalHost
from gateway.share.manifest import SHARED_DIR, BadShare, SeenShare, ShareManifest

pytestmark = pytest.mark.anyio


class Targets:
    """The registry's side, recorded."""

    def __init__(self, taken: set[str] = frozenset()) -> None:  # type: ignore[assignment]
        self.ways: dict[str, SharedSocket] = {}
        self.events: list[tuple[str, str]] = []
        self._taken = set(taken)

    def add_found(self, target: TargetConfig, strategy: Strategy, group: str) -> None:
        assert isinstance(strategy, SharedSocket) and group == "here"
        self.ways[target.name] = strategy
        self.events.append(("add", target.name))

    def taken(self, name: str) -> bool:
        return name in self._taken or name in self.ways

    def update_found(self, name: str) -> None:
        self.events.append(("update", name))

    async def remove(self, name: str, why: str = "was removed") -> None:
        del self.ways[name]
        self.events.append(("remove", f"{name}: {why}"))


def manifest(name: str, share_id: str = "0123456789abcdef", **extra: str) -> str:
    return ShareManifest(name=name, share_id=share_id, sharer="laptop",
                         shared_at="2026-12-01T10:00:00+00:00", **extra).to_text()


@pytest.fixture
def shared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("HOME", str(tmp_path))  # LocalHost's sh reads it
    path = tmp_path / SHARED_DIR
    path.mkdir(parents=True, mode=0o700)
    yield path


def watch(targets: Targets) -> ShareWatch:
    return ShareWatch(TargetConfig(name="here", shared=True), LocalHost(), targets)


async def test_a_share_is_a_target_until_it_ends(shared: Path) -> None:
    targets = Targets()
    group = watch(targets)
    (shared / "laptop.json").write_text(manifest("laptop"))
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(shared / "laptop.sock"))
    try:
        await group.look()
        assert (group.state, group.members, group.attachable()) == ("up", ["laptop"],
                                                                    ["laptop"])
        way = targets.ways["laptop"]
        assert isinstance(way.seen, SeenShare) and way.seen.has_socket
        await group.look()  # nothing changed: nothing asked
        assert targets.events == [("add", "laptop")]
    finally:
        server.close()
        (shared / "laptop.sock").unlink()
    await group.look()
    assert targets.events[-1] == ("update", "laptop")  # its socket is gone: down, kept
    (shared / "laptop.json").unlink()
    await group.look()
    assert targets.events[-1] == (
        "remove", "laptop: ended (its share was stopped or expired)")
    assert group.members == []


async def test_a_share_started_again_is_the_same_target(shared: Path) -> None:
    """Its browser decides the tab ids: the supervisor tells a restarted one apart."""
    targets = Targets()
    group = watch(targets)
    (shared / "laptop.json").write_text(manifest("laptop"))
    await group.look()
    (shared / "laptop.json").write_text(manifest("laptop", share_id="fedcba9876543210"))
    await group.look()
    assert targets.events == [("add", "laptop"), ("update", "laptop")]


async def test_an_expired_share_ends(shared: Path) -> None:
    targets = Targets()
    group = watch(targets)
    past = (datetime.now(UTC) - timedelta(minutes=1)).isoformat(timespec="seconds")
    (shared / "old.json").write_text(manifest("old", expires=past))
    await group.look()
    assert group.members == [] and targets.events == []


async def test_a_taken_name_is_prefixed_and_twice_taken_is_skipped(shared: Path) -> None:
    targets = Targets(taken={"laptop", "desk", "here-desk"})
    group = watch(targets)
    (shared / "laptop.json").write_text(manifest("laptop"))
    (shared / "desk.json").write_text(manifest("desk"))
    await group.look()
    assert group.members == ["here-laptop"]
    assert group.skipped == ["share desk: its name and here-desk are taken"]


async def test_bad_manifests_are_down_or_skipped_and_never_break_the_look(
        shared: Path) -> None:
    targets = Targets()
    group = watch(targets)
    (shared / "bad.json").write_bytes(b'{"name": "bad", "pid": "\xff\xfe"}')
    latin = os.fsencode(shared) + b"/caf\xe9.json"  # a file name that is not UTF-8
    with open(latin, "wb") as file:
        file.write(b"{}")
    (shared / "ok.json").write_text(manifest("ok"))
    await group.look()
    assert group.state == "up"
    assert sorted(group.members) == ["bad", "ok"]
    assert isinstance(targets.ways["bad"].seen, BadShare)
    assert group.attachable() == ["ok"]
    [skipped] = group.skipped
    assert "its name is not 1-32 characters" in skipped


async def test_an_unsafe_directory_ends_every_share_it_served(shared: Path) -> None:
    targets = Targets()
    group = watch(targets)
    (shared / "laptop.json").write_text(manifest("laptop"))
    await group.look()
    shared.chmod(0o777)
    try:
        await group.look()
    finally:
        shared.chmod(0o700)
    assert group.state == "down" and group.members == []
    assert group.error is not None and "writable by group or others" in group.error
    assert targets.events[-1][0] == "remove"
    assert "is no longer served" in targets.events[-1][1]


async def test_a_truncated_listing_ends_nothing_it_did_not_read(shared: Path) -> None:
    targets = Targets()
    group = watch(targets)
    (shared / "zz-last.json").write_text(manifest("zz-last"))
    await group.look()
    assert group.members == ["zz-last"]
    for n in range(70):
        (shared / f"a{n:02}.json").write_text(manifest(f"a{n:02}"))
    await group.look()
    assert "zz-last" in group.members  # beyond the cap now: not read, not ended
    assert any("more shares than a listing reads" in s for s in group.skipped)
