"""The command lines and MCP client configs the documentation shows, read out of the files.

Pure (no I/O beyond what the caller passes in, and ``doc_files``, which lists the
files): ``documented(name, text)`` turns one documentation file into ``Documented``
items, and ``invocation(...)`` says what each would really run.
``tests/e2e/test_documented_commands.py`` runs them against the test topology, so a
doc change that breaks a command fails a test.

What counts as documented:

- Markdown (``README.md``, ``docs/*.md``): fenced blocks (inline code is prose), and install links
  anywhere in the text (``install_links``).
  ```` ```sh ```` — every non-comment line is a command (``\\`` continues a line);
  ```` ```text ```` — the lines after a ``$ `` prompt (the rest is sample output);
  ```` ```json ```` — an MCP client config (``mcpServers``);
  ```` ```toml ```` — an MCP client config (``mcp_servers``) or a targets file
  (``[targets.*]`` / ``[gateway]``). Any other fence language is not a command.
- ``*.sh``: like a ``sh`` block; ``*.json`` / ``*.toml``: like those blocks, the
  whole file being one — a Claude Code plugin manifest (``.claude-plugin/plugin.json``)
  is read that way too (its ``mcpServers``); a plugin marketplace
  (``.claude-plugin/marketplace.json``) documents the ``mcpServers`` its plugin entries
  declare themselves (none when each plugin's own manifest does).
- Install links: Cursor's deeplink ``cursor://anysphere.cursor-deeplink/mcp/install?
  name=NAME&config=BASE64`` and its web page ``https://cursor.com/<lang>/install-mcp?…``
  (``config``: the server's config as base64 JSON); VS Code's
  ``https://insiders.vscode.dev/redirect/mcp/install?name=NAME&config=JSON`` (also
  ``vscode.dev``; ``config`` URL-encoded JSON), ``vscode:mcp/install?JSON`` (the JSON
  holds ``name``) and ``https://insiders.vscode.dev/redirect?url=`` around that. Each
  is a client config, decoded, run like one in a ``json`` block.
- ``*.yml`` / ``*.yaml``: a CI file, parsed as YAML (PyYAML), either a GitHub Actions
  workflow (``jobs.<job>.steps[*].run``) or a GitLab CI file (``<job>.before_script`` /
  ``script`` / ``after_script``, and the same lists under ``default`` or at the top).
  Each of those shell scripts is read like a ``sh`` block, but only its lines that
  name ``chrome-ssh-gateway`` are documented commands — run directly, through
  ``uvx``, ``nohup … &`` or ``K=V``. The other lines are the CI's own plumbing
  (installing a key, ``npm test``, ``sleep``): not ours to run, and not returned. A
  line that names the program in a form that does not run it (``pip install
  chrome-ssh-gateway``, ``cd x && chrome-ssh-gateway …``) is still returned, as
  whatever it runs, so the caller runs it or allow-lists it: no use of the program
  slips by as plumbing. A command's environment is the step's, job's and workflow's
  ``env`` (GitHub) or the job's and the file's ``variables`` (GitLab), the innermost
  winning; a CI variable the file uses but does not set (``$GITHUB_RUN_ID``) stays as
  written, for whoever runs it to supply.

What a command runs (``invocation``): leading ``K=V`` words are environment;
``nohup CMD ARGS`` runs ``CMD ARGS``, and a trailing ``&`` (run in the background) is
dropped; ``claude mcp add NAME [--env K=V]... [--scope S] [--transport stdio] -- CMD
ARGS`` runs ``CMD ARGS`` with that environment; ``uvx [--from SRC] chrome-ssh-gateway
ARGS`` runs the ``chrome-ssh-gateway`` console script with ``ARGS``. A client config
runs its ``command`` + ``args`` with its ``env``, unwrapped the same way.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import shlex
import tomllib
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

__all__ = [
    "PLUGIN_MANIFESTS",
    "PROGRAM",
    "Block",
    "DocError",
    "Documented",
    "InstallLink",
    "Invocation",
    "doc_files",
    "documented",
    "expand_vars",
    "fenced_blocks",
    "install_links",
    "invocation",
    "shell_lines",
    "subcommand",
]

PROGRAM = "chrome-ssh-gateway"
"""The console script every runnable documented command comes down to."""

PLUGIN_MANIFESTS = (".claude-plugin/plugin.json", ".claude-plugin/marketplace.json")
"""The Claude Code plugin's manifests, relative to the repository: documentation
files like README.md and examples/, whose server configs are run the same way."""



def doc_files(root: Path) -> list[Path]:
    """Every documentation file of the repository at ``root`` whose commands are run:
    README.md, the pages of docs/, examples/ and the plugin's manifests."""
    return [root / "README.md", *sorted((root / "docs").glob("*.md")),
            *sorted((root / "examples").iterdir()), *(root / path for path in PLUGIN_MANIFESTS)]


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
    if words[-1:] == ["&"]:  # run in the background: the same command
        words = words[:-1]
    if not words:
        raise DocError("an assignment without a command")
    if words[0] == "nohup":
        if len(words) < 2 or words[1].startswith("-"):
            raise DocError(f"nohup form not understood here: {shlex.join(words)}")
        return invocation(words[1:], merged)
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
    return [_client_item(str(name), server, where) for name, server in servers.items()]


