"""Every command line and MCP client config in README.md and examples/, run for real.

The commands are read out of the files (``tests/doc_commands.py``), so a doc change
that breaks one fails here. Each runs as the installed console script
(``.venv/bin/chrome-ssh-gateway``; ``uvx …``, ``claude mcp add … --`` and client
configs are unwrapped to it, see ``doc_commands``), against the test topology:

- a server command line (``serve``, or no subcommand) is driven by an MCP client
  over stdio: every target it serves must come up and ``list_tabs`` must list tabs
  of each;
- ``call TOOL ARGS`` must exit 0 with the result on stdout, checked per tool;
- ``doctor`` must print a table per target and exit 0 / 1 as its summary says;
- a targets file no documented command names is served with ``--config FILE``.

What is made real rather than rewritten: the test gets its own HOME whose
``~/.ssh/config`` gives the documented host names to topology hosts — ``devvm`` → h1,
``staging-vm.internal`` → h2, ``ci-42`` → h2 through ``ProxyJump bastion`` (the jump
host ``ci-runner.toml`` describes; ``bastion`` is h2's own sshd, as in
test_proxy_jump.py). A documented SSH port other than 22 (``staging-vm.internal:2222``)
gets a TCP relay on the root-namespace end of that host's link (slot-private); a
documented remote ``cdp`` port (``127.0.0.1:9333`` on ``ci-42``) gets a relay inside
that host's namespace to its Chromium's real port. The file names the docs pass to
``--config`` are written where the docs say: ``targets.toml`` (the README's targets
file example) in the working directory and in ``$HOME/.config/chrome-ssh-gateway/``,
``devvms.toml`` (examples/devvms.toml) there too.

What is rewritten, and why (``_rewrite``):

- ``alice@`` / ``runner@`` in SSH destinations → ``csgw@``: the test hosts have one
  login user, ``csgw``, and a user in the destination overrides ``~/.ssh/config``;
- ``/home/alice/`` → the test HOME: a test cannot write to /home/alice;
- ``https://example.com`` → a page served on h2's loopback (the host behind
  ``ci-42``; the documented ``navigate`` is on target ``ci``): tests never reach the
  internet;
- ``pool.example.com`` (a hosted pool's ``wss://`` URL) → ``127.0.0.1:9``, where
  nothing listens: the target must be reported down, never reach the internet. Its
  ``${POOL_TOKEN}`` is set in the environment (``DOC_ENV``).

A documented ``webdriver = "http://127.0.0.1:PORT"`` target gets Debian's
chromedriver on that port of the host its ``ssh`` alias plays; its session is made
by the first call (``list_tabs``), so its state is read after that call.

Not required to be up: a target with no ``ssh`` and a fixed ``cdp`` port (the
README's ``[targets.local]``, 127.0.0.1:9222 on this machine) — the test starts no
browser on a fixed port of the shared root namespace, where other tests look for a
local Chrome. It must still be reported (``unavailable`` / ``DOWN``), not dropped.

Commands that cannot run here are in ``NOT_RUN`` with the reason; any other
documented command that does not come down to ``chrome-ssh-gateway`` fails the test.
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import subprocess
import sys
import threading
import tomllib
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from tests.doc_commands import PROGRAM, Documented, documented, expand_vars, subcommand
from tests.e2e.helpers import (
    accepts,
    call_ok,
    close_remote_pages,
    open_http,
    open_stdio,
    stop_daemons,
    targets_by_name,
    terminated,
    wait_for_targets,
)
from tests.e2e.pages import serve_pages
from tests.e2e.webdriver_host import Chromedriver
from tests.topology import RemoteHost, Topology

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(sys.executable).with_name(PROGRAM)
DOC_FILES = [ROOT / "README.md", *sorted((ROOT / "examples").iterdir())]
ITEMS = [item for path in DOC_FILES
         for item in documented(str(path.relative_to(ROOT)), path.read_text())]
RUN_TIMEOUT = 90.0

NOT_RUN = {
    "sudo scripts/test": "runs this whole test suite, this test included",
    "chrome-ssh-gateway doctor [--config PATH] [--target NAME]... [--json]":
        "a synopsis with placeholders, not a command line",
}

ALIASES = {"devvm": "h1", "staging-vm.internal": "h2", "ci-42": "h2", "bastion": "h2"}
"""Documented SSH host names → the topology host that plays them."""

JUMPS = {"ci-42": "bastion"}
"""``ProxyJump`` of a documented host, as examples/ci-runner.toml describes it."""

DOC_ENV = {"POOL_TOKEN": "doc-test-token"}
"""Environment the documented targets files name with ``${VAR}``."""

PAGE_HOST = "h2"
"""Where ``https://example.com`` is served: the host behind the documented ``navigate``."""


