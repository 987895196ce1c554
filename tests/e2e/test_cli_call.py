"""``python -m gateway call TOOL 'JSON'``: one tool call from the shell.

Exit 0 with the result as JSON on stdout; non-zero with the error on stderr when the
tool fails; 2 for arguments that are not a JSON object or a bad configuration.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.helpers import close_remote_pages, data_url, stop_daemons, write_targets
from tests.topology import Topology

CALL_TIMEOUT = 60


def _call(
    env: dict[str, str], *argv: str, config: Path | None = None
) -> subprocess.CompletedProcess[str]:
    options = ["--config", str(config)] if config is not None else []
    return subprocess.run(
        [sys.executable, "-m", "gateway", "call", *options, *argv],
        env=env, capture_output=True, text=True, timeout=CALL_TIMEOUT, stdin=subprocess.DEVNULL,
        cwd=Path(__file__).resolve().parents[2],
    )


@pytest.fixture(scope="module")
def env(topology: Topology, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    run = tmp_path_factory.mktemp("run")
    run.chmod(0o700)
    yield topology.client_env() | {"SSH_PROXY_TO": "h1", "XDG_RUNTIME_DIR": str(run)}
    stop_daemons(run / "chrome-ssh-gateway")


def test_list_targets_prints_json(env: dict[str, str], topology: Topology) -> None:
    result = _call(env, "list_targets")

    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)  # stdout holds the JSON and nothing else
    [target] = payload["targets"]
    assert (target["name"], target["transport"], target["host"]) == ("default", "ssh", "h1")
    assert target["state"] == "up", target  # `call` waits for the connection to settle
    assert target["cdp_endpoint"].endswith("(DevToolsActivePort in .config/chromium)")


def test_navigate_with_arguments(env: dict[str, str], topology: Topology) -> None:
    url = data_url("from-the-shell", "<p>cli</p>")
    result = _call(env, "navigate", json.dumps({"url": url}))

    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert (payload["target"], payload["url"], payload["title"]) == (
        "default", url, "from-the-shell")
    # The tab is really open in h1's browser (and stays after the one-shot process exits).
    assert close_remote_pages(topology.host("h1"), url) == 1


def test_unknown_tab_fails_with_the_error_on_stderr(env: dict[str, str]) -> None:
    result = _call(env, "evaluate", json.dumps({"tab": 424242, "expression": "1"}))

    assert result.returncode == 1
    assert result.stdout == ""
    assert "tab 424242 is not a known tab id" in result.stderr


def test_unknown_tool(env: dict[str, str]) -> None:
    result = _call(env, "no_such_tool")

    assert result.returncode != 0
    assert result.stdout == ""
    assert "no_such_tool" in result.stderr


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ("{not json", "arguments are not JSON"),
        ("", "arguments are not JSON"),
        ("[1, 2]", "arguments must be a JSON object"),
        ('"tab"', "arguments must be a JSON object"),
    ],
)
def test_bad_json_arguments_exit_2(env: dict[str, str], arguments: str, expected: str) -> None:
    result = _call(env, "list_tabs", arguments)

    assert result.returncode == 2
    assert result.stdout == ""
    assert expected in result.stderr


def test_bad_configuration_exits_2(env: dict[str, str]) -> None:
    no_target = {k: v for k, v in env.items() if k != "SSH_PROXY_TO"}
    result = _call(no_target | {"SSH_PROXY_PORT": "9333"}, "list_targets")

    assert result.returncode == 2
    assert "configuration error" in result.stderr
    assert "SSH_PROXY_PORT" in result.stderr


def test_call_with_a_targets_file(env: dict[str, str], tmp_path: Path) -> None:
    path = write_targets(tmp_path / "targets.toml", {"one": {"ssh": "h1"}, "two": {"ssh": "h2"}})
    result = _call({k: v for k, v in env.items() if k != "SSH_PROXY_TO"}, "list_tabs",
                   config=path)

    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert "unavailable" not in payload
    assert {t["target"] for t in payload["tabs"]} == {"one", "two"}
    ids = [t["tab"] for t in payload["tabs"]]
    assert len(ids) == len(set(ids))


def test_a_page_view_prints_as_lines_and_as_fields_with_json(
        env: dict[str, str], topology: Topology) -> None:
    """``call browse`` prints the view as the model reads it (lines after a header);
    ``--json`` keeps the structured result (asked for with the request's ``_meta``: a
    model's client gets the text alone)."""
    url = data_url("lines", "<h1>Heading</h1><button>Go</button>")
    text = _call(env, "browse", json.dumps({"url": url}))
    assert text.returncode == 0, text.stderr
    header, *lines = text.stdout.splitlines()
    assert header.startswith("tab ") and header.endswith(" on default (1 refs)"), header
    assert lines[:2] == [f"url: {url}", "title: lines"] and 'button#1 "Go"' in lines
    tab = int(header.split()[1])
    viewed = _call(env, "browse_view", json.dumps({"tab": tab}), "--json")
    assert viewed.returncode == 0, viewed.stderr
    payload = json.loads(viewed.stdout)
    assert (payload["tab"], payload["target"], payload["url"], payload["refs"]) == (
        tab, "default", url, 1)
    assert payload["view"].splitlines()[:2] == [f"url: {url}", "title: lines"]
    assert close_remote_pages(topology.host("h1"), url) == 1
