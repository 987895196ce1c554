"""Shipping (issue 19): ``server.json`` for the MCP Registry and the README's
``mcp-name:`` line, the README's install links, the Claude Code plugin
(``.claude-plugin/``) and its skills (``.claude/skills/``), the release workflow —
each checked against the fields its documentation defines, and against the gateway
itself: the variables it reads, its tools and their arguments, its subcommands.

The field lists below are the documented ones: the MCP Registry's 2025-12-11
``server.schema.json`` (its ``ServerDetail``, ``Package``, ``KeyValueInput``,
``Repository``), the registry's PyPI ownership check (``mcp-name: NAME`` in the
package's description, the README), Claude Code's plugin reference (``plugin.json``,
``marketplace.json``) and the Agent Skills frontmatter rules. That the servers they
declare really run is ``tests/e2e/test_documented_commands.py``'s part; that the wheel
installs and serves is ``tests/e2e/test_wheel.py``'s.
"""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest
import yaml
from mcp import Client

from gateway.cli import _LOG_LEVELS, _parser, parse_args
from gateway.config import load_config
from gateway.errors import ConfigError
from gateway.fleet.registry import Registry
from gateway.mcp.app import build_server
from gateway.mcp.call_log import CallLog
from tests.doc_commands import PROGRAM, Documented, documented, install_links, subcommand

ROOT = Path(__file__).parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
README = (ROOT / "README.md").read_text()
DOCS = {path.name: path.read_text() for path in sorted((ROOT / "docs").glob("*.md"))}
SERVER = json.loads((ROOT / "server.json").read_text())
PLUGIN = json.loads((ROOT / ".claude-plugin" / "plugin.json").read_text())
MARKETPLACE = json.loads((ROOT / ".claude-plugin" / "marketplace.json").read_text())
SKILLS = ROOT / ".claude" / "skills"
RELEASE = ROOT / ".github" / "workflows" / "release.yml"

# ----------------------------------------------------------------- the MCP Registry

SCHEMA_URL = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"
SERVER_FIELDS = {"$schema", "_meta", "name", "title", "description", "version", "repository",
                 "websiteUrl", "icons", "packages", "remotes"}
SERVER_REQUIRED = {"name", "description", "version"}
PACKAGE_FIELDS = {"registryType", "registryBaseUrl", "identifier", "version", "fileSha256",
                  "runtimeHint", "runtimeArguments", "packageArguments", "environmentVariables",
                  "transport"}
PACKAGE_REQUIRED = {"registryType", "identifier", "transport"}
INPUT_FIELDS = {"name", "description", "format", "isRequired", "isSecret", "default",
                "placeholder", "value", "choices", "variables"}
INPUT_FORMATS = {"string", "number", "boolean", "filepath"}
REPOSITORY_FIELDS = {"url", "source", "id", "subfolder"}
SERVER_NAME_RE = re.compile(r"^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$")
VERSION_RANGE_RE = re.compile(r"[\^~<>=*\s]|(^|\.)[xX](\.|$)|^latest$")
"""What the registry refuses as a version ("must be a specific version")."""

SECRET_VARIABLES: frozenset[str] = frozenset()
"""The variables whose value can be a secret, to be listed with ``isSecret: true``. None
of the gateway's own can: an SSH destination holds no password (a ``user:pass@`` is
refused), ``CDP_URL`` neither a query nor ``user@`` (both refused, see
``test_no_listed_variable_can_carry_a_credential``). A hosted browser's token is written
``${VAR}`` in the targets file and read from a variable the user names, which a
``server.json`` cannot list. Add a variable here when one starts carrying a secret."""


def _package() -> dict[str, Any]:
    [package] = SERVER["packages"]
    return package  # type: ignore[no-any-return]


def _variables() -> dict[str, dict[str, Any]]:
    return {v["name"]: v for v in _package()["environmentVariables"]}


