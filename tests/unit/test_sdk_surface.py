"""The gateway meets the MCP SDK through its public surface only (issue 22).

Two checks: no private attribute of anyone else's object is read in ``gateway/``
(``_tool_manager``, ``_lowlevel_server``, a cached ``__dict__`` entry: the SDK may
rename any of them in a minor release), and the public names and parameters the
gateway does use are pinned here, so an SDK release that changes one fails this test
instead of a user's start-up.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp.server.lowlevel import Server
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.server.session import ServerSession
from mcp.server.stdio import stdio_server

GATEWAY = Path(__file__).resolve().parents[2] / "gateway"


def _own_private_names(trees: list[ast.Module]) -> set[str]:
    """Private names the gateway defines itself: methods, class attributes, and
    attributes it assigns (``self._x = …``)."""
    names = set()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
    return {name for name in names if name.startswith("_")}


def _foreign_private_reads(path: Path, tree: ast.Module, own: set[str]) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or not node.attr.startswith("_"):
            continue
        on = node.value
        if isinstance(on, ast.Name) and on.id in ("self", "cls"):
            continue
        if node.attr == "__dict__" or (not node.attr.startswith("__") and node.attr not in own):
            found.append(f"{path.relative_to(GATEWAY.parent)}:{node.lineno} {ast.unparse(node)}")
    return found


def test_no_private_attribute_of_a_library_is_read() -> None:
    paths = sorted(GATEWAY.rglob("*.py"))
    trees = [ast.parse(path.read_text(), str(path)) for path in paths]
    own = _own_private_names(trees)
    found = [hit for path, tree in zip(paths, trees, strict=True)
             for hit in _foreign_private_reads(path, tree, own)]
    assert found == []


def test_the_detector_sees_the_sdk_internals_it_is_for() -> None:
    tree = ast.parse("server._tool_manager.get_tool(name)\n"
                     "tool.__dict__.pop('output_schema', None)\n"
                     "self._lowlevel_server.run()\n")
    hits = _foreign_private_reads(GATEWAY / "x.py", tree, own={"_lowlevel_server"})
    assert [hit.split(" ", 1)[1] for hit in hits] == ["server._tool_manager", "tool.__dict__"]


def _parameters(fn: Callable[..., Any]) -> set[str]:
    return set(inspect.signature(fn).parameters)


def test_the_public_sdk_names_the_gateway_uses_are_there() -> None:
    # A call's client (gateway/mcp/calls.py): its progress, its roots.
    assert inspect.iscoroutinefunction(ServerSession.report_progress)
    assert {"progress", "total", "message"} <= _parameters(ServerSession.report_progress)
    assert callable(ServerSession.list_roots)  # deprecated in the newest protocol: wrapped
    assert isinstance(inspect.getattr_static(ServerSession, "client_capabilities"), property)
    # The request-state seal the SDK's own server installs (app.py).
    assert {"default_audience"} <= _parameters(RequestStateBoundary.__init__)
    assert callable(RequestStateSecurity.ephemeral)
    # The protocol server (app.py, http.py).
    assert {"name", "version", "instructions", "on_list_tools", "on_call_tool",
            "on_list_resources", "on_list_resource_templates",
            "on_read_resource"} <= _parameters(Server.__init__)
    run = list(inspect.signature(Server.run).parameters)
    assert run[:4] == ["self", "read_stream", "write_stream", "initialization_options"]
    assert {"streamable_http_path", "transport_security"} <= _parameters(
        Server.streamable_http_app)
    assert callable(Server.create_initialization_options)
    assert isinstance(Server("probe").middleware, list)
    assert {"stdin", "stdout"} <= _parameters(stdio_server)
