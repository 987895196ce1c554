"""The download directories' sweep (``download_dir.prepare_command``), run for real under
``/bin/sh`` with its prefix moved to a scratch directory: a directory whose holder runs is
kept whatever the time zone of the gateway that sweeps, one whose holder is gone is
removed, one without a holder only once it is over a minute old."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from gateway.browsers.download_dir import DIRECTORY_PREFIX, STARTED, prepare_command


def _prepare(scratch: Path, tz: str) -> Path:
    """Run the set-up script as a gateway in ``tz`` would (its holder: this process, the
    shell's parent); the directory it made."""
    script = prepare_command(None).replace(DIRECTORY_PREFIX, f"{scratch}/csgw-downloads-")
    out = subprocess.run(["/bin/sh", "-c", script], capture_output=True, text=True, check=True,
                         env={**os.environ, "TZ": tz}).stdout
    assert out.startswith("@csgw dir "), out
    return Path(out.removeprefix("@csgw dir ").strip())


def _started(pid: int) -> str:
    return subprocess.run(["/bin/sh", "-c", STARTED + f"started {pid}"], capture_output=True,
                          text=True, check=True).stdout.strip()


def test_the_sweep_keeps_live_holders_in_any_time_zone(tmp_path: Path) -> None:
    live = _prepare(tmp_path, "UTC0")
    assert (live / "holder").read_text().split(" ", 1) == [str(os.getpid()),
                                                            _started(os.getpid()) + "\n"]
    gone = subprocess.Popen(["true"])
    gone.wait()
    dead = tmp_path / "csgw-downloads-dead0000"
    (dead / "files").mkdir(parents=True)
    (dead / "holder").write_text(f"{gone.pid} {_started(os.getpid())}\n")
    reused = tmp_path / "csgw-downloads-reused00"  # a live pid, another start: reused
    reused.mkdir()
    (reused / "holder").write_text(f"{os.getpid()} 12345\n")
    fresh = tmp_path / "csgw-downloads-fresh000"  # being made this instant: no holder yet
    fresh.mkdir()
    old = tmp_path / "csgw-downloads-old00000"
    old.mkdir()
    an_hour_ago = time.time() - 3600
    os.utime(old, (an_hour_ago, an_hour_ago))

    other = _prepare(tmp_path, "America/New_York")  # another gateway, another time zone
    left = {p.name for p in tmp_path.iterdir()}
    assert left == {live.name, other.name, fresh.name}, left


def test_start_times_survive_a_comm_with_spaces_and_parens(tmp_path: Path) -> None:
    odd = tmp_path / "a) b (c"
    odd.symlink_to("/bin/sleep")
    sleeper = subprocess.Popen([str(odd), "30"])
    try:
        fields = Path(f"/proc/{sleeper.pid}/stat").read_text().rsplit(")", 1)[1].split()
        assert _started(sleeper.pid) == fields[19]  # field 22 of the whole line
    finally:
        sleeper.kill()
        sleeper.wait()
