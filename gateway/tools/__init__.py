"""Tool families, one module each; ``register_all`` puts them on the server."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import cdp, console, dialogs, network, runtime, screenshot, tabs, targets, view

if TYPE_CHECKING:
    from gateway.browsers.registry import Registry
    from gateway.server.app import ToolRegistrar

__all__ = ["register_all"]


def register_all(registrar: ToolRegistrar, gateway: Registry) -> None:
    for family in (targets, tabs, view, runtime, cdp, screenshot, console, network, dialogs):
        family.register(registrar, gateway)
