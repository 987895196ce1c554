"""The targets file: TOML read into pydantic models, every refusal a ``ConfigError``.

The schema is the models themselves: ``TargetsFile`` holds a ``[gateway]`` table
and ``[targets.<name>]`` tables, each a ``TargetSettings`` (``gateway.config.model``),
so a key means in the file exactly what the field means in code. Unknown keys,
wrong types and out-of-range values are refused by pydantic; ``_config_error`` is
the one place its errors become a message naming the file, the dotted key and the
reason, e.g. ``targets.toml: targets.ci.expose: expected an integer, got string``.

``${VAR}`` in a target's ``cdp``, ``webdriver`` and ``headers`` is replaced by
the environment variable before validation (``remote.expand_target_tables``).

What the file says about the call log is returned as written (a path or a switch):
turning it into a path needs the environment, which is ``sources``' business.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    Field,
    PlainValidator,
    ValidationError,
    model_validator,
)
from pydantic_core import ErrorDetails

from gateway.config.model import (
    TARGET_NAME_RE,
    FieldProblem,
    StrictModel,
    TargetConfig,
    TargetName,
    TargetSettings,
    table_keys,
)
from gateway.config.remote import expand_target_tables
from gateway.config.text import breaks_a_line, dotted, show, type_name
from gateway.errors import ConfigError

__all__ = ["GatewaySection", "TargetsFile", "read_targets_file"]


def _call_log(value: object) -> bool | str:
    if isinstance(value, bool):
        return value
    if not isinstance(value, str):
        raise ValueError(f"expected a path string or true/false, got {type_name(value)}")
    if not value.strip():
        raise ValueError("empty path; use false to turn the call log off")
    if breaks_a_line(value):
        raise ValueError("path must not contain NUL or newline characters")
    return value


def _some_targets(targets: dict[str, TargetSettings]) -> dict[str, TargetSettings]:
    if not targets:
        raise ValueError("no targets defined; add at least one [targets.<name>] table")
    return targets


class GatewaySection(StrictModel):
    """The ``[gateway]`` table: settings of the gateway rather than of one target."""

    call_log: Annotated[bool | str | None, PlainValidator(_call_log)] = None
    allow_any_path: bool = False
    read_only: bool = False
    tools: Annotated[str, Field(min_length=1, max_length=2000)] | None = None


class TargetsFile(StrictModel):
    """A whole targets file: one ``[gateway]`` table and at least one target."""

    gateway: GatewaySection = Field(default_factory=GatewaySection)
    targets: Annotated[dict[TargetName, TargetSettings], AfterValidator(_some_targets)] = Field(
        default_factory=dict, validate_default=True)

    @model_validator(mode="after")
    def _one_target_per_port(self) -> TargetsFile:
        exposed: dict[int, str] = {}
        for name, target in self.targets.items():
            port = target.expose_port
            if port is None:
                continue
            if port in exposed:
                raise FieldProblem(f"port {port} is already exposed by target {exposed[port]!r}",
                                   "targets", name, "expose")
            exposed[port] = name
        return self

    @model_validator(mode="after")
    def _session_names_free(self) -> TargetsFile:
        """``sessions = N`` names its browsers ``<name>-1`` … ``<name>-N``: those must be
        free, valid target names."""
        for name, target in self.targets.items():
            for i in range(1, target.sessions + 1 if target.sessions > 1 else 1):
                member = f"{name}-{i}"
                if member in self.targets or not TARGET_NAME_RE.fullmatch(member):
                    raise FieldProblem(
                        f"sessions = {target.sessions} names the browsers {name}-1 … "
                        f"{name}-{target.sessions}, and {member!r} is "
                        + ("another target's name" if member in self.targets
                           else "longer than 32 characters"), "targets", name, "sessions")
        return self

    def target_configs(self) -> tuple[TargetConfig, ...]:
        """The targets, in file order, each under its table's name (with the keys the
        table set marked as set, as checks like "only applies with launch" need)."""
        return tuple(TargetConfig(name=name, **{key: getattr(settings, key)
                                                for key in settings.model_fields_set})
                     for name, settings in self.targets.items())


def read_targets_file(path: str, environ: Mapping[str, str] | None = None) -> TargetsFile:
    """Read, parse and validate the targets file at ``path``, ``${VAR}`` taken from
    ``environ`` (default: the process environment); raises only ``ConfigError``."""
    secrets: set[str] = set()
    data = expand_target_tables(_read_toml(path), path, environ, secrets)
    try:
        return TargetsFile.model_validate(data, by_alias=True, by_name=False)
    except ValidationError as err:
        raise _hidden(_config_error(path, err), secrets) from None


def _hidden(error: ConfigError, secrets: set[str]) -> ConfigError:
    """``error`` without the values ``${VAR}`` put in: a value refused around a token
    (``cdp = "127.0.0.1:9222/?token=${T}"``) is quoted in the reason, which goes to
    stderr and the daemon's log — as written, escaped (``show`` quotes with ``repr``) or
    cut off at the quote's length limit. Longest first, so no part of a longer one is left."""
    reason = error.reason
    for secret in sorted(secrets, key=len, reverse=True):
        for form in (secret, repr(secret)[1:-1]):
            reason = reason.replace(form, "[redacted]")
            for cut in range(len(form) - 1, 0, -1):  # "…/x?token=s3cr…"
                reason = reason.replace(form[:cut] + "…", "[redacted]…")
    return error if reason == error.reason else ConfigError(error.source, error.key, reason)


