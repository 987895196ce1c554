"""Rules of gateway.config: every accepted form, every refusal and its message.

Random input (hypothesis) is in test_config_fuzz.py."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest
from pydantic import ValidationError

from gateway.config import (
    TARGET_KEYS,
    CdpAddress,
    GatewayConfig,
    ReconnectPolicy,
    SshDestination,
    TargetConfig,
    default_call_log_path,
    load_config,
    parse_cdp_address,
    parse_ssh_destination,
)
from gateway.config.text import keyed
from gateway.errors import ConfigError

HOME = "/home/tester"
BASE_ENV = {"HOME": HOME}


def env(**values: str) -> dict[str, str]:
    return {**BASE_ENV, **values}


def write(tmp_path: Path, text: str, name: str = "targets.toml") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def load_file(tmp_path: Path, text: str, **environ: str) -> GatewayConfig:
    return load_config(env(**environ), write(tmp_path, text))


def file_error(tmp_path: Path, text: str) -> tuple[ConfigError, str]:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(env(), path)
    return info.value, path


def assert_error(err: ConfigError, source: str, key: str, *reason_parts: str) -> None:
    """The message names where (source, dotted key) and why."""
    text = str(err)
    assert err.source == source
    assert err.key == key
    assert text.startswith(f"{source}: {key}: " if key else f"{source}: ")
    for part in reason_parts:
        assert part in err.reason, (part, err.reason)


# --------------------------------------------------------------------------- SSH destination


@pytest.mark.parametrize(
    ("text", "expected", "shown"),
    [
        ("devvm", SshDestination("devvm", None, None), "devvm"),
        ("runner@ci-42", SshDestination("ci-42", "runner", None), "runner@ci-42"),
        ("u@host.example.com:2222", SshDestination("host.example.com", "u", 2222), None),
        ("10.0.0.5:22", SshDestination("10.0.0.5", None, 22), None),
        ("[::1]:2222", SshDestination("::1", None, 2222), None),
        ("me@[fe80::1%eth0]:22", SshDestination("fe80::1%eth0", "me", 22), None),
        ("[2001:db8::7]", SshDestination("2001:db8::7", None, None), "2001:db8::7"),
        ("::1", SshDestination("::1", None, None), None),
        ("me@2001:db8::7", SshDestination("2001:db8::7", "me", None), None),
        ("[devvm]:2200", SshDestination("devvm", None, 2200), "devvm:2200"),
        ("ssh://me@devvm:2200/", SshDestination("devvm", "me", 2200), "me@devvm:2200"),
        ("john@corp.example@devvm", SshDestination("devvm", "john@corp.example", None), None),
        ("  devvm\n", SshDestination("devvm", None, None), "devvm"),
        ("h:65535", SshDestination("h", None, 65535), None),
        ("h:1", SshDestination("h", None, 1), None),
    ],
)
def test_ssh_destination_valid(text: str, expected: SshDestination, shown: str | None) -> None:
    dest = parse_ssh_destination(text)
    assert dest == expected
    assert str(dest) == (shown if shown is not None else text)
    # str() is a form the parser reads back to the same value.
    assert parse_ssh_destination(str(dest)) == dest


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("dev vm", "whitespace"),
        ("dev\tvm", "whitespace"),
        ("devvm\x00", "control character"),
        ("dev\x1bvm", "control character"),
        ("-oProxyCommand=touch /tmp/x", "whitespace"),
        ("-oProxyCommand=x", "must not start with '-'"),
        ("u@-oProxyCommand=x", "must not start with '-'"),
        ("-u@host", "must not start with '-'"),
        ("@host", "empty user"),
        ("user@", "no host"),
        ("user@:22", "no host"),
        ("host:", "not a number"),
        ("host:ssh", "not a number"),
        ("host:+22", "not a number"),
        ("host:2_2", "not a number"),
        ("host:0", "out of range"),
        ("host:65536", "out of range"),
        ("host:999999", "not a number"),
        ("fe80::1:x:22:zz", "IPv6"),
        ("a:b:c", "[address]:port"),
        ("[::1", "without ']'"),
        ("[]:22", "empty brackets"),
        ("[::1]22", "after ']'"),
        ("[::1]:0", "out of range"),
        ("[nope:nope]:22", "not a valid IPv6"),
        ("ssh://h/path", "path"),
        ("ho'st", "cannot have"),
        ("us;er@host", "cannot have"),
        ("host%x", "cannot have"),
    ],
)
def test_ssh_destination_invalid(text: str, reason: str) -> None:
    with pytest.raises(ConfigError) as info, keyed("targets.toml", "targets.ci.ssh"):
        parse_ssh_destination(text)
    assert_error(info.value, "targets.toml", "targets.ci.ssh", reason)


# --------------------------------------------------------------------------- CDP address


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("http://localhost:9222", CdpAddress("localhost", 9222)),
        ("http://LocalHost:9222/", CdpAddress("localhost", 9222)),
        ("127.0.0.1:9333", CdpAddress("127.0.0.1", 9333)),
        ("localhost:9222", CdpAddress("localhost", 9222)),
        ("https://127.0.0.1:9222/json/version", CdpAddress("127.0.0.1", 9222)),
        (
            "ws://127.0.0.1:9222/devtools/browser/abc",
            CdpAddress("127.0.0.1", 9222, "/devtools/browser/abc"),
        ),
        (
            "WSS://[::1]:9222/devtools/browser/0f3c-41aa-9e2b",
            CdpAddress("::1", 9222, "/devtools/browser/0f3c-41aa-9e2b"),
        ),
        # Only a browser-level websocket path is worth keeping.
        ("ws://127.0.0.1:9222/devtools/page/ABC", CdpAddress("127.0.0.1", 9222)),
        ("http://127.0.0.1:9222/devtools/browser/abc", CdpAddress("127.0.0.1", 9222)),
        ("[::1]:9222", CdpAddress("::1", 9222)),
        ("0.0.0.0:1", CdpAddress("0.0.0.0", 1)),
        ("172.17.0.2:65535", CdpAddress("172.17.0.2", 65535)),
        (" 127.0.0.1:9222\n", CdpAddress("127.0.0.1", 9222)),
    ],
)
def test_cdp_address_valid(text: str, expected: CdpAddress) -> None:
    assert parse_cdp_address(text) == expected


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty"),
        ("http://localhost", "needs a port"),
        ("localhost", "needs a port"),
        ("[::1]", "needs a port"),
        ("http://localhost:", "not a number"),
        ("localhost:0", "out of range"),
        ("localhost:70000", "out of range"),
        ("localhost:http", "not a number"),
        ("example.com:9222", "must be an IP address or 'localhost'"),
        ("devvm:9222", "must be an IP address or 'localhost'"),
        ("127.1:9222", "must be an IP address or 'localhost'"),
        ("::1:9222", "brackets"),
        ("[::1:9222", "without ']'"),
        ("ftp://127.0.0.1:21", "scheme 'ftp'"),
        ("chrome://inspect", "scheme 'chrome'"),
        ("http://user@127.0.0.1:9222", "user@"),
        ("127.0.0.1:9222?x=1", "query"),
        ("ws://127.0.0.1:9222/devtools/browser/a#b", "query"),
        ("ws://127.0.0.1:9222/devtools/browser/", "malformed"),
        ("ws://127.0.0.1:9222/devtools/browser/a/b", "malformed"),
        ("127.0.0.1 :9222", "whitespace"),
        ("[fe80::1%a/b]:9222", "without ']'"),
        ("[fe80::1%a;b]:9222", "must be an IP address"),
    ],
)
def test_cdp_address_invalid(text: str, reason: str) -> None:
    with pytest.raises(ConfigError) as info, keyed("CDP_URL"):
        parse_cdp_address(text)
    assert_error(info.value, "CDP_URL", "", reason)


# --------------------------------------------------------------------------- env only


def test_embedded_default_when_nothing_is_set() -> None:
    config = load_config(env())
    assert config == GatewayConfig(
        targets=(TargetConfig(name="local", ssh=None, cdp=None, launch=True,
                              launch_temporary=True, keep_running=False),
                 TargetConfig(name="shared", shared=True)),
        call_log=None,
        source="embedded default",
    )
    assert [t.transport for t in config.targets] == ["local", "local"]


def test_shared_off_leaves_the_embedded_default_its_own_browser_only() -> None:
    config = load_config(env(CHROME_SSH_GATEWAY_SHARED="0"))
    assert [t.name for t in config.targets] == ["local"]


def test_shared_alone_follows_this_machines_shares_only() -> None:
    config = load_config(env(CHROME_SSH_GATEWAY_SHARED="1"))
    assert config.targets == (TargetConfig(name="shared", shared=True),)
    assert config.source == "env CHROME_SSH_GATEWAY_SHARED"


def test_shared_with_ssh_proxy_to_follows_the_shares_there() -> None:
    config = load_config(env(SSH_PROXY_TO="me@bastion", CHROME_SSH_GATEWAY_SHARED="yes"))
    assert config.targets == (TargetConfig(name="default", shared=True,
                                           ssh=SshDestination("bastion", "me", None)),)


@pytest.mark.parametrize(("extra", "variable"), [
    ({"CDP_URL": "127.0.0.1:9222"}, "CDP_URL"),
    ({"SSH_PROXY_TO": "me@b", "SSH_PROXY_PORT": "9333"}, "SSH_PROXY_PORT"),
    ({"CHROME_SSH_GATEWAY_LAUNCH": "1"}, "CHROME_SSH_GATEWAY_LAUNCH"),
    ({"CHROME_SSH_GATEWAY_BROWSERS": "all"}, "CHROME_SSH_GATEWAY_BROWSERS"),
])
def test_shared_refuses_what_does_not_apply(extra: dict[str, str], variable: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(env(CHROME_SSH_GATEWAY_SHARED="1", **extra))
    assert info.value.source == variable
    assert "CHROME_SSH_GATEWAY_SHARED=1" in info.value.reason


def test_shared_is_refused_beside_a_targets_file(tmp_path: Path) -> None:
    path = tmp_path / "t.toml"
    path.write_text('[targets.a]\ncdp = "127.0.0.1:9222"\n')
    with pytest.raises(ConfigError) as info:
        load_config(env(CHROME_SSH_GATEWAY_SHARED="1"), str(path))
    assert info.value.source == "CHROME_SSH_GATEWAY_SHARED"


def test_empty_env_values_count_as_unset() -> None:
    config = load_config(
        env(SSH_PROXY_TO="", CDP_URL="", SSH_PROXY_PORT="", CHROME_SSH_GATEWAY_CONFIG="")
    )
    assert config.source == "embedded default"


def test_ssh_proxy_to_makes_one_default_target() -> None:
    config = load_config(env(SSH_PROXY_TO="me@devvm"))
    assert config == GatewayConfig(
        targets=(TargetConfig(name="default", ssh=SshDestination("devvm", "me", None), cdp=None),),
        call_log=None,
        source="env SSH_PROXY_TO",
    )
    target = config.targets[0]
    assert target.transport == "ssh"
    assert target.launch is False
    assert target.host_key_policy == "strict"
    assert target.redact is True
    assert target.reconnect == ReconnectPolicy()


def test_ssh_proxy_to_with_cdp_url_and_port() -> None:
    config = load_config(
        env(
            SSH_PROXY_TO="[2001:db8::1]:2222",
            CDP_URL="ws://127.0.0.1:9222/devtools/browser/xyz",
            SSH_PROXY_PORT="9555",
        )
    )
    assert config.targets == (
        TargetConfig(
            name="default",
            ssh=SshDestination("2001:db8::1", None, 2222),
            cdp=CdpAddress("127.0.0.1", 9222, "/devtools/browser/xyz"),
            expose_port=9555,
        ),
    )


def test_cdp_url_alone_makes_a_local_target() -> None:
    config = load_config(env(CDP_URL="http://localhost:9333"))
    assert config == GatewayConfig(
        targets=(TargetConfig(name="local", ssh=None, cdp=CdpAddress("localhost", 9333)),),
        call_log=None,
        source="env CDP_URL",
    )
    assert config.targets[0].launch is False


@pytest.mark.parametrize(
    ("environ", "source", "reason"),
    [
        ({"SSH_PROXY_TO": "-oProxyCommand=x"}, "SSH_PROXY_TO", "must not start with '-'"),
        ({"SSH_PROXY_TO": "a b"}, "SSH_PROXY_TO", "whitespace"),
        ({"SSH_PROXY_TO": "h", "CDP_URL": "devvm:9222"}, "CDP_URL", "IP address"),
        ({"CDP_URL": "http://localhost"}, "CDP_URL", "needs a port"),
        ({"SSH_PROXY_TO": "h", "SSH_PROXY_PORT": "0"}, "SSH_PROXY_PORT", "out of range"),
        ({"SSH_PROXY_TO": "h", "SSH_PROXY_PORT": "65536"}, "SSH_PROXY_PORT", "out of range"),
        ({"SSH_PROXY_TO": "h", "SSH_PROXY_PORT": "x"}, "SSH_PROXY_PORT", "not a number"),
        ({"SSH_PROXY_PORT": "9555"}, "SSH_PROXY_PORT", "together with SSH_PROXY_TO"),
        ({"CDP_URL": "127.0.0.1:9222", "SSH_PROXY_PORT": "1"}, "SSH_PROXY_PORT", "SSH_PROXY_TO"),
    ],
)
def test_env_errors(environ: dict[str, str], source: str, reason: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(env(**environ))
    assert_error(info.value, source, "", reason)


# --------------------------------------------------------------------------- call log


def test_default_call_log_path_uses_xdg_cache_home_then_home() -> None:
    assert default_call_log_path({"HOME": "/h"}) == Path("/h/.cache/chrome-ssh-gateway/calls.jsonl")
    assert default_call_log_path({"HOME": "/h", "XDG_CACHE_HOME": "/xdg"}) == Path(
        "/xdg/chrome-ssh-gateway/calls.jsonl"
    )
    # The XDG spec says relative values are to be ignored.
    assert default_call_log_path({"HOME": "/h", "XDG_CACHE_HOME": "rel"}) == Path(
        "/h/.cache/chrome-ssh-gateway/calls.jsonl"
    )


@pytest.mark.parametrize("word", ["1", "true", "TRUE", "Yes", "on", " on "])
def test_mcp_debug_log_on_words_give_the_default_path(word: str) -> None:
    config = load_config(env(MCP_DEBUG_LOG=word))
    assert config.call_log == Path(HOME, ".cache/chrome-ssh-gateway/calls.jsonl")


@pytest.mark.parametrize("word", ["", "0", "false", "No", "OFF"])
def test_mcp_debug_log_off_words_give_none(word: str) -> None:
    assert load_config(env(MCP_DEBUG_LOG=word)).call_log is None


def test_mcp_debug_log_path() -> None:
    assert load_config(env(MCP_DEBUG_LOG="/var/log/gw.jsonl")).call_log == Path("/var/log/gw.jsonl")
    assert load_config(env(MCP_DEBUG_LOG="~/logs/gw.jsonl")).call_log == Path(HOME, "logs/gw.jsonl")


def test_mcp_debug_log_refuses_newline() -> None:
    with pytest.raises(ConfigError) as info:
        load_config(env(MCP_DEBUG_LOG="/tmp/a\nb"))
    assert_error(info.value, "MCP_DEBUG_LOG", "", "newline")


def test_file_call_log_and_env_precedence(tmp_path: Path) -> None:
    text = '[gateway]\ncall_log = "~/gw/calls.jsonl"\n[targets.a]\nssh = "a"\n'
    path = write(tmp_path, text)
    assert load_config(env(), path).call_log == Path(HOME, "gw/calls.jsonl")
    # Env wins over the file when set non-empty, in both directions.
    assert load_config(env(MCP_DEBUG_LOG="off"), path).call_log is None
    assert load_config(env(MCP_DEBUG_LOG="/x.jsonl"), path).call_log == Path("/x.jsonl")
    # ...and an empty env value means "not set".
    assert load_config(env(MCP_DEBUG_LOG=""), path).call_log == Path(HOME, "gw/calls.jsonl")


def test_file_call_log_booleans(tmp_path: Path) -> None:
    off = load_file(tmp_path, "[gateway]\ncall_log = false\n[targets.a]\n")
    assert off.call_log is None
    on = load_file(tmp_path, "[gateway]\ncall_log = true\n[targets.a]\n", XDG_CACHE_HOME="/c")
    assert on.call_log == Path("/c/chrome-ssh-gateway/calls.jsonl")
    assert load_file(tmp_path, "[targets.a]\n").call_log is None


# --------------------------------------------------------------------------- targets file

FULL_FILE = """
[gateway]
call_log = "/var/tmp/calls.jsonl"
read_only = true

