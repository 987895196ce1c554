"""Tool schemas sized for a model's context: the same constraints, a fraction of the text.

Every tool definition sits in the agent's context on every turn, so what pydantic
generates is rewritten once, when the tools are first listed. The rules are generic (no
table per tool): a tool added tomorrow is compacted the same way.

Arguments keep every constraint (names, types, bounds, enums, required, defaults);
what goes is noise or is said once instead of per tool:

- ``title`` on every property and model (it repeats the name);
- ``anyOf: [X, {type: null}]`` with ``default: null`` for an optional argument: the
  argument is plain ``X``, optional because it is not required (the argument model
  still accepts an explicit ``null``);
- ``type`` beside a ``const`` / ``enum`` whose values already have that type;
- keywords every ``oneOf`` / ``anyOf`` branch repeats (``type: object``, the
  ``required`` names they share): said once on the union;
- the bounds of the shared arguments (``gateway.tools.args.SHARED``: tab, target,
  timeout_s, max_chars, since, limit, url, context, ref): a property with exactly that
  shape is published as its bare type (with its default and text only where they
  differ from the shared ones), and the bounds, defaults and texts are stated once in
  the server's instructions (``shared_arguments_note``);
- ``discriminator`` (an OpenAPI keyword, not JSON Schema: the branches' ``const``
  values already tell them apart), ``additionalProperties: true`` (the default);
- ``$defs`` used once: inlined where they are used.

Results are described, not re-validated: the top-level fields keep their names,
types and nullability; a nested object (a list's entries, a request's body) is
summarised as ``{"type": "object"}`` — the model reads its fields in the result
itself. No ``required`` list: every field is always in a result except those that do
not apply (``x-absent``), which the instructions say once (``RESULTS_NOTE``). Output
defaults go (a result schema fills nothing in). A nullable field stays
``anyOf [X, null]`` (a ``type`` array is less portable: the MCP Inspector's
``--strict`` warns about it) unless it is marked ``x-absent``
(``output.absent``): left out of results when it does not apply, so it is just ``X``.

Pure: a dict in, a new dict out. Validation never reads these schemas — the SDK
checks arguments and results with the pydantic models they came from.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import TypeAdapter

from gateway.output.absent import ABSENT
from gateway.tools.args import SHARED, SHARED_DEFAULTS

__all__ = ["RESULTS_NOTE", "SHARED_SHAPES", "compact_description", "compact_input",
           "compact_output", "shared_arguments_note"]

RESULTS_NOTE = ("A result has every field its output schema lists, except those that"
                " do not apply to it, which are left out (no truncated: nothing was cut).")
"""What an output schema's ``required`` list would say, said once for every tool."""

_DEFS = "#/$defs/"
_UNION = ("oneOf", "anyOf")
_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,)}


def compact_description(docstring: str) -> str:
    """A tool's docstring as one line: its wrapping and indentation are for the source,
    and every newline costs two characters of JSON (``\\n``) in the agent's context."""
    return " ".join(docstring.split())


def compact_input(schema: dict[str, Any]) -> dict[str, Any]:
    """An argument schema without noise; an optional argument is its plain type, a
    shared argument its bare type."""
    compact: dict[str, Any] = _with_shared(_compact(schema, output=False))
    return compact


def compact_output(schema: dict[str, Any]) -> dict[str, Any]:
    """A result schema: top-level fields precise, nested objects summarised."""
    root = _compact(schema, output=True)
    defs = root.pop("$defs", {})
    root.pop("required", None)
    root["properties"] = {name: _summarised(prop, defs)
                          for name, prop in root.get("properties", {}).items()}
    return root


def shared_arguments_note() -> str:
    """The shared arguments' bounds, defaults and texts, said once (the server's
    instructions) instead of in every tool's schema; generated from the shapes, so the
    two cannot drift."""
    parts = [_said(name, shape) for name, shape in SHARED_SHAPES.items()]
    return "Shared arguments: " + "; ".join(parts) + "."


