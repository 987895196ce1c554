"""tests/doc_commands.py: reading command lines and client configs out of the docs —
and the targets files the docs show are valid configurations (was test_examples.py)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from urllib.parse import quote

import pytest

from gateway.config import load_config
from tests.doc_commands import (
    PLUGIN_MANIFESTS,
    PROGRAM,
    DocError,
    Invocation,
    doc_files,
    documented,
    expand_vars,
    fenced_blocks,
    install_links,
    invocation,
    shell_lines,
    subcommand,
)

ROOT = Path(__file__).parents[2]
DOC_FILES = doc_files(ROOT)

MARKDOWN = """# Title

```sh
chrome-ssh-gateway serve   # the server
```

Prose with `inline --code` that is not a command.

~~~python
print("not a command")
~~~

```text
$ chrome-ssh-gateway doctor
devvm: UP
```
"""


def test_fenced_blocks_with_language_and_first_line() -> None:
    blocks = fenced_blocks(MARKDOWN)
    assert [(b.lang, b.line) for b in blocks] == [("sh", 4), ("python", 10), ("text", 14)]
    assert blocks[0].text == "chrome-ssh-gateway serve   # the server"
    assert blocks[2].text == "$ chrome-ssh-gateway doctor\ndevvm: UP"


def test_an_unclosed_fence_is_an_error() -> None:
    with pytest.raises(DocError, match="never closed"):
        fenced_blocks("```sh\nchrome-ssh-gateway\n")


def test_shell_lines_skip_comments_and_join_continuations() -> None:
    text = ("#!/bin/sh\n# a comment\n\nfirst --a \\\n   --b\n  second  # why\n"
            "third '# quoted' x#y \"#\"  # end\n")
    assert shell_lines(text) == [(3, "first --a --b"), (5, "second"),
                                 (6, "third '# quoted' x#y \"#\"")]


def test_shell_lines_of_a_transcript_are_the_prompted_ones() -> None:
    text = "$ one --x\noutput line\n$ two\n# not a prompt\n"
    assert shell_lines(text, prompt=True) == [(0, "one --x"), (2, "two")]


def test_a_trailing_continuation_is_an_error() -> None:
    with pytest.raises(DocError, match="continuation"):
        shell_lines("cmd \\\n")


def test_markdown_items_come_from_sh_and_prompted_text_blocks_only() -> None:
    items = documented("X.md", MARKDOWN)
    assert [(i.kind, i.where, i.text) for i in items] == [
        ("shell", "X.md:4", "chrome-ssh-gateway serve"),
        ("shell", "X.md:14", "chrome-ssh-gateway doctor"),
    ]
    assert items[0].run == Invocation("chrome-ssh-gateway", ("serve",), {})


@pytest.mark.parametrize(("line", "expected"), [
    ("chrome-ssh-gateway --config t.toml",
     Invocation("chrome-ssh-gateway", ("--config", "t.toml"), {})),
    ("A=1 B='x y' chrome-ssh-gateway call list_tabs",
     Invocation("chrome-ssh-gateway", ("call", "list_tabs"), {"A": "1", "B": "x y"})),
    ("uvx chrome-ssh-gateway doctor", Invocation("chrome-ssh-gateway", ("doctor",), {})),
    ("uvx --from . chrome-ssh-gateway", Invocation("chrome-ssh-gateway", (), {})),
    ("claude mcp add n --env K=V -e L=W -- uvx chrome-ssh-gateway --read-only",
     Invocation("chrome-ssh-gateway", ("--read-only",), {"K": "V", "L": "W"})),
    ("claude mcp add --scope user n -- uvx --from /src chrome-ssh-gateway",
     Invocation("chrome-ssh-gateway", (), {})),
    ("chrome-ssh-gateway call navigate '{\"url\": \"about:blank\"}'  # opens a tab",
     Invocation("chrome-ssh-gateway", ("call", "navigate", '{"url": "about:blank"}'), {})),
    ("sudo scripts/test", Invocation("sudo", ("scripts/test",), {})),
    ("nohup uvx chrome-ssh-gateway share h --for 45m &",
     Invocation("chrome-ssh-gateway", ("share", "h", "--for", "45m"), {})),
    ("K=V nohup chrome-ssh-gateway share h&",  # one word: not the background '&'
     Invocation("chrome-ssh-gateway", ("share", "h&"), {"K": "V"})),
    ("chrome-ssh-gateway share h --name \"gh-$GITHUB_RUN_ID\" &",
     Invocation("chrome-ssh-gateway", ("share", "h", "--name", "gh-$GITHUB_RUN_ID"), {})),
])
def test_invocation(line: str, expected: Invocation) -> None:
    [item] = documented("x.sh", line)
    assert item.run == expected


@pytest.mark.parametrize(("words", "message"), [
    (["claude", "mcp", "add", "n", "uvx", "chrome-ssh-gateway"], "without '--'"),
    (["claude", "mcp", "add", "n", "--"], "no server command"),
    (["claude", "mcp", "add", "--", "x"], "exactly one server name"),
    (["claude", "mcp", "add", "n", "--env", "NOEQUALS", "--", "x"], "KEY=VALUE"),
    (["claude", "mcp", "add", "n", "--bogus", "--", "x"], "--bogus"),
    (["claude", "mcp", "list"], "unknown claude command"),
    (["uvx", "--python", "3.12", "chrome-ssh-gateway"], "uvx form"),
    (["K=V"], "without a command"),
    (["nohup"], "nohup form"),
    (["nohup", "--help"], "nohup form"),
    (["&"], "without a command"),
])
def test_forms_it_cannot_read_are_errors(words: list[str], message: str) -> None:
    with pytest.raises(DocError, match=message):
        invocation(words)


@pytest.mark.parametrize(("args", "expected"), [
    ((), "serve"),
    (("--config", "t.toml"), "serve"),
    (("--config", "call.toml", "--read-only"), "serve"),
    (("--log-level", "DEBUG", "doctor", "--json"), "doctor"),
    (("--config=t.toml", "call", "list_tabs"), "call"),
    (("share", "ci@bastion", "--name", "gh-1", "--browsers", "all"), "share"),
])
def test_subcommand(args: tuple[str, ...], expected: str) -> None:
    assert subcommand(args) == expected


def test_expand_vars() -> None:
    env = {"HOME": "/h", "X": "1"}
    assert expand_vars("$HOME/a/${X}b", env) == "/h/a/1b"
    with pytest.raises(DocError, match=r"\$NOPE is not set"):
        expand_vars("$NOPE/x", env)


def test_json_client_config() -> None:
    text = ('{"mcpServers": {"s": {"command": "uvx", "args": ["chrome-ssh-gateway"],'
            ' "env": {"SSH_PROXY_TO": "h"}}}}')
    [item] = documented("c.json", text)
    assert (item.kind, item.name) == ("client", "s")
    assert item.run == Invocation("chrome-ssh-gateway", (), {"SSH_PROXY_TO": "h"})


def test_toml_client_config_and_targets_file() -> None:
    [client] = documented("c.toml", '[mcp_servers.s]\ncommand = "chrome-ssh-gateway"\n'
                                    'args = ["--config", "t.toml"]\n')
    assert client.run == Invocation("chrome-ssh-gateway", ("--config", "t.toml"), {})
    [targets] = documented("t.toml", '[targets.a]\nssh = "h"\n')
    assert (targets.kind, targets.run) == ("targets", None)


@pytest.mark.parametrize(("name", "text", "message"), [
    ("c.json", '{"servers": {}}', "no mcpServers"),
    ("c.json", '{"mcpServers": {"s": {"args": []}}}', "has no command"),
    ("c.json", '{"mcpServers": {"s": {"command": "x", "args": "a b"}}}', "list of strings"),
    ("c.json", "{not json", "not JSON"),
    ("c.toml", "[other]\nx = 1\n", "neither a client config nor a targets file"),
    ("c.txt", "", "not a documentation file"),
    ("ci.yml", "jobs: [unclosed", "not YAML"),
    ("ci.yml", "name: x\nstages: [test]\n", "neither a GitHub Actions workflow"),
    ("ci.yml", "", "neither a GitHub Actions workflow"),
    ("ci.yml", "e2e:\n  script:\n    - \"chrome-ssh-gateway 'share\"\n", "No closing"),
    ("ci.yml", "e2e:\n  variables:\n    A: [1]\n  script: [x]\n", "variable A"),
])
def test_unreadable_configs_are_errors(name: str, text: str, message: str) -> None:
    with pytest.raises(DocError, match=message):
        documented(name, text)


# ------------------------------------------------------------------ CI files

GITHUB = """\
name: e2e
on: [push]
env:
  A: workflow
  B: workflow