def _client_item(name: str, server: Any, where: str) -> Documented:
    """One server of a client config: ``command``, ``args``, ``env`` (stdio only)."""
    if isinstance(server, dict) and server.get("type", "stdio") != "stdio":
        raise DocError(f"{where}: server {name!r}: type {server['type']!r} is not stdio")
    if not isinstance(server, dict) or not isinstance(server.get("command"), str):
        raise DocError(f"{where}: server {name!r} has no command")
    args = server.get("args", [])
    env = server.get("env", {})
    if not (isinstance(args, list) and all(isinstance(a, str) for a in args)):
        raise DocError(f"{where}: server {name!r}: args must be a list of strings")
    if not (isinstance(env, dict) and all(isinstance(v, str) for v in env.values())):
        raise DocError(f"{where}: server {name!r}: env must map names to strings")
    run = invocation([server["command"], *args], env)
    return Documented("client", where, json.dumps(server), name, run)


def _json_items(text: str, where: str) -> list[Documented]:
    try:
        config = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DocError(f"{where}: not JSON: {exc}") from None
    if where.endswith("marketplace.json"):
        return _marketplace_items(config, where)
    return _client_servers(config, "mcpServers", where)


def _marketplace_items(config: Any, where: str) -> list[Documented]:
    """The ``mcpServers`` a Claude Code marketplace's plugin entries declare inline (a
    path to a ``.json`` file instead is read where it is: not here)."""
    plugins = config.get("plugins") if isinstance(config, dict) else None
    if not isinstance(plugins, list) or not plugins:
        raise DocError(f"{where}: a marketplace without plugins")
    items = []
    for plugin in plugins:
        servers = plugin.get("mcpServers") if isinstance(plugin, dict) else None
        if isinstance(servers, dict):
            items += _client_servers({"mcpServers": servers}, "mcpServers",
                                     f"{where} {plugin.get('name', '?')}")
    return items


_INSTALL_LINK = re.compile(
    r"(?:cursor://anysphere\.cursor-deeplink/mcp/install"
    r"|https://cursor\.com/(?:[a-z-]+/)?install-mcp"
    r"|https://(?:insiders\.)?vscode\.dev/redirect(?:/mcp/install)?"
    r"|vscode(?:-insiders)?:mcp/install)\?[^\s)\]>\"'`<]+")


@dataclass(frozen=True)
class InstallLink:
    """An install link found in a text: where (1-based line), the URL, and what it
    installs (the server's name and its config, decoded)."""

    line: int
    url: str
    name: str
    config: Any


def _query(url: str) -> dict[str, str]:
    """The query's parameters, %-decoded but with ``+`` kept (base64 uses it)."""
    pairs = (part.partition("=") for part in url.partition("?")[2].split("&") if part)
    return {urllib.parse.unquote(k): urllib.parse.unquote(v) for k, _, v in pairs}


def _decode_link(url: str) -> tuple[str, Any]:
    """(server name, server config) of one install link; ``DocError`` when unreadable."""
    query = _query(url)
    try:
        if url.startswith(("cursor://", "https://cursor.com/")):
            text = base64.b64decode(query["config"], validate=True).decode()
            return query["name"], json.loads(text)
        if url.startswith("vscode"):
            config = json.loads(urllib.parse.unquote(url.partition("?")[2]))
            return config.pop("name"), config
        if "/redirect/mcp/install" in url:
            return query["name"], json.loads(query["config"])
        return _decode_link(query["url"])  # https://…vscode.dev/redirect?url=vscode:…
    except (KeyError, ValueError, binascii.Error, AttributeError, TypeError) as exc:
        raise DocError(f"install link not readable ({type(exc).__name__}: {exc}): "
                       f"{url[:120]}") from None


def install_links(text: str) -> list[InstallLink]:
    """Every Cursor or VS Code MCP install link in ``text`` (see the module docstring)."""
    links = []
    for match in _INSTALL_LINK.finditer(text):
        url = match.group(0)
        name, config = _decode_link(url)
        links.append(InstallLink(text.count("\n", 0, match.start()) + 1, url, name, config))
    return links


def _link_items(text: str, where: str) -> list[Documented]:
    return [_client_item(link.name, link.config, f"{where}:{link.line}")
            for link in install_links(text)]


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


def _names_program(line: str) -> bool:
    return re.search(rf"(?<![\w./-]){re.escape(PROGRAM)}(?![\w.-])", line) is not None


