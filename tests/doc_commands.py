"""The command lines and MCP client configs the documentation shows, read out of the files.

Pure (no I/O beyond what the caller passes in): ``documented(name, text)`` turns one
documentation file into ``Documented`` items, and ``invocation(...)`` says what each
would really run. ``tests/e2e/test_documented_commands.py`` runs them against the test
topology, so a doc change that breaks a command fails a test.

What counts as documented:

- Markdown (``README.md``): fenced blocks only (inline code is prose).
  ```` ```sh ```` — every non-comment line is a command (``\\`` continues a line);
  ```` ```text ```` — the lines after a ``$ `` prompt (the rest is sample output);
  ```` ```json ```` — an MCP client config (``mcpServers``);
  ```` ```toml ```` — an MCP client config (``mcp_servers``) or a targets file
  (``[targets.*]`` / ``[gateway]``). Any other fence language is not a command.
- ``*.sh``: like a ``sh`` block; ``*.json`` / ``*.toml``: like those blocks, the
  whole file being one.

What a command runs (``invocation``): leading ``K=V`` words are environment;
``claude mcp add NAME [--env K=V]... [--scope S] [--transport stdio] -- CMD ARGS`` runs
``CMD ARGS`` with that environment; ``uvx [--from SRC] chrome-ssh-gateway ARGS`` runs
the ``chrome-ssh-gateway`` console script with ``ARGS``. A client config runs its
``command`` + ``args`` with its ``env``, unwrapped the same way.
"""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "PROGRAM",
    "Block",
    "DocError",
    "Documented",
    "Invocation",
    "documented",
    "expand_vars",
    "fenced_blocks",
    "invocation",
    "shell_lines",
    "subcommand",
]

PROGRAM = "chrome-ssh-gateway"
"""The console script every runnable documented command comes down to."""

Kind = Literal["shell", "client", "targets"]


class DocError(ValueError):
    """A documented snippet this parser cannot read: fix the doc or teach the parser."""


@dataclass(frozen=True)
class Block:
    """One fenced block of a Markdown file; ``line`` is its first content line (1-based)."""

    lang: str
    text: str
    line: int


@dataclass(frozen=True)
class Invocation:
    """A program, its arguments and the environment it is given on top of the caller's."""

    program: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Documented:
    """One command line, client config or targets file, with where it is written.

    ``text`` is what the doc shows: the command line, or the block/file's text.
    ``name`` is the client config's server name (``client`` items only).
    """

    kind: Kind
    where: str
    text: str
    name: str = ""
    run: Invocation | None = None

    @property
    def id(self) -> str:
        return f"{self.where} {self.name or self.text.splitlines()[0]}"[:90]


_FENCE = re.compile(r"^(?P<fence>```+|~~~+)\s*(?P<lang>[\w+-]*)[^\n]*$")


def fenced_blocks(markdown: str) -> list[Block]:
    """Every fenced code block, with its language tag (lower-cased, ``""`` if none)."""
    blocks: list[Block] = []
    lines = markdown.splitlines()
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index].strip())
        if not opening:
            index += 1
            continue
        fence = opening["fence"]
        start = index + 1
        end = start
        while end < len(lines) and not lines[end].strip().startswith(fence):
            end += 1
        if end == len(lines):
            raise DocError(f"line {index + 1}: fenced block never closed")
        blocks.append(Block(opening["lang"].lower(), "\n".join(lines[start:end]), start + 1))
        index = end + 1
    return blocks


def shell_lines(text: str, *, prompt: bool = False) -> list[tuple[int, str]]:
    """(line offset, command) for each command of a shell snippet.

    ``prompt``: only lines starting with ``$ `` are commands (a transcript: the other
    lines are output). Comment-only and blank lines are skipped; a trailing ``\\``
    joins the next line."""
    found: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    for offset, raw in enumerate(text.splitlines()):
        line = raw.rstrip()
        if pending is not None:
            line = pending[1] + " " + line.strip()
            offset = pending[0]
            pending = None
        elif prompt:
            if not line.startswith("$ "):
                continue
            line = line[2:]
        if line.endswith("\\"):
            pending = (offset, line[:-1].rstrip())
            continue
        line = _without_comment(line).strip()
        if line:
            found.append((offset, line))
    if pending is not None:
        raise DocError(f"line {pending[0] + 1}: continuation at the end of the snippet")
    return found


def _without_comment(line: str) -> str:
    """``line`` up to a ``#`` that starts a shell comment (unquoted, after a blank)."""
    quote = ""
    for index, char in enumerate(line):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (index == 0 or line[index - 1].isspace()):
            return line[:index]
    return line


_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def _split_env(words: list[str]) -> tuple[dict[str, str], list[str]]:
    env: dict[str, str] = {}
    while words and _ASSIGNMENT.match(words[0]):
        key, _, value = words.pop(0).partition("=")
        env[key] = value
    return env, words


def _unwrap_claude(words: list[str], env: dict[str, str]) -> list[str]:
    """``claude mcp add NAME [options] -- CMD ARGS`` → ``CMD ARGS``, ``--env`` into ``env``."""
    if words[1:3] != ["mcp", "add"]:
        raise DocError(f"unknown claude command: {shlex.join(words)}")
    if "--" not in words:
        raise DocError(f"claude mcp add without '--' before the server command: "
                       f"{shlex.join(words)}")
    split = words.index("--")
    options, command = words[3:split], words[split + 1:]
    positional = []
    while options:
        word = options.pop(0)
        if word in ("--env", "-e"):
            key, equals, value = (options.pop(0) if options else "").partition("=")
            if not equals:
                raise DocError(f"claude mcp add {word} needs KEY=VALUE: {shlex.join(words)}")
            env[key] = value
        elif word in ("--scope", "-s", "--transport", "-t"):
            if not options:
                raise DocError(f"claude mcp add {word} needs a value")
            options.pop(0)
        elif word.startswith("-"):
            raise DocError(f"claude mcp add: option {word} not understood here")
        else:
            positional.append(word)
    if len(positional) != 1:
        raise DocError(f"claude mcp add needs exactly one server name: {shlex.join(words)}")
    if not command:
        raise DocError(f"claude mcp add: no server command after '--': {shlex.join(words)}")
    return command