jobs:
  test:
    runs-on: ubuntu-latest
    env:
      B: job
    steps:
      - uses: actions/checkout@v4
      - name: plumbing, and ours in the middle of a script
        env:
          C: step
        run: |
          install -d -m 700 ~/.ssh
          # a comment naming chrome-ssh-gateway is no command
          uvx --from . chrome-ssh-gateway share devvm \\
              --for 1h
          npm ci && npm test
      - run: nohup chrome-ssh-gateway share ci@bastion --name "gh-$GITHUB_RUN_ID" &
      - run: echo "it's not shlex's business"
  other:
    steps:
      - run: D=1 chrome-ssh-gateway doctor
"""


def test_a_github_workflow_documents_its_run_lines_that_name_the_program() -> None:
    items = documented("w.yml", GITHUB)
    assert [(i.kind, i.where, i.text) for i in items] == [
        ("shell", "w.yml:19", "uvx --from . chrome-ssh-gateway share devvm --for 1h"),
        ("shell", "w.yml:22",
         'nohup chrome-ssh-gateway share ci@bastion --name "gh-$GITHUB_RUN_ID" &'),
        ("shell", "w.yml:26", "D=1 chrome-ssh-gateway doctor"),
    ]
    env = {"A": "workflow", "B": "job"}
    assert [i.run for i in items] == [
        Invocation("chrome-ssh-gateway", ("share", "devvm", "--for", "1h"), env | {"C": "step"}),
        Invocation("chrome-ssh-gateway", ("share", "ci@bastion", "--name", "gh-$GITHUB_RUN_ID"),
                   env),
        Invocation("chrome-ssh-gateway", ("doctor",), {"A": "workflow", "B": "workflow",
                                                        "D": "1"}),
    ]


GITLAB = """\
variables:
  A: file
