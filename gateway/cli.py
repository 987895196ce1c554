"""Command line: ``serve`` (MCP on stdio, the default, or ``--http``), ``call``,
``daemon``, ``doctor`` and ``share`` (this machine's browser, forwarded to a host).

``call TOOL 'JSON'`` runs one tool through a background gateway for the same
configuration (``daemon``, started on first use), so a sequence of shell
commands keeps its tab ids, refs and SSH connections; it prints the result on
stdout (images to files, see ``client.output``) and exits non-zero when the
tool returned an error. ``--no-daemon`` runs the tool in process instead. The
``call`` path imports neither the MCP SDK nor the serving code: it must stay fast.

``doctor`` checks every target step by step (see ``gateway.doctor``) and prints a
table, or with ``--json`` one JSON document. Exit status: 0 every target up,
1 some target down, 2 a configuration error (or an unknown ``--target``).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gateway import __version__
from gateway.errors import ConfigError, DaemonError

if TYPE_CHECKING:
    from gateway.config import GatewayConfig

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
                            help="tools to offer: default (all but emulation), all, core, "
                                 "categories or tool names, comma-separated, -name removes "
                                 "(e.g. core,+network or +emulation; also "
                                 "$CHROME_SSH_GATEWAY_TOOLS)")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="chrome-ssh-gateway",
        description="MCP server that drives Chrome browsers on other machines over SSH. "
                    "Without a subcommand: serve. Options go before or after the subcommand.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    _add_options(parser, top=True, serving=True)
    _add_http_options(parser, top=True)
    sub = parser.add_subparsers(dest="command")
    serve = sub.add_parser("serve", help="serve MCP on stdin/stdout (default) or --http")
    _add_options(serve, top=False, serving=True)
    _add_http_options(serve, top=False)
    call = sub.add_parser("call", help="run one tool and print its result")
    _add_options(call, top=False, serving=True)
    call.add_argument("tool", help="tool name, e.g. list_tabs")
    call.add_argument("arguments", nargs="?", default="{}", help="tool arguments as JSON")
    call.add_argument("--no-daemon", action="store_true",
                      help="run the tool in this process (no tab ids kept between calls)")
    call.add_argument("--json", action="store_true", help="print the structured result only")
    _add_idle_timeout(call)
    daemon = sub.add_parser("daemon", help="the background gateway that call uses",
                            description="start, stop or show the background gateway for "
                                        "this configuration (call starts it on first use)")
    _add_options(daemon, top=False, serving=True)
    daemon.add_argument("action", choices=("start", "stop", "status", "run"),
                        help="run: serve in the foreground (what start spawns)")
    _add_idle_timeout(daemon)
    live = sub.add_parser("live", help="a URL to watch and use the tabs of call's daemon")
    _add_options(live, top=False, serving=True)
    live.add_argument("tab", nargs="?", type=int, help="that tab only (default: every tab)")
    _add_idle_timeout(live)
    _add_share(sub)
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


def _add_share(sub: Any) -> None:
    share = sub.add_parser(
        "share", help="share this machine's browser to a host over SSH (it dials out)",
        description="Share a browser of this machine (a laptop behind NAT, a CI runner) "
                    "with a gateway on DEST: SSH to DEST and have sshd there listen on "
                    "~/.cache/chrome-ssh-gateway/shared/NAME.sock, which leads to the "
                    "browser's DevTools. Whoever logs in as that user on DEST controls the "
                    "browser. Runs until Ctrl-C, SIGTERM or --for.")
    share.add_argument("dest", metavar="DEST",
                       help="SSH destination: a ~/.ssh/config alias or user@host[:port]")
    share.add_argument("--name", help="the share's name on DEST (default: this machine's "
                                      "host name)")
    share.add_argument("--cdp", metavar="ADDR",
                       help="the browser's DevTools address here, e.g. 127.0.0.1:9222 "
                            "(default: find it)")
    share.add_argument("--launch", action="store_true",
                       help="start a browser (persistent profile "
                            "~/.cache/chrome-ssh-gateway/NAME) when none runs")
    share.add_argument("--temporary-profile", action="store_true",
                       help="with --launch: a fresh profile, removed with the browser when "
                            "the share stops")
    share.add_argument("--browsers", choices=("one", "all"), default="one",
                       help="all: every debuggable browser here, each shared as NAME-N, "
                            "followed as they start and exit")
    share.add_argument("--tabs", choices=("agent", "all"), default=None,
                       help="agent: the agent sees only the tabs it opens (and --tab ones), "
                            "not your others (default for your own signed-in browser); "
                            "all: every tab (default otherwise)")
    share.add_argument("--tab", dest="handed", action="append", default=[],
                       metavar="URL-OR-TITLE",
                       help="hand the agent your tab whose URL starts with this, or whose "
                            "title has these words (repeatable; implies --tabs agent)")
    share.add_argument("--for", dest="for_", metavar="DURATION",
                       help="stop sharing after this long: 45m, 2h, 1h30m, 90s")
    share.add_argument("--accept-new", action="store_true",
                       help="record DEST's host key when known_hosts has none (default: "
                            "it must be known)")
    share.add_argument("--log-level", choices=_LOG_LEVELS, default=argparse.SUPPRESS,
                       help="stderr log level (default WARNING)")


def _add_http_options(parser: argparse.ArgumentParser, *, top: bool) -> None:
    """``serve``'s transport options, before or after the subcommand (as ``_add_options``)."""
    unset: Any = None if top else argparse.SUPPRESS
    parser.add_argument("--http", metavar="ADDR", default=unset,
                        help="serve MCP over streamable HTTP at HOST:PORT (loopback unless "
                             "--token-file) or unix:PATH, path /mcp")
    parser.add_argument("--token-file", metavar="PATH", default=unset,
                        help="0600 file holding the bearer token HTTP clients must send "
                             "(default: generated, printed to stderr)")


