"""Which tools a gateway offers: ``--tools`` (``[gateway] tools``, ``$CHROME_SSH_GATEWAY_TOOLS``).

Every offered tool's definition sits in the agent's context on every turn, so a user
can offer fewer. A spec is a comma list read left to right: ``default`` (the
default: every tool but the categories in ``OFF_BY_DEFAULT``), ``all``, ``core``
(the few tools that drive a page: ``CORE``), a category (a tool family:
``network``, ``cdp``, …, the module that defines it) or a tool name; a ``-`` in front
removes, a ``+`` or nothing adds. A spec that starts with ``-`` or ``+`` starts from
``default`` (``-cdp`` is ``default,-cdp``, ``+emulation`` every tool). ``--read-only``
then leaves out what changes something.

Pure: it reads the tool values themselves (``gateway.tools.TOOLS``: each one's name,
category and hints), without a server.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from gateway.errors import ConfigError

from .definition import Tool

__all__ = ["CORE", "OFF_BY_DEFAULT", "Selection", "catalogue", "select"]

CORE = ("list_tabs", "browse", "browse_view", "browse_act", "evaluate", "close_tab")
"""Enough to do the whole job on a page: find or open it (list_tabs, browse), read
it (browse_view), act on it (browse_act), what the view cannot say (evaluate), and
clean up (close_tab)."""

OFF_BY_DEFAULT = ("emulation", "routes", "live", "video")
"""Categories offered only when asked for (``--tools default,+emulation``, ``all``):
rarely needed, and every definition offered costs every turn of every agent. The
default list is held to 12,000 characters of what reaches a model
(``tests/unit/test_tool_schemas.py``); a tool that would break that comes in a
category listed here, and the server's instructions name what is left out."""


@dataclass(frozen=True)
class Selection:
    """The tools to offer, for each one left out the sentence a call to it gets, and the
    line for the server's instructions naming what is off by default (``_off_note``)."""

    offered: frozenset[str]
    withheld: Mapping[str, str] = field(default_factory=dict)
    note: str = ""


def catalogue() -> Sequence[Tool]:
    """Every tool the gateway defines, in the order they are listed."""
    from gateway.tools import TOOLS

    return TOOLS


def select(spec: str, tools: Sequence[Tool], *, read_only: bool = False,
           source: str = "--tools") -> Selection:
    """The tools ``spec`` offers out of ``tools``; ``ConfigError`` (naming every valid
    word) for an unknown one, or a spec that leaves nothing."""
    names = [t.name for t in tools]
    groups: dict[str, list[str]] = {
        "all": names, "core": [n for n in names if n in CORE],
        "default": [t.name for t in tools if t.category not in OFF_BY_DEFAULT]}
    for tool in tools:
        groups.setdefault(tool.category, []).append(tool.name)
    for name in names:
        groups.setdefault(name, [name])
    items = [item.strip() for item in spec.split(",")]
    chosen: list[str] = list(groups["default"]) if items[0][:1] in "+-" else []
    for item in items:
        word = item.lstrip("+-").strip()
        if word not in groups:
            valid = ", ".join(dict.fromkeys(["default", "all", "core",
                                             *sorted(t.category for t in tools),
                                             *names]))
            raise ConfigError(source, "", f"unknown tool or set {item!r} in {spec!r}; valid "
                              f"(comma-separated, - in front removes): {valid}")
        if item.startswith("-"):
            chosen = [n for n in chosen if n not in groups[word]]
        else:
            chosen += [n for n in groups[word] if n not in chosen]
    if not chosen:
        raise ConfigError(source, "", f"{spec!r} offers no tools; try 'core' or 'all'")
    read_only_names = {t.name for t in tools if t.hints.read_only}
    offered = frozenset(n for n in chosen if n in read_only_names or not read_only)
    withheld = {}
    for tool in tools:
        if read_only and not tool.hints.read_only:  # no --tools would offer it: say so first
            withheld[tool.name] = (f"{tool.name} is not offered: this gateway runs read-only "
                                   "(--read-only); restart it without that to use it")
        elif tool.name not in chosen:
            withheld[tool.name] = (f"{tool.name} is not offered: this gateway runs with "
                                   f"--tools {spec!r}; add it with --tools '{spec},+{tool.name}'"
                                   f" (or +{tool.category})")
    return Selection(offered, withheld, _off_note(tools, offered, read_only))


def _off_note(tools: Sequence[Tool], offered: frozenset[str], read_only: bool) -> str:
    """The tools of ``OFF_BY_DEFAULT`` this gateway leaves out (and could offer:
    ``read_only`` offers no tool that changes anything), so an agent that needs one can
    tell its user how to get it; empty when there are none."""
    left_out: dict[str, list[str]] = {}
    for tool in tools:
        if (tool.category in OFF_BY_DEFAULT and tool.name not in offered
                and (tool.hints.read_only or not read_only)):
            left_out.setdefault(tool.category, []).append(tool.name)
    if not left_out:
        return ""
    named = "; ".join(f"{', '.join(names)} (--tools +{category})"
                      for category, names in left_out.items())
    return (f"Off by default: {named}; the user adds it where the gateway starts (that "
            "flag, or CHROME_SSH_GATEWAY_TOOLS=+CATEGORY in its environment).\n")