def _targets_text(where: str) -> str:
    """The first targets file ``where`` shows: the reference one (README's later snippets
    illustrate one key each; the unit tests load every one of them)."""
    return next(i for i in ITEMS if i.kind == "targets" and i.where.startswith(where)).text


CONFIG_FILES = {"targets.toml": _targets_text("README.md"),
                "devvms.toml": _targets_text("examples/devvms.toml")}
"""The file names documented commands pass to ``--config``, and the documented text
each one stands for."""


@dataclass
class DocsEnv:
    """The test's HOME and working directory, and the page ``example.com`` becomes."""

    home: Path
    cwd: Path
    page_url: str
    page_host: RemoteHost

    def rewrite(self, text: str) -> str:
        text = re.sub(r"\b(alice|runner)@", "csgw@", text)
        text = text.replace("/home/alice/", f"{self.home}/")
        text = text.replace("wss://pool.example.com/", "wss://127.0.0.1:9/")
        return text.replace("https://example.com", self.page_url)


# ------------------------------------------------------------------ making names real


class _Relay:
    """Copies TCP connections accepted on ``listener`` to a fresh ``connect()`` each,
    on daemon threads; ``close`` stops accepting and ends the open ones."""

    def __init__(self, listener: socket.socket, connect: Callable[[], socket.socket]) -> None:
        self._listener = listener
        self._connect = connect
        self._open: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        try:
            upstream = self._connect()
        except OSError:
            client.close()
            return
        upstream.settimeout(None)
        self._open += [client, upstream]
        back = threading.Thread(target=self._pump, args=(upstream, client), daemon=True)
        back.start()
        self._pump(client, upstream)
        back.join()
        client.close()
        upstream.close()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
            sink.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        for sock in (self._listener, *self._open):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()


def _ssh_port_relay(host: RemoteHost, port: int) -> _Relay:
    """``host.gateway_address:port`` (root namespace, this slot's own link) → sshd."""
    listener = socket.create_server((host.gateway_address, port))
    return _Relay(listener, lambda: socket.create_connection((host.address, 22), timeout=5))


def _cdp_port_relay(host: RemoteHost, port: int) -> _Relay:
    """127.0.0.1:port inside ``host`` → its Chromium's real (random) debugging port."""
    listener = host.run_in_netns(lambda: socket.create_server(("127.0.0.1", port)))
    return _Relay(listener, lambda: host.run_in_netns(lambda: socket.create_connection(
        ("127.0.0.1", host.chrome_port(timeout=5)), timeout=5)))


def _documented_ports() -> tuple[set[tuple[str, int]], set[tuple[str, int]],
                                 set[tuple[str, int]]]:
    """(alias, SSH port), (alias, remote cdp port) and (alias, webdriver port) pairs the
    targets files name."""
    ssh_ports, cdp_ports, webdriver_ports = set(), set(), set()
    for item in ITEMS:
        if item.kind != "targets":
            continue
        for target in tomllib.loads(item.text).get("targets", {}).values():
            if "ssh" not in target:
                continue
            alias, _, port = target["ssh"].rpartition("@")[2].partition(":")
            if port:
                ssh_ports.add((alias, int(port)))
            if "cdp" in target:
                cdp_ports.add((alias, int(target["cdp"].rpartition(":")[2])))
            if "webdriver" in target:
                webdriver_ports.add((alias, int(target["webdriver"].rpartition(":")[2])))
    return ssh_ports, cdp_ports, webdriver_ports