def test_server_json_has_the_documented_fields() -> None:
    assert SERVER["$schema"] == SCHEMA_URL
    assert SERVER_REQUIRED <= set(SERVER) <= SERVER_FIELDS
    assert SERVER_NAME_RE.match(SERVER["name"]) and 3 <= len(SERVER["name"]) <= 200
    assert 1 <= len(SERVER["description"]) <= 100  # the registry's limit
    assert 1 <= len(SERVER.get("title", "x")) <= 100
    assert {"url", "source"} <= set(SERVER["repository"]) <= REPOSITORY_FIELDS
    package = _package()
    assert PACKAGE_REQUIRED <= set(package) <= PACKAGE_FIELDS
    for variable in package["environmentVariables"]:
        assert {"name", "description"} <= set(variable) <= INPUT_FIELDS, variable
        assert variable.get("format", "string") in INPUT_FORMATS, variable
        assert all(isinstance(c, str) for c in variable.get("choices", [])), variable
        assert variable["description"], variable


def test_server_json_is_the_pypi_package_run_with_uvx_over_stdio() -> None:
    package = _package()
    assert package["registryType"] == "pypi"
    assert package["registryBaseUrl"] == "https://pypi.org"
    assert package["identifier"] == PROJECT["name"] == PROGRAM
    assert package["runtimeHint"] == "uvx"
    assert package["transport"] == {"type": "stdio"}
    assert PROGRAM in PROJECT["scripts"]  # what `uvx chrome-ssh-gateway` runs


def test_server_json_versions_are_the_project_version() -> None:
    assert SERVER["version"] == _package()["version"] == PROJECT["version"]
    assert not VERSION_RANGE_RE.search(SERVER["version"])


def test_the_server_name_is_the_repository_on_github() -> None:
    owner, repo = re.fullmatch(r"io\.github\.([^/]+)/(.+)", SERVER["name"]).groups()  # type: ignore[union-attr]
    assert SERVER["repository"] == {"url": f"https://github.com/{owner}/{repo}",
                                    "source": "github"}
    assert SERVER["websiteUrl"].startswith(SERVER["repository"]["url"])


def _gateway_source() -> str:
    return "\n".join(p.read_text() for p in (ROOT / "gateway").rglob("*")
                     if p.suffix in (".py", ".sh") and p.is_file())


def test_every_listed_variable_is_read_by_the_gateway() -> None:
    source = _gateway_source()
    unread = [n for n in _variables() if not re.search(rf"(?<![A-Z0-9_]){n}(?![A-Z0-9_])", source)]
    assert not unread, f"server.json lists variables the gateway never reads: {unread}"


def test_every_variable_the_docs_document_is_listed() -> None:
    table = DOCS["configuration.md"].split("## Environment (one target)", 1)[1].split("\n#", 1)[0]
    documented_names = set(re.findall(r"^\| `([A-Z][A-Z0-9_]+)` \|", table, re.M))
    assert len(documented_names) >= 10, table
    assert documented_names <= set(_variables()), documented_names - set(_variables())


def test_is_secret_is_said_for_each_variable_and_true_for_the_secret_ones() -> None:
    for name, variable in _variables().items():
        assert variable["isSecret"] is (name in SECRET_VARIABLES), name
        assert variable["isRequired"] is False, name  # with nothing set: this machine


@pytest.mark.parametrize("environ", [
    {"SSH_PROXY_TO": "alice:hunter2@devvm"},
    {"CDP_URL": "ws://127.0.0.1:9222/devtools/browser/x?token=hunter2"},
    {"CDP_URL": "http://alice:hunter2@127.0.0.1:9222"},
])
def test_no_listed_variable_can_carry_a_credential(environ: dict[str, str]) -> None:
    with pytest.raises(ConfigError):
        load_config(environ)


