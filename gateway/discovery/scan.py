"""Every debuggable Chrome on a host, from one exec of ``scripts/scan.sh`` (pure parts).

Test frameworks start Chrome themselves, on a random port, in a temporary
profile, one per test file or worker; nobody knows its port but the process
table. The script prints one record per browser process (renderers and other
children left out); ``parse_scan`` reads them and ``classify`` says, for each,
how to attach to it — its fixed ``--remote-debugging-port``, or the
``DevToolsActivePort`` of its profile for port 0 — or why it cannot be attached
to, with the fix: a pipe-only browser (Playwright), one in another network
namespace (a container: its loopback is not the host's), another user's whose
profile is unreadable, one started without a debugging port at all.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from importlib import resources

from gateway.cdp.endpoint import parse_active_port

__all__ = ["MAX_COMMAND_CHARS", "SCAN_TIMEOUT_S", "Candidate", "Scan", "ScannedProcess", "classify",
           "parse_scan", "scan_script"]

SCAN_TIMEOUT_S = 5.0  # one exec of scan.sh on a host, as long as any other look at it
MAX_COMMAND_CHARS = 8192  # a command line is cut here: the scan's output stays bounded
_US, _AS = "\x1f", "\x1e"

# (what the profile path contains, who started the browser), first match wins.
_PROFILE_MARKS = (
    ("puppeteer_dev_chrome_profile-", "puppeteer"),
    ("puppeteer_dev_profile-", "puppeteer"),
    ("org.chromium.Chromium.scoped_dir", "chromedriver"),
    (".com.google.Chrome.", "chromedriver"),
    ("/karma-", "karma"),
    ("/Cypress/", "cypress"),
    ("playwright_chromiumdev_profile-", "playwright"),
    ("playwright_", "playwright"),
)
_PARENTS = {"chromedriver": "chromedriver", "msedgedriver": "chromedriver",
            "Cypress": "cypress"}
_DEFAULT_PROFILES = {"chromium": ".config/chromium", "google-chrome": ".config/google-chrome",
                     "msedge": ".config/microsoft-edge"}


@cache
def scan_script() -> str:
    """The scan, for ``Host.run`` (read once from the package)."""
    return resources.files("gateway.discovery").joinpath("scripts/scan.sh").read_text()


@dataclass(frozen=True)
class ScannedProcess:
    """One browser process as the scan saw it."""

    pid: int
    ppid: int
    uid: int | None
    started: str | None          # ISO 8601: the host's local time (from ps), or UTC
    same_netns: bool
    parent: str                  # the parent process's name ("" when unknown)
    active_port: str             # "<port> <path>" of DevToolsActivePort; "-" none, "!" unreadable,
                                 # "?" no profile to look in
    args: tuple[str, ...]        # the command line (ps: split at " --", best effort)
    exact_args: bool = True      # False from ps, whose command line is one string

    def option(self, name: str) -> str | None:
        """The value of ``--name=value``, else None (``""`` for a bare ``--name``).

        From ``ps`` a value ends at its first space, as the script reads it (a
        trailing URL would otherwise stick to the last option)."""
        for arg in self.args[1:]:
            if arg.split(" ", 1)[0] == f"--{name}":
                return ""
            if arg.startswith(f"--{name}="):
                value = arg[len(name) + 3:]
                return value if self.exact_args else value.split(" ", 1)[0]
        return None


@dataclass(frozen=True)
class Scan:
    system: str                  # "linux" or "ps" (macOS and other BSDs)
    uid: int | None              # the user the scan ran as
    processes: tuple[ScannedProcess, ...]
    truncated: bool              # more browsers than the script's cap


@dataclass(frozen=True)
class Candidate:
    """A browser found by a scan, and how to attach to it — or why not."""

    pid: int
    started: str | None
    program: str                 # chromium, google-chrome, msedge, headless_shell, …
    profile: str | None
    port: int | None             # as configured: 0 for "any", None without the flag
    started_by: str | None       # puppeteer, chromedriver, karma, cypress, playwright
    active_port: int | None      # the port it listens on, when known (fixed, or its file)
    browser_path: str | None     # /devtools/browser/<id>, when its DevToolsActivePort said
    problem: str | None          # why it cannot be attached to, and the fix
    starting: bool = False       # port 0 and no DevToolsActivePort yet: likely just started


def parse_scan(output: str) -> Scan:
    """The script's output → its records; malformed lines are skipped."""
    system, uid = "linux", None
    processes: list[ScannedProcess] = []
    truncated = False
    for line in output.split("\n"):  # not splitlines(): it splits at \x1e too
        fields = line.split(_US)
        if fields[0] == "S" and len(fields) >= 4:
            system, uid = fields[1], _int(fields[3])
        elif fields[0] == "T":
            truncated = True
        elif fields[0] == "P" and len(fields) >= 9:
            process = _process(fields, system)
            if process is not None:
                processes.append(process)
    return Scan(system, uid, tuple(processes), truncated)