def _ssh_config(topology: Topology, home: Path, ssh_ports: set[tuple[str, int]]) -> str:
    relayed = {alias for alias, _ in ssh_ports}
    blocks = []
    for alias, name in ALIASES.items():
        host = topology.host(name)
        address = host.gateway_address if alias in relayed else host.address
        jump = f"    ProxyJump {JUMPS[alias]}\n" if alias in JUMPS else ""
        blocks.append(
            f"Host {alias}\n    HostName {address}\n    User {host.user}\n{jump}"
            f"    IdentityFile {home / '.ssh' / 'id_ed25519'}\n    IdentitiesOnly yes\n"
            f"    UserKnownHostsFile {home / '.ssh' / 'known_hosts'}\n"
            "    GlobalKnownHostsFile /dev/null\n")
    return "\n" + "\n".join(blocks)


@pytest.fixture(scope="module")
def docs_env(topology: Topology, tmp_path_factory: pytest.TempPathFactory) -> Iterator[DocsEnv]:
    base = tmp_path_factory.mktemp("documented")
    home = topology.make_client_home(base / "home")
    ssh_ports, cdp_ports, webdriver_ports = _documented_ports()
    config = home / ".ssh" / "config"
    config.write_text(config.read_text() + _ssh_config(topology, home, ssh_ports))
    with (home / ".ssh" / "known_hosts").open("a") as known:
        for alias, port in ssh_ports:
            host = topology.host(ALIASES[alias])
            key = host.known_host_key.with_suffix(".known.pub").read_text().split()[:2]
            known.write(f"[{host.gateway_address}]:{port} {' '.join(key)}\n")
    relays = [_ssh_port_relay(topology.host(ALIASES[a]), p) for a, p in ssh_ports]
    relays += [_cdp_port_relay(topology.host(ALIASES[a]), p) for a, p in cdp_ports]
    drivers: list[Chromedriver] = []
    page_host = topology.host(PAGE_HOST)
    try:
        drivers += [Chromedriver(topology.host(ALIASES[a]), p) for a, p in webdriver_ports]
        with serve_pages(page_host) as site:
            env = DocsEnv(home, base / "cwd", site.url("/"), page_host)
            env.cwd.mkdir()
            config_dir = home / ".config" / "chrome-ssh-gateway"
            config_dir.mkdir(parents=True)
            for name, text in CONFIG_FILES.items():
                (config_dir / name).write_text(env.rewrite(text))
            (env.cwd / "targets.toml").write_text(env.rewrite(CONFIG_FILES["targets.toml"]))
            yield env
    finally:
        for relay in relays:
            relay.close()
        for driver in drivers:
            driver.close()


# --------------------------------------------------------------------------- running


@dataclass
class Prepared:
    args: list[str]
    env: dict[str, str]
    expected_up: set[str] | None  # None: whatever the gateway serves (env / defaults)


def _prepare(item: Documented, docs: DocsEnv, topology: Topology) -> Prepared:
    assert item.run is not None
    home = {"HOME": str(docs.home)}
    args = [docs.rewrite(expand_vars(arg, home)) for arg in item.run.args]
    env = topology.client_env(docs.home) | DOC_ENV | {
        key: docs.rewrite(expand_vars(value, home)) for key, value in item.run.env.items()}
    expected_up = None
    if "--config" in args:
        path = Path(args[args.index("--config") + 1])
        path = path if path.is_absolute() else docs.cwd / path
        assert path.is_file(), f"{item.where}: --config {path}: no such documented file"
        expected_up = _expected_up(path)
    return Prepared(args, env, expected_up)


def _expected_up(path: Path) -> set[str]:
    """The targets of a targets file that must come up (see the module docstring); a
    ``webdriver`` target with ``sessions = N`` is its N members."""
    targets = tomllib.loads(path.read_text())["targets"]
    up = {name for name, t in targets.items() if "ssh" in t or "cdp" not in t}
    return {member for name in up for member in (
        [f"{name}-{i}" for i in range(1, targets[name]["sessions"] + 1)]
        if targets[name].get("sessions", 1) > 1 else [name])}


