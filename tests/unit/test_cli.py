"""gateway.cli: the command line — options before or after the subcommand, with or
without one — and how each subcommand's log level is chosen."""

from __future__ import annotations

import pytest

from gateway.cli import _parser, log_level, parse_args

# (option tokens, the namespace attribute, its value)
OPTIONS = [
    (["--config", "targets.toml"], "config", "targets.toml"),
    (["--config=targets.toml"], "config", "targets.toml"),
    (["--log-level", "DEBUG"], "log_level", "DEBUG"),
    (["--read-only"], "read_only", True),
    (["--tools", "core,+network"], "tools", "core,+network"),
    (["--tools=all,-cdp"], "tools", "all,-cdp"),
]
OPTION_IDS = ["config", "config=", "log-level", "read-only", "tools", "tools="]

# (subcommand tokens before the options may follow, tokens after), expected command
SUBCOMMANDS = [
    ([], [], None),
    (["serve"], [], "serve"),
    (["call", "list_tabs"], [], "call"),
    (["call"], ["list_tabs", "{}"], "call"),
]


@pytest.mark.parametrize(("option", "attr", "value"), OPTIONS, ids=OPTION_IDS)
@pytest.mark.parametrize(("head", "tail", "command"), SUBCOMMANDS,
                         ids=["no-subcommand", "serve", "call", "call-args-after"])
def test_option_after_the_subcommand(option: list[str], attr: str, value: object,
                                     head: list[str], tail: list[str],
                                     command: str | None) -> None:
    args = parse_args([*head, *option, *tail])
    assert args.command == command
    assert getattr(args, attr) == value


@pytest.mark.parametrize(("option", "attr", "value"), OPTIONS, ids=OPTION_IDS)
@pytest.mark.parametrize(("head", "tail", "command"), SUBCOMMANDS[1:],
                         ids=["serve", "call", "call-args-after"])
def test_option_before_the_subcommand(option: list[str], attr: str, value: object,
                                      head: list[str], tail: list[str],
                                      command: str) -> None:
    """``--config F call TOOL``: the documented form that once exited 'invalid choice'."""
    args = parse_args([*option, *head, *tail])
    assert args.command == command
    assert getattr(args, attr) == value


@pytest.mark.parametrize("where", ["before", "after"])
@pytest.mark.parametrize(("option", "attr", "value"), OPTIONS[:3], ids=OPTION_IDS[:3])
def test_doctor_takes_the_shared_options_on_either_side(
        where: str, option: list[str], attr: str, value: object) -> None:
    argv = [*option, "doctor"] if where == "before" else ["doctor", *option]
    args = parse_args(argv)
    assert args.command == "doctor"
    assert getattr(args, attr) == value


def test_every_option_at_once_on_both_sides() -> None:
    args = parse_args(["--config", "a.toml", "--read-only", "call",
                       "--log-level", "ERROR", "navigate", '{"url": "about:blank"}'])
    assert (args.command, args.config, args.read_only, args.log_level) == (
        "call", "a.toml", True, "ERROR")
    assert (args.tool, args.arguments) == ("navigate", '{"url": "about:blank"}')


def test_defaults_without_options() -> None:
    for argv in ([], ["serve"], ["call", "list_tabs"], ["doctor"]):
        args = parse_args(argv)
        assert (args.config, args.log_level, args.read_only) == (None, None, False), argv


def test_after_the_subcommand_wins() -> None:
    args = parse_args(["--config", "outer.toml", "serve", "--config", "inner.toml"])
    assert args.config == "inner.toml"


def test_doctor_keeps_its_own_options() -> None:
    args = parse_args(["--config", "t.toml", "doctor", "--target", "ci", "--target",
                       "devvm", "--json"])
    assert (args.config, args.target, args.json) == ("t.toml", ["ci", "devvm"], True)
    assert parse_args(["doctor"]).target == []


def test_call_defaults_its_arguments_to_an_empty_object() -> None:
    args = parse_args(["call", "list_targets"])
    assert (args.tool, args.arguments) == ("list_targets", "{}")


@pytest.mark.parametrize("argv", [
    ["call", "browse_view", '{"tab": 3}', "--json"],
    ["call", "browse_view", "--json", '{"tab": 3}'],
    ["call", "--json", "browse_view", '{"tab": 3}'],
])
def test_call_takes_its_options_before_or_after_the_arguments(argv: list[str]) -> None:
    args = parse_args(argv)
    assert (args.tool, args.arguments, args.json) == ("browse_view", '{"tab": 3}', True)


@pytest.mark.parametrize(("argv", "message"), [
    (["--no-such-option"], "unrecognized arguments: --no-such-option"),
    (["serve", "--no-such-option"], "unrecognized arguments: --no-such-option"),
    (["--config"], "argument --config: expected one argument"),
    (["call", "--config"], "argument --config: expected one argument"),
    (["--log-level", "LOUD"], "argument --log-level: invalid choice: 'LOUD'"),
    (["doctor", "--log-level", "LOUD"], "argument --log-level: invalid choice: 'LOUD'"),
    (["launch"], "argument command: invalid choice: 'launch'"),
    (["call"], "the following arguments are required: tool"),
    (["doctor", "--read-only"], "unrecognized arguments: --read-only"),
    (["--read-only", "doctor"], "--read-only applies to serve and call, not doctor"),
    (["--tools", "core", "doctor"], "--tools applies to serve and call, not doctor"),
    (["doctor", "--tools", "core"], "unrecognized arguments: --tools"),
    (["doctor", "--target"], "argument --target: expected one argument"),
    (["--json", "doctor"], "unrecognized arguments: --json"),
    (["serve", "--json"], "unrecognized arguments: --json"),
    (["call", "list_tabs", "--json", "{}", "{}"], "unrecognized arguments: {}"),
    (["call", "list_tabs", "--bogus"], "unrecognized arguments: --bogus"),
])
def test_a_wrong_command_line_is_a_clear_error_with_exit_2(
        argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        parse_args(argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: chrome-ssh-gateway"), err
    assert message in err, err


@pytest.mark.parametrize(("argv", "environ", "expected"), [
    (["serve"], {}, "INFO"),
    ([], {}, "INFO"),
    (["call", "list_tabs"], {}, "INFO"),
    (["doctor"], {}, "WARNING"),
    (["serve", "--log-level", "DEBUG"], {}, "DEBUG"),
    (["--log-level", "DEBUG", "serve"], {}, "DEBUG"),
    (["doctor", "--log-level", "INFO"], {}, "INFO"),
    (["--log-level", "INFO", "doctor"], {}, "INFO"),
    (["serve"], {"CHROME_SSH_GATEWAY_LOG_LEVEL": "ERROR"}, "ERROR"),
    (["doctor"], {"CHROME_SSH_GATEWAY_LOG_LEVEL": "DEBUG"}, "DEBUG"),
    (["serve", "--log-level", "WARNING"], {"CHROME_SSH_GATEWAY_LOG_LEVEL": "DEBUG"}, "WARNING"),
])
def test_log_level(argv: list[str], environ: dict[str, str], expected: str) -> None:
    args = parse_args(argv)
    assert log_level(args.command, args.log_level, environ) == expected


def test_doctor_default_does_not_leak_into_serve() -> None:
    """One parser builds every subcommand: the doctor's quieter default must stay its own."""
    parser = _parser()
    parser.parse_args(["doctor"])
    args = parser.parse_args(["serve"])
    assert log_level(args.command, args.log_level, {}) == "INFO"

