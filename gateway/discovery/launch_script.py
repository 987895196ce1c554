"""The shell scripts that find, start and stop a Chrome on a host, and their output (pure).

Launching runs as ONE ``sh`` command on the host — over SSH every exec is a
round trip: find the binary, refuse a profile another Chrome holds, start the
browser in a session of its own (``setsid``, else ``nohup``; stdin from /dev/null,
output to a log file in the profile) — so an SSH drop alone does not take a kept
one down, and a held one is stopped by its script, not by a signal to a group —
then wait there for ``DevToolsActivePort`` — or for the browser to exit, and
print the last lines it wrote. The same script without the start is the
doctor's probe: nothing is started, nothing is written.

Each fact comes back on a line of its own, ``@csgw <what> <value>``; what the
browser wrote (``@csgw stderr``) comes last, so nothing it prints can pass for
a fact.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field

from gateway.hosts.shell import quote_path

__all__ = [
    "BINARY_CANDIDATES",
    "CHROME_FLAGS",
    "HELD",
    "QUITTING",
    "STOP",
    "TEMPORARY_PREFIX",
    "LaunchPlan",
    "ScriptResult",
    "launch_command",
    "parse_script",
    "stop_command",
]

# In this order, after $CHROME_PATH; names are looked up on the host's PATH.
BINARY_CANDIDATES: tuple[str, ...] = (
    "google-chrome-stable",
    "google-chrome",
    "chromium",
    "chromium-browser",
    "microsoft-edge",
    "/snap/bin/chromium",
    "/var/lib/flatpak/exports/bin/org.chromium.Chromium",
    "/usr/lib/chromium/chromium",
    "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
    "/Applications/Chromium.app/Contents/MacOS/Chromium",
    "/Applications/Microsoft Edge.app/Contents/MacOS/Microsoft Edge",
)
CHROME_FLAGS: tuple[str, ...] = (
    "--no-first-run", "--no-default-browser-check",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
)
_HEADLESS_FLAGS = ("--headless", "--disable-gpu")
_MARK = "@csgw"
LOG_NAME = "chrome-ssh-gateway.log"  # the browser's output, in its profile
TEMPORARY_PREFIX = "csgw-chrome-"
HOLDER_NAME = "csgw-holder"  # in a temporary profile: the pid of the script holding it
HELD = f"{_MARK} held"       # the last line of a held launch, its browser ready
STOP = "stop"                # what the gateway says to a held launch to stop it…
QUITTING = "quitting"        # …or when the browser was asked to quit already
STOP_GRACE_S = 5.0
STDERR_LINES = 20
# A temporary profile's parent: TMPDIR unless that is too long. Chrome keeps its
# SingletonSocket under TMPDIR (set to <profile>/tmp), and a Unix socket path must
# fit in 107 bytes: "<tmp>/csgw-chrome-<8>/tmp/org.chromium.Chromium.<6>/SingletonSocket"
# leaves 38 for the temp dir (macOS's /var/folders/…/T/ has 49).
_MAX_TMP_CHARS = 38
_POLL_S = 0.02


@dataclass(frozen=True)
class LaunchPlan:
    """How to start the browser: ``profile`` None is a fresh temporary one."""

    profile: str | None
    port: int = 0            # 0: Chrome picks one (and writes it to DevToolsActivePort)
    headless: bool = True
    display: str | None = None
    chrome_args: tuple[str, ...] = ()


@dataclass
class ScriptResult:
    """What a launch (or probe) script reported."""

    binary: str | None = None
    tried: list[str] = field(default_factory=list)
    locked_by: int | None = None    # pid holding the profile's SingletonLock
    profile: str | None = None      # as the host resolved it
    pid: int | None = None
    outcome: str | None = None      # "ready" | "exited" | "slow" | "error"
    error: str = ""
    stderr: str = ""


def _find_binary() -> str:
    """$CHROME_PATH when set (and then only it: a path the user named is not swapped for
    another browser), else the first of ``BINARY_CANDIDATES`` found."""
    candidates = " ".join(shlex.quote(c) for c in BINARY_CANDIDATES)
    return (f'if [ -n "${{CHROME_PATH:-}}" ]; then set -- "$CHROME_PATH"; '
            f"else set -- {candidates}; fi; "
            'B=; for c in "$@"; do '
            f"printf '{_MARK} tried %s\\n' \"$c\"; "
            'case $c in */*) p=$c ;; *) p=$(command -v "$c" 2>/dev/null) || continue ;; esac; '
            'if [ -f "$p" ] && [ -x "$p" ]; then B=$p; break; fi; done; '
            f"if [ -z \"$B\" ]; then echo '{_MARK} nobinary'; exit 0; fi; "
            f"printf '{_MARK} binary %s\\n' \"$B\"; ")


def _check_lock() -> str:
    """A SingletonLock (a symlink to ``<hostname>-<pid>``) whose process lives on this
    host: another Chrome has the profile, and a second one would only hand it the URL."""
    holder = '"${L##*-}"'
    return ('L=$(readlink "$P/SingletonLock" 2>/dev/null); '
            'if [ -n "$L" ] && [ "${L%-*}" = "$(uname -n)" ] && '
            f"{_alive(holder)}; then "
            f"printf '{_MARK} locked %s\\n' \"${{L##*-}}\"; exit 0; fi; ")


def _alive(pid: str) -> str:
    """Whether ``pid`` runs (a zombie does not: nobody may reap it)."""
    return f"ps -o stat= -p {pid} 2>/dev/null | grep -qv '^Z'"


def launch_command(plan: LaunchPlan, timeout_s: float, *, start: bool = True,
                   held: bool = False) -> str:
    """The script that finds the binary, checks the profile and (``start``) starts the
    browser and waits up to ``timeout_s`` for its ``DevToolsActivePort``.

    ``held`` (a browser that must not outlive the gateway, and always a temporary
    profile's): the script stays, reading its stdin, once the browser is ready
    (``HELD`` is the last line it prints). Its stdin is a pipe from the gateway — or,
    over SSH, the session's channel — so it ends when the gateway lets go, exits or
    dies (SIGKILL included: the kernel closes the pipe, sshd the channel); then it
    stops the browser (``_stop``) and removes a temporary profile. It ignores the
    signals a terminal or a killed process group would send it, so that only that end
    stops it; the browser gets TERM and HUP back (INT and QUIT stay ignored, as for
    any background job of a shell — it is stopped with TERM). A temporary launch
    first sweeps away the temporary profiles whose holder is gone (a machine that lost
    power, a killed process group)."""
    held = held or plan.profile is None
    parts = ["trap '' INT HUP TERM PIPE; " if held and start else "", _find_binary()]
    if plan.profile is not None:
        parts.append(f"P={quote_path(plan.profile)}; ")
        parts.append(_check_lock())
    if not start:
        return "".join(parts) + "true"
    if plan.profile is None:
        parts.append(f't=${{TMPDIR:-/tmp}}; t=${{t%/}}; [ ${{#t}} -le {_MAX_TMP_CHARS} ] '
                     '&& [ -d "$t" ] || t=/tmp; ' + _sweep_temporary_profiles() +
                     f'P=$(mktemp -d "$t/{TEMPORARY_PREFIX}XXXXXXXX") && mkdir -m 700 "$P/tmp" '
                     f'&& echo $$ > "$P/{HOLDER_NAME}" || '
                     f"{{ echo '{_MARK} error could not create a temporary profile'; exit 0; }}; "
                     'export TMPDIR="$P/tmp"; ')
    else:
        parts.append('(umask 077; mkdir -p "$P") || '
                     f"{{ echo '{_MARK} error could not create the profile'; exit 0; }}; ")
    flags = [f"--remote-debugging-port={plan.port}", *CHROME_FLAGS,
             *(_HEADLESS_FLAGS if plan.headless else ()), *plan.chrome_args]
    env = ""
    if not plan.headless:
        display = plan.display or ":0"
        env = (f"export {'DISPLAY' if ':' in display else 'WAYLAND_DISPLAY'}="
               f"{shlex.quote(display)}; ")
    wait_s = max(1, round(timeout_s))
    remove = plan.profile is None
    parts.append(
        f"printf '{_MARK} profile %s\\n' \"$P\"; "
        'rm -f "$P/DevToolsActivePort"; '
        'NS=; [ "$(id -u)" = 0 ] && NS=--no-sandbox; '  # Chrome refuses root with its sandbox
        'S=nohup; command -v setsid >/dev/null 2>&1 && S=setsid; '
        f'({"trap - INT HUP TERM PIPE; " if held else ""}{env}'
        f'exec $S "$B" {" ".join(shlex.quote(f) for f in flags)} $NS "--user-data-dir=$P" '
        f'about:blank) </dev/null >"$P/{LOG_NAME}" 2>&1 & '
        # Bounded by the clock, not by rounds: each round's ps costs more than its
        # sleep on a loaded host.
        f"pid=$!; printf '{_MARK} pid %s\\n' $pid; o=slow; end=$(($(date +%s) + {wait_s})); "
        'while [ "$(date +%s)" -lt "$end" ]; do '
        'if [ -s "$P/DevToolsActivePort" ]; then o=ready; break; fi; '
        f"{_alive('$pid')} || {{ o=exited; break; }}; "
        f'sleep {_POLL_S}; done; '
        f"echo \"{_MARK} $o\"; "
        f"echo '{_MARK} stderr'; tail -n {STDERR_LINES} \"$P/{LOG_NAME}\" 2>/dev/null; ")
    if held:
        # Ready: held until the gateway says how to stop it ("quitting": it was asked
        # to quit already) or its end of stdin closes. Not ready: stopped at once (a
        # slow one may still start), the output ended first so the gateway has the
        # browser's words without waiting for the stop. Nothing is printed after that.
        pid = '"$pid"'
        stop = _stop(pid, '"$P"', remove_profile=remove)
        parts.append(f'how=; if [ "$o" = ready ]; then echo \'{HELD}\'; '
                     'exec >/dev/null 2>&1; read -r how; else exec >/dev/null 2>&1; '
                     f'kill -KILL -{pid} 2>/dev/null; fi; '
                     f'if [ "$how" = {QUITTING} ]; then {_wait_gone(pid)}fi; {stop}')
    return "".join(parts) + "true"


def _wait_gone(pid: str, grace_s: float = STOP_GRACE_S) -> str:
    """Wait up to ``grace_s`` for ``pid`` to end."""
    rounds = max(1, int(grace_s / 0.05))
    return (f"i=0; while [ $i -lt {rounds} ] && {_alive(pid)}; do sleep 0.05; "
            "i=$((i+1)); done; ")


def stop_command(pid: int, profile: str, *, remove_profile: bool) -> str:
    """Stop the browser ``pid`` on ``profile`` from a command of its own: one whose
    holder is gone (``ChromeLauncher.reclaim``)."""
    return _stop(str(pid), quote_path(profile), remove_profile=remove_profile) + "true"


def _stop(pid: str, profile: str, *, remove_profile: bool) -> str:
    """Stop the browser ``pid`` (shell words) — only if it still is the one running on
    ``profile`` (a reused pid is left alone): TERM to the browser alone, as ``kill``
    would (it shuts its helpers down and writes its cookies first — a TERM to its
    network process at the same time loses them), then KILL to its process group for
    whatever is left after ``STOP_GRACE_S``; ``remove_profile`` then deletes the
    (temporary) profile."""
    script = (f'case "$(ps -ww -o args= -p {pid} 2>/dev/null)" in *--user-data-dir={profile}*) '
              f"kill -TERM {pid} 2>/dev/null; " + _wait_gone(pid) +
              f"kill -KILL -{pid} 2>/dev/null || kill -KILL {pid} 2>/dev/null ;; esac; ")
    if remove_profile:
        script += f"rm -rf -- {profile}; "
    return script


def _sweep_temporary_profiles() -> str:
    """Remove the temporary profiles under ``$t`` (this user's) whose holder no longer
    runs, and any browser still on them. One without a holder file (a gateway before
    holders, or one being made this instant) goes only when nothing runs on it and it
    is over a minute old."""
    return (f'for d in "$t"/{TEMPORARY_PREFIX}*; do '
            '[ -d "$d" ] && [ -O "$d" ] || continue; '
            f'h=$(cat "$d/{HOLDER_NAME}" 2>/dev/null); '
            'u=$(ps -eww -o pid=,args= 2>/dev/null | '
            # whole arguments: awk's own "d=--user-data-dir=…" must not match itself
            'awk -v d="--user-data-dir=$d" '
            '\'{ for (i = 2; i <= NF; i++) if ($i == d) { print $1; break } }\'); '
            'if [ -n "$h" ]; then '
            f'case "$(ps -ww -o args= -p "$h" 2>/dev/null)" in *{_MARK}*) continue ;; esac; '
            '[ -z "$u" ] || kill -KILL $u 2>/dev/null; '
            'else [ -z "$u" ] && [ -n "$(find "$d" -maxdepth 0 -mmin +1 2>/dev/null)" ] '
            '|| continue; fi; '
            'rm -rf -- "$d"; done; ')


def parse_script(output: str, tried: Sequence[str] = ()) -> ScriptResult:
    """The output of ``launch_command`` → what it found and did."""
    result = ScriptResult(tried=list(tried))
    facts, _, stderr = output.partition(f"{_MARK} stderr\n")
    result.stderr = stderr.strip()
    for line in facts.splitlines():
        mark, _, rest = line.partition(" ")
        if mark != _MARK:
            continue
        what, _, value = rest.partition(" ")
        if what == "tried":
            result.tried.append(value)
        elif what == "binary":
            result.binary = value
        elif what == "locked" and value.isdigit():
            result.locked_by = int(value)
        elif what == "profile":
            result.profile = value
        elif what == "pid" and value.isdigit():
            result.pid = int(value)
        elif what in ("ready", "exited", "slow"):
            result.outcome = what
        elif what == "error":
            result.outcome, result.error = "error", value
    return result