VALUES = {
    "SSH_PROXY_TO": {"SSH_PROXY_TO": "alice@devvm"},
    "CDP_URL": {"CDP_URL": "http://localhost:9222"},
    "SSH_PROXY_PORT": {"SSH_PROXY_TO": "devvm", "SSH_PROXY_PORT": "9333"},
    "CHROME_SSH_GATEWAY_TOOLS": {"CHROME_SSH_GATEWAY_TOOLS": "core,+network"},
    "MCP_DEBUG_LOG": {"MCP_DEBUG_LOG": "true", "HOME": "/home/alice"},
}
"""A value each free-text variable's description offers (placeholders included)."""


def _offered_values() -> list[tuple[str, dict[str, str]]]:
    cases = [(name, environ) for name, environ in VALUES.items()]
    for name, variable in _variables().items():
        if variable.get("format") == "boolean":
            cases += [(name, {name: "true"}), (name, {name: "false"})]
        if name.startswith("CHROME_SSH_GATEWAY_") and "choices" in variable \
                and name != "CHROME_SSH_GATEWAY_LOG_LEVEL":
            cases += [(name, {name: choice}) for choice in variable["choices"]]
    return cases


@pytest.mark.parametrize(("name", "environ"), _offered_values(), ids=lambda v: str(v)[:60])
def test_the_values_a_client_offers_are_accepted(name: str, environ: dict[str, str]) -> None:
    """A client shows ``format`` and ``choices`` as its input: each such value (a
    boolean as ``true`` / ``false``) starts the gateway."""
    assert name in _variables()
    assert load_config(environ).targets


def test_the_log_level_choices_are_the_gateways() -> None:
    assert _variables()["CHROME_SSH_GATEWAY_LOG_LEVEL"]["choices"] == list(_LOG_LEVELS)


def test_the_readme_carries_the_mcp_name_of_server_json() -> None:
    """The registry proves PyPI ownership by ``mcp-name: NAME`` in the package's
    description (this README), the name ending there (space, end, or ``-->``)."""
    found = re.findall(r"mcp-name: (\S+?)(?=\s|-->|$)", README)
    assert found == [SERVER["name"]]
    line = next(i for i, text in enumerate(README.splitlines()) if "mcp-name:" in text)
    assert line < README.splitlines().index("## Install"), "near the top, before Install"


# ------------------------------------------------------------------ install in clients

def _plugin_server() -> tuple[str, dict[str, Any]]:
    [(name, server)] = PLUGIN["mcpServers"].items()
    return name, server


def test_the_install_links_install_the_documented_server() -> None:
    links = install_links(README)
    kinds = {link.url.split(":", 1)[0] + ":" + link.url.split("/")[2] for link in links}
    assert kinds >= {"https:cursor.com", "cursor:anysphere.cursor-deeplink",
                     "https:insiders.vscode.dev"}, kinds
    assert {(link.name, json.dumps(link.config)) for link in links} == {
        (_plugin_server()[0], json.dumps(_plugin_server()[1]))}


def test_the_readme_installs_the_plugin_from_this_repository() -> None:
    repository = PLUGIN["repository"].removeprefix("https://github.com/")
    assert re.findall(r"^\s*/plugin marketplace add (\S+)$", README, re.M) == [repository]
    assert re.findall(r"^\s*/plugin install (\S+)$", README, re.M) == [
        f"{PLUGIN['name']}@{MARKETPLACE['name']}"]


# ------------------------------------------------------------------ the Claude Code plugin

PLUGIN_FIELDS = {"$schema", "name", "version", "description", "author", "homepage",
                 "repository", "license", "keywords", "commands", "agents", "skills", "hooks",
                 "mcpServers", "outputStyles", "lspServers", "userConfig", "channels",
                 "dependencies"}
AUTHOR_FIELDS = {"name", "email", "url"}
MARKETPLACE_FIELDS = {"$schema", "name", "owner", "plugins", "metadata", "description",
                      "version"}
MARKETPLACE_METADATA = {"description", "version", "pluginRoot"}
ENTRY_FIELDS = PLUGIN_FIELDS | {"source", "category", "tags", "strict"}
KEBAB_RE = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
IMPERSONATION_RE = re.compile(r"(?:official[^a-z0-9]*(anthropic|claude)|(?:anthropic|claude)"
                              r"[^a-z0-9]*official|^(?:anthropic|claude)[^a-z0-9]*"
                              r"(marketplace|plugins|official))", re.I)