[targets.devvm]
ssh = "devvm"

[targets.ci]
ssh = "runner@ci-42"
cdp = "127.0.0.1:9333"
profile = "/tmp/ci-chrome"
host_key_policy = "accept-new"
expose = 9555
redact = false
command_timeout_s = 45
allow_cdp = true
cdp_allow = ["Runtime.*", "Page.reload"]
allow_evaluate = false
allow_schemes = ["file", "view-source"]

[targets.ci.reconnect]
initial_delay_s = 1
max_delay_s = 60.5
connect_timeout_s = 5
keepalive_interval_s = 30
keepalive_count_max = 5
call_wait_s = 0

[targets.local]
cdp = "127.0.0.1:9222"
launch = true

[targets.disc_1]
"""


def test_full_file_parses_to_exact_config(tmp_path: Path) -> None:
    path = write(tmp_path, FULL_FILE)
    config = load_config(env(), path)
    assert config == GatewayConfig(
        targets=(
            TargetConfig(name="devvm", ssh=SshDestination("devvm", None, None), cdp=None),
            TargetConfig(
                name="ci",
                ssh=SshDestination("ci-42", "runner", None),
                cdp=CdpAddress("127.0.0.1", 9333),
                profile="/tmp/ci-chrome",
                host_key_policy="accept-new",
                expose_port=9555,
                redact=False,
                command_timeout_s=45.0,
                reconnect=ReconnectPolicy(
                    initial_delay_s=1.0,
                    max_delay_s=60.5,
                    connect_timeout_s=5.0,
                    keepalive_interval_s=30.0,
                    keepalive_count_max=5,
                    call_wait_s=0.0,
                ),
                cdp_allow=("Runtime.*", "Page.reload"),
                allow_evaluate=False,
                allow_schemes=frozenset({"file", "view-source"}),
            ),
            TargetConfig(name="local", ssh=None, cdp=CdpAddress("127.0.0.1", 9222), launch=True),
            TargetConfig(name="disc_1", ssh=None, cdp=None),
        ),
        call_log=Path("/var/tmp/calls.jsonl"),
        source=path,
        read_only=True,
    )
    assert [t.transport for t in config.targets] == ["ssh", "ssh", "local", "local"]
    assert isinstance(config.targets[1].command_timeout_s, float)


def test_partial_reconnect_table_keeps_other_defaults(tmp_path: Path) -> None:
    config = load_file(tmp_path, '[targets.a]\nssh = "a"\n[targets.a.reconnect]\nmax_delay_s = 2\n')
    assert config.targets[0].reconnect == ReconnectPolicy(max_delay_s=2.0)


def test_profile_may_start_with_tilde(tmp_path: Path) -> None:
    config = load_file(tmp_path, '[targets.a]\nssh = "a"\nprofile = "~/chrome-prof"\n')
    # Kept as written: "~" means the home directory on the target host.
    assert config.targets[0].profile == "~/chrome-prof"


def test_config_path_from_env_and_tilde(tmp_path: Path) -> None:
    write(tmp_path, '[targets.a]\nssh = "a"\n', name="gw.toml")
    config = load_config({"HOME": str(tmp_path), "CHROME_SSH_GATEWAY_CONFIG": "~/gw.toml"})
    assert config.source == str(tmp_path / "gw.toml")
    assert [t.name for t in config.targets] == ["a"]


def test_config_argument_wins_over_env_variable(tmp_path: Path) -> None:
    arg = write(tmp_path, '[targets.from_arg]\nssh = "a"\n', name="arg.toml")
    env_file = write(tmp_path, '[targets.from_env]\nssh = "a"\n', name="env.toml")
    config = load_config(env(CHROME_SSH_GATEWAY_CONFIG=env_file), arg)
    assert config.source == arg
    assert [t.name for t in config.targets] == ["from_arg"]


@pytest.mark.parametrize("var", ["SSH_PROXY_TO", "CDP_URL", "SSH_PROXY_PORT"])
def test_file_and_single_target_env_are_exclusive(tmp_path: Path, var: str) -> None:
    path = write(tmp_path, '[targets.a]\nssh = "a"\n')
    values = {"SSH_PROXY_TO": "me@devvm", "CDP_URL": "127.0.0.1:9222", "SSH_PROXY_PORT": "9555"}
    with pytest.raises(ConfigError) as info:
        load_config(env(**{var: values[var]}), path)
    assert_error(info.value, var, "", "not both", path)


def test_missing_file(tmp_path: Path) -> None:
    path = str(tmp_path / "nope.toml")
    with pytest.raises(ConfigError) as info:
        load_config(env(), path)
    assert_error(info.value, path, "", "not found")


def test_directory_instead_of_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(env(), str(tmp_path))
    assert_error(info.value, str(tmp_path), "", "directory")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_file(tmp_path: Path) -> None:
    path = write(tmp_path, '[targets.a]\nssh = "a"\n')
    Path(path).chmod(0)
    try:
        with pytest.raises(ConfigError) as info:
            load_config(env(), path)
        assert_error(info.value, path, "", "cannot read", "ermission")
    finally:
        Path(path).chmod(0o600)


def test_unreadable_path_component(tmp_path: Path) -> None:
    """A path through a regular file fails with ENOTDIR: still a ConfigError."""
    parent = write(tmp_path, "x")
    path = parent + "/targets.toml"
    with pytest.raises(ConfigError) as info:
        load_config(env(), path)
    assert_error(info.value, path, "", "cannot read")


def test_empty_config_argument() -> None:
    with pytest.raises(ConfigError) as info:
        load_config(env(), "")
    assert_error(info.value, "--config", "", "empty path")


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "t.toml"
    path.write_bytes(b'[targets.a]\nssh = "\xff"\n')
    with pytest.raises(ConfigError) as info:
        load_config(env(), str(path))
    assert_error(info.value, str(path), "", "UTF-8")


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("[targets.a\n", "line 1"),
        ('[targets.a]\nssh = "a"\nssh = "b"\n', "line 3"),
        ("[targets.a]\nexpose = \n", "line 2, column 10"),
        ("[targets.a]\n[targets.a]\n", "line 2"),
    ],
)
def test_toml_syntax_error_names_line_and_column(tmp_path: Path, text: str, where: str) -> None:
    err, path = file_error(tmp_path, text)
    assert_error(err, path, "", "TOML syntax error", where)


def test_pathological_toml_is_a_config_error(tmp_path: Path) -> None:
    err, path = file_error(tmp_path, "x = " + "[" * 5000 + "]" * 5000 + "\n")
    assert_error(err, path, "", "nested too deeply")
    err, path = file_error(tmp_path, "x = " + "9" * 5000 + "\n")
    assert_error(err, path, "", "TOML value rejected")


@pytest.mark.parametrize(
    ("text", "key", "reasons"),
    [
        # structure
        ("", "targets", ["no targets"]),
        ("[gateway]\n", "targets", ["no targets"]),
        ("[targets]\n", "targets", ["no targets"]),
        ("targets = 3\n", "targets", ["expected a table", "integer"]),
        ("[target.a]\n", "target", ["unknown top-level", "[gateway]", "[targets.<name>]"]),
        ('"odd key" = 1\n[targets.a]\n', '"odd key"', ["unknown top-level"]),
        ("gateway = 1\n[targets.a]\n", "gateway", ["expected a table"]),
        ("[gateway]\nlog = 1\n[targets.a]\n", "gateway.log", ["unknown key", "call_log"]),
        ("[gateway]\ncall_log = 1\n[targets.a]\n", "gateway.call_log", ["path string"]),
        ('[gateway]\ncall_log = ""\n[targets.a]\n', "gateway.call_log", ["use false"]),
        ('[gateway]\ncall_log = "a\\u0000b"\n[targets.a]\n', "gateway.call_log", ["NUL"]),
        # target names
        ("[targets.Dev]\n", "targets.Dev", ["target name 'Dev'", "a-z"]),
        ('[targets."a.b"]\n', 'targets."a.b"', ["target name", "a-z"]),
        ('[targets.""]\n', 'targets.""', ["target name"]),
        ("[targets." + "a" * 33 + "]\n", "targets." + "a" * 33, ["1-32"]),
        ("[targets]\na = 1\n", "targets.a", ["expected a table", "integer"]),
        # unknown keys list the allowed ones
        ("[targets.a]\nhost = 'x'\n", "targets.a.host", ["unknown key", ", ".join(TARGET_KEYS)]),
        # the file spells it expose; the Python name is not a second spelling
        ("[targets.a]\nexpose_port = 1\n", "targets.a.expose_port", ["unknown key", "expose,"]),
        ("[targets.a]\nname = 'a'\n", "targets.a.name", ["unknown key"]),
        (
            "[targets.a.reconnect]\nretries = 1\n",
            "targets.a.reconnect.retries",
            ["unknown key", "initial_delay_s", "keepalive_count_max"],
        ),
        ("[targets.a]\nreconnect = 1\n", "targets.a.reconnect", ["expected a table"]),
        # types (bool is not int, int is not bool, ...)
        ("[targets.a]\nssh = 1\n", "targets.a.ssh", ["expected a string", "integer"]),
        ("[targets.a]\ncdp = 9222\n", "targets.a.cdp", ["expected a string", "integer"]),
        ("[targets.a]\nprofile = false\n", "targets.a.profile", ["string", "boolean"]),
        ("[targets.a]\nexpose = true\n", "targets.a.expose", ["expected an integer", "boolean"]),
        ("[targets.a]\nexpose = '9555'\n", "targets.a.expose", ["expected an integer", "string"]),
        ("[targets.a]\nexpose = 9555.0\n", "targets.a.expose", ["expected an integer", "float"]),
        ("[targets.a]\nredact = 1\n", "targets.a.redact", ["true or false", "integer"]),
        ("[targets.a]\nredact = 'no'\n", "targets.a.redact", ["true or false", "string"]),
        ("[targets.a]\nlaunch = 0\n", "targets.a.launch", ["true or false"]),
        ("[targets.a]\ncommand_timeout_s = true\n", "targets.a.command_timeout_s", ["boolean"]),
        ("[targets.a]\ncommand_timeout_s = '30'\n", "targets.a.command_timeout_s", ["string"]),
        (
            "[targets.a]\ncommand_timeout_s = 1979-05-27\n",
            "targets.a.command_timeout_s",
            ["number of seconds"],
        ),
        ("[targets.a]\nssh = ['a']\n", "targets.a.ssh", ["array"]),
        (
            "[targets.a.reconnect]\nkeepalive_count_max = 2.5\n",
            "targets.a.reconnect.keepalive_count_max",
            ["expected an integer", "float"],
        ),
        (
            "[targets.a.reconnect]\nkeepalive_count_max = true\n",
            "targets.a.reconnect.keepalive_count_max",
            ["boolean"],
        ),
        # values
        ("[targets.a]\nhost_key_policy = 'off'\n", "targets.a.host_key_policy", ["'strict'"]),
        ("[targets.a]\nhost_key_policy = 'Strict'\n", "targets.a.host_key_policy", ["accept-new"]),
        ("[targets.a]\nhost_key_policy = 1\n", "targets.a.host_key_policy", ["got integer"]),
        ("[targets.a]\nexpose = 0\n", "targets.a.expose", ["out of range", "1..65535"]),
        ("[targets.a]\nexpose = 65536\n", "targets.a.expose", ["out of range"]),
        ("[targets.a]\nexpose = -1\n", "targets.a.expose", ["out of range"]),
        ("[targets.a]\ncommand_timeout_s = 0\n", "targets.a.command_timeout_s", ["> 0"]),
        ("[targets.a]\ncommand_timeout_s = -5\n", "targets.a.command_timeout_s", ["> 0"]),
        ("[targets.a]\ncommand_timeout_s = 3601\n", "targets.a.command_timeout_s", ["3600"]),
        ("[targets.a]\ncommand_timeout_s = inf\n", "targets.a.command_timeout_s", ["sane"]),
        ("[targets.a]\ncommand_timeout_s = nan\n", "targets.a.command_timeout_s", ["sane"]),
        (
            "[targets.a.reconnect]\ninitial_delay_s = 0\n",
            "targets.a.reconnect.initial_delay_s",
            ["> 0"],
        ),
        (
            "[targets.a.reconnect]\nconnect_timeout_s = 1e9\n",
            "targets.a.reconnect.connect_timeout_s",
            ["3600"],
        ),
        (
            "[targets.a.reconnect]\nkeepalive_interval_s = -inf\n",
            "targets.a.reconnect.keepalive_interval_s",
            ["sane"],
        ),
        (
            "[targets.a.reconnect]\nkeepalive_count_max = 0\n",
            "targets.a.reconnect.keepalive_count_max",
            ["1..100"],
        ),
        (
            "[targets.a.reconnect]\ninitial_delay_s = 20\n",
            "targets.a.reconnect.max_delay_s",
            ["smaller than initial_delay_s"],
        ),
        ("[targets.a]\ncdp = 'ws://127.0.0.1:9/devtools/browser/x'\nlaunch = true\n",
         "targets.a.launch", ["no /devtools/browser/"]),
        ("[targets.a]\nheadless = false\n", "targets.a.headless", ["only applies with launch"]),
        ("[targets.a]\nlaunch = true\ndisplay = ':0'\n", "targets.a.display",
         ["only applies with headless = false"]),
        ("[targets.a]\nlaunch = true\nheadless = false\ndisplay = ':0;x'\n",
         "targets.a.display", ["is invalid"]),
        ("[targets.a]\nlaunch = true\nchrome_args = ['-x']\n", "targets.a.chrome_args",
         ["not a Chrome flag"]),
        ("[targets.a]\nlaunch = true\nchrome_args = ['--user-data-dir=/x']\n",
         "targets.a.chrome_args", ["set by the gateway"]),
        ("[targets.a]\nlaunch = true\nlaunch_profile = 'rel/dir'\n", "targets.a.launch_profile",
         ["absolute"]),
        ("[targets.a]\nlaunch = true\nkeep_running = 1\n", "targets.a.keep_running",
         ["true or false"]),
        ("[targets.a]\nssh = '-oProxyCommand=x'\n", "targets.a.ssh", ["must not start with '-'"]),
        ("[targets.a]\nssh = ''\n", "targets.a.ssh", ["empty"]),
        ("[targets.a]\nssh = 'u@h:99999'\n", "targets.a.ssh", ["out of range"]),
        ("[targets.a]\ncdp = 'devvm:9222'\n", "targets.a.cdp", ["IP address or 'localhost'"]),
        ("[targets.a]\ncdp = 'http://localhost'\n", "targets.a.cdp", ["needs a port"]),
        # profile paths
        ("[targets.a]\nprofile = 'tmp/prof'\n", "targets.a.profile", ["absolute", "'~/'"]),
        ("[targets.a]\nprofile = '~'\n", "targets.a.profile", ["absolute"]),
        ("[targets.a]\nprofile = '~user/p'\n", "targets.a.profile", ["absolute"]),
        ("[targets.a]\nprofile = '/tmp/../etc'\n", "targets.a.profile", ["'..'"]),
        ("[targets.a]\nprofile = '~/..'\n", "targets.a.profile", ["'..'"]),
        ('[targets.a]\nprofile = "/tmp/a\\nb"\n', "targets.a.profile", ["newline"]),
        ('[targets.a]\nprofile = "/tmp/a\\u0000b"\n', "targets.a.profile", ["NUL"]),
        # policy keys
        ("[targets.a]\nallow_cdp = 'no'\n", "targets.a.allow_cdp", ["expected true or false"]),
        ("[targets.a]\ncdp_allow = 'Runtime.*'\n", "targets.a.cdp_allow",
         ["expected an array of strings, got string"]),
        ("[targets.a]\ncdp_allow = []\n", "targets.a.cdp_allow", ["allows nothing",
                                                                  "allow_cdp = false"]),
        ("[targets.a]\ncdp_allow = ['Runtime.*', 1]\n", "targets.a.cdp_allow",
         ["found integer"]),
        ("[targets.a]\ncdp_allow = ['runtime.*']\n", "targets.a.cdp_allow",
         ["'runtime.*' is not a CDP method pattern", "Domain.*"]),
        ("[targets.a]\ncdp_allow = ['*']\n", "targets.a.cdp_allow", ["not a CDP method"]),
        ("[targets.a]\ncdp_allow = ['Runtime.eval*']\n", "targets.a.cdp_allow",
         ["not a CDP method"]),
        ("[targets.a]\nallow_schemes = ['javascript']\n", "targets.a.allow_schemes",
         ["never navigated to"]),
        ("[targets.a]\nallow_schemes = ['ftp']\n", "targets.a.allow_schemes",
         ["'ftp' cannot be allowed", "file"]),
        ("[targets.a]\nallow_schemes = ['FILE']\n", "targets.a.allow_schemes",
         ["cannot be allowed"]),
        ("[targets.a.reconnect]\ncall_wait_s = -1\n", "targets.a.reconnect.call_wait_s",
         ["seconds >= 0"]),
        ("[gateway]\nread_only = 1\n[targets.a]\n", "gateway.read_only",
         ["expected true or false"]),
        # duplicate expose ports name the first user
        (
            "[targets.a]\nexpose = 9555\n[targets.b]\nexpose = 9555\n",
            "targets.b.expose",
            ["9555", "already exposed by target 'a'"],
        ),
    ],
)
def test_file_errors(tmp_path: Path, text: str, key: str, reasons: list[str]) -> None:
    err, path = file_error(tmp_path, text)
    assert_error(err, path, key, *reasons)
    assert path in str(err) and key in str(err)


def test_policy_defaults_allow_everything_but_opt_in_schemes(tmp_path: Path) -> None:
    target = load_file(tmp_path, "[targets.a]\n").targets[0]
    assert (target.allow_cdp, target.cdp_allow, target.allow_evaluate) == (True, None, True)
    assert target.allow_schemes == frozenset()
    assert target.reconnect.call_wait_s == 10.0


@pytest.mark.parametrize("word", ["1", "true", "YES", "on"])
def test_read_only_env_switch_turns_it_on(word: str) -> None:
    assert load_config(env(CHROME_SSH_GATEWAY_READ_ONLY=word)).read_only is True


@pytest.mark.parametrize("word", ["0", "false", "no", "off"])
def test_read_only_env_off_words_and_the_flag(word: str) -> None:
    assert load_config(env(CHROME_SSH_GATEWAY_READ_ONLY=word)).read_only is False
    # The env var can never turn off what the --read-only flag turned on.
    assert load_config(env(CHROME_SSH_GATEWAY_READ_ONLY=word), read_only=True).read_only is True


def test_read_only_env_refuses_other_words() -> None:
    with pytest.raises(ConfigError) as info:
        load_config(env(CHROME_SSH_GATEWAY_READ_ONLY="maybe"))
    assert str(info.value).startswith("CHROME_SSH_GATEWAY_READ_ONLY: 'maybe' is not a switch")


def test_profile_with_dots_in_names_is_fine(tmp_path: Path) -> None:
    config = load_file(tmp_path, "[targets.a]\nprofile = '/tmp/..hidden/a.b'\n")
    assert config.targets[0].profile == "/tmp/..hidden/a.b"


def test_seconds_boundaries(tmp_path: Path) -> None:
    config = load_file(tmp_path, "[targets.a]\ncommand_timeout_s = 3600\n")
    assert config.targets[0].command_timeout_s == 3600.0
    config = load_file(tmp_path, "[targets.a]\ncommand_timeout_s = 0.001\n")
    assert math.isclose(config.targets[0].command_timeout_s, 0.001)


# --------------------------------------------------------------------------- built from code


def test_target_built_from_code_parses_address_strings() -> None:
    """Runtime targets are built from what a user typed: the same parsers apply."""
    target = TargetConfig.model_validate(
        {"name": "ci", "ssh": "me@ci-42:2222", "cdp": "ws://[::1]:9/devtools/browser/x"})
    assert target == TargetConfig(name="ci", ssh=SshDestination("ci-42", "me", 2222),
                                  cdp=CdpAddress("::1", 9, "/devtools/browser/x"))
    assert (target.profile, target.launch, target.reconnect) == (None, False, ReconnectPolicy())


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"name": "Bad"}, "target name 'Bad' is invalid"),
        ({"name": "a", "ssh": "-oProxyCommand=x"}, "must not start with '-'"),
        ({"name": "a", "cdp": "devvm:9222"}, "IP address or 'localhost'"),
        ({"name": "a", "expose_port": 0}, "out of range"),
        ({"name": "a", "redact": 1}, "bool"),
        ({"name": "a", "ssh": "h", "keep_running": False}, "only applies with launch"),
        ({"name": "a", "launch_temporary": True}, "launch_temporary needs"),
        ({"name": "a", "reconnect": ReconnectPolicy(), "command_timeout_s": math.inf}, "sane"),
    ],
)
def test_target_built_from_code_is_validated(fields: dict[str, object], reason: str) -> None:
    with pytest.raises(ValidationError) as info:
        TargetConfig(**fields)  # type: ignore[arg-type]
    assert reason in str(info.value)


def test_configs_are_frozen_and_copied_with_changes() -> None:
    target = TargetConfig(name="a")
    with pytest.raises(ValidationError):
        target.profile = "/tmp/p"  # type: ignore[misc]
    copy = target.model_copy(update={"profile": "/tmp/p"})
    assert (copy.profile, copy.name, target.profile) == ("/tmp/p", "a", None)


def test_tools_flag_beats_env_beats_file(tmp_path: Path) -> None:
    text = "[gateway]\ntools = 'core'\n[targets.a]\n"
    from_file = load_file(tmp_path, text)
    assert (from_file.tools, from_file.tools_source) == ("core", f"{tmp_path / 'targets.toml'}: "
                                                                  "gateway.tools")
    from_env = load_file(tmp_path, text, CHROME_SSH_GATEWAY_TOOLS="all,-cdp")
    assert (from_env.tools, from_env.tools_source) == ("all,-cdp", "CHROME_SSH_GATEWAY_TOOLS")
    path = str(tmp_path / "targets.toml")
    flag = load_config(env(CHROME_SSH_GATEWAY_TOOLS="all,-cdp"), path, tools="core,+network")
    assert (flag.tools, flag.tools_source) == ("core,+network", "--tools")
    assert (load_config(env()).tools, load_config(env()).tools_source) == ("default", "--tools")

# --------------------------------------------------------------------------- launching


def test_launch_env_switch_on_the_ssh_target() -> None:
    [target] = load_config(env(SSH_PROXY_TO="alice@devvm",
                               CHROME_SSH_GATEWAY_LAUNCH="1")).targets
    assert (target.launch, target.keep_running, target.headless) == (True, True, True)
    assert target.launch_dir == "~/.cache/chrome-ssh-gateway/default"
    [plain] = load_config(env(SSH_PROXY_TO="alice@devvm", CHROME_SSH_GATEWAY_LAUNCH="0")).targets
    assert plain.launch is False


def test_launch_env_switch_refuses_other_words_and_a_remote_cdp() -> None:
    with pytest.raises(ConfigError) as info:
        load_config(env(SSH_PROXY_TO="h", CHROME_SSH_GATEWAY_LAUNCH="sure"))
    assert str(info.value).startswith("CHROME_SSH_GATEWAY_LAUNCH: 'sure' is not a switch")
    with pytest.raises(ConfigError) as info:
        load_config(env(SSH_PROXY_TO="h", CDP_URL="ws://127.0.0.1:9/devtools/browser/x",
                        CHROME_SSH_GATEWAY_LAUNCH="1"))
    assert str(info.value).startswith("CHROME_SSH_GATEWAY_LAUNCH: with cdp, launch starts")


def test_launch_env_switch_and_a_targets_file_are_exclusive(tmp_path: Path) -> None:
    path = write(tmp_path, "[targets.a]\nssh = 'h'\n")
    with pytest.raises(ConfigError) as info:
        load_config(env(CHROME_SSH_GATEWAY_LAUNCH="yes"), path)
    assert "set either CHROME_SSH_GATEWAY_LAUNCH or a targets file" in str(info.value)


def test_launch_keys_parse_and_the_profile_defaults(tmp_path: Path) -> None:
    config = load_file(tmp_path, """
