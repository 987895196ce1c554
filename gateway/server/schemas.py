"""Tool schemas sized for a model's context: the same constraints, a fraction of the text.

Every tool definition sits in the agent's context on every turn, so what pydantic
generates is rewritten once, when a tool is registered. Nothing a model needs is lost
(names, types, bounds, enums, required, descriptions); what goes is noise:

- ``title`` on every property and model (it repeats the name);
- ``anyOf: [X, {type: null}]`` with ``default: null`` for an optional argument: the
  argument is plain ``X``, optional because it is not required (the argument model
  still accepts an explicit ``null``). In an output schema a nullable field stays
  ``anyOf`` (a ``type`` array is less portable: the MCP Inspector's ``--strict``
  warns about it) — unless the field is marked ``x-absent`` (``output.absent``):
  left out of results when it does not apply, so it is just ``X`` when present;
- ``discriminator`` (an OpenAPI keyword, not JSON Schema: the ``oneOf`` branches'
  ``const`` values already tell them apart);
- ``additionalProperties: true`` (JSON Schema's default) and output defaults (an
  output schema describes what arrives, it fills nothing in);
- ``$defs`` used once: inlined where they are used.

Pure: a dict in, a new dict out. Validation never reads these schemas — the SDK
checks arguments and results with the pydantic models they came from.
"""

from __future__ import annotations

import json
from typing import Any

from gateway.output.absent import ABSENT

__all__ = ["compact_input", "compact_output"]

_DEFS = "#/$defs/"


def compact_input(schema: dict[str, Any]) -> dict[str, Any]:
    """An argument schema without noise; an optional argument is its plain type."""
    return _compact(schema, output=False)


def compact_output(schema: dict[str, Any]) -> dict[str, Any]:
    """A result schema without noise; nullable fields stay ``anyOf [X, null]``."""
    return _compact(schema, output=True)


def _compact(schema: dict[str, Any], *, output: bool) -> dict[str, Any]:
    defs: dict[str, Any] = schema.get("$defs", {})
    uses = _ref_counts(schema)
    inline = {name for name in defs if uses.get(name, 0) <= 1}
    kept = {name: _node(body, defs, inline, output) for name, body in defs.items()
            if name not in inline and uses.get(name, 0)}
    root: dict[str, Any] = _node({k: v for k, v in schema.items() if k != "$defs"},
                                 defs, inline, output)
    if kept:
        root["$defs"] = kept
    return root


def _ref_counts(schema: dict[str, Any]) -> dict[str, int]:
    counts: dict[str, int] = {}
    text = json.dumps(schema)
    for name in schema.get("$defs", {}):
        counts[name] = text.count('"$ref": ' + json.dumps(_DEFS + name))
    return counts


def _node(node: Any, defs: dict[str, Any], inline: set[str], output: bool) -> Any:
    if isinstance(node, list):
        return [_node(item, defs, inline, output) for item in node]
    if not isinstance(node, dict):
        return node
    node = _without_null(node, output)
    ref = node.get("$ref", "")
    if ref.startswith(_DEFS) and ref[len(_DEFS):] in inline:
        target = _node(defs[ref[len(_DEFS):]], defs, inline, output)
        return {**target, **_node({k: v for k, v in node.items() if k != "$ref"},
                                  defs, inline, output)}
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("title", "discriminator") and isinstance(value, str | dict):
            continue
        if key == "additionalProperties" and value is True:
            continue
        if key == "default" and (output or value is None):
            continue
        if key == "properties":
            out[key] = {name: _node(prop, defs, inline, output) for name, prop in value.items()}
        else:
            out[key] = _node(value, defs, inline, output)
    return out


def _without_null(node: dict[str, Any], output: bool) -> dict[str, Any]:
    """An input's ``anyOf`` (or an absent-when-none output's) without its ``{type:
    null}`` branch; one branch left is the plain schema."""
    options = node.get("anyOf")
    absent = node.pop(ABSENT, False) if output else False
    if (output and not absent) or not (isinstance(options, list)
                                       and {"type": "null"} in options):
        return node
    rest = {k: v for k, v in node.items() if k != "anyOf"}
    others = [o for o in options if o != {"type": "null"}]
    return {**others[0], **rest} if len(others) == 1 else {**rest, "anyOf": others}
