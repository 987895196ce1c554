"""Command line: ``serve`` (the MCP server on stdio, the default), ``call`` and ``doctor``.

``call TOOL 'JSON'`` runs one tool in process, through the same MCP server an
agent talks to, prints the result as JSON on stdout and exits non-zero when
the tool returned an error — a quick check of a target before wiring up an
agent.

``doctor`` checks every target step by step (see ``gateway.doctor``) and prints a
table, or with ``--json`` one JSON document. Exit status: 0 every target up,
1 some target down, 2 a configuration error (or an unknown ``--target``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import anyio

from gateway import __version__
from gateway.config import GatewayConfig, load_config
from gateway.errors import ConfigError
from gateway.server.log_setup import configure_logging

__all__ = ["log_level", "main", "parse_args"]


_LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


def _add_options(parser: argparse.ArgumentParser, *, top: bool, serving: bool) -> None:
    """The options every subcommand shares, on the top-level parser (``top``) or a
    subcommand's, so that ``--config F call TOOL``, ``call --config F TOOL`` and
    ``--config F`` (no subcommand: ``serve``) all work.

    A subcommand's copies default to ``SUPPRESS``: argparse lets a subparser's
    defaults overwrite what the top-level parser already stored, so a real default
    there would erase an option given before the subcommand."""
    unset: Any = None if top else argparse.SUPPRESS
    parser.add_argument("--config", metavar="PATH", default=unset,
                        help="targets file (TOML); default $CHROME_SSH_GATEWAY_CONFIG")
    parser.add_argument("--log-level", default=unset, choices=_LOG_LEVELS,
                        help="stderr log level (default $CHROME_SSH_GATEWAY_LOG_LEVEL, "
                             "else INFO; WARNING for doctor)")
    if serving:
        parser.add_argument("--read-only", action="store_true",
                            default=False if top else argparse.SUPPRESS,
                            help="offer only tools that change nothing in the browsers "
                                 "(also $CHROME_SSH_GATEWAY_READ_ONLY=1; serve and call)")
        parser.add_argument("--tools", metavar="SPEC", default=unset,
                            help="tools to offer: all (default), core, categories or tool "
                                 "names, comma-separated, -name removes (e.g. core,+network "
                                 "or all,-cdp; also $CHROME_SSH_GATEWAY_TOOLS)")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="chrome-ssh-gateway",
        description="MCP server that drives Chrome browsers on other machines over SSH. "
                    "Without a subcommand: serve. Options go before or after the subcommand.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    _add_options(parser, top=True, serving=True)
    sub = parser.add_subparsers(dest="command")
    serve = sub.add_parser("serve", help="serve MCP on stdin/stdout (default)")
    _add_options(serve, top=False, serving=True)
    call = sub.add_parser("call", help="run one tool and print its result")
    _add_options(call, top=False, serving=True)
    call.add_argument("tool", help="tool name, e.g. list_tabs")
    call.add_argument("arguments", nargs="?", default="{}", help="tool arguments as JSON")
    doctor = sub.add_parser(
        "doctor",
        help="check every target step by step and say what to fix",
        description="Check each target: config, DNS, TCP, host key, SSH login, DevTools "
                    "endpoint, websocket, browser version, tabs. Exit 0 when every target "
                    "is up, 1 when one is down, 2 for a configuration error.")
    _add_options(doctor, top=False, serving=False)
    doctor.add_argument("--target", action="append", default=[], metavar="NAME",
                        help="check only this target (repeatable)")
    doctor.add_argument("--json", action="store_true", help="print one JSON document")
    return parser


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line as a namespace with ``command`` (None: serve), ``config``,
    ``log_level``, ``read_only`` and the subcommand's own options; a wrong command line
    exits 2 with argparse's message."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "doctor":
        # Given before the subcommand: the top-level parser took it. doctor offers no
        # tools, so the flag would silently mean nothing.
        for flag, given in (("--read-only", args.read_only), ("--tools", args.tools)):
            if given:
                parser.error(f"{flag} applies to serve and call, not doctor")
    return args


async def _call(config: GatewayConfig, tool: str, arguments: dict[str, Any]) -> int:
    from mcp import Client

    from gateway.server.app import running_server

    async with running_server(config) as (server, gateway), Client(server) as client:
        # A one-shot call should see the targets as they are, not mid-connect.
        async with anyio.create_task_group() as tg:
            for target in gateway.targets.values():
                tg.start_soon(target.settled)
        result = await client.call_tool(tool, arguments)
    if result.is_error:
        text = " ".join(getattr(c, "text", "") for c in result.content)
        print(f"error: {text}", file=sys.stderr)
        return 1
    payload: Any = result.structured_content
    if payload is None:
        payload = [c.model_dump(mode="json", exclude_none=True) for c in result.content]
    sys.stdout.write(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
    return 0


async def _doctor(config_path: str | None, names: list[str], as_json: bool) -> int:
    from gateway.doctor import render_text, run_doctor

    report = await run_doctor(os.environ, config_path, names)
    if as_json:
        sys.stdout.write(json.dumps(report.to_json(), indent=2, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(render_text(report))
    return 0 if report.up else 1


def log_level(command: str | None, flag: str | None, environ: Mapping[str, str]) -> str:
    """``--log-level``, else ``$CHROME_SSH_GATEWAY_LOG_LEVEL``, else INFO — WARNING for
    ``doctor``, whose output is its table.

    Resolved here rather than with a per-subparser default: a subparser's default
    overwrites a ``--log-level`` given before the subcommand, and one shared action's
    default set for one subcommand once changed it for all (``serve`` logged nothing)."""
    return (flag or environ.get("CHROME_SSH_GATEWAY_LOG_LEVEL")
            or ("WARNING" if command == "doctor" else "INFO"))


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    configure_logging(log_level(args.command, args.log_level, os.environ))
    try:
        if args.command == "call":
            try:
                arguments = json.loads(args.arguments)
            except json.JSONDecodeError as exc:
                print(f"chrome-ssh-gateway: arguments are not JSON: {exc}", file=sys.stderr)
                return 2
            if not isinstance(arguments, dict):
                print("chrome-ssh-gateway: arguments must be a JSON object", file=sys.stderr)
                return 2
            config = load_config(os.environ, args.config, read_only=args.read_only,
                                 tools=args.tools)
            return anyio.run(_call, config, args.tool, arguments)
        if args.command == "doctor":
            return anyio.run(_doctor, args.config, args.target, args.json)
        from gateway.server.app import serve_stdio

        def load() -> GatewayConfig:
            return load_config(os.environ, args.config, read_only=args.read_only,
                               tools=args.tools)

        anyio.run(serve_stdio, load(), load)
        return 0
    except ConfigError as exc:
        print(f"chrome-ssh-gateway: configuration error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