def _with_shared(node: Any) -> Any:
    """``node`` with every property of a shared argument's exact shape (at any depth:
    ``browse_act``'s steps take a ``ref``) reduced to its type, and to its text and
    default where they differ from the shared ones."""
    if isinstance(node, list):
        return [_with_shared(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _with_shared(value) for key, value in node.items()}
    for name, prop in out.get("properties", {}).items():
        shape = SHARED_SHAPES.get(name)
        if shape is not None and _shape(prop) == _shape(shape):
            out["properties"][name] = {"type": shape["type"], **{
                k: prop[k] for k in ("default", "description")
                if k in prop and prop[k] != shape.get(k)}}
    return out


def _shape(prop: Mapping[str, Any]) -> dict[str, Any]:
    """What a property constrains (its text and default set aside)."""
    return {k: v for k, v in prop.items() if k not in ("description", "default")}


def _shared_shapes() -> dict[str, dict[str, Any]]:
    """Each shared argument's schema, compacted like any argument's, with its shared
    default; a shape that constrained nothing but its type would not be worth it."""
    shapes = {}
    for name, annotated in SHARED.items():
        shape = {k: v for k, v in _compact(TypeAdapter(annotated).json_schema(),
                                           output=False).items() if k != "default"}
        assert "type" in shape and len(_shape(shape)) > 1, (name, shape)
        shapes[name] = {**shape, **({"default": SHARED_DEFAULTS[name]}
                                    if name in SHARED_DEFAULTS else {})}
    return shapes


def _said(name: str, shape: Mapping[str, Any]) -> str:
    """``tab (integer, >= 1, <= 2147483648)``: every keyword of ``shape`` in words."""
    words = {"minimum": ">=", "exclusiveMinimum": ">", "maximum": "<=",
             "exclusiveMaximum": "<", "minLength": "chars >=", "maxLength": "chars <=",
             "pattern": "matching", "default": "default"}
    said = [shape["type"], *(f"{word} {shape[k]}" for k, word in words.items() if k in shape)]
    text = f": {shape['description'].rstrip('.')}" if "description" in shape else ""
    assert len(said) + bool(text) == len(shape), shape  # nothing left unsaid
    return f"{name} ({', '.join(said)}){text}"


def _summarised(prop: dict[str, Any], defs: Mapping[str, Any]) -> dict[str, Any]:
    """A top-level result field with its nested objects reduced to their type."""
    ref = prop.get("$ref", "")
    if ref.startswith(_DEFS):
        rest = {k: v for k, v in prop.items() if k != "$ref"}
        return _summarised({**defs[ref[len(_DEFS):]], **rest}, defs)
    if "properties" in prop:
        return {k: v for k, v in prop.items() if k not in ("properties", "required")}
    out = dict(prop)
    if isinstance(prop.get("items"), dict):
        out["items"] = _summarised(prop["items"], defs)
    for key in _UNION:
        if key in prop:
            out[key] = [_summarised(branch, defs) for branch in prop[key]]
    return out


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
    return _hoisted(_untyped_values(out))


def _untyped_values(node: dict[str, Any]) -> dict[str, Any]:
    """Without a ``type`` that its ``const`` / ``enum`` values already have."""
    values = [node["const"]] if "const" in node else node.get("enum")
    kind = node.get("type")
    kinds = _JSON_TYPES.get(kind, ()) if isinstance(kind, str) else ()
    if not values or not kinds:
        return node
    if all(isinstance(v, kinds) and (bool in kinds or not isinstance(v, bool)) for v in values):
        return {k: v for k, v in node.items() if k != "type"}
    return node


def _hoisted(node: dict[str, Any]) -> dict[str, Any]:
    """A union whose branches all say ``type: T`` or require a name says it once."""
    for key in _UNION:
        branches = node.get(key)
        if not (isinstance(branches, list) and len(branches) > 1
                and all(isinstance(b, dict) for b in branches)):
            continue
        types = {json.dumps(b.get("type")) for b in branches}
        if (len(types) == 1 and "type" in branches[0] and "type" not in node
                and all(set(b) - {"type", "required", "description"} for b in branches)):
            node = {**node, "type": branches[0]["type"]}
            branches = [{k: v for k, v in b.items() if k != "type"} for b in branches]
        shared = [n for n in branches[0].get("required", ())
                  if all(n in b.get("required", ()) for b in branches)]
        if shared and "required" not in node:
            node = {**node, "required": shared}
            branches = [_requiring(b, [n for n in b["required"] if n not in shared])
                        for b in branches]
        node[key] = branches
    return node


def _requiring(branch: dict[str, Any], names: list[str]) -> dict[str, Any]:
    rest = {k: v for k, v in branch.items() if k != "required"}
    return {**rest, "required": names} if names else rest


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


SHARED_SHAPES: dict[str, dict[str, Any]] = _shared_shapes()
"""Each shared argument's schema as pydantic generates it, compacted: a property with
exactly this shape is published as its bare type."""
