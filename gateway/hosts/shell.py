"""Reading many files with one remote command, and the quoting that makes it safe (pure).

Over SSH every exec is a round trip (~2.5 ms here, far more across the
world), so a host reads every candidate file — say, the ``DevToolsActivePort``
of eleven profile locations — with one ``sh`` loop. Each readable file is
printed after a marker line carrying a per-call random token, so no file's
content can forge the framing.
"""

from __future__ import annotations

import glob
import shlex
from collections.abc import Sequence

__all__ = ["WILDCARD", "expand", "parse_read_files", "quote_path", "read_files_command"]

WILDCARD = "/*/"
"""A path segment that matches every directory there (``Host.read_files``)."""


def quote_path(path: str) -> str:
    """``path`` for a POSIX shell; a leading ``~/`` is the remote user's ``$HOME``; a
    ``/*/`` segment stays a glob (every other character is quoted)."""
    if WILDCARD in path:
        return WILDCARD.join(quote_path(part) for part in path.split(WILDCARD))
    if path.startswith("~/"):
        return '"$HOME"/' + shlex.quote(path[2:])
    return shlex.quote(path)


def expand(path: str) -> list[str]:
    """The paths a ``/*/`` segment of ``path`` matches here (only that is a pattern)."""
    return sorted(glob.glob(WILDCARD.join(glob.escape(part)
                                          for part in path.split(WILDCARD))))


def read_files_command(paths: Sequence[str], marker: str) -> str:
    """One command printing ``<marker> <path>`` then the content of each readable path."""
    quoted = " ".join(quote_path(p) for p in paths)
    return (f"for f in {quoted}; do "
            'if [ -f "$f" ] && [ -r "$f" ]; then '
            f"printf '%s %s\\n' {shlex.quote(marker)} \"$f\"; "
            'cat "$f"; echo; fi; done; true')


def parse_read_files(output: str, marker: str,
                     paths: Sequence[str]) -> dict[str, tuple[str, str]]:
    """The output of ``read_files_command`` → {path as asked: (path as printed, content)}.

    The shell prints ``~/`` expanded (``$HOME``); results are keyed by the path as
    the caller wrote it."""
    found: dict[str, tuple[str, str]] = {}
    for block in output.split(marker + " ")[1:]:
        printed, _, content = block.partition("\n")
        if content.endswith("\n"):
            content = content[:-1]  # the `echo` after `cat`
        asked = next((p for p in paths if WILDCARD not in p and p not in found
                      and _same(p, printed)), printed)  # a pattern's: by the path found
        found[asked] = (printed, content)
    return found


def _same(asked: str, printed: str) -> bool:
    if asked.startswith("~/"):
        return printed.endswith("/" + asked[2:])
    return asked == printed