def _process(fields: list[str], system: str) -> ScannedProcess | None:
    pid, ppid = _int(fields[1]), _int(fields[2])
    if pid is None or ppid is None or not fields[8]:
        return None  # an exiting process (its command line is already gone)
    command = _US.join(fields[8:])[:MAX_COMMAND_CHARS]
    started = _started(fields[3])
    if system == "linux":
        args = tuple(a for a in command.split(_AS) if a)
    else:
        head, *rest = command.split(" --")
        args = (head, *(f"--{a}" for a in rest))
    return ScannedProcess(pid, ppid, _int(fields[4]), started, fields[5] == "same", fields[6],
                          fields[7], args, exact_args=system == "linux")


def _started(text: str) -> str | None:
    """When a process started: ``ps``'s time, or ``epoch:N`` (from /proc) in UTC."""
    if text.startswith("epoch:"):
        seconds = _int(text.split()[0][6:])
        return None if seconds is None else datetime.fromtimestamp(seconds, UTC).isoformat()
    return _ps_time(text)


def _ps_time(text: str) -> str | None:
    """``ps -o lstart`` ("Tue Dec  1 09:02:17 2026", local time) → ISO 8601."""
    try:
        return datetime.strptime(" ".join(text.split()), "%a %b %d %H:%M:%S %Y").isoformat()
    except ValueError:
        return None


def _int(text: str) -> int | None:
    return int(text) if text.strip().isdigit() else None


def program_of(args: tuple[str, ...]) -> str:
    """What a user would call the binary: ``/opt/google/chrome/chrome`` → google-chrome."""
    path = args[0] if args else ""
    name = posixpath.basename(path)
    if "headless" in name:
        return "headless_shell"
    if "edge" in path.lower():
        return "msedge"
    if "google" in path.lower() or name == "chrome":
        return "google-chrome"
    return "chromium" if "chromium" in name.lower() else (name or "unknown")


def _started_by(profile: str | None, parent: str) -> str | None:
    for mark, who in _PROFILE_MARKS:
        if profile and mark in profile:
            return who
    return _PARENTS.get(parent)


def classify(process: ScannedProcess, scan_uid: int | None) -> Candidate:
    """How to attach to ``process``, or why it cannot be, with what to do about it."""
    program = program_of(process.args)
    profile = process.option("user-data-dir") or None
    port_text = process.option("remote-debugging-port")
    port = int(port_text) if port_text and port_text.isdigit() else None
    started_by = _started_by(profile, process.parent)
    if profile is None and program in _DEFAULT_PROFILES:
        profile = "~/" + _DEFAULT_PROFILES[program]
    listening, path = (port if port else None), None
    # The script prints the file's two lines on one: "<port> /devtools/browser/<id>".
    parsed = parse_active_port(process.active_port.replace(" ", "\n", 1)) if port == 0 else None
    if parsed is not None:
        listening, path = parsed
    problem = _problem(process, port, parsed is not None, profile, started_by, scan_uid)
    return Candidate(process.pid, process.started, program, profile, port, started_by,
                     listening, path, problem,
                     starting=port == 0 and process.active_port == "-")


def _problem(process: ScannedProcess, port: int | None, has_file: bool, profile: str | None,
             started_by: str | None, scan_uid: int | None) -> str | None:
    if port is None:
        if process.option("remote-debugging-pipe") is not None:
            who = "Playwright" if started_by == "playwright" else "its launcher"
            return (f"started by {who} over a pipe (--remote-debugging-pipe), which only its "
                    "launcher can use; launch it with args: ['--remote-debugging-port=0'] to "
                    "debug it from here")
        return ("started without --remote-debugging-port; start it with "
                "--remote-debugging-port=0 and a --user-data-dir to debug it from here")
    other_user = scan_uid is not None and process.uid is not None and process.uid != scan_uid
    if not process.same_netns and not (other_user and scan_uid != 0):
        return ("runs in another network namespace (a container?): its loopback is not the "
                "host's; publish its debugging port, or point an SSH target at the container")
    if port == 0 and not has_file:
        if process.active_port == "!":
            who = f"user {process.uid}" if other_user else "this user"
            return (f"runs as {who} and its profile {profile} is unreadable here; SSH in as "
                    "the browser's user, or start it with a fixed --remote-debugging-port")
        return (f"has written no DevToolsActivePort in {profile} (still starting, or the "
                "profile was removed); it is picked up once the file is there")
    return None
