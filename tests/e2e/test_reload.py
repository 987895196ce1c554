"""Targets added and removed while the gateway serves: the targets file edited, then SIGHUP.

The registry maps target names onto browsers at run time (issue 9): a new name comes
up, a name the file no longer has goes — its tab ids fail with that reason, never
reach another page — a changed target starts over, and the rest keep their browser
connections and tab ids. A file that does not load changes nothing. Each change is a
log line, and ``list_targets`` shows it at once. Driven as a user would: a real
gateway process over stdio, real sshd and Chromium, ``kill -HUP``.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.helpers import (
    ERROR_BOUND,
    call_err,
    call_ok,
    eventually,
    gateway_pid,
    marked_env,
    open_gateway,
    present,
    targets_by_name,
    wait_for_targets,
    write_targets,
)
from tests.topology import Topology

pytestmark = pytest.mark.anyio


async def _hang_up(pid: int, client: Any, names: set[str]) -> dict[str, dict[str, Any]]:
    """SIGHUP the gateway; wait until list_targets names exactly ``names``, none connecting."""
    os.kill(pid, signal.SIGHUP)

    async def changed() -> dict[str, dict[str, Any]] | None:
        targets = await targets_by_name(client)
        if set(targets) != names or any(t["state"] == "connecting" for t in targets.values()):
            return None
        return targets

    return await eventually(changed, until=present,
                            timeout=30, what=f"targets {sorted(names)} after SIGHUP")


async def test_targets_file_reloaded_on_sighup(topology: Topology, tmp_path: Path) -> None:
    path = tmp_path / "targets.toml"
    write_targets(path, {"a": {"ssh": "h1"}, "b": {"ssh": "h2"}})
    env, marker = marked_env(topology.client_env())
    errlog = tmp_path / "gateway.stderr"
    with errlog.open("w") as err:
        async with open_gateway(env, ["--config", str(path)], errlog=err) as client:
            await wait_for_targets(client, {"a": "up", "b": "up"})
            pid = gateway_pid(marker)
            tab_a = (await call_ok(client, "new_tab", {"target": "a"}))["tab"]
            tab_b = (await call_ok(client, "new_tab", {"target": "b"}))["tab"]

            # b goes, c comes (the same host as b), a is left alone.
            write_targets(path, {"a": {"ssh": "h1"}, "c": {"ssh": "h2"}})
            targets = await _hang_up(pid, client, {"a", "c"})
            assert targets["c"]["state"] == "up", targets["c"]
            kept = await call_ok(client, "evaluate", {"tab": tab_a, "expression": "6 * 7"})
            assert kept["value"] == 42 and kept["target"] == "a"
            error = await call_err(client, "evaluate", {"tab": tab_b, "expression": "1"},
                                   timeout=ERROR_BOUND)
            assert f"tab {tab_b} belonged to target 'b', which was removed from {path}" in error
            error = await call_err(client, "new_tab", {"target": "b"}, timeout=ERROR_BOUND)
            assert f"target 'b' was removed from {path}; targets now: a, c" in error
            tab_c = (await call_ok(client, "new_tab", {"target": "c"}))["tab"]
            assert tab_c > tab_b, "tab ids are never reused"
            listed = {t["tab"]: t["target"] for t in (await call_ok(client, "list_tabs"))["tabs"]}
            assert listed[tab_a] == "a" and listed[tab_c] == "c" and tab_b not in listed

            # A file that does not load changes nothing.
            path.write_text("[targets.a]\nssh = 'h1'\nbogus = 1\n")
            os.kill(pid, signal.SIGHUP)

            async def refused() -> bool:
                return "configuration not reloaded" in errlog.read_text()

            await eventually(refused, timeout=10, what="the bad file to be refused")
            assert set(await targets_by_name(client)) == {"a", "c"}
            assert (await call_ok(client, "evaluate", {"tab": tab_c, "expression": "1"}))[
                "value"] == 1

            # A changed target starts over: its old tab ids say so, new ones work.
            write_targets(path, {"a": {"ssh": "h1", "command_timeout_s": 20},
                                 "c": {"ssh": "h2"}})
            await _hang_up(pid, client, {"a", "c"})
            await wait_for_targets(client, {"a": "up", "c": "up"})
            error = await call_err(client, "evaluate", {"tab": tab_a, "expression": "1"},
                                   timeout=ERROR_BOUND)
            assert "which was changed in" in error and "started over" in error, error
            fresh = (await call_ok(client, "new_tab", {"target": "a"}))["tab"]
            assert (await call_ok(client, "evaluate", {"tab": fresh, "expression": "2"}))[
                "value"] == 2
            assert (await call_ok(client, "evaluate", {"tab": tab_c, "expression": "3"}))[
                "value"] == 3
    log = errlog.read_text()
    assert "target removed" in log and "target=b" in log
    assert "target added" in log and "target=c" in log
    assert log.count("configuration reloaded") == 2