"""Marketplace names Claude Code refuses as posing as Anthropic's."""


def test_plugin_json_has_the_documented_fields() -> None:
    assert {"name", "version", "description"} <= set(PLUGIN) <= PLUGIN_FIELDS
    assert KEBAB_RE.match(PLUGIN["name"])
    assert PLUGIN["version"] == PROJECT["version"]
    assert PLUGIN["license"] == PROJECT["license"]
    assert PLUGIN["author"]["name"] and set(PLUGIN["author"]) <= AUTHOR_FIELDS
    assert PLUGIN["repository"] == SERVER["repository"]["url"]
    assert PLUGIN["homepage"].startswith(SERVER["repository"]["url"])
    assert all(isinstance(k, str) for k in PLUGIN["keywords"])


def test_the_plugin_skills_are_the_hidden_skills_folder() -> None:
    """``skills``: a path from the plugin root (``./…``); kept in a hidden folder so the
    top level stays the product's own (``TOP_LEVEL``)."""
    path = PLUGIN["skills"]
    assert path.startswith("./") and (ROOT / path).resolve() == SKILLS.resolve()
    assert Path(path).parts[0].startswith(".")


def test_the_plugin_server_is_the_documented_uvx_command() -> None:
    name, server = _plugin_server()
    assert server == {"command": "uvx", "args": [PROGRAM]}  # README: uvx chrome-ssh-gateway
    assert "uvx chrome-ssh-gateway" in README
    [item] = documented(".claude-plugin/plugin.json", json.dumps(PLUGIN))
    assert (item.kind, item.name) == ("client", name)
    assert item.run is not None and item.run.program == PROGRAM  # run by the e2e doc test
    parse_args(list(item.run.args))


def test_marketplace_json_has_the_documented_fields() -> None:
    assert {"name", "owner", "plugins"} <= set(MARKETPLACE) <= MARKETPLACE_FIELDS
    assert KEBAB_RE.match(MARKETPLACE["name"])
    assert not IMPERSONATION_RE.search(MARKETPLACE["name"])
    assert MARKETPLACE["name"].lower() not in {"inline", "builtin", "skills-dir"}
    assert MARKETPLACE["owner"]["name"] and set(MARKETPLACE["owner"]) <= AUTHOR_FIELDS
    assert set(MARKETPLACE.get("metadata", {})) <= MARKETPLACE_METADATA


def test_the_marketplace_entry_is_this_plugin() -> None:
    [entry] = MARKETPLACE["plugins"]
    assert set(entry) <= ENTRY_FIELDS and entry["name"] == PLUGIN["name"]
    # A relative source is the plugin's root, from the marketplace's (this repository).
    assert entry["source"].startswith("./")
    root = (ROOT / entry["source"]).resolve()
    assert json.loads((root / ".claude-plugin" / "plugin.json").read_text()) == PLUGIN
    assert entry.get("version", PLUGIN["version"]) == PLUGIN["version"]


# ------------------------------------------------------------------ skills

SKILL_FIELDS = {"name", "description", "license", "compatibility", "metadata", "allowed-tools"}
SKILL_NAME_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
REQUIRED_SKILLS = {
    "chrome-ssh-pages": ["browse", "browse_view", "browse_act", "screenshot", "evaluate",
                         "list_tabs", "list_targets", "handle_dialog"],
    "chrome-ssh-cli": ["chrome-ssh-gateway call", "daemon", "--json", "--tools", "serve"],
    "chrome-ssh-targets": ["SSH_PROXY_TO", "CDP_URL", "doctor", "share", "browsers = \"all\"",
                           "list_targets"],
    "chrome-ssh-performance": ["performance_trace", "heap_snapshot", "emulate",
                               "network_requests"],
}
"""The skills issue 19 asks for, and what each must cover."""


