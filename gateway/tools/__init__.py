"""Tool families, one module each; ``register_all`` defines them all on a registrar.

A family module exposes ``register(tools, registry)`` and defines its tools with
``tools.tool`` / ``tools.tab_tool`` (``definition.py``); it imports nothing of the
server.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import (
    cdp,
    console,
    dialogs,
    downloads,
    emulation,
    handoff,
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
from . import live as live_family
from .definition import ToolRegistrar, Tools

if TYPE_CHECKING:
    from gateway.browsers.registry import Registry
    from gateway.live.hub import Live

__all__ = ["register_all"]


def register_all(registrar: ToolRegistrar, registry: Registry,
                 live: Live | None = None) -> None:
    """Every family's tools; ``live`` serves the live page (None: a gateway that does
    not, such as the catalogue, where no call ever runs)."""
    tools = Tools(registrar, registry)
    for family in (targets, tabs, view, runtime, cdp, screenshot, console, network, dialogs,
                   emulation, profiling, pdf, storage, routes, downloads):
        family.register(tools, registry)
    handoff.register(tools, registry, live)
    live_family.register(tools, registry, live)
    video.register(tools, registry, live)