async def _serve(item: Documented, prepared: Prepared, docs: DocsEnv) -> None:
    log = docs.home / f"serve-{abs(hash(item.id))}.log"
    with log.open("w") as errlog, anyio.fail_after(RUN_TIMEOUT):
        if "--http" in prepared.args:
            connected = _open_http(prepared, docs, log)
        else:
            connected = open_stdio(str(SCRIPT), prepared.args, prepared.env, docs.cwd, errlog)
        async with connected as client:
            await wait_for_targets(client, timeout=60)
            listing = await call_ok(client, "list_tabs")
            targets = await targets_by_name(client)  # a webdriver session: made by that call
    up = prepared.expected_up if prepared.expected_up is not None else set(targets)
    assert up, f"{item.where}: serves no target that can come up: {targets}"
    assert up <= set(targets), f"{item.where}: missing targets {up - set(targets)}"
    # A `browsers = "all"` target lists its host's browsers; their tabs are theirs.
    groups = {name: set(t["browsers"]) for name, t in targets.items()
              if t.get("browsers") is not None}
    for name in up:
        assert targets[name]["state"] == "up", (targets[name], log.read_text()[-2000:])
        owners = groups.get(name, {name})
        assert [t for t in listing["tabs"] if t["target"] in owners], (name, listing)
    reported = {t["target"] for t in listing["tabs"]} | {
        p["target"] for p in listing["unavailable"]}
    assert reported == set(targets) - set(groups), listing


@contextlib.asynccontextmanager
async def _open_http(prepared: Prepared, docs: DocsEnv, log: Path) -> AsyncIterator[Client]:
    """The documented ``serve --http HOST:PORT`` on a free port of the same host, and an
    MCP client over HTTP with the token it printed on stderr."""
    args = list(prepared.args)
    where = args.index("--http") + 1
    host = args[where].rpartition(":")[0]
    with socket.socket() as probe:
        probe.bind((host, 0))
        port = probe.getsockname()[1]
    args[where] = f"{host}:{port}"
    async with await anyio.open_process([str(SCRIPT), *args], env=prepared.env, cwd=docs.cwd,
                                        stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL) as process, \
            terminated(process):
        assert process.stderr is not None
        seen = b""
        while b"Bearer <token>): " not in seen or not seen.endswith(b"\n"):
            seen += await process.stderr.receive()
        log.write_bytes(seen)
        token = seen.split(b"Bearer <token>): ")[1].split()[0].decode()
        while not await accepts(f"{host}:{port}"):
            await anyio.sleep(0.05)
        async with open_http(f"http://{host}:{port}/mcp", token) as client:
            yield client


def _run(prepared: Prepared, docs: DocsEnv) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SCRIPT), *prepared.args], env=prepared.env, cwd=docs.cwd,
                          capture_output=True, text=True, timeout=RUN_TIMEOUT,
                          stdin=subprocess.DEVNULL)


def _call(item: Documented, prepared: Prepared, docs: DocsEnv) -> None:
    run = docs.home / "run"  # the daemon `call` starts lives here, and is stopped below
    run.mkdir(mode=0o700, exist_ok=True)
    prepared.env["XDG_RUNTIME_DIR"] = str(run)
    try:
        done = _run(prepared, docs)
    finally:
        stop_daemons(run / "chrome-ssh-gateway")
    assert done.returncode == 0, f"{item.where}: exit {done.returncode}: {done.stderr[-2000:]}"
    payload: dict[str, Any] = json.loads(done.stdout)
    rest = prepared.args[prepared.args.index("call") + 1:]
    tool, arguments = rest[0], json.loads(rest[1]) if len(rest) > 1 else {}
    if tool == "list_targets":
        reached = [t for t in payload["targets"] if t["state"] == "up" and t["tabs"] >= 1]
        assert reached, payload
    elif tool == "navigate":
        assert (payload["target"], payload["url"]) == (
            arguments.get("target", payload["target"]), arguments["url"]), payload
        # The page really opened in the host's browser (and stays after `call` exits).
        assert close_remote_pages(docs.page_host, arguments["url"]) == 1
    else:
        pytest.fail(f"{item.where}: no check for a documented `call {tool}`: add one here")