[targets.devvm]
ssh = "alice@devvm"
launch = true
launch_profile = "~/.cache/chrome-ssh-gateway/devvm-x"
headless = false
display = "wayland-0"
chrome_args = ["--lang=en-US"]
keep_running = false

[targets.plain]
ssh = "alice@devvm"
launch = true

[targets.shared]
ssh = "alice@devvm"
profile = "~/.config/chromium"
launch = true
""")
    devvm, plain, shared = config.targets
    assert (devvm.launch_dir, devvm.headless, devvm.display, devvm.chrome_args,
            devvm.keep_running) == ("~/.cache/chrome-ssh-gateway/devvm-x", False, "wayland-0",
                                    ("--lang=en-US",), False)
    assert plain.launch_dir == "~/.cache/chrome-ssh-gateway/plain"
    assert shared.launch_dir == "~/.config/chromium"  # launched where discovery looks
    assert load_config(env()).targets[0].launch_dir is None  # the embedded default: temporary


@pytest.mark.parametrize(("key", "value"), [
    ("cdp", '"127.0.0.1:9222"'), ("profile", '"/p"'), ("launch", "true"),
    ("webdriver", '"http://127.0.0.1:9515"'), ("expose", "9333"), ("browsers", '"all"')])
def test_shared_refuses_what_finds_one_browser(tmp_path: Path, key: str, value: str) -> None:
    path = tmp_path / "t.toml"
    path.write_text(f'[targets.a]\nssh = "me@h"\nshared = true\n{key} = {value}\n')
    with pytest.raises(ConfigError) as info:
        load_config(env(), str(path))
    assert info.value.key == f"targets.a.{key}"
    assert "shared = true serves the browsers shared to the host" in info.value.reason


def test_shares_are_looked_at_every_second_unless_told() -> None:
    assert TargetConfig(name="a", shared=True).look_interval_s == 1.0
    assert TargetConfig(name="a", browsers="all").look_interval_s == 2.0
    assert TargetConfig(name="a", shared=True, scan_interval_s=0.5).look_interval_s == 0.5