def _add_idle_timeout(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--idle-timeout", type=float, default=1800.0, metavar="SECONDS",
                        help="the daemon exits after this long without calls (default 1800)")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line as a namespace with ``command`` (None: serve), ``config``,
    ``log_level``, ``read_only`` and the subcommand's own options; a wrong command line
    exits 2 with argparse's message."""
    parser = _parser()
    args, extra = parser.parse_known_args(argv)
    if (args.command == "call" and args.arguments == "{}" and len(extra) == 1
            and not extra[0].startswith("-")):
        # ``call TOOL --json '{…}'``: argparse gives both positionals out when it
        # meets TOOL, so the arguments after an option arrive as an extra.
        args.arguments, extra = extra[0], []
    if extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if args.command == "doctor":
        # Given before the subcommand: the top-level parser took it. doctor offers no
        # tools, so the flag would silently mean nothing.
        for flag, given in (("--read-only", args.read_only), ("--tools", args.tools)):
            if given:
                parser.error(f"{flag} applies to serve and call, not doctor")
    if args.command == "share":
        for flag, given in (("--read-only", args.read_only), ("--tools", args.tools),
                            ("--config", args.config)):
            if given:
                parser.error(f"{flag} does not apply to share")
    if args.command not in (None, "serve") and (args.http or args.token_file):
        parser.error("--http and --token-file apply to serve")
    if args.token_file and not args.http:
        parser.error("--token-file needs --http")
    return args


async def _call_here(config: GatewayConfig, tool: str, arguments: dict[str, Any],
                     as_json: bool) -> int:
    from mcp import Client

    from gateway.client.output import print_result
    from gateway.mcp import STRUCTURED_META
    from gateway.mcp.start import running_server

    async with running_server(config) as (server, gateway), Client(server) as client:
        await gateway.settled()
        meta: Any = {STRUCTURED_META: as_json}  # an extension key, not in the SDK's type
        result = await client.call_tool(tool, arguments, meta=meta)
    return print_result(result.model_dump(mode="json", by_alias=True, exclude_none=True),
                        as_json=as_json)


def _daemon_argv(args: argparse.Namespace) -> list[str]:
    from gateway.daemon.control import daemon_argv

    return daemon_argv(args.idle_timeout, args.config, args.read_only, args.tools, args.log_level)


def _running_daemon(args: argparse.Namespace) -> tuple[Path, bool]:
    """This configuration's daemon's socket (started if need be), and if it replaced one."""
    from gateway.daemon.control import ensure_running
    from gateway.daemon.runtime_dir import daemon_paths

    paths = daemon_paths(args.config, args.read_only, os.environ, args.tools)
    # About to start a daemon (a second's work anyway): a bad configuration is reported
    # here, exit 2, rather than in the log of a daemon that exited.
    notes, replaced = ensure_running(paths, _daemon_argv(args), before_start=_loader(args))
    for note in notes:
        print(f"chrome-ssh-gateway: {note}", file=sys.stderr)
    return paths.socket, replaced


def _call_daemon(args: argparse.Namespace, arguments: dict[str, Any]) -> int:
    from gateway.client.call import call_tool
    from gateway.client.output import print_result

    socket, replaced = _running_daemon(args)
    if replaced:
        gone = ("the previous gateway daemon is gone (killed or crashed) and a new one "
                "started: tab ids and view refs from before are no longer valid")
        if "tab" in arguments:  # an id the new daemon may have given to another page
            print(f"chrome-ssh-gateway: {gone}; {args.tool} not run — call list_tabs for "
                  "the current tab ids", file=sys.stderr)
            return 1
        print(f"chrome-ssh-gateway: {gone}", file=sys.stderr)
    return print_result(call_tool(socket, args.tool, arguments, structured=args.json),
                        as_json=args.json)