def _ci_script_items(text: str, where: str, first_line: int, env: Mapping[str, str], *,
                     literal: bool) -> list[Documented]:
    """The ``chrome-ssh-gateway`` lines of one CI shell script (see the module docstring).

    ``first_line``: the script's first line in the file; ``literal``: the script's lines
    are the file's lines (a ``|`` block), else every line is said to be at ``first_line``."""
    items = []
    for offset, line in shell_lines(text):
        at = f"{where}:{first_line + offset if literal else first_line}"
        try:
            words = shlex.split(line, comments=True)
        except ValueError as exc:
            if _names_program(line):
                raise DocError(f"{at}: {exc}") from None
            continue  # the CI's own shell, which shlex need not follow
        if not _names_program(line):
            continue
        try:
            run = invocation(words, env)
        except DocError as exc:
            raise DocError(f"{at}: {exc}") from None
        items.append(Documented("shell", at, line, run=run))
    return items


def _yaml_mapping(node: yaml.Node | None) -> dict[str, yaml.Node]:
    """A mapping node's entries by key (``<<`` merge keys applied); {} for anything else."""
    if not isinstance(node, yaml.MappingNode):
        return {}
    entries: dict[str, yaml.Node] = {}
    for key, value in node.value:
        if key.value == "<<":
            merged = value.value if isinstance(value, yaml.SequenceNode) else [value]
            for source in merged:
                entries = {**_yaml_mapping(source), **entries}
        elif isinstance(key, yaml.ScalarNode):
            entries[key.value] = value
    return entries


def _yaml_env(node: yaml.Node | None, where: str) -> dict[str, str]:
    """``env:`` / ``variables:`` as strings (a GitLab ``{value: …}`` entry by its value)."""
    env = {}
    for key, value in _yaml_mapping(node).items():
        if isinstance(value, yaml.MappingNode):
            value = _yaml_mapping(value).get("value")
        if not isinstance(value, yaml.ScalarNode):
            raise DocError(f"{where}: variable {key} has no plain value")
        env[key] = value.value
    return env


def _yaml_scripts(node: yaml.Node | None) -> list[yaml.ScalarNode]:
    """A ``run:`` string, or a ``script:`` list of strings (nested lists flattened)."""
    if isinstance(node, yaml.ScalarNode):
        return [node]
    if isinstance(node, yaml.SequenceNode):
        return [script for item in node.value for script in _yaml_scripts(item)]
    return []


def _yaml_script_items(node: yaml.ScalarNode, where: str,
                       env: Mapping[str, str]) -> list[Documented]:
    literal = node.style == "|"
    # A ``|`` block's text starts on the line after its indicator.
    first = node.start_mark.line + (2 if literal else 1)
    return _ci_script_items(node.value, where, first, env, literal=literal)


def _github_items(root: dict[str, yaml.Node], where: str) -> list[Documented]:
    items = []
    workflow_env = _yaml_env(root.get("env"), where)
    for job in _yaml_mapping(root["jobs"]).values():
        fields = _yaml_mapping(job)
        job_env = workflow_env | _yaml_env(fields.get("env"), where)
        steps = fields.get("steps")
        for step in steps.value if isinstance(steps, yaml.SequenceNode) else []:
            step_fields = _yaml_mapping(step)
            env = job_env | _yaml_env(step_fields.get("env"), where)
            for script in _yaml_scripts(step_fields.get("run")):
                items += _yaml_script_items(script, where, env)
    return items


_GITLAB_SCRIPTS = ("before_script", "script", "after_script")


def _gitlab_items(root: dict[str, yaml.Node], where: str) -> list[Documented]:
    items = []
    file_env = _yaml_env(root.get("variables"), where)
    for key in _GITLAB_SCRIPTS:  # the old global form
        for script in _yaml_scripts(root.get(key)):
            items += _yaml_script_items(script, where, file_env)
    for name, job in root.items():
        fields = _yaml_mapping(job)
        if name in _GITLAB_SCRIPTS or not any(key in fields for key in _GITLAB_SCRIPTS):
            continue
        env = file_env | _yaml_env(fields.get("variables"), where)
        for key in _GITLAB_SCRIPTS:
            for script in _yaml_scripts(fields.get(key)):
                items += _yaml_script_items(script, where, env)
    return items


def _ci_items(text: str, where: str) -> list[Documented]:
    """The documented commands of a GitHub Actions workflow or a GitLab CI file."""
    try:
        node = yaml.compose(text)
    except yaml.YAMLError as exc:
        raise DocError(f"{where}: not YAML: {exc}") from None
    root = _yaml_mapping(node)
    if isinstance(root.get("jobs"), yaml.MappingNode):
        return _github_items(root, where)
    scripted = [root, *map(_yaml_mapping, root.values())]
    if any(key in fields for fields in scripted for key in _GITLAB_SCRIPTS):
        return _gitlab_items(root, where)
    raise DocError(f"{where}: YAML that is neither a GitHub Actions workflow (jobs:) nor a "
                   "GitLab CI file (jobs with script:)")


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
                for item in _block_items(block.lang, block.text, name, block.line)
                ] + _link_items(text, name)
    if name.endswith(".sh"):
        return _shell_items(text, name, 1, prompt=False)
    if name.endswith(".json"):
        return _json_items(text, name)
    if name.endswith(".toml"):
        return _toml_items(text, name)
    if name.endswith((".yml", ".yaml")):
        return _ci_items(text, name)
    raise DocError(f"{name}: not a documentation file this parser reads")
