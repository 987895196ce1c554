"""The directory on a browser's host its downloads go to, as shell scripts (pure).

One per served browser: ``/tmp/csgw-downloads-XXXXXXXX`` (``mktemp -d``: private,
0700, a name no site chooses), files in ``files/`` named by Chrome after each
download's guid. Beside them, ``holder``: the pid (and start time, so a reused pid is
not mistaken for it: ``STARTED``) of the process whose life the directory is tied to — the
sshd process serving the gateway's SSH connection (the parent of every command
the gateway runs there), or the gateway itself on this machine. Both end when the
gateway does, however it ends: a SIGKILL closes the connection, and sshd's process
for it exits.

The gateway removes its directory when it lets the browser go (exit, the target
removed); what a gateway killed before that left is removed by the next gateway to
set up downloads on that host as that user (``prepare_command`` sweeps every
``csgw-downloads-*`` of the user's whose holder is gone, as the launcher sweeps
``csgw-chrome-*`` profiles). After an SSH reconnect the holder is the new
connection's sshd process: the directory is kept and its holder written again.
"""

from __future__ import annotations

from gateway.hosts.shell import quote_path

__all__ = ["DIRECTORY_PREFIX", "FILES", "STARTED", "parse_prepared", "prepare_command",
           "remove_command"]

DIRECTORY_PREFIX = "/tmp/csgw-downloads-"
FILES = "files"  # the browser's downloadPath, under the directory
_MARK = "@csgw"
_HOLDER = "holder"
STARTED = ("started() { if [ -r /proc/self/stat ]; then "
           "awk '{ sub(/.*\\) /, \"\"); print $20 }' \"/proc/$1/stat\" 2>/dev/null; "
           'else LC_ALL=C TZ=UTC0 ps -o lstart= -p "$1" 2>/dev/null; fi; }; ')
"""A shell function: ``started PID`` prints when that process started, the same for its
whole life whatever the reader's time zone, locale or clock does — field 22 of
``/proc/PID/stat`` (clock ticks since boot; the fields counted after the last ``)``,
as ``comm``, field 2, may hold spaces and parentheses), or, without /proc (macOS),
``ps``'s start time in UTC and the C locale. Nothing when it does not run."""


def _sweep(keep: str) -> str:
    """Remove this user's download directories whose holder no longer runs (or runs
    with another start time: its pid was reused); one without a holder file (being made
    this instant) only when it is over a minute old. ``keep`` (shell words) stays."""
    return (f'for x in {DIRECTORY_PREFIX}*; do '
            f'[ -d "$x" ] && [ -O "$x" ] && [ "$x" != {keep} ] || continue; '
            f'h=$(cat "$x/{_HOLDER}" 2>/dev/null); '
            'if [ -n "$h" ]; then '
            '[ -n "${h#* }" ] && [ "$(started "${h%% *}")" = "${h#* }" ] && continue; '
            'else [ -n "$(find "$x" -maxdepth 0 -mmin +1 2>/dev/null)" ] || continue; fi; '
            'rm -rf -- "$x"; done; ')


def prepare_command(known: str | None) -> str:
    """The script run on every (re)connect: sweep, keep ``known`` (the directory made on an
    earlier connection) if it is still there and the user's, else make a new one, and
    write its holder. Prints ``@csgw dir <path>``, or ``@csgw error <why>``."""
    keep = quote_path(known) if known else "''"
    return (STARTED + 'p=$PPID; s=$(started "$p"); ' + _sweep(keep) +
            f'd={keep}; [ -n "$d" ] && [ -d "$d" ] && [ ! -L "$d" ] && [ -O "$d" ] || '
            f'd=$(mktemp -d {DIRECTORY_PREFIX}XXXXXXXX) || '
            f"{{ echo '{_MARK} error could not create a directory in /tmp'; exit 0; }}; "
            f'mkdir -p "$d/{FILES}" && printf \'%s %s\\n\' "$p" "$s" > "$d/{_HOLDER}.new" '
            f'&& mv -f "$d/{_HOLDER}.new" "$d/{_HOLDER}" || '
            f"{{ echo '{_MARK} error could not write in '\"$d\"; exit 0; }}; "
            f"printf '{_MARK} dir %s\\n' \"$d\"")


def remove_command(directory: str) -> str:
    """The script removing ``directory`` (the gateway lets its browser go)."""
    return f"rm -rf -- {quote_path(directory)}"


def parse_prepared(output: str) -> tuple[str | None, str]:
    """``prepare_command``'s output → (the directory, or None and why not)."""
    for line in output.splitlines():
        if line.startswith(f"{_MARK} dir {DIRECTORY_PREFIX}"):
            return line.removeprefix(f"{_MARK} dir "), ""
        if line.startswith(f"{_MARK} error "):
            return None, line.removeprefix(f"{_MARK} error ")
    return None, f"the set-up script printed nothing usable ({output.strip()[:200]!r})"
