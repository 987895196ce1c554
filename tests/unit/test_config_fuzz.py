"""Fuzzing gateway.config: whatever the environment and the targets file hold,
``load_config`` returns a config whose invariants hold, or raises ``ConfigError`` —
never another exception, never a hang.

The invariants (``assert_sane``) are what the rest of the gateway relies on without
checking again: target names safe in paths and log lines, ports in range, durations
finite and positive, SSH destinations that cannot be read as options or split into
words, profile paths absolute without ``..``. They are derived from the models
where possible, so a key added to ``TargetConfig`` / ``ReconnectPolicy`` is fuzzed
and checked without touching this file.

Hypothesis runs with ``deadline=None`` (no wall-clock dependence) and bounded
example counts; a hang would show as a test that never ends.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from gateway.config import (
    ENV_CALL_LOG,
    ENV_CDP_URL,
    ENV_CONFIG,
    ENV_SSH_PROXY_PORT,
    ENV_SSH_PROXY_TO,
    MAX_SECONDS,
    TARGET_KEYS,
    TARGET_NAME_RE,
    CdpAddress,
    GatewayConfig,
    ReconnectPolicy,
    SshDestination,
    TargetConfig,
    load_config,
    parse_cdp_address,
    parse_ssh_destination,
)
from gateway.config.text import BadValue
from gateway.errors import ConfigError

HOME = "/home/tester"
FUZZ = settings(max_examples=300, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


# ------------------------------------------------------------------------ invariants


def _clean(text: str) -> bool:
    """No whitespace or control characters: one word in argv and in a log line."""
    return not any(ch.isspace() or ord(ch) < 0x20 or 0x7F <= ord(ch) < 0xA0 for ch in text)


def assert_ssh_sane(ssh: SshDestination) -> None:
    assert ssh.host and _clean(ssh.host) and not ssh.host.startswith("-"), ssh
    assert ssh.user is None or (ssh.user and _clean(ssh.user) and not ssh.user.startswith("-"))
    assert ssh.port is None or 1 <= ssh.port <= 65535, ssh
    assert _clean(str(ssh)) and not str(ssh).startswith("-")
    assert "\x00" not in str(ssh)


def assert_cdp_sane(cdp: CdpAddress) -> None:
    assert 1 <= cdp.port <= 65535, cdp
    assert cdp.host and _clean(cdp.host) and "/" not in cdp.host and "@" not in cdp.host, cdp
    assert cdp.browser_path is None or (cdp.browser_path.startswith("/devtools/browser/")
                                        and _clean(cdp.browser_path)), cdp


def _assert_durations(policy: BaseModel) -> None:
    """Every float field of a config model is a sane number of seconds; only
    ``call_wait_s`` may be 0 (fail at once)."""
    for name in type(policy).model_fields:
        value = getattr(policy, name)
        if isinstance(value, float):
            low_ok = value >= 0 if name == "call_wait_s" else value > 0
            assert math.isfinite(value) and low_ok and value <= MAX_SECONDS, (name, value)


def assert_target_sane(target: TargetConfig) -> None:
    assert TARGET_NAME_RE.fullmatch(target.name), target.name
    if target.ssh is not None:
        assert_ssh_sane(target.ssh)
    if target.cdp is not None:
        assert_cdp_sane(target.cdp)
    if target.profile is not None:
        profile = target.profile
        assert profile.startswith(("/", "~/")), profile
        assert ".." not in profile.split("/") and "\x00" not in profile
        assert "\n" not in profile and "\r" not in profile
    assert target.expose_port is None or 1 <= target.expose_port <= 65535
    assert target.host_key_policy in ("strict", "accept-new")
    _assert_durations(target)
    _assert_durations(target.reconnect)
    assert target.reconnect.max_delay_s >= target.reconnect.initial_delay_s
    assert 1 <= target.reconnect.keepalive_count_max <= 100
    assert 10 <= target.console_buffer <= 100_000 and 10 <= target.network_buffer <= 100_000


def assert_sane(config: GatewayConfig) -> None:
    assert config.targets
    names = [t.name for t in config.targets]
    assert len(set(names)) == len(names)
    exposed = [t.expose_port for t in config.targets if t.expose_port is not None]
    assert len(set(exposed)) == len(exposed), "two targets expose one port"
    for target in config.targets:
        assert_target_sane(target)
    if config.call_log is not None:
        assert "\x00" not in str(config.call_log) and "\n" not in str(config.call_log)


def config_or_config_error(call: Callable[[], GatewayConfig]) -> None:
    """The contract of load_config: a sane config, or a ConfigError with a message."""
    try:
        config = call()
    except ConfigError as err:
        assert str(err) and err.reason
        return
    assert isinstance(config, GatewayConfig)
    assert_sane(config)


# ---------------------------------------------------------------------- environment

ADDRESSISH = st.text(alphabet="abc-_@:[]%./0123456789fe \t\n\x00", max_size=40)
ENV_NAMES = [ENV_SSH_PROXY_TO, ENV_CDP_URL, ENV_SSH_PROXY_PORT, ENV_CALL_LOG, ENV_CONFIG,
             "HOME", "XDG_CACHE_HOME", "UNRELATED"]
ENV_VALUES = st.one_of(
    st.text(max_size=60), ADDRESSISH,
    st.sampled_from(["h1", "u@h:22", "[::1]:22", "-oProxyCommand=x", "127.0.0.1:9222",
                     "ws://127.0.0.1:9/devtools/browser/x", "22", "0", "65536", "on", "off",
                     "/tmp/calls.jsonl", "~/x", "", " ", "/nonexistent/targets.toml"]),
)


@FUZZ
@given(environ=st.dictionaries(st.sampled_from(ENV_NAMES), ENV_VALUES, max_size=6))
def test_random_environments(environ: dict[str, str]) -> None:
    config_or_config_error(lambda: load_config(environ))


@settings(max_examples=500, deadline=None)
@given(text=st.one_of(st.text(), ADDRESSISH))
def test_ssh_proxy_to(text: str) -> None:
    config_or_config_error(lambda: load_config({"HOME": HOME, ENV_SSH_PROXY_TO: text}))


@settings(max_examples=500, deadline=None)
@given(text=st.one_of(
    st.text(), ADDRESSISH,
    st.builds(lambda scheme, rest: scheme + rest,
              st.sampled_from(["http://", "ws://", "wss://", "", "ftp://"]),
              st.text(alphabet="l0calhost127.:[]/devtoolsbrwer?#9@%", max_size=50)),
))
def test_cdp_url(text: str) -> None:
    config_or_config_error(lambda: load_config({"HOME": HOME, ENV_CDP_URL: text}))
    config_or_config_error(lambda: load_config({"HOME": HOME, ENV_SSH_PROXY_TO: "h",
                                                ENV_CDP_URL: text}))


@settings(max_examples=300, deadline=None)
@given(text=st.text())
def test_other_env_values(text: str) -> None:
    config_or_config_error(lambda: load_config({"HOME": HOME, ENV_SSH_PROXY_TO: "h",
                                                ENV_SSH_PROXY_PORT: text}))
    config_or_config_error(lambda: load_config({"HOME": HOME, ENV_CALL_LOG: text}))


# ------------------------------------------------------------- the parsers directly


@settings(max_examples=1000, deadline=None)
@given(text=st.one_of(st.text(), ADDRESSISH))
def test_parse_ssh_destination(text: str) -> None:
    try:
        parsed = parse_ssh_destination(text)
    except BadValue:  # a refusal, with its reason; anything else escaping is a bug
        return
    assert_ssh_sane(parsed)
    # What it prints parses back to the same destination (log lines are reusable).
    assert parse_ssh_destination(str(parsed)) == parsed


@settings(max_examples=1000, deadline=None)
@given(text=st.one_of(st.text(), ADDRESSISH,
                      st.text(alphabet="ws:/[]0123456789.localhostdevbrowser-_%@?#", max_size=60)))
def test_parse_cdp_address(text: str) -> None:
    try:
        parsed = parse_cdp_address(text)
    except BadValue:
        return
    assert_cdp_sane(parsed)


# ---------------------------------------------------------------------- targets files


def _load(tmp_path: Path, text: str, environ: Mapping[str, str] | None = None) -> None:
    path = tmp_path / "fuzz.toml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    config_or_config_error(lambda: load_config(dict(environ or {"HOME": HOME}), str(path)))


@FUZZ
@given(text=st.text())
def test_random_text_as_targets_file(tmp_path: Path, text: str) -> None:
    _load(tmp_path, text)


def _toml_float(value: float) -> str:
    """TOML spelling of a float (Python's repr differs only for nan/inf)."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return repr(value)


def _toml_string(text: str) -> str:
    # JSON string escapes are TOML's too, except that TOML also wants DEL escaped.
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


SCALAR = st.one_of(
    st.integers(-(2**70), 2**70).map(str),
    st.sampled_from(["0", "1", "22", "65535", "65536", "-1", "3600", "3601", "100", "100001"]),
    st.floats().map(_toml_float),
    st.booleans().map(lambda b: str(b).lower()),
    st.text(max_size=30).map(_toml_string),
    ADDRESSISH.map(_toml_string),
    st.sampled_from(['"devvm"', '"u@h:22"', '"-oProxyCommand=x"', '"127.0.0.1:9222"',
                     '"accept-new"', '"/tmp/p"', '"~/p"', '"/a/../b"', '"rel/p"', '"Runtime.*"',
                     '"file"', "1979-05-27T07:32:00Z", "07:32:00", "1979-05-27"]),
)
TOML_VALUE = st.one_of(
    SCALAR,
    st.lists(SCALAR, max_size=4).map(lambda items: "[" + ", ".join(items) + "]"),
    st.dictionaries(st.sampled_from(["a", "initial_delay_s", "x-y"]), SCALAR, max_size=3).map(
        lambda d: "{" + ", ".join(f"{k} = {v}" for k, v in d.items()) + "}"),
)
_SECONDS = st.sampled_from(["0.001", "0.5", "1", "15", "3600", "30.0"])
_BOOL = st.sampled_from(["true", "false"])
GOOD: dict[str, st.SearchStrategy[str]] = {
    "ssh": st.sampled_from(['"devvm"', '"u@h:22"', '"[::1]:2222"', '"ssh://u@h"', '"a.b-c_d"']),
    "cdp": st.sampled_from(['"127.0.0.1:9222"', '"http://localhost:9"',
                            '"ws://[::1]:9/devtools/browser/ab-1"']),
    "profile": st.sampled_from(['"/tmp/p"', '"~/p"', '"/a/b.c/..d"']),
    "host_key_policy": st.sampled_from(['"strict"', '"accept-new"']),
    "expose": st.sampled_from(["1", "1024", "65535"]),
    "redact": _BOOL, "launch": _BOOL, "allow_any_path": _BOOL,
    "command_timeout_s": _SECONDS,
    "console_buffer": st.sampled_from(["10", "1000", "100000"]),
    "network_buffer": st.sampled_from(["10", "1000", "100000"]),
    "keepalive_count_max": st.sampled_from(["1", "3", "100"]),
    "call_log": st.sampled_from(['"/tmp/calls.jsonl"', '"~/c.jsonl"', "true", "false"]),
}
"""Values each known key accepts, so generated files often load and the invariants run."""


def _value_for(key: str) -> st.SearchStrategy[str]:
    good = GOOD.get(key, _SECONDS if key.endswith("_s") else None)
    return st.one_of(good, good, good, TOML_VALUE) if good is not None else TOML_VALUE


RECONNECT_KEYS = list(ReconnectPolicy.model_fields)
GATEWAY_KEYS = ["call_log", "allow_any_path"]
TARGET_NAMES = ["a", "b", "c"] * 4 + ["Z", '"../x"', '"a;b"', '"-o"', '""', "x" * 33]


def _keys_for(table: str) -> st.SearchStrategy[str]:
    """Mostly keys the table takes (repeated for weight), sometimes a wrong one."""
    if table.endswith(".reconnect"):
        right = RECONNECT_KEYS
    elif table.startswith("targets."):
        right = [k for k in TARGET_KEYS if k != "reconnect"]
    else:
        right = GATEWAY_KEYS
    return st.sampled_from(right * 20 + ["reconnect", "call_log", "port", "max_delay_s"])


@st.composite
def toml_documents(draw: st.DrawFn) -> str:
    """Syntactically valid TOML shaped like a targets file, so the validators run."""
    names = draw(st.lists(st.sampled_from(TARGET_NAMES), min_size=1, max_size=3, unique=True))
    targets = [f"targets.{n}" for n in names]
    others = ["gateway", *(f"{t}.reconnect" for t in targets)] * 4 + ["x"]
    tables = draw(st.lists(st.sampled_from(targets), min_size=1, unique=True))
    tables += draw(st.lists(st.sampled_from(others), max_size=3, unique=True))
    lines = []
    for table in tables:
        lines.append(f"[{table}]")
        for key in draw(st.lists(_keys_for(table), unique=True, max_size=6)):
            if f"{table}.{key}" in tables:
                continue  # defining a table twice is a syntax error; other cases cover that
            lines.append(f"{key} = {draw(_value_for(key))}")
    return "\n".join(lines) + "\n"


@FUZZ
@given(text=toml_documents())
def test_structured_targets_files(tmp_path: Path, text: str) -> None:
    """Near-valid files reach the validators (random text mostly fails in tomllib)."""
    _load(tmp_path, text)


@FUZZ
@given(text=toml_documents(), environ=st.dictionaries(st.sampled_from(ENV_NAMES), ENV_VALUES,
                                                      max_size=3))
def test_targets_file_with_random_environment(
    tmp_path: Path, text: str, environ: dict[str, str]
) -> None:
    environ.pop(ENV_CONFIG, None)
    _load(tmp_path, text, {"HOME": HOME, **environ})


@pytest.mark.parametrize("depth", [10, 1_000, 100_000])
def test_deep_documents_are_config_errors_or_fine(tmp_path: Path, depth: int) -> None:
    """Deep inline tables and arrays: tomllib recurses; the parser must not leak that."""
    _load(tmp_path, f"[targets.a]\nssh = {'[' * depth}{']' * depth}\n")
    _load(tmp_path, f"[targets.a]\nreconnect = {'{a = ' * depth}1{'}' * depth}\n")
