"""gateway.cli: how each subcommand's log level is chosen."""

from __future__ import annotations

import pytest

from gateway.cli import _parser, log_level


@pytest.mark.parametrize(("argv", "environ", "expected"), [
    (["serve"], {}, "INFO"),
    ([], {}, "INFO"),
    (["call", "list_tabs"], {}, "INFO"),
    (["doctor"], {}, "WARNING"),
    (["serve", "--log-level", "DEBUG"], {}, "DEBUG"),
    (["doctor", "--log-level", "INFO"], {}, "INFO"),
    (["serve"], {"CHROME_SSH_GATEWAY_LOG_LEVEL": "ERROR"}, "ERROR"),
    (["doctor"], {"CHROME_SSH_GATEWAY_LOG_LEVEL": "DEBUG"}, "DEBUG"),
    (["serve", "--log-level", "WARNING"], {"CHROME_SSH_GATEWAY_LOG_LEVEL": "DEBUG"}, "WARNING"),
])
def test_log_level(argv: list[str], environ: dict[str, str], expected: str) -> None:
    args = _parser().parse_args(argv)
    assert log_level(args.command, args.log_level, environ) == expected


def test_doctor_default_does_not_leak_into_serve() -> None:
    """One parser builds every subcommand: the doctor's quieter default must stay its own."""
    parser = _parser()
    parser.parse_args(["doctor"])
    args = parser.parse_args(["serve"])
    assert log_level(args.command, args.log_level, {}) == "INFO"