def _skill_dirs() -> list[Path]:
    return sorted(p for p in SKILLS.iterdir() if p.is_dir())


def _split(path: Path) -> tuple[dict[str, Any], str]:
    text = path.read_text()
    match = re.match(r"---\n(.*?)\n---\n(.*)\Z", text, re.S)
    assert match, f"{path}: no YAML frontmatter between --- lines"
    front = yaml.safe_load(match.group(1))
    assert isinstance(front, dict), path
    return front, match.group(2)


def test_the_skills_issue_19_asks_for_are_there() -> None:
    assert {p.name for p in _skill_dirs()} >= set(REQUIRED_SKILLS)


@pytest.mark.parametrize("skill", _skill_dirs(), ids=lambda p: p.name)
def test_skill_frontmatter(skill: Path) -> None:
    front, body = _split(skill / "SKILL.md")
    assert {"name", "description"} <= set(front) <= SKILL_FIELDS
    name, description = front["name"], front["description"]
    assert isinstance(name, str) and SKILL_NAME_RE.match(name) and len(name) <= 64
    assert name == skill.name
    assert "anthropic" not in name and "claude" not in name  # reserved words
    assert isinstance(description, str) and 1 <= len(description) <= 1024
    assert not re.search(r"<[^>]*>", description), "no XML tags in a description"
    assert re.search(r"\bUse (when|for)\b", description), "say when to use it"
    assert body.strip() and len(body.splitlines()) < 500


@functools.cache
def _tools() -> dict[str, dict[str, Any]]:
    """The gateway's tools as ``tools/list`` gives them: every one (``--tools all``)."""

    async def listed() -> list[dict[str, Any]]:
        config = load_config({"CDP_URL": "127.0.0.1:9", "CHROME_SSH_GATEWAY_TOOLS": "all"})
        server = build_server(Registry(config), CallLog.open(None))
        async with Client(server) as client:
            result = await client.list_tools()
        return [t.model_dump(mode="json", by_alias=True, exclude_none=True)
                for t in result.tools]

    return {tool["name"]: tool for tool in anyio.run(listed)}