def _unwrap_uvx(words: list[str]) -> list[str]:
    """``uvx [--from SRC] PROGRAM ARGS`` → ``PROGRAM ARGS`` (other uvx options: an error)."""
    rest = words[1:]
    if rest[:1] == ["--from"]:
        if len(rest) < 2:
            raise DocError("uvx --from needs a source")
        rest = rest[2:]
    if not rest or rest[0].startswith("-"):
        raise DocError(f"uvx form not understood here: {shlex.join(words)}")
    return rest


def invocation(words: list[str], env: Mapping[str, str] | None = None) -> Invocation:
    """What ``words`` (a command line split like the shell does) runs, with ``env`` added.

    The program may be anything: the caller decides what can run (a ``sudo`` line or
    ``pip install`` is returned as such, to be allow-listed or refused)."""
    merged, words = _split_env(list(words))
    merged = {**(env or {}), **merged}
    if not words:
        raise DocError("an assignment without a command")
    if words[0] == "claude":
        return invocation(_unwrap_claude(words, merged), merged)
    if words[0] == "uvx":
        words = _unwrap_uvx(words)
    return Invocation(words[0], tuple(words[1:]), merged)


def subcommand(args: tuple[str, ...]) -> str:
    """The ``chrome-ssh-gateway`` subcommand these arguments select (``serve`` without one).

    Options that take a value are skipped with their value, so ``--config call.toml``
    is not mistaken for ``call``."""
    valued = {"--config", "--log-level"}
    words = iter(args)
    for word in words:
        if word in valued:
            next(words, None)
        elif not word.startswith("-"):
            return word
    return "serve"


_VAR = re.compile(r"\$(?:\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)\}|(?P<bare>[A-Za-z_][A-Za-z0-9_]*))")


def expand_vars(text: str, env: Mapping[str, str]) -> str:
    """``$NAME`` / ``${NAME}`` from ``env``, as the shell does inside double quotes; an
    unset name is an error (a doc that relies on an unset variable is a doc bug)."""

    def value(match: re.Match[str]) -> str:
        name = match["braced"] or match["bare"]
        if name not in env:
            raise DocError(f"${name} is not set")
        return env[name]

    return _VAR.sub(value, text)


def _client_servers(config: Mapping[str, Any], key: str, where: str) -> list[Documented]:
    servers = config.get(key)
    if not isinstance(servers, dict) or not servers:
        raise DocError(f"{where}: no {key} table")
    items = []
    for name, server in servers.items():
        if not isinstance(server, dict) or not isinstance(server.get("command"), str):
            raise DocError(f"{where}: server {name!r} has no command")
        args = server.get("args", [])
        env = server.get("env", {})
        if not (isinstance(args, list) and all(isinstance(a, str) for a in args)):
            raise DocError(f"{where}: server {name!r}: args must be a list of strings")
        if not (isinstance(env, dict) and all(isinstance(v, str) for v in env.values())):
            raise DocError(f"{where}: server {name!r}: env must map names to strings")
        run = invocation([server["command"], *args], env)
        items.append(Documented("client", where, json.dumps(server), name, run))
    return items


def _json_items(text: str, where: str) -> list[Documented]:
    try:
        config = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DocError(f"{where}: not JSON: {exc}") from None
    return _client_servers(config, "mcpServers", where)


def _toml_items(text: str, where: str) -> list[Documented]:
    try:
        config = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise DocError(f"{where}: not TOML: {exc}") from None
    if "mcp_servers" in config:
        return _client_servers(config, "mcp_servers", where)
    if "targets" in config or "gateway" in config:
        return [Documented("targets", where, text)]
    raise DocError(f"{where}: TOML that is neither a client config nor a targets file")


def _shell_items(text: str, where: str, first_line: int, *, prompt: bool) -> list[Documented]:
    items = []
    for offset, line in shell_lines(text, prompt=prompt):
        try:
            words = shlex.split(line, comments=True)
        except ValueError as exc:
            raise DocError(f"{where}:{first_line + offset}: {exc}") from None
        items.append(Documented("shell", f"{where}:{first_line + offset}", line,
                                run=invocation(words)))
    return items


def _block_items(lang: str, text: str, where: str, line: int) -> list[Documented]:
    if lang in ("sh", "shell", "bash", "console"):
        return _shell_items(text, where, line, prompt=lang == "console")
    if lang == "text":
        return _shell_items(text, where, line, prompt=True)
    if lang == "json":
        return _json_items(text, f"{where}:{line}")
    if lang == "toml":
        return _toml_items(text, f"{where}:{line}")
    return []


def documented(name: str, text: str) -> list[Documented]:
    """Every command line, client config and targets file in one documentation file
    (``name`` is its path, for messages; its suffix says how to read it)."""
    if name.endswith(".md"):
        return [item for block in fenced_blocks(text)
                for item in _block_items(block.lang, block.text, name, block.line)]
    if name.endswith(".sh"):
        return _shell_items(text, name, 1, prompt=False)
    if name.endswith(".json"):
        return _json_items(text, name)
    if name.endswith(".toml"):
        return _toml_items(text, name)
    raise DocError(f"{name}: not a documentation file this parser reads")
