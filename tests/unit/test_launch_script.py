"""The launch scripts, run by this machine's /bin/sh on scratch directories (no browser),
and the texts of what they report (see gateway/discovery/launch_script.py)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from gateway.discovery.launch_script import (
    BINARY_CANDIDATES,
    HELD,
    QUITTING,
    LaunchPlan,
    ScriptResult,
    launch_command,
    parse_script,
)
from gateway.discovery.launcher import launch_failure


def _sh(script: str, **env: str) -> str:
    done = subprocess.run(["/bin/sh", "-c", script], capture_output=True, text=True,
                          timeout=30, env={"PATH": "/usr/bin:/bin", **env}, check=False)
    return done.stdout


def _fake_chrome(tmp_path: Path, body: str) -> Path:
    binary = tmp_path / "chrome"
    binary.write_text(f"#!/bin/sh\n{body}\n")
    binary.chmod(0o755)
    return binary


def test_probe_names_the_binary_and_a_free_profile(tmp_path: Path) -> None:
    binary = _fake_chrome(tmp_path, "exit 1")
    plan = LaunchPlan(str(tmp_path / "profile"))
    result = parse_script(_sh(launch_command(plan, 5, start=False), CHROME_PATH=str(binary)))
    assert (result.binary, result.locked_by, result.pid) == (str(binary), None, None)
    assert not (tmp_path / "profile").exists()  # a probe writes nothing


def test_probe_sees_a_profile_locked_by_a_live_process(tmp_path: Path) -> None:
    profile = tmp_path / "profile"
    profile.mkdir()
    (profile / "SingletonLock").symlink_to(f"{os.uname().nodename}-{os.getpid()}")
    plan = LaunchPlan(str(profile))
    binary = _fake_chrome(tmp_path, "exit 1")
    result = parse_script(_sh(launch_command(plan, 5, start=False), CHROME_PATH=str(binary)))
    assert result.locked_by == os.getpid()
    what, fix = launch_failure(result, "devvm", plan, 5) or ("", "")
    assert f"is in use by a Chrome (pid {os.getpid()})" in what
    assert fix == "close it, or set launch_profile to another directory"
    # A lock left by a process that is gone (a crash) does not count.
    (profile / "SingletonLock").unlink()
    (profile / "SingletonLock").symlink_to(f"{os.uname().nodename}-99999999")
    assert parse_script(_sh(launch_command(plan, 5, start=False),
                            CHROME_PATH=str(binary))).locked_by is None


def test_no_binary_lists_what_was_tried(tmp_path: Path) -> None:
    plan = LaunchPlan(None)
    result = parse_script(_sh(launch_command(plan, 5, start=False), PATH=str(tmp_path)))
    # In order, up to the first found (this machine may have an absolute one).
    assert result.tried == list(BINARY_CANDIDATES[:len(result.tried)])
    result = ScriptResult(tried=list(BINARY_CANDIDATES))
    what, fix = launch_failure(result, "devvm", plan, 5) or ("", "")
    assert what.startswith("no Chrome/Chromium binary found on devvm (tried "
                           "google-chrome-stable, google-chrome, chromium,")
    assert "sudo apt install chromium" in fix
    # CHROME_PATH, when set, is the only one tried.
    only = parse_script(_sh(launch_command(plan, 5, start=False),
                            CHROME_PATH=str(tmp_path / "nope")))
    assert (only.binary, only.tried) == (None, [str(tmp_path / "nope")])


def test_a_browser_that_exits_at_once_reports_its_output(tmp_path: Path) -> None:
    # Chromium's words, and the DISPLAY it was given.
    binary = _fake_chrome(tmp_path, 'echo "Missing X server or \\$DISPLAY ($DISPLAY)" >&2; exit 1')
    plan = LaunchPlan(str(tmp_path / "profile"), headless=False, display=":7")
    result = parse_script(_sh(launch_command(plan, 5), CHROME_PATH=str(binary)))
    assert (result.outcome, result.stderr) == ("exited", "Missing X server or $DISPLAY (:7)")
    assert result.profile == str(tmp_path / "profile")
    assert (tmp_path / "profile").stat().st_mode & 0o077 == 0
    what, fix = launch_failure(result, "devvm", plan, 5) or ("", "")
    assert what.endswith("exited at once; its last output: Missing X server or $DISPLAY (:7)")
    assert fix.startswith("the display :7 cannot be opened there")


_STAND_IN = ('for a; do case $a in --user-data-dir=*) d=${a#*=};; esac; done; '
             'printf "1234\\n/devtools/browser/x" > "$d/DevToolsActivePort"; sleep 60')


def _held(script: str, **env: str) -> tuple[subprocess.Popen[bytes], ScriptResult]:
    """Run a held launch as the gateway does: stdin a pipe, read up to ``HELD``."""
    process = subprocess.Popen(["/bin/sh", "-c", script], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, env={"PATH": "/usr/bin:/bin", **env})
    assert process.stdout is not None
    lines = []
    while (line := process.stdout.readline().decode()) not in ("", HELD + "\n"):
        lines.append(line)
    assert line == HELD + "\n", lines
    return process, parse_script("".join(lines))


def _gone(pid: int) -> bool:
    stat = Path(f"/proc/{pid}/stat")
    return not stat.exists() or stat.read_text().rpartition(")")[2].split()[0] == "Z"


def _wait_gone(pid: int, seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    return _gone(pid)


def test_a_temporary_browser_is_held_and_ends_with_the_holders_input(tmp_path: Path) -> None:
    # A stand-in that does what Chrome does first: writes DevToolsActivePort, then serves.
    binary = _fake_chrome(tmp_path, _STAND_IN)
    plan = LaunchPlan(None, chrome_args=("--lang=en-US",))
    holder, result = _held(launch_command(plan, 5), CHROME_PATH=str(binary),
                           TMPDIR=str(tmp_path))
    assert result.outcome == "ready", result
    assert result.pid is not None and result.profile is not None
    # pytest's TMPDIR is too long for Chrome's socket path under it: /tmp instead.
    assert len(str(tmp_path)) > 38 and Path(result.profile).parent == Path("/tmp")
    cmdline = Path(f"/proc/{result.pid}/cmdline").read_bytes().split(b"\0")
    assert b"--lang=en-US" in cmdline and b"--headless" in cmdline
    assert (Path(result.profile) / "csgw-holder").read_text().strip() == str(holder.pid)
    # The holder ignores what a terminal or a killed process group sends; the browser
    # does not (it is stopped with TERM).
    holder.send_signal(signal.SIGTERM)
    holder.send_signal(signal.SIGHUP)
    time.sleep(0.2)
    assert holder.poll() is None and not _gone(result.pid)
    ignored = int(next(line.split()[1] for line in
                       Path(f"/proc/{result.pid}/status").read_text().splitlines()
                       if line.startswith("SigIgn:")), 16)
    assert not ignored & (1 << (signal.SIGTERM - 1))
    # The end of its input (the gateway gone, however) ends the browser and its profile.
    assert holder.stdin is not None
    holder.stdin.close()
    assert holder.wait(10) == 0
    assert _wait_gone(result.pid)
    assert not Path(result.profile).exists()


def test_a_held_browser_asked_to_quit_gets_time_to_finish(tmp_path: Path) -> None:
    binary = _fake_chrome(tmp_path, _STAND_IN.replace("sleep 60",
                                                      "trap 'sleep 1; exit 0' TERM; "
                                                      "sleep 60 & wait"))
    profile = tmp_path / "profile"
    holder, result = _held(launch_command(LaunchPlan(str(profile)), 5, held=True),
                           CHROME_PATH=str(binary))
    assert result.outcome == "ready" and result.pid is not None
    assert holder.stdin is not None
    holder.stdin.write(f"{QUITTING}\n".encode())
    holder.stdin.close()
    started = time.monotonic()
    assert holder.wait(15) == 0 and _wait_gone(result.pid)
    assert time.monotonic() - started >= 4  # the quitting grace, then TERM
    assert profile.is_dir()  # a persistent profile stays


def test_a_temporary_launch_sweeps_profiles_whose_holder_is_gone() -> None:
    binary_dir = Path(tempfile.mkdtemp(prefix="csgw-t-", dir="/tmp"))
    binary = _fake_chrome(binary_dir, _STAND_IN)
    stale = Path(tempfile.mkdtemp(prefix="csgw-chrome-", dir=binary_dir))
    (stale / "csgw-holder").write_text("99999999\n")
    orphan = subprocess.Popen(["/bin/sh", "-c", "sleep 60; :", "sh", f"--user-data-dir={stale}"])
    kept = Path(tempfile.mkdtemp(prefix="csgw-chrome-", dir=binary_dir))
    living = subprocess.Popen(["/bin/sh", "-c", "sleep 60; : @csgw"])
    (kept / "csgw-holder").write_text(f"{living.pid}\n")
    fresh = Path(tempfile.mkdtemp(prefix="csgw-chrome-", dir=binary_dir))  # no holder yet
    # No holder file and nothing on it for over a minute: an older gateway's leftover.
    old = Path(tempfile.mkdtemp(prefix="csgw-chrome-", dir=binary_dir))
    os.utime(old, (time.time() - 120, time.time() - 120))
    try:
        holder, result = _held(launch_command(LaunchPlan(None), 5), CHROME_PATH=str(binary),
                               TMPDIR=str(binary_dir))
        assert result.outcome == "ready" and Path(result.profile or "").parent == binary_dir
        assert not stale.exists() and orphan.wait(5) == -signal.SIGKILL
        assert kept.is_dir() and fresh.is_dir() and not old.exists()
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(10)
    finally:
        for process in (orphan, living):
            process.kill()
            process.wait()
        shutil.rmtree(binary_dir)


def test_parse_ignores_lines_that_are_not_facts_and_keeps_stderr_last() -> None:
    result = parse_script("noise\n@csgw binary /x\n@csgw pid 12\n@csgw exited\n@csgw stderr\n"
                          "@csgw ready\nboom\n")
    assert result == ScriptResult(binary="/x", pid=12, outcome="exited",
                                  stderr="@csgw ready\nboom")
