"""The tool reference (``docs/tools.md``), rendered from the tool list a client receives.

Hand-written references drift from the tools they describe; this one is read off the
tool list itself (``gateway.tools.TOOLS``, what ``--tools all`` offers), as a client
receives it (``calls.published``): each tool's name, title, hints, description,
arguments (from its input schema) and result fields (from its output schema) are
rendered as Markdown, with its ``--tools`` category.
``tests/unit/test_tool_reference.py`` fails when the file and this output differ.

    python -m gateway.mcp.reference docs/tools.md    # rewrite the file
    python -m gateway.mcp.reference                  # print it
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mcp.types import Tool

from gateway.tools import TOOLS
from gateway.tools.sets import CORE, OFF_BY_DEFAULT

from .calls import published
from .schemas import RESULTS_NOTE, SHARED_SHAPES, shared_arguments_note

__all__ = ["COMMAND", "listed_tools", "readme_table", "render"]

COMMAND = "python -m gateway.mcp.reference docs/tools.md"
"""How to regenerate the reference (said in the file and by the drift test)."""

_BOUNDS = {"minimum": "≥ {}", "exclusiveMinimum": "> {}", "maximum": "≤ {}",
           "exclusiveMaximum": "< {}", "minLength": "≥ {} chars", "maxLength": "≤ {} chars",
           "minItems": "≥ {} items", "maxItems": "≤ {} items"}


def listed_tools() -> list[Tool]:
    """``tools/list`` of a gateway offering every tool (``--tools all``)."""
    return [published(tool) for tool in TOOLS]


def readme_table() -> str:
    """The README's tool list: each category's tools, ``(off)`` for those off by
    default (the rows under its ``| category | tools |`` header)."""
    families: dict[str, list[str]] = {}
    for tool in TOOLS:
        families.setdefault(tool.category, []).append(f"`{tool.name}`")
    return "".join(f"| `{category}`{' (off)' if category in OFF_BY_DEFAULT else ''} | "
                   f"{', '.join(names)} |\n" for category, names in families.items())


def render(tools: Sequence[Tool], categories: Mapping[str, str] | None = None) -> str:
    """The whole reference page for ``tools``; ``categories`` (name → ``--tools``
    category) defaults to the catalogue's."""
    if categories is None:
        categories = {tool.name: tool.category for tool in TOOLS}
    lines = [
        "# Tool reference",
        "",
        f"<!-- Generated from the gateway's tool list by `{COMMAND}`; do not edit. -->",
        "",
        f"Every tool of `--tools all`, in the order `tools/list` gives them. `core` is "
        f"{', '.join(f'`{n}`' for n in CORE)}; the categories "
        f"{', '.join(f'`{c}`' for c in OFF_BY_DEFAULT)} are off by default "
        "([tool sets](configuration.md#tool-sets)). Hints are the MCP annotations a client "
        "reads (`readOnlyHint`, `destructiveHint`, `idempotentHint`, `openWorldHint`).",
        "",
        f"{shared_arguments_note()} In the tables below they are marked *shared*.",
        "",
        RESULTS_NOTE.strip(),
        "",
        "| tool | category | title |",
        "|---|---|---|",
        *(f"| [`{t.name}`](#{t.name}) | {categories[t.name]} | {t.title} |" for t in tools),
    ]
    for tool in tools:
        lines += ["", *_tool(tool, categories[tool.name])]
    return "\n".join(lines) + "\n"


def _tool(tool: Tool, category: str) -> list[str]:
    annotations = tool.annotations
    hints = [name for name, on in (
        ("read-only", annotations and annotations.read_only_hint),
        ("destructive", annotations and annotations.destructive_hint),
        ("idempotent", annotations and annotations.idempotent_hint),
        ("open world", annotations and annotations.open_world_hint)) if on]
    lines = [f"## {tool.name}", "",
             f"**{tool.title}** · category `{category}` · "
             f"{', '.join(hints) if hints else 'changes the page'}", "",
             tool.description or "", ""]
    schema = tool.input_schema
    required = set(schema.get("required", []))
    properties: Mapping[str, Any] = schema.get("properties", {})
    if properties:
        lines += ["| argument | type | default | description |", "|---|---|---|---|"]
        lines += [_argument(name, prop, name in required) for name, prop in properties.items()]
    else:
        lines.append("No arguments.")
    fields = (tool.output_schema or {}).get("properties", {})
    if fields:
        lines += ["", "Returns: " + ", ".join(f"`{name}`" for name in fields) + "."]
    else:
        lines += ["", "Returns the page view as text (`call --json`: its fields)."]
    return lines


def _argument(name: str, prop: Mapping[str, Any], required: bool) -> str:
    shared = name in SHARED_SHAPES and prop.get("type") == SHARED_SHAPES[name]["type"]
    default = json.dumps(prop["default"]) if "default" in prop else ""
    described = prop.get("description", "*shared*" if shared else "")
    kind = _type(prop) + ("" if shared else _bounds(prop))
    return (f"| `{name}`{'' if required else '?'} | {_cell(kind)} | {_cell(default)} "
            f"| {_cell(described)} |")


def _type(node: Mapping[str, Any]) -> str:
    """A schema node in a few words: ``"a" | "b"``, ``array of integer``, ``{ref, text?}``."""
    if "const" in node:
        return json.dumps(node["const"])
    if "enum" in node:
        return " | ".join(json.dumps(value) for value in node["enum"])
    for key in ("anyOf", "oneOf"):
        if key in node:
            return " | ".join(_type(branch) for branch in node[key])
    kind = node.get("type")
    if kind == "array":
        return f"array of {_type(node.get('items', {}))}"
    if "properties" in node:
        required = set(node.get("required", []))
        fields = [f"{name}: {_type(prop)}" if "const" in prop or "enum" in prop
                  else name + ("" if name in required else "?")
                  for name, prop in node["properties"].items()]
        return "{" + ", ".join(fields) + "}"
    if isinstance(kind, list):
        return " | ".join(kind)
    return str(kind or "any")


def _bounds(node: Mapping[str, Any]) -> str:
    said = [word.format(node[key]) for key, word in _BOUNDS.items() if key in node]
    return f" ({', '.join(said)})" if said else ""


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gateway.mcp.reference",
                                     description="render the tool reference (docs/tools.md)")
    parser.add_argument("path", nargs="?", type=Path, help="write here instead of stdout")
    options = parser.parse_args(argv)
    text = render(listed_tools())
    if options.path is None:
        print(text, end="")
    else:
        options.path.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
