"""The README's test command works as written for a user too: ``scripts/test`` run by a
user goes through ``sudo`` (the end-to-end tests need root), with the settings that
steer it kept; as root — a fresh machine has no ``sudo`` — it runs directly (that is
how CI runs it, so every CI run shows it). ``sudo`` here is a stand-in that records
how it was called: the machine has none, and a test must not ask for a password."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
NOBODY = 65534


@pytest.mark.skipif(os.geteuid() != 0, reason="switching to another user needs root")
def test_a_user_runs_the_suite_through_sudo() -> None:
    # Not pytest's tmp_path: its parents are root's own (0700), closed to that user.
    with tempfile.TemporaryDirectory(prefix="csgw-sudo-") as scratch:
        _through_sudo(Path(scratch))


def _through_sudo(tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    stand_in = tmp_path / "bin"
    stand_in.mkdir(mode=0o755)
    record = tmp_path / "sudo-args"
    record.touch()
    record.chmod(0o666)
    (stand_in / "sudo").write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {record}\n')
    (stand_in / "sudo").chmod(0o755)
    done = subprocess.run(
        [shutil.which("setpriv") or "setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}",
         "--clear-groups", "env", "-i", f"PATH={stand_in}:/usr/bin:/bin", "CI=true",
         "bash", "scripts/test", "-k", "nothing"],
        cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert record.read_text().splitlines() == [
        "--preserve-env=CI,CSGW_SKIP_SETUP,CSGW_KEEP_TOPOLOGY,CSGW_TOPOLOGY_SLOT",
        "bash", "scripts/test", "-k", "nothing"]


def test_the_readme_shows_no_sudo() -> None:
    """As root on a fresh machine ``sudo`` is not there: the README must not need it."""
    setup = (ROOT / "README.md").read_text().split("## Set-up: two commands", 1)[1]
    block = setup.split("```sh", 1)[1].split("```", 1)[0]
    commands = [line.split("#", 1)[0].strip() for line in block.splitlines()]
    assert [c for c in commands if c] == ["uvx --from . chrome-ssh-gateway", "scripts/test"]