def _daemon(args: argparse.Namespace) -> int:
    from gateway.daemon.control import start, state_of, stop
    from gateway.daemon.runtime_dir import daemon_paths

    paths = daemon_paths(args.config, args.read_only, os.environ, args.tools)
    if args.action == "run":
        import anyio

        from gateway.daemon.serve import run_daemon

        load = _loader(args)
        follow = args.config or os.environ.get("CHROME_SSH_GATEWAY_CONFIG") or None
        anyio.run(run_daemon, paths, load(), load, args.idle_timeout, follow)
        return 0
    state = state_of(paths)
    if args.action == "status":
        print(state.describe(paths))
        return 0 if state.running else 3
    if args.action == "stop" or (state.running and state.version != __version__):
        stopped = stop(paths)
        if stopped.running:
            print(f"stopped the gateway daemon (pid {stopped.pid}, version {stopped.version})",
                  file=sys.stderr)
        if args.action == "stop":
            return 0
    elif state.running:
        print(state.describe(paths))
        return 0
    print(start(paths, _daemon_argv(args)).describe(paths))
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
            or ("WARNING" if command in ("doctor", "share") else "INFO"))


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        if args.command == "call" and not args.no_daemon:
            arguments = _call_arguments(args.arguments)
            return 2 if arguments is None else _call_daemon(args, arguments)
        if args.command == "daemon" and args.action != "run":
            return _daemon(args)
        if args.command == "live":
            from gateway.client.live import show_live_link

            return show_live_link(_running_daemon(args)[0], args.tab)
        if args.command == "share":
            return _share(args)
        return _serve_or_run(args)
    except ConfigError as exc:
        print(f"chrome-ssh-gateway: configuration error: {exc}", file=sys.stderr)
        return 2
    except DaemonError as exc:
        print(f"chrome-ssh-gateway: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def _share(args: argparse.Namespace) -> int:
    import anyio

    from gateway.mcp.log_setup import configure_logging
    from gateway.share.options import share_options
    from gateway.share.sharer import run_share

    try:
        options = share_options(args.dest, args.name, args.cdp, args.launch,
                                args.temporary_profile, args.browsers, args.for_,
                                args.accept_new, args.tabs, tuple(args.handed))
    except ValueError as exc:
        print(f"chrome-ssh-gateway share: {exc}", file=sys.stderr)
        return 2
    configure_logging(log_level("share", args.log_level, os.environ))
    return anyio.run(run_share, options)


def _call_arguments(text: str) -> dict[str, Any] | None:
    """The JSON object given on the command line, else None (the reason printed)."""
    try:
        arguments = json.loads(text)
    except json.JSONDecodeError as exc:
        print(f"chrome-ssh-gateway: arguments are not JSON: {exc}", file=sys.stderr)
        return None
    if not isinstance(arguments, dict):
        print("chrome-ssh-gateway: arguments must be a JSON object", file=sys.stderr)
        return None
    return arguments


def _loader(args: argparse.Namespace) -> Callable[[], GatewayConfig]:
    """Loads this command line's configuration afresh: at start, and on SIGHUP."""
    from gateway.config import load_config

    return lambda: load_config(os.environ, args.config, read_only=args.read_only,
                               tools=args.tools)


def _serve_or_run(args: argparse.Namespace) -> int:
    """Everything that runs the gateway in this process (the heavy imports live here)."""
    if args.command != "doctor":
        # Start-up makes a few hundred thousand objects (pydantic builds ~600 models)
        # and keeps nearly all: collecting while they are made costs ~90 ms of a start
        # (measured). ``running_server`` turns the collector on once the server is built.
        gc.disable()
    try:
        return _run(args)
    finally:
        gc.enable()


def _run(args: argparse.Namespace) -> int:
    import anyio

    from gateway.mcp.log_setup import configure_logging

    configure_logging(log_level(args.command, args.log_level, os.environ))
    load = _loader(args)
    if args.command == "call":
        arguments = _call_arguments(args.arguments)
        if arguments is None:
            return 2
        return anyio.run(_call_here, load(), args.tool, arguments, args.json)
    if args.command == "doctor":
        return anyio.run(_doctor, args.config, args.target, args.json)
    if args.command == "daemon":
        return _daemon(args)
    if args.http:
        from gateway.mcp.http import parse_http_address, resolve_token, serve_http

        address = parse_http_address(args.http)
        token = resolve_token(address, args.token_file)
        anyio.run(lambda: serve_http(load(), address, token, reload=load))
        return 0
    from gateway.mcp.start import serve_stdio

    anyio.run(serve_stdio, load(), load)
    return 0
