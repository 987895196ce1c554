"""What a Chrome the gateway launches may be given: extra flags and a display.

Checked here, once, so the launcher can put them on a command line as they are:
a flag is a ``--flag`` the gateway does not set itself, a display an X display or
a Wayland socket name — nothing a shell or the launch script would read as more.
"""

from __future__ import annotations

import re

from gateway.config.text import breaks_a_line, show

__all__ = ["chrome_flag", "display_name"]

_MANAGED_FLAGS = ("--remote-debugging-port", "--remote-debugging-pipe", "--user-data-dir",
                  "--headless")
# An X display (":0", "localhost:10.0") or a Wayland socket name ("wayland-0").
_DISPLAY_RE = re.compile(r"[A-Za-z0-9_.-]{0,64}:[0-9]{1,5}(\.[0-9]{1,3})?"
                         r"|wayland-[0-9A-Za-z_.-]{1,32}")


def chrome_flag(arg: str) -> str:
    """One extra flag for a launched Chrome: a ``--flag`` the gateway does not set itself."""
    if not arg.startswith("--") or len(arg) > 4096 or breaks_a_line(arg):
        raise ValueError(f"{show(arg)} is not a Chrome flag; expected --name or --name=value "
                         "(at most 4096 characters, no NUL or newline)")
    if arg.split("=", 1)[0] in _MANAGED_FLAGS:
        raise ValueError(f"{show(arg)} is set by the gateway itself (use launch_profile / "
                         "headless instead)")
    return arg


def display_name(value: str) -> str:
    if not _DISPLAY_RE.fullmatch(value):
        raise ValueError(f"display {show(value)} is invalid; expected an X display such as "
                         "\":0\" or a Wayland socket such as \"wayland-0\"")
    return value