def _read_toml(path: str) -> dict[str, Any]:
    """Read and parse the targets file, translating every failure to ConfigError."""
    import tomllib  # a gateway set up by environment alone never reads TOML
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        raise ConfigError(path, "", "targets file not found") from None
    except IsADirectoryError:
        raise ConfigError(path, "", "is a directory, expected a TOML targets file") from None
    except OSError as exc:
        raise ConfigError(path, "", f"cannot read targets file: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            path, "", f"not UTF-8 text (byte {exc.start}); TOML files are UTF-8"
        ) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        # tomllib's message already carries "(at line L, column C)".
        raise ConfigError(path, "", f"TOML syntax error: {exc}") from None
    except ValueError as exc:  # an integer beyond Python's 4300-digit conversion limit
        raise ConfigError(path, "", f"TOML value rejected: {exc}") from None
    except RecursionError:  # tomllib recurses on nested arrays / inline tables
        raise ConfigError(path, "", "TOML arrays or inline tables nested too deeply") from None


# --------------------------------------------------------------------------- messages

# What a pydantic type error expected, in TOML's words. Every float in the schema
# is a duration and every array holds strings, so the words can be that precise.
_EXPECTED = {
    "string_type": "a string",
    "bool_type": "true or false",
    "int_type": "an integer",
    "float_type": "a number of seconds",
    "dict_type": "a table",
    "model_type": "a table",
    "tuple_type": "an array of strings",
    "frozen_set_type": "an array of strings",
}
_ITEMS = {"string_type": "strings"}


def _config_error(path: str, error: ValidationError) -> ConfigError:
    """The one translation of pydantic's errors into a ``ConfigError``.

    Pydantic reports every problem; the user gets one, to fix and retry. An unknown
    key goes first: it is most often a typo (``target`` for ``targets``) that
    explains the others.
    """
    problems = error.errors()
    problem = next((p for p in problems if p["type"] == "extra_forbidden"), problems[0])
    loc = [part for part in problem["loc"] if part != "[key]"]  # a bad target name
    in_array = bool(loc) and isinstance(loc[-1], int)
    names = [str(part) for part in loc if not isinstance(part, int)]
    reason = _reason(problem, names, in_array=in_array)
    cause = problem.get("ctx", {}).get("error")
    if isinstance(cause, FieldProblem):
        names += cause.key
    key = ""
    for name in names:
        key = dotted(key, name)
    return ConfigError(path, key, reason)


def _reason(problem: ErrorDetails, names: list[str], *, in_array: bool) -> str:
    kind, value = problem["type"], problem["input"]
    if kind == "extra_forbidden":
        if len(names) == 1:
            return "unknown top-level key; expected only [gateway] and [targets.<name>]"
        return f"unknown key; allowed keys: {', '.join(table_keys(_table_at(names[:-1])))}"
    if kind == "value_error":
        return str(problem.get("ctx", {}).get("error", problem["msg"]))
    if kind == "literal_error":
        expected = problem.get("ctx", {}).get("expected", "")
        if isinstance(value, str):
            return f"{show(value)} is not one of {expected}"
        return f"expected one of {expected}, got {type_name(value)}"
    if in_array and kind in _ITEMS:
        return f"expected an array of {_ITEMS[kind]}, found {type_name(value)}"
    if kind in _EXPECTED:
        return f"expected {_EXPECTED[kind]}, got {type_name(value)}"
    return problem["msg"]


def _table_at(names: list[str]) -> type[BaseModel]:
    """The model of the table at dotted key ``names`` (``targets.ci.reconnect``)."""
    node: object = TargetsFile
    for name in names:
        if isinstance(node, type) and issubclass(node, BaseModel):
            node = dict(zip(table_keys(node), node.model_fields.values(), strict=True))[
                name].annotation
        else:  # dict[TargetName, TargetSettings]: every name holds the same model
            node = get_args(node)[1]
    if not (isinstance(node, type) and issubclass(node, BaseModel)):
        raise TypeError(f"{'.'.join(names)} is not a table in the schema")
    return node