def _daemon(item: Documented, prepared: Prepared, docs: DocsEnv) -> None:
    run = docs.home / "run"
    run.mkdir(mode=0o700, exist_ok=True)
    prepared.env["XDG_RUNTIME_DIR"] = str(run)
    action = prepared.args[prepared.args.index("daemon") + 1]
    try:
        started = _run(Prepared([*prepared.args[:-1], "start"], prepared.env, None), docs)
        assert started.returncode == 0, started.stderr
        done = _run(prepared, docs)
        assert done.returncode == 0, f"{item.where}: exit {done.returncode}: {done.stderr}"
        after = _run(Prepared([*prepared.args[:-1], "status"], prepared.env, None), docs)
        if action == "status":
            assert done.stdout.startswith("running: pid"), done.stdout
        elif action == "stop":
            assert after.returncode == 3 and after.stdout.startswith("not running"), after
        else:
            pytest.fail(f"{item.where}: no check for a documented `daemon {action}`: add one")
    finally:
        stop_daemons(run / "chrome-ssh-gateway")


def _doctor(item: Documented, prepared: Prepared, docs: DocsEnv) -> None:
    done = _run(prepared, docs)
    summary = re.search(r"^(\d+) targets?: (\d+) up, (\d+) down$", done.stdout, re.M)
    assert summary, f"{item.where}: no summary line in\n{done.stdout}\n{done.stderr}"
    assert done.returncode == (0 if summary[3] == "0" else 1), (done.returncode, done.stdout)
    verdicts = dict(re.findall(r"^(\S+) \(.*\): (UP|DOWN)$", done.stdout, re.M))
    assert len(verdicts) == int(summary[1]), done.stdout
    assert prepared.expected_up, f"{item.where}: doctor without a targets file"
    for name in prepared.expected_up:
        assert verdicts.get(name) == "UP", f"{name} not UP:\n{done.stdout}"
    assert len(re.findall(r"^  tab count +ok ", done.stdout, re.M)) >= len(prepared.expected_up)


def _runnable(item: Documented) -> bool:
    return item.run is not None and item.run.program == PROGRAM and item.text not in NOT_RUN


def _unreferenced_targets_files() -> list[Documented]:
    named = set(CONFIG_FILES.values())
    return [i for i in ITEMS if i.kind == "targets" and i.text not in named]


# ----------------------------------------------------------------------------- tests


def test_every_documented_command_is_run_or_allow_listed() -> None:
    commands = [i for i in ITEMS if i.kind in ("shell", "client")]
    neither = [i.where + ": " + i.text for i in commands
               if not _runnable(i) and i.text not in NOT_RUN]
    assert not neither, f"documented but neither run nor in NOT_RUN: {neither}"
    stale = set(NOT_RUN) - {i.text for i in commands}
    assert not stale, f"NOT_RUN lists commands the docs no longer show: {stale}"
    assert sum(map(_runnable, commands)) >= 10, commands


@pytest.mark.parametrize("item", [i for i in ITEMS if _runnable(i)], ids=lambda i: i.id)
async def test_documented_command(item: Documented, docs_env: DocsEnv,
                                  topology: Topology) -> None:
    assert item.run is not None
    prepared = _prepare(item, docs_env, topology)
    command = subcommand(tuple(prepared.args))
    if command == "serve":
        await _serve(item, prepared, docs_env)
    elif command == "call":
        await anyio.to_thread.run_sync(_call, item, prepared, docs_env)
    elif command == "doctor":
        await anyio.to_thread.run_sync(_doctor, item, prepared, docs_env)
    elif command == "daemon":
        await anyio.to_thread.run_sync(_daemon, item, prepared, docs_env)
    else:
        pytest.fail(f"{item.where}: unknown subcommand {command!r}")


@pytest.mark.parametrize("item", _unreferenced_targets_files(), ids=lambda i: i.where)
async def test_documented_targets_file_serves(item: Documented, docs_env: DocsEnv,
                                              topology: Topology) -> None:
    path = docs_env.home / Path(item.where).name
    path.write_text(docs_env.rewrite(item.text))
    prepared = Prepared(["--config", str(path)], topology.client_env(docs_env.home) | DOC_ENV,
                        _expected_up(path))
    await _serve(item, prepared, docs_env)
