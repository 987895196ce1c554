"""The daemon's runtime directory, pid file and configuration key (``daemon.runtime_dir``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gateway.daemon.runtime_dir import (
    config_key,
    pid_alive,
    private_dir,
    process_start,
    read_pid_file,
    remove_pid_file,
    runtime_dir,
    write_pid_file,
)
from gateway.errors import DaemonError


def test_runtime_dir_prefers_xdg_runtime_dir() -> None:
    assert runtime_dir({"XDG_RUNTIME_DIR": "/run/user/7"}) == Path(
        "/run/user/7/chrome-ssh-gateway")
    assert runtime_dir({}) == Path(f"/tmp/chrome-ssh-gateway-{os.getuid()}")
    assert runtime_dir({"XDG_RUNTIME_DIR": "relative"}) == runtime_dir({})


def test_private_dir_is_created_0700(tmp_path: Path) -> None:
    made = private_dir(tmp_path / "rt")
    assert made.stat().st_mode & 0o777 == 0o700
    assert private_dir(made) == made  # an existing good one is accepted


@pytest.mark.parametrize("mode", [0o770, 0o707, 0o755])
def test_a_directory_open_to_others_is_refused(tmp_path: Path, mode: int) -> None:
    path = tmp_path / "rt"
    path.mkdir()
    path.chmod(mode)
    with pytest.raises(DaemonError, match=rf"mode {mode:04o}.*possible tampering"):
        private_dir(path)


def test_a_directory_of_another_user_is_refused(tmp_path: Path) -> None:
    if os.getuid() != 0:
        pytest.skip("needs root to give a directory away")
    path = tmp_path / "rt"
    path.mkdir(mode=0o700)
    os.chown(path, 65534, 65534)
    with pytest.raises(DaemonError, match="belongs to uid 65534"):
        private_dir(path)


def test_a_symlinked_directory_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    (tmp_path / "rt").symlink_to(real)
    with pytest.raises(DaemonError, match="not a plain directory"):
        private_dir(tmp_path / "rt")


def test_pid_file_is_0600_exclusive_and_read_back(tmp_path: Path) -> None:
    path = tmp_path / "d.pid"
    assert write_pid_file(path, {"pid": 42, "version": "1"})
    assert path.stat().st_mode & 0o777 == 0o600
    assert not write_pid_file(path, {"pid": 43})  # the first one stays
    assert read_pid_file(path) == {"pid": 42, "version": "1"}
    remove_pid_file(path, 43)  # not ours: kept
    assert path.exists()
    remove_pid_file(path, 42)
    assert read_pid_file(path) is None


def test_a_symlinked_pid_file_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_text(json.dumps({"pid": 1}))
    (tmp_path / "d.pid").symlink_to(target)
    with pytest.raises(DaemonError, match=r"symlink.*possible tampering"):
        read_pid_file(tmp_path / "d.pid")
    assert not write_pid_file(tmp_path / "d.pid", {"pid": 2})
    assert json.loads(target.read_text()) == {"pid": 1}  # never written through


def test_garbage_in_a_pid_file_reads_as_none(tmp_path: Path) -> None:
    (tmp_path / "d.pid").write_text("{half")
    assert read_pid_file(tmp_path / "d.pid") is None


def test_pid_alive_and_start() -> None:
    assert pid_alive(os.getpid())
    assert not pid_alive(2**22 + 12345)
    mine = process_start(os.getpid())
    assert mine is not None and mine == process_start(os.getpid())
    assert process_start(1) is not None and process_start(1) != mine
    assert process_start(2**22 + 12345) is None


def test_config_key_follows_the_configuration_only() -> None:
    base = {"HOME": "/home/a", "SSH_PROXY_TO": "devvm", "PATH": "/bin"}
    key = config_key(None, False, base)
    assert key == config_key(None, False, base | {"PATH": "/usr/bin", "TERM": "x"})
    assert key != config_key(None, True, base)
    assert key != config_key(None, False, base | {"SSH_PROXY_TO": "other"})
    assert key != config_key("targets.toml", False, base)
    assert config_key("targets.toml", False, base) == config_key(
        os.path.abspath("targets.toml"), False, base)


def test_a_pid_reused_by_another_process_is_not_the_daemon(tmp_path: Path) -> None:
    from gateway.daemon.control import state_of, stop
    from gateway.daemon.runtime_dir import DaemonPaths

    paths = DaemonPaths(tmp_path, "k")
    # This very process has the pid, but it started at another time than the record says.
    write_pid_file(paths.pid_file, {"pid": os.getpid(), "version": "0.1.0",
                                    "start_ticks": (process_start(os.getpid()) or 0) + 1})
    state = state_of(paths)
    assert (state.running, state.stale) == (False, True)
    assert not paths.pid_file.exists()
    write_pid_file(paths.pid_file, {"pid": os.getpid(), "start_ticks": 1})
    assert not stop(paths).running  # and nothing was signalled: we are still here


def test_the_recorded_daemon_is_running(tmp_path: Path) -> None:
    from gateway.daemon.control import state_of
    from gateway.daemon.runtime_dir import DaemonPaths

    paths = DaemonPaths(tmp_path, "k")
    write_pid_file(paths.pid_file, {"pid": os.getpid(), "version": "0.1.0",
                                    "start_ticks": process_start(os.getpid())})
    assert state_of(paths).running
