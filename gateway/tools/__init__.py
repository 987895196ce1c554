"""Tool families, one module each; ``TOOLS`` is every tool the gateway defines.

A family module defines its tools at module level with ``tool`` / ``tab_tool``
(``definition.py``) and lists them in its own ``TOOLS``; it imports nothing of the
server. This list is the one the server publishes and calls (``gateway.mcp.calls``),
``--tools`` selects from (``sets.py``), and the tool reference is written from
(``gateway.mcp.reference``).
"""

from __future__ import annotations

from . import (
    cdp,
    console,
    dialogs,
    downloads,
    emulation,
    handoff,
    live,
    network,
    pdf,
    profiling,
    routes,
    runtime,
    screenshot,
    storage,
    tabs,
    targets,
    video,
    view,
)
from .definition import Tool

__all__ = ["TOOLS"]

TOOLS: tuple[Tool, ...] = tuple(
    tool for family in (targets, tabs, view, runtime, cdp, screenshot, console, network,
                        dialogs, emulation, profiling, pdf, storage, routes, downloads,
                        handoff, live, video)
    for tool in family.TOOLS)
"""Every tool, in the order they are listed to a client."""