.defaults: &defaults
  variables:
    A: template
default:
  before_script:
    - chrome-ssh-gateway doctor
e2e:
  <<: *defaults
  image: debian
  before_script:
    - pip install uv
  script:
    - nohup uvx chrome-ssh-gateway share ci@bastion --name "gl-$CI_JOB_ID" &
    - - chrome-ssh-gateway share devvm   # a nested list, as !reference makes
    - npm ci && npx playwright test
  after_script:
    - |
      if [ "$CI_JOB_STATUS" = failed ]; then sleep 1200; fi
      pip install chrome-ssh-gateway
"""


def test_a_gitlab_file_documents_its_script_lines_that_name_the_program() -> None:
    items = documented("g.yml", GITLAB)
    assert [(i.where, i.text) for i in items] == [
        ("g.yml:8", "chrome-ssh-gateway doctor"),
        ("g.yml:15", 'nohup uvx chrome-ssh-gateway share ci@bastion --name "gl-$CI_JOB_ID" &'),
        ("g.yml:16", "chrome-ssh-gateway share devvm"),
        ("g.yml:21", "pip install chrome-ssh-gateway"),
    ]
    assert [i.run for i in items] == [
        Invocation("chrome-ssh-gateway", ("doctor",), {"A": "file"}),
        Invocation("chrome-ssh-gateway", ("share", "ci@bastion", "--name", "gl-$CI_JOB_ID"),
                   {"A": "template"}),
        Invocation("chrome-ssh-gateway", ("share", "devvm"), {"A": "template"}),
        # Named but not run: returned as what it runs, for the caller to allow-list.
        Invocation("pip", ("install", "chrome-ssh-gateway"), {"A": "template"}),
    ]


@pytest.mark.parametrize(("name", "prefix", "variable", "debug"), [
    ("share-github-actions.yml", "gh", "GITHUB_RUN_ID", True),
    ("share-gitlab-ci.yml", "gl", "CI_JOB_ID", False),
])
def test_the_ci_examples_document_exactly_their_share_commands(
        name: str, prefix: str, variable: str, debug: bool) -> None:
    text = (ROOT / "examples" / name).read_text()
    items = documented(f"examples/{name}", text)
    for item in items:
        line = int(item.where.rpartition(":")[2])
        assert text.splitlines()[line - 1].strip().lstrip("- ").removeprefix("run: ") \
            == item.text
    runs = [Invocation("chrome-ssh-gateway", (
        "share", "ci@bastion", "--name", f"{prefix}-${variable}", "--browsers", "all",
        "--for", "45m"), {})]
    if debug:  # a failed job's own browser, to debug in
        runs.append(Invocation("chrome-ssh-gateway", (
            "share", "ci@bastion", "--name", f"{prefix}-${variable}-debug", "--launch",
            "--temporary-profile", "--for", "20m"), {}))
    assert [item.run for item in items] == runs


# ------------------------------------------------------------------ the real docs


def _items(kind: str) -> list[tuple[str, str]]:
    return [(item.where, item.text) for path in DOC_FILES
            for item in documented(str(path.relative_to(ROOT)), path.read_text())
            if item.kind == kind]


def test_every_doc_file_reads() -> None:
    """README.md, docs/*.md and every file in examples/ parse (a DocError names the
    snippet)."""
    kinds = {item.kind for path in DOC_FILES
             for item in documented(str(path.relative_to(ROOT)), path.read_text())}
    assert kinds == {"shell", "client", "targets"}


@pytest.mark.parametrize(("where", "text"), _items("targets"), ids=lambda v: str(v)[:40])
def test_documented_targets_file_loads(where: str, text: str, tmp_path: Path) -> None:
    path = tmp_path / "targets.toml"
    path.write_text(text)
    # ${POOL_TOKEN}: the hosted-pool example's token, from the environment.
    config = load_config({"HOME": "/home/alice", "POOL_TOKEN": "t"}, str(path))
    assert config.targets, where


def test_the_targets_files_include_the_examples() -> None:
    assert {where for where, _ in _items("targets")} >= {
        "examples/devvms.toml", "examples/ci-runner.toml"}


# ------------------------------------------------------------------ install links and plugins

_SERVER = {"command": "uvx", "args": ["chrome-ssh-gateway"], "env": {"SSH_PROXY_TO": "h"}}
_JSON = json.dumps(_SERVER)
_B64 = base64.b64encode(_JSON.encode()).decode()
_VSCODE = json.dumps({"name": "s", **_SERVER})


@pytest.mark.parametrize("url", [
    f"cursor://anysphere.cursor-deeplink/mcp/install?name=s&config={_B64}",
    f"https://cursor.com/en/install-mcp?name=s&config={quote(_B64, safe='')}",
    f"https://insiders.vscode.dev/redirect/mcp/install?name=s&config={quote(_JSON, safe='')}",
    f"https://vscode.dev/redirect/mcp/install?name=s&config={quote(_JSON, safe='')}"
    "&quality=insiders",
    f"vscode:mcp/install?{quote(_VSCODE, safe='')}",
    "https://insiders.vscode.dev/redirect?url="
    + quote(f"vscode:mcp/install?{quote(_VSCODE, safe='')}", safe=""),
])
def test_an_install_link_is_a_client_config(url: str) -> None:
    text = f"# T\n\nProse, then [Install]({url}) and more.\n"
    [link] = install_links(text)
    assert (link.line, link.url, link.name, link.config) == (3, url, "s", _SERVER)
    [item] = documented("R.md", text)
    assert (item.kind, item.where, item.name) == ("client", "R.md:3", "s")
    assert item.run == Invocation("chrome-ssh-gateway", (), {"SSH_PROXY_TO": "h"})


def test_a_plus_in_a_cursor_config_is_base64_not_a_space() -> None:
    config = {"command": "chrome-ssh-gateway", "args": ["--tools", ">>>"]}
    encoded = base64.b64encode(json.dumps(config).encode()).decode()
    assert "+" in encoded
    [link] = install_links(f"`cursor://anysphere.cursor-deeplink/mcp/install?name=a&config={encoded}`")
    assert link.config == config


@pytest.mark.parametrize(("url", "message"), [
    ("cursor://anysphere.cursor-deeplink/mcp/install?name=s&config=!!", "not readable"),
    ("cursor://anysphere.cursor-deeplink/mcp/install?config=" + _B64, "not readable"),
    ("https://insiders.vscode.dev/redirect/mcp/install?name=s&config=%7Bnope", "not readable"),
    ("https://insiders.vscode.dev/redirect/mcp/install?name=s&config="
     + quote(json.dumps({"type": "http", "url": "https://x/mcp"}), safe=""), "not stdio"),
    ("https://insiders.vscode.dev/redirect/mcp/install?name=s&config=%7B%7D", "has no command"),
])
def test_an_unreadable_install_link_is_an_error(url: str, message: str) -> None:
    with pytest.raises(DocError, match=message):
        documented("R.md", f"[x]({url})")


def test_a_plugin_manifest_documents_its_servers_and_a_marketplace_its_inline_ones() -> None:
    manifest = json.dumps({"name": "p", "mcpServers": {"s": _SERVER}})
    [item] = documented(".claude-plugin/plugin.json", manifest)
    assert (item.kind, item.name, item.run) == (
        "client", "s", Invocation("chrome-ssh-gateway", (), {"SSH_PROXY_TO": "h"}))
    marketplace = {"name": "m", "owner": {"name": "o"}, "plugins": [
        {"name": "p", "source": "./"},
        {"name": "q", "source": "./q", "mcpServers": {"t": {"command": "chrome-ssh-gateway"}}},
    ]}
    [inline] = documented(".claude-plugin/marketplace.json", json.dumps(marketplace))
    assert (inline.where, inline.name, inline.run) == (
        ".claude-plugin/marketplace.json q", "t", Invocation("chrome-ssh-gateway", (), {}))
    with pytest.raises(DocError, match="without plugins"):
        documented(".claude-plugin/marketplace.json", '{"name": "m", "plugins": []}')


def test_the_plugin_manifests_are_documentation_files() -> None:
    clients = [i for path in PLUGIN_MANIFESTS
               for i in documented(path, (ROOT / path).read_text()) if i.kind == "client"]
    assert clients and all(i.run is not None and i.run.program == PROGRAM for i in clients)