def _vocabulary() -> set[str]:
    """Every name a skill may write in backticks: tool names, the names and string values
    of their arguments and results, and the names README.md and docs/ use (result
    fields, keys of the targets file)."""
    words: set[str] = set(_tools())

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            words.update(k for k in node.get("properties", {}))
            for key in ("enum", "const"):
                value = node.get(key)
                words.update(v for v in (value if isinstance(value, list) else [value])
                             if isinstance(v, str))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(list(_tools().values()))
    return words | {word for text in (README, *DOCS.values())
                    for word in re.findall(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+", text)}


def _without_fences(text: str) -> str:
    return re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)


def _code_spans(text: str) -> list[str]:
    return [" ".join(span.split()) for span in re.findall(r"`([^`]+)`", _without_fences(text))]


def _check(tool: str, arguments: Any, where: str) -> None:
    assert tool in _tools(), f"{where}: {tool} is no tool of the gateway"
    jsonschema.validate(arguments, _tools()[tool]["inputSchema"])


@pytest.mark.parametrize("skill", _skill_dirs(), ids=lambda p: p.name)
def test_skill_tool_calls_are_real_tools_with_valid_arguments(skill: Path) -> None:
    """Every ``tool {json}`` a skill writes is a tool of the gateway taking those
    arguments; every browse_act step (``{"do": …}``) is a valid step."""
    text = (skill / "SKILL.md").read_text()
    calls = steps = 0
    step_schema = _tools()["browse_act"]["inputSchema"]["properties"]["actions"]["items"]
    for span in _code_spans(text):
        call = re.fullmatch(r"([a-z_]+) (\{.*\})", span)
        if call:
            _check(call.group(1), json.loads(call.group(2)), f"{skill.name}: `{span}`")
            calls += 1
        elif span.startswith('{"do"'):
            jsonschema.validate(json.loads(span), step_schema)
            steps += 1
    assert calls or skill.name == "chrome-ssh-cli", f"{skill.name} shows no tool call"
    if skill.name == "chrome-ssh-pages":
        assert steps >= 10, "the pages skill shows every browse_act step"


@pytest.mark.parametrize("skill", _skill_dirs(), ids=lambda p: p.name)
def test_skill_names_are_the_gateways(skill: Path) -> None:
    """Names in backticks are the gateway's (tools, arguments, results, settings); a
    ``chrome-ssh-gateway WORD`` names a real subcommand; a variable is one the gateway
    reads; and the skill covers what issue 19 asks of it."""
    text = (skill / "SKILL.md").read_text()
    vocabulary = _vocabulary()
    subcommands = set(next(a for a in _parser()._actions if a.dest == "command").choices)
    for span in _code_spans(text):
        for word in re.findall(r"(?<![\w.$/-])[a-z][a-z0-9]*(?:_[a-z0-9]+)+(?![\w-])", span):
            assert word in vocabulary, f"{skill.name}: `{span}`: {word!r} is no name of the gateway"
        program = re.match(rf"{PROGRAM}\s+(\S+)", span)
        if program and not program.group(1).startswith("-"):
            assert program.group(1) in subcommands | {"TOOL"}, f"{skill.name}: `{span}`"
    for variable in re.findall(r"\b(?:CHROME_SSH_GATEWAY_[A-Z_]+|SSH_PROXY_[A-Z]+|CDP_URL)\b",
                               text):
        assert variable in _variables(), f"{skill.name}: {variable} is no variable it reads"
    for needed in REQUIRED_SKILLS.get(skill.name, []):
        assert needed in text, f"{skill.name} does not cover {needed}"


def _skill_items(skill: Path) -> list[Documented]:
    return documented(f"{skill.name}/SKILL.md", (skill / "SKILL.md").read_text())


@pytest.mark.parametrize("skill", _skill_dirs(), ids=lambda p: p.name)
def test_skill_commands_and_files_are_valid(skill: Path) -> None:
    """Its shell lines are ``chrome-ssh-gateway`` command lines the CLI accepts (a
    ``call`` with a real tool and valid arguments); its targets files load."""
    for item in _skill_items(skill):
        if item.kind == "targets":
            continue  # test_skill_targets_files_load
        assert item.kind == "shell", item
        assert item.run is not None and item.run.program == PROGRAM, item
        try:
            args = parse_args(list(item.run.args))
        except SystemExit:
            pytest.fail(f"{item.where}: the CLI refuses `{item.text}`")
        if subcommand(item.run.args) == "call":
            _check(args.tool, json.loads(args.arguments), item.where)


@pytest.mark.parametrize("skill", _skill_dirs(), ids=lambda p: p.name)
def test_skill_targets_files_load(skill: Path, tmp_path: Path) -> None:
    for item in _skill_items(skill):
        if item.kind == "targets":
            path = tmp_path / "targets.toml"
            path.write_text(item.text)
            assert load_config({"HOME": "/home/alice"}, str(path)).targets, item.where


# ------------------------------------------------------------------ the release workflow

def _workflow() -> dict[Any, Any]:
    return yaml.safe_load(RELEASE.read_text())  # type: ignore[no-any-return]


def test_the_release_workflow_runs_on_a_version_tag_and_checks_the_wheel() -> None:
    workflow = _workflow()
    trigger = workflow.get("on", workflow.get(True))  # YAML 1.1 reads `on` as true
    assert trigger == {"push": {"tags": ["v*"]}}
    build = workflow["jobs"]["build"]
    runs = [step.get("run", "") for step in build["steps"]]
    assert any("scripts/check-wheel" in run and "--offline" not in run for run in runs)


def test_the_release_workflow_publishes_to_pypi_with_trusted_publishing() -> None:
    jobs = _workflow()["jobs"]
    [name] = [n for n, job in jobs.items() if any(
        str(step.get("uses", "")).startswith("pypa/gh-action-pypi-publish@")
        for step in job["steps"])]
    job = jobs[name]
    assert job["permissions"]["id-token"] == "write"
    assert job["environment"]["name"] and "build" in job["needs"]
    assert not any("password" in step.get("with", {}) for step in job["steps"])


@pytest.mark.parametrize(("tag", "status"), [(f"v{PROJECT['version']}", 0), ("v9.9.9", 1)])
def test_the_release_refuses_a_tag_that_is_not_the_version(tag: str, status: int) -> None:
    [check] = [step["run"] for step in _workflow()["jobs"]["build"]["steps"]
               if "GITHUB_REF_NAME" in step.get("run", "")]
    done = subprocess.run(["bash", "-c", check], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "GITHUB_REF_NAME": tag}, timeout=60)
    assert done.returncode == status, done.stderr


