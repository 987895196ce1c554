"""The host scan's parser and classifier on output captured from a real Linux host.

``fixtures/scan/linux.txt`` (the /proc branch) and ``ps.txt`` (the ``ps`` branch,
the one macOS takes, run on Linux with ``CSGW_SCAN=ps``) were printed by
``gateway/discovery/scripts/scan.sh`` as h1's login user while browsers started the
way Puppeteer, chromedriver, Karma and Playwright start them were running, next to
the machine's other browsers (another test host's, other users'); ``linux.json``
says which pid is which (``python -m fixtures.capture_scan`` rewrites all three).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from gateway.discovery.scan import (
    MAX_COMMAND_CHARS,
    Candidate,
    classify,
    parse_scan,
    program_of,
    scan_script,
)

FIXTURES = Path(__file__).parents[2] / "fixtures" / "scan"
PIDS: dict[str, int] = json.loads((FIXTURES / "linux.json").read_text())


def candidates(name: str) -> dict[int, Candidate]:
    scan = parse_scan((FIXTURES / name).read_text())
    return {p.pid: classify(p, scan.uid) for p in scan.processes}


@pytest.fixture(params=["linux.txt", "ps.txt"])
def found(request: Any) -> dict[int, Candidate]:
    return candidates(request.param)


def test_only_browser_processes_not_their_children(found: dict[int, Candidate]) -> None:
    ours = {PIDS[k] for k in ("puppeteer", "chromedriver", "karma", "playwright", "container",
                              "no_port", "topology")}
    assert ours <= set(found)
    assert all(c.program == "chromium" for c in found.values())


@pytest.mark.parametrize("kind,started_by", [
    ("puppeteer", "puppeteer"), ("chromedriver", "chromedriver"), ("karma", "karma"),
    ("playwright", "playwright"), ("topology", None)])
def test_who_started_it(found: dict[int, Candidate], kind: str, started_by: str | None) -> None:
    assert found[PIDS[kind]].started_by == started_by


def test_port_zero_browsers_are_attached_through_their_active_port(
        found: dict[int, Candidate]) -> None:
    for kind in ("puppeteer", "chromedriver", "topology"):
        c = found[PIDS[kind]]
        assert c.port == 0 and c.problem is None, c
        assert c.active_port is not None and 0 < c.active_port < 65536
        assert c.browser_path is not None and c.browser_path.startswith("/devtools/browser/")
        assert c.profile is not None and c.started is not None


def test_fixed_port(found: dict[int, Candidate]) -> None:
    karma = found[PIDS["karma"]]
    assert (karma.port, karma.active_port, karma.problem) == (9444, 9444, None)
    assert karma.profile is not None and "/karma-" in karma.profile


def test_pipe_browser_is_explained(found: dict[int, Candidate]) -> None:
    pipe = found[PIDS["playwright"]]
    assert pipe.port is None and pipe.active_port is None
    assert pipe.problem is not None and "started by Playwright over a pipe" in pipe.problem
    assert "args: ['--remote-debugging-port=0']" in pipe.problem


def test_browser_without_a_port_is_explained(found: dict[int, Candidate]) -> None:
    problem = found[PIDS["no_port"]].problem
    assert problem is not None and "started without --remote-debugging-port" in problem


def test_other_network_namespace_only_on_linux() -> None:
    linux, ps = candidates("linux.txt"), candidates("ps.txt")
    problem = linux[PIDS["container"]].problem
    assert problem is not None and "another network namespace" in problem
    assert ps[PIDS["container"]].problem is None  # ps knows no namespaces (macOS has none)


def test_other_users_browsers_have_unreadable_profiles() -> None:
    others = [c for c in candidates("linux.txt").values()
              if c.profile and "-topology/" in c.profile and f"/csgw{_slot()}-" not in c.profile]
    for c in others:
        assert c.problem is not None and "is unreadable here" in c.problem, c


def _slot() -> str:
    """The capture's own topology slot, from its profile paths (another slot's are others')."""
    profile = candidates("linux.txt")[PIDS["topology"]].profile or ""
    return profile.split("/tmp/csgw", 1)[1].split("-", 1)[0]


def test_start_times() -> None:
    """Both branches read ps's start time (the host's local time, to the second)."""
    linux = candidates("linux.txt")[PIDS["puppeteer"]].started
    ps = candidates("ps.txt")[PIDS["puppeteer"]].started
    assert linux is not None and linux == ps
    epoch = parse_scan("S\x1flinux\x1f0\x1f0\nP\x1f7\x1f1\x1fepoch:1796115700 - - - -\x1f0"
                       "\x1fsame\x1fsh\x1f-\x1f/usr/bin/chromium").processes[0].started
    assert epoch == "2026-12-01T09:01:40+00:00"  # without ps: from /proc, in UTC


@pytest.mark.parametrize("args,program", [
    (("/usr/lib/chromium/chromium",), "chromium"),
    (("/opt/google/chrome/chrome",), "google-chrome"),
    (("/opt/microsoft/msedge/msedge",), "msedge"),
    (("/home/u/.cache/ms-playwright/chromium_headless_shell-1/chrome-linux/headless_shell",),
     "headless_shell"),
    (("/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",), "google-chrome"),
    ((), "unknown"),
])
def test_program_names(args: tuple[str, ...], program: str) -> None:
    assert program_of(args) == program


@pytest.mark.parametrize("garbage", [
    "", "S", "P\x1fx", "P\x1f1\x1f2", "P\x1fone\x1f2\x1f3\x1f4\x1fsame\x1fp\x1f-\x1fchrome",
    "\x00\x1f\x1e" * 100, "P\x1f1\x1f1\x1f1\x1f1\x1fsame\x1fp\x1f-\x1f",
])
def test_malformed_records_are_skipped(garbage: str) -> None:
    assert parse_scan(garbage).processes == ()


def test_a_huge_command_line_is_cut() -> None:
    line = "P\x1f7\x1f1\x1f5\x1f0\x1fsame\x1fsh\x1f-\x1f/usr/bin/chromium\x1e--x=" + "a" * 10**6
    (process,) = parse_scan("S\x1flinux\x1f100\x1f0\n" + line).processes
    assert sum(len(a) for a in process.args) <= MAX_COMMAND_CHARS
    assert parse_scan("T").truncated


def test_the_script_runs_in_a_plain_posix_shell() -> None:
    """dash (Debian's /bin/sh), no arguments, no environment: it must print its S record
    and only records of known kinds, whatever runs on this machine."""
    out = subprocess.run(["dash", "-c", scan_script()], capture_output=True, text=True,
                         check=True, env={}, timeout=30).stdout
    lines = out.split("\n")
    assert lines[0].startswith("S\x1flinux\x1f")
    assert all(line[:1] in ("P", "T", "") for line in lines[1:])
