"""Command line: ``serve`` (the MCP server on stdio, the default), ``call`` and ``doctor``.

``call TOOL 'JSON'`` runs one tool in process, through the same MCP server an
agent talks to, prints the result as JSON on stdout and exits non-zero when
the tool returned an error — a quick check of a target before wiring up an
agent.

``doctor`` checks every target step by step (see ``doctor.py``) and prints a
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
from gateway.server.call_log import configure_logging

__all__ = ["log_level", "main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="chrome-ssh-gateway",
        description="MCP server that drives Chrome browsers on other machines over SSH.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--config", metavar="PATH",
                        help="targets file (TOML); default $CHROME_SSH_GATEWAY_CONFIG")
    common.add_argument("--log-level", default=None,
                        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
                        help="stderr log level (default $CHROME_SSH_GATEWAY_LOG_LEVEL, "
                             "else INFO; WARNING for doctor)")
    serving = argparse.ArgumentParser(add_help=False, parents=[common])
    serving.add_argument("--read-only", action="store_true",
                         help="offer only tools that change nothing in the browsers "
                              "(also $CHROME_SSH_GATEWAY_READ_ONLY=1)")
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("serve", parents=[serving], help="serve MCP on stdin/stdout (default)")
    call = sub.add_parser("call", parents=[serving], help="run one tool and print its result")
    call.add_argument("tool", help="tool name, e.g. list_tabs")
    call.add_argument("arguments", nargs="?", default="{}", help="tool arguments as JSON")
    doctor = sub.add_parser(
        "doctor", parents=[common],
        help="check every target step by step and say what to fix",
        description="Check each target: config, DNS, TCP, host key, SSH login, DevTools "
                    "endpoint, websocket, browser version, tabs. Exit 0 when every target "
                    "is up, 1 when one is down, 2 for a configuration error.")
    doctor.add_argument("--target", action="append", default=[], metavar="NAME",
                        help="check only this target (repeatable)")
    doctor.add_argument("--json", action="store_true", help="print one JSON document")
    parser.set_defaults(config=None, log_level=None, read_only=False)
    return parser


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
    from gateway.doctor.checks import render_text, run_doctor

    report = await run_doctor(os.environ, config_path, names)
    if as_json:
        sys.stdout.write(json.dumps(report.to_json(), indent=2, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(render_text(report))
    return 0 if report.up else 1


def log_level(command: str | None, flag: str | None, environ: Mapping[str, str]) -> str:
    """``--log-level``, else ``$CHROME_SSH_GATEWAY_LOG_LEVEL``, else INFO — WARNING for
    ``doctor``, whose output is its table.

    Resolved here rather than with per-subparser ``set_defaults``: the subcommands
    share the ``--log-level`` action (``parents=``), so a default set for one changes
    it for all (``serve`` once logged nothing because of that)."""
    return (flag or environ.get("CHROME_SSH_GATEWAY_LOG_LEVEL")
            or ("WARNING" if command == "doctor" else "INFO"))


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
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
            config = load_config(os.environ, args.config, read_only=args.read_only)
            return anyio.run(_call, config, args.tool, arguments)
        if args.command == "doctor":
            return anyio.run(_doctor, args.config, args.target, args.json)
        from gateway.server.app import serve_stdio

        anyio.run(serve_stdio, load_config(os.environ, args.config, read_only=args.read_only))
        return 0
    except ConfigError as exc:
        print(f"chrome-ssh-gateway: configuration error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