def test_check_wheel_refuses_unknown_options() -> None:
    done = subprocess.run(["bash", str(ROOT / "scripts" / "check-wheel"), "--bogus"],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and "usage" in done.stderr


# ------------------------------------------------------------------ the top level

TOP_LEVEL = {"pyproject.toml", "README.md", "docs", "gateway", "tests", "fixtures", "examples",
             "benchmarks", ".ci", "scripts", "LICENSE", "server.json"}
"""The product's top level (the folders its design fixes), and the conventional files beside it; a
client's hidden folders (``.claude-plugin/``, ``.claude/``, ``.github/``) come on top."""


def test_the_top_level_is_the_product_cards() -> None:
    try:
        listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                                cwd=ROOT, capture_output=True, text=True, timeout=30, check=True)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    names = {line.split("/", 1)[0] for line in listed.stdout.splitlines()}
    assert {name for name in names if not name.startswith(".")} <= TOP_LEVEL, names


# ------------------------------------------------------------------ the documentation

README_LINES = 300
"""The README is the front page: what it is, what the remote machine needs, a quick
start per client, the tool list; the reference is in docs/."""

HISTORY = re.compile(
    r"\b(?:issues? #?\d+|(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]* \d{1,2}\b"
    r"|before → after|no longer)", re.I)
"""What belongs in git history, not in the docs: issue numbers, dates of past work,
before-and-after figures. The performance page dates its tables as 2026-12-02 (when
each current table was measured), which this does not match."""


def test_the_readme_is_a_front_page() -> None:
    assert len(README.splitlines()) <= README_LINES


def test_docs_has_the_pages_and_the_reference_names_every_tool() -> None:
    assert len(DOCS) >= 6 and {"tools.md", "configuration.md", "performance.md"} <= set(DOCS)
    missing = [name for name in _tools() if f"## {name}\n" not in DOCS["tools.md"]]
    assert not missing, f"docs/tools.md does not name {missing}"


@pytest.mark.parametrize("name", ["README.md", "benchmarks/README.md",
                                  *(f"docs/{n}" for n in DOCS)])
def test_no_history_in_the_docs(name: str) -> None:
    text = (ROOT / name).read_text()
    found = [m.group(0) for m in HISTORY.finditer(text)]
    assert not found, f"{name}: {found} — history belongs in git, not in the docs"


def test_the_readme_lists_every_tool_by_its_category() -> None:
    """The README's tool list is the tool list's, category by category (``(off)``: the
    categories off by default); ``CSGW_UPDATE_GOLDEN=1`` rewrites it."""
    from gateway.mcp.reference import readme_table
    from tests.golden import SWITCH

    header = "| category | tools |\n|---|---|\n"
    head, rest = README.split(header, 1)
    listed, tail = rest.split("\n\n", 1)
    if os.environ.get(SWITCH) == "1":
        (ROOT / "README.md").write_text(f"{head}{header}{readme_table()}\n{tail}")
    assert listed + "\n" == readme_table(), f"README.md's tool list differs; run with {SWITCH}=1"
