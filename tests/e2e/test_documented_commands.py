"""Every command line and MCP client config in README.md, docs/ and examples/, run for real.

The commands are read out of the files (``tests/doc_commands.py``), so a doc change
that breaks one fails here. The README's install links (Cursor, VS Code) are decoded,
and the Claude Code plugin's manifests (``.claude-plugin/``) read, into client configs
run the same way. Each runs as the installed console script
(``.venv/bin/chrome-ssh-gateway``; ``uvx …``, ``claude mcp add … --`` and client
configs are unwrapped to it, see ``doc_commands``), against the test topology:

- a server command line (``serve``, or no subcommand) is driven by an MCP client
  over stdio: every target it serves must come up and ``list_tabs`` must list tabs
  of each;
- ``call TOOL ARGS`` must exit 0 with the result on stdout, checked per tool;
- ``doctor`` must print a table per target and exit 0 / 1 as its summary says;
- ``share DEST`` must print its status line naming each share and DEST; sshd on the
  host playing DEST must listen on ``~/.cache/chrome-ssh-gateway/shared/<name>.sock``
  (``<name>-1.sock`` with ``--browsers all``) — a socket of its login user, 0600, in a
  0700 directory — beside a ``<name>.json`` manifest naming the share, the sharing
  machine and the shared browser's pid (and the ``--for`` expiry); a gateway with
  ``ssh = DEST`` and ``shared = true`` must serve the share as a target that is up with
  the browser's tab; SIGINT must end the share with exit status 0, the socket and
  manifest gone from DEST and the target from the gateway (``_share``);
- a targets file no documented command names is served with ``--config FILE``.

A served target ``shared = true`` (a targets file's, or the embedded default's
``shared`` group, which serves this machine's shares) must be up; its rows are the
shares found, each up with tabs of its own, but it may have none: nobody shares with
the root namespace, where no sshd runs. So that the docs' agent-side targets file
(``ssh = "devvm"`` + ``shared = true``) is served with a member, a share into each
``ssh`` host of such a file (``share ALIAS --name docs-share --cdp 127.0.0.1:PORT``)
is kept live while it is served. A ``browsers = "all"`` group must own tabs, as before.

Where the sharing browsers are: ``share`` finds a browser on the machine it runs on.
A one-browser share runs in the root namespace as root, from the test's HOME, and
finds there a headless Chromium the test starts in that HOME's default profile
(``$HOME/.config/chromium``, with ``--remote-debugging-port=0``: discovery reads its
``DevToolsActivePort``; stopped by pid at the end of the module). A ``--browsers all``
share — the CI examples' — runs on a share host (``tests/e2e/share_host.py``): a
namespace nobody can dial, linked only to DEST's host, as a hosted CI runner is, with
one Chromium of its own. In the root namespace it would share every debuggable
browser root runs there — other test runs' on this machine included.

What is made real rather than rewritten: the test gets its own HOME whose
``~/.ssh/config`` gives the documented host names to topology hosts — ``devvm`` → h1,
``staging-vm.internal`` → h2, ``ci-42`` → h2 through ``ProxyJump bastion`` (the jump
host ``ci-runner.toml`` describes; ``bastion`` is h2's own sshd, as in
test_proxy_jump.py, and the host the CI examples share with). A documented SSH port
other than 22 (``staging-vm.internal:2222``) gets a TCP relay on the root-namespace
end of that host's link (slot-private); a documented remote ``cdp`` port
(``127.0.0.1:9333`` on ``ci-42``) gets a relay inside that host's namespace to its
Chromium's real port. The file names the docs pass to
``--config`` are written where the docs say: ``targets.toml`` (the targets file
example of docs/configuration.md) in the working directory and in
``$HOME/.config/chrome-ssh-gateway/``, ``devvms.toml`` (examples/devvms.toml) there too.

What is rewritten, and why (``_rewrite``):

- ``alice@`` / ``runner@`` / ``ci@`` in SSH destinations → ``csgw@``: the test hosts
  have one login user, ``csgw``, and a user in the destination overrides
  ``~/.ssh/config``;
- ``/home/alice/`` → the test HOME: a test cannot write to /home/alice;
- ``https://example.com`` → a page served on h2's loopback (the host behind
  ``ci-42``; the documented ``navigate`` is on target ``ci``): tests never reach the
  internet;
- ``pool.example.com`` (a hosted pool's ``wss://`` URL) → ``127.0.0.1:9``, where
  nothing listens: the target must be reported down, never reach the internet. Its
  ``${POOL_TOKEN}`` is set in the environment (``DOC_ENV``), and so are the CI's
  ``$GITHUB_RUN_ID`` / ``$CI_JOB_ID`` a documented share's ``--name`` is made of
  (expanded in arguments as the shell would: ``gh-4242``).

A documented ``webdriver = "http://127.0.0.1:PORT"`` target gets Debian's
chromedriver on that port of the host its ``ssh`` alias plays; its session is made
by the first call (``list_tabs``), so its state is read after that call.

Not required to be up: a target with no ``ssh`` and a fixed ``cdp`` port (the
configuration page's ``[targets.local]``, 127.0.0.1:9222 on this machine) — the test starts no
browser on a fixed port of the shared root namespace, where other tests look for a
local Chrome. It must still be reported (``unavailable`` / ``DOWN``), not dropped.

Commands that cannot run here are in ``NOT_RUN`` with the reason; any other
documented command that does not come down to ``chrome-ssh-gateway`` fails the test.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
import tomllib
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from gateway.config import load_config
from tests.doc_commands import (
    PROGRAM,
    Documented,
    doc_files,
    documented,
    expand_vars,
    subcommand,
)
from tests.e2e.helpers import (
    accepts,
    call_ok,
    close_remote_pages,
    eventually,
    open_http,
    open_stdio,
    present,
    stop_daemons,
    targets_by_name,
    terminated,
    wait_for_targets,
    write_targets,
)
from tests.e2e.pages import serve_pages
from tests.e2e.share_host import ShareHost
from tests.e2e.webdriver_host import Chromedriver
from tests.topology import CHROME_FLAGS, CHROMIUM, RemoteHost, Topology, _http_get

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(sys.executable).with_name(PROGRAM)
DOC_FILES = doc_files(ROOT)
ITEMS = [item for path in DOC_FILES
         for item in documented(str(path.relative_to(ROOT)), path.read_text())]
RUN_TIMEOUT = 90.0

NOT_RUN = {
    "scripts/test": "runs this whole test suite, this test included",
    "chrome-ssh-gateway doctor [--config PATH] [--target NAME]... [--json]":
        "a synopsis with placeholders, not a command line",
}

ALIASES = {"devvm": "h1", "staging-vm.internal": "h2", "ci-42": "h2", "bastion": "h2"}
"""Documented SSH host names → the topology host that plays them."""

JUMPS = {"ci-42": "bastion"}
"""``ProxyJump`` of a documented host, as examples/ci-runner.toml describes it."""

DOC_ENV = {"POOL_TOKEN": "doc-test-token", "GITHUB_RUN_ID": "4242", "CI_JOB_ID": "4242"}
"""Environment the documented targets files name with ``${VAR}``, and the CI variables
the documented share commands use."""

SHARED_DIR = ".cache/chrome-ssh-gateway/shared"
"""Where a share's socket and manifest are on DEST, under its login user's home."""

SHARE_NAME = "docs-share"
"""The share kept live while a targets file with ``ssh`` + ``shared = true`` is served."""

SHARE_HOST_INDEX = 9
"""The share host (``ShareHost`` index) ``--browsers all`` shares run on."""

PAGE_HOST = "h2"
"""Where ``https://example.com`` is served: the host behind the documented ``navigate``."""


def _targets_text(where: str) -> str:
    """The reference targets file ``where`` shows: the one with a ``[gateway]`` table,
    else the first (the page's other snippets illustrate one feature each; the unit tests
    load every one of them, and those no command names are served below)."""
    files = [i.text for i in ITEMS if i.kind == "targets" and i.where.startswith(where)]
    return next((t for t in files if "gateway" in tomllib.loads(t)), files[0])


CONFIG_FILES = {"targets.toml": _targets_text("docs/configuration.md"),
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
        text = re.sub(r"\b(alice|runner|ci)@", "csgw@", text)
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


@dataclass
class RootBrowser:
    """A headless Chromium as root in the root namespace, in the docs HOME's default
    profile (``$HOME/.config/chromium``), where ``share``'s discovery looks."""

    process: subprocess.Popen[bytes]
    profile: Path
    port: int = 0

    @property
    def pid(self) -> int:
        return self.process.pid

    def version(self) -> str:
        status, body = _http_get("127.0.0.1", self.port, "/json/version")
        assert status == 200, (status, body)
        product: str = json.loads(body)["Browser"]
        return product

    def stop(self) -> None:
        """SIGTERM the browser and wait; SIGKILL what is left of it: its process group
        (its own session) while it lives, and whatever still names its profile (crashpad
        handlers detach), which is a directory of this test's own."""
        if self.process.poll() is None:
            self.process.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=15)
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pid, signal.SIGKILL)
            self.process.wait(timeout=10)
        _kill_pids(_pids_naming(f"{self.profile}"))


def _pids_naming(text: str) -> set[int]:
    """The processes whose command line contains ``text`` (a path of this test's own)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            with contextlib.suppress(OSError):
                if text in (entry / "cmdline").read_bytes().decode(errors="replace"):
                    found.add(int(entry.name))
    return found


def _kill_pids(pids: set[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while pids and time.monotonic() < deadline:
        pids = {pid for pid in pids if Path(f"/proc/{pid}").exists()
                and Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"}
        time.sleep(0.02)


def _start_root_browser(home: Path) -> RootBrowser:
    profile = home / ".config" / "chromium"
    profile.mkdir(mode=0o700, parents=True, exist_ok=True)
    (profile / "DevToolsActivePort").unlink(missing_ok=True)  # "started" = wrote a new one
    tmp = home / "tmp"
    tmp.mkdir(mode=0o700, exist_ok=True)
    log = home / "root-chromium.log"
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "TMPDIR": str(tmp)}
    with log.open("ab") as out:
        process = subprocess.Popen(
            [CHROMIUM, *CHROME_FLAGS, "--remote-debugging-port=0", f"--user-data-dir={profile}",
             "about:blank"], stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            close_fds=True, start_new_session=True, cwd="/", env=env)
    browser = RootBrowser(process, profile)
    deadline = time.monotonic() + 30
    try:
        while True:
            assert process.poll() is None, f"Chromium exited: {log.read_text()[-2000:]}"
            with contextlib.suppress(OSError, ValueError, IndexError, AssertionError):
                browser.port = int((profile / "DevToolsActivePort").read_text().split()[0])
                browser.version()
                return browser
            assert time.monotonic() < deadline, f"Chromium did not answer: see {log}"
            time.sleep(0.05)
    except BaseException:
        browser.stop()
        raise


@pytest.fixture(scope="module")
def root_browser(docs_env: DocsEnv) -> Iterator[RootBrowser]:
    browser = _start_root_browser(docs_env.home)
    try:
        yield browser
    finally:
        browser.stop()


# --------------------------------------------------------------------------- running


@dataclass
class Prepared:
    args: list[str]
    env: dict[str, str]
    expected_up: set[str] | None  # None: whatever the gateway serves (env / defaults)
    config: Path | None = None    # the targets file it is given (--config)

    def shares_groups(self) -> set[str]:
        """The targets that serve shares (``shared = true``), as the gateway reads its
        configuration from this environment and file: the embedded default's ``shared``
        group has no file to look in."""
        config = load_config(self.env, str(self.config) if self.config else None)
        return {target.name for target in config.targets if target.shared}


def _prepare(item: Documented, docs: DocsEnv, topology: Topology) -> Prepared:
    assert item.run is not None
    known = {"HOME": str(docs.home)} | DOC_ENV
    args = [docs.rewrite(expand_vars(arg, known)) for arg in item.run.args]
    env = topology.client_env(docs.home) | DOC_ENV | {
        key: docs.rewrite(expand_vars(value, known)) for key, value in item.run.env.items()}
    expected_up, config = None, None
    if "--config" in args:
        path = Path(args[args.index("--config") + 1])
        config = path if path.is_absolute() else docs.cwd / path
        assert config.is_file(), f"{item.where}: --config {config}: no such documented file"
        expected_up = _expected_up(config)
    return Prepared(args, env, expected_up, config)


def _expected_up(path: Path) -> set[str]:
    """The targets of a targets file that must come up (see the module docstring); a
    ``webdriver`` target with ``sessions = N`` is its N members."""
    targets = tomllib.loads(path.read_text())["targets"]
    up = {name for name, t in targets.items() if "ssh" in t or "cdp" not in t}
    return {member for name in up for member in (
        [f"{name}-{i}" for i in range(1, targets[name]["sessions"] + 1)]
        if targets[name].get("sessions", 1) > 1 else [name])}


async def _serve(item: Documented, prepared: Prepared,
                 docs: DocsEnv) -> dict[str, dict[str, Any]]:
    """Serve, check what comes up (see the module docstring); ``list_targets`` by name."""
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
    # A `browsers = "all"` or `shared = true` target lists its host's browsers (shares);
    # their tabs are theirs.
    groups = {name: set(t["browsers"]) for name, t in targets.items()
              if t.get("browsers") is not None}
    shares = prepared.shares_groups()
    assert shares <= set(groups), (shares, targets)

    def owns_tabs(owners: set[str]) -> bool:
        return any(t["target"] in owners for t in listing["tabs"])

    for name in up:
        assert targets[name]["state"] == "up", (targets[name], log.read_text()[-2000:])
        if name in shares:  # none may be shared here: each one found must work
            for member in groups[name]:
                assert targets[member]["state"] == "up", (targets[member], targets)
                assert owns_tabs({member}), (member, listing)
        else:
            assert owns_tabs(groups.get(name, {name})), (name, listing)
    reported = {t["target"] for t in listing["tabs"]} | {
        p["target"] for p in listing.get("unavailable", [])}
    assert reported == set(targets) - set(groups), listing
    return targets


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


# ------------------------------------------------------------------------------ share


@dataclass
class SharerCommand:
    """How to start one sharer: its argv, environment (None: the argv sets it) and cwd."""

    argv: list[str]
    env: dict[str, str] | None
    cwd: Path


@dataclass
class Sharer:
    process: anyio.abc.Process
    status: str                       # its first line on stdout
    log: Path                         # its stderr
    rest: list[bytes] = field(default_factory=list)

    async def stop(self) -> tuple[int, str]:
        """SIGINT, as Ctrl-C; its exit status and what else it printed on stdout."""
        self.process.send_signal(signal.SIGINT)
        with anyio.fail_after(30):
            code = await self.process.wait()
        assert self.process.stdout is not None
        with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError):
            while True:
                self.rest.append(await self.process.stdout.receive())
        return code, b"".join(self.rest).decode(errors="replace")


@contextlib.asynccontextmanager
async def _sharer(command: SharerCommand, log: Path) -> AsyncIterator[Sharer]:
    """A running ``share`` once it printed its status line (a failure to start fails
    the test with its stderr); killed with its process group if still running after."""
    with log.open("wb") as errors:
        process = await anyio.open_process(
            command.argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=errors,
            cwd=command.cwd, env=command.env, start_new_session=True)
    try:
        assert process.stdout is not None
        seen = b""
        with anyio.move_on_after(60):
            while b"\n" not in seen:
                try:
                    seen += await process.stdout.receive()
                except anyio.EndOfStream:
                    break
        line, newline, more = seen.partition(b"\n")
        assert newline, (f"share printed no status line in 60 s (exit {process.returncode}, "
                         f"stdout {seen!r}):\n{log.read_text()[-3000:]}")
        yield Sharer(process, line.decode(), log, [more])
    finally:
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            with anyio.move_on_after(10):
                await process.wait()
        await process.aclose()


def _option(args: list[str], name: str) -> str | None:
    return args[args.index(name) + 1] if name in args else None


def _seconds(duration: str) -> float:
    """``45m``, ``2h``, ``1h30m``, ``90s`` (as the share page's ``--for`` row says)."""
    match = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?", duration)
    assert match and duration, duration
    hours, minutes, secs = (int(part or 0) for part in match.groups())
    return hours * 3600.0 + minutes * 60 + secs


def _default_share_name() -> str:
    """This machine's host name made a valid name (``[a-z0-9_-]``, up to 32), as the
    share page's ``--name`` row says."""
    first = socket.gethostname().split(".")[0].lower()
    return re.sub(r"[^a-z0-9_-]+", "-", first).strip("-_")[:32]


def _dest_host(dest: str, topology: Topology) -> tuple[str, RemoteHost]:
    """(host name, topology host) of a ``[user@]host[:port]`` destination."""
    alias = dest.rpartition("@")[2].partition(":")[0]
    return alias, topology.host(ALIASES[alias])


async def _share(item: Documented, prepared: Prepared, docs: DocsEnv, topology: Topology,
                 request: pytest.FixtureRequest) -> None:
    args = prepared.args
    dest = args[args.index("share") + 1]
    _, host = _dest_host(dest, topology)
    name = _option(args, "--name") or _default_share_name()
    if _option(args, "--browsers") == "all":
        # A CI runner: a share host linked only to DEST's host, with one browser.
        with ShareHost(topology, host, index=SHARE_HOST_INDEX) as runner:
            runner.ssh_config.write_text(runner.ssh_config.read_text()
                                         + _ssh_config(topology, runner.home, set()))
            ci_browser = await anyio.to_thread.run_sync(runner.start_browser)
            extra = {k: v for k, v in prepared.env.items() if k not in ("HOME", "PATH")}
            command = SharerCommand(runner.argv(str(SCRIPT), *args, env=extra), None,
                                    runner.home)
            version = runner.devtools_version(ci_browser)["Browser"]
            await _check_share(item, command, dest, [f"{name}-1"], ci_browser.pid, version,
                               docs, topology)
        return
    browser: RootBrowser = request.getfixturevalue("root_browser")
    command = SharerCommand([str(SCRIPT), *args], prepared.env, docs.cwd)
    if "--launch" not in args:
        await _check_share(item, command, dest, [name], browser.pid, browser.version(),
                           docs, topology)
        return
    # --launch shares a browser of its own profile — never the one running already, which
    # stands for the user's logged-in Chrome. A persistent one stays when the share stops;
    # one in a temporary profile is stopped with it, the profile removed.
    temporary = "--temporary-profile" in args
    profile = ("--user-data-dir=" + prepared.env.get("TMPDIR", "/tmp").rstrip("/")
               + "/csgw-chrome-" if temporary else
               f"--user-data-dir={docs.home}/.cache/chrome-ssh-gateway/share-{name}")
    before = _browser_pids(profile)
    try:
        await _check_share(item, command, dest, [name], None, None, docs, topology,
                           launched=profile)
        left = _browser_pids(profile) - before
        if temporary:
            assert not left, f"{item.where}: the temporary browser outlived the share"
        else:
            assert left, f"{item.where}: the launched browser did not stay"
    finally:
        _kill_pids({p for pid in _browser_pids(profile) - before
                    for p in _pids_naming(_profile_of(pid))})


def _profile_of(pid: int) -> str:
    """The profile directory a browser process runs on ("" once it has exited)."""
    with contextlib.suppress(OSError):
        args = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        for arg in args.split("\0"):
            if arg.startswith("--user-data-dir="):
                return arg.partition("=")[2]
    return "\0"  # names no process


def _browser_pids(profile_flag: str) -> set[int]:
    """The browser processes (not renderers and helpers) started with ``profile_flag``."""
    found = set()
    for pid in _pids_naming(profile_flag):
        with contextlib.suppress(OSError):
            args = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
            if "--type=" not in args:
                found.add(pid)
    return found


async def _check_share(item: Documented, command: SharerCommand, dest: str, names: list[str],
                       pid: int | None, version: str | None, docs: DocsEnv,
                       topology: Topology, launched: str = "") -> None:
    """Start the sharer; check its status line, the sockets and manifests on DEST, that
    a gateway serves each share; stop it and check that all of that is gone. ``pid``
    and ``version`` None: the shared browser is one it launched with ``launched``, its
    ``--user-data-dir=`` flag."""
    alias, host = _dest_host(dest, topology)
    directory = host.home / SHARED_DIR
    duration = _option(command.argv, "--for")
    started = datetime.now(UTC)
    log = docs.home / f"share-{abs(hash(item.id))}.log"
    targets_file = write_targets(docs.home / f"shares-on-{alias}.toml",
                                 {"dest": {"ssh": dest, "shared": True}})
    with anyio.fail_after(RUN_TIMEOUT):
        async with _sharer(command, log) as sharer:
            status = sharer.status
            assert status.startswith("chrome-ssh-gateway share: sharing "), status
            assert f" on {dest}, " in status, status
            for name in names:
                assert f" as {name} (~/{SHARED_DIR}/{name}.sock)" in status, status
            assert stat.S_IMODE(directory.lstat().st_mode) == 0o700
            assert directory.lstat().st_uid == host.uid
            for name in names:
                sock = (directory / f"{name}.sock").lstat()
                assert stat.S_ISSOCK(sock.st_mode), sock
                assert (stat.S_IMODE(sock.st_mode), sock.st_uid) == (0o600, host.uid), sock
                manifest = json.loads((directory / f"{name}.json").read_text())
                assert manifest["name"] == name, manifest
                assert manifest["sharer"] == socket.gethostname(), manifest
                if pid is None:
                    assert manifest["pid"] in _browser_pids(launched), (manifest, launched)
                    assert manifest["browser"].startswith("Chrome/"), manifest
                else:
                    assert (manifest["pid"], manifest["browser"]) == (pid, version), manifest
                if duration is None:
                    assert "expires" not in manifest, manifest
                else:
                    expires = datetime.fromisoformat(manifest["expires"])
                    wanted = started + timedelta(seconds=_seconds(duration))
                    assert abs(expires - wanted) < timedelta(minutes=1), manifest
            with (docs.home / f"gateway-{abs(hash(item.id))}.log").open("w") as errlog:
                async with open_stdio(str(SCRIPT), ["--config", str(targets_file)],
                                      topology.client_env(docs.home), docs.cwd,
                                      errlog) as client:

                    async def served() -> dict[str, dict[str, Any]] | None:
                        targets = await targets_by_name(client)
                        return targets if all(
                            targets.get(n, {}).get("state") == "up"
                            and targets[n]["tabs"] >= 1 for n in names) else None

                    targets = await eventually(served, until=present, timeout=30,
                                               what=f"the shares {names} up on {dest}")
                    assert set(names) <= set(targets["dest"]["browsers"]), targets
                    listing = await call_ok(client, "list_tabs")
                    for name in names:
                        assert [t for t in listing["tabs"] if t["target"] == name], listing
                    code, printed = await sharer.stop()
                    assert code == 0, (code, printed, log.read_text()[-3000:])
                    assert f"stopped; the shares were removed from {dest}" in printed, printed
                    for name in names:
                        for suffix in (".sock", ".json"):
                            assert not os.path.lexists(directory / f"{name}{suffix}")

                    async def ended() -> bool:  # listed as gone for a while, then not at all
                        targets = await targets_by_name(client)
                        return all(targets.get(n, {}).get("state", "gone") == "gone"
                                   for n in names) and not set(names) & set(
                            targets["dest"]["browsers"])

                    await eventually(ended, timeout=30, what=f"the shares {names} removed")


@contextlib.asynccontextmanager
async def _live_shares(path: Path, docs: DocsEnv, topology: Topology,
                       request: pytest.FixtureRequest) -> AsyncIterator[None]:
    """A share named ``SHARE_NAME`` of the root-namespace browser into the host of every
    ``ssh`` + ``shared = true`` target of the targets file at ``path``, while the block
    runs; each stopped with Ctrl-C (exit 0) after it."""
    dests = [t["ssh"] for t in tomllib.loads(path.read_text())["targets"].values()
             if t.get("shared") and "ssh" in t]
    if not dests:
        yield
        return
    browser: RootBrowser = request.getfixturevalue("root_browser")
    async with contextlib.AsyncExitStack() as stack:
        sharers = []
        for dest in dests:
            argv = [str(SCRIPT), "share", dest, "--name", SHARE_NAME, "--cdp",
                    f"127.0.0.1:{browser.port}"]
            env = topology.client_env(docs.home)
            sharer = await stack.enter_async_context(_sharer(
                SharerCommand(argv, env, docs.cwd), docs.home / f"share-{dest}.log"))
            assert sharer.status.startswith("chrome-ssh-gateway share: sharing "), sharer.status
            assert f" as {SHARE_NAME} (" in sharer.status, sharer.status
            sharers.append(sharer)
        yield
        for sharer in sharers:
            code, printed = await sharer.stop()
            assert code == 0, (code, printed, sharer.log.read_text()[-3000:])
            assert "stopped; the shares were removed from " in printed, printed


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
async def test_documented_command(item: Documented, docs_env: DocsEnv, topology: Topology,
                                  request: pytest.FixtureRequest) -> None:
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
    elif command == "share":
        await _share(item, prepared, docs_env, topology, request)
    else:
        pytest.fail(f"{item.where}: unknown subcommand {command!r}")


@pytest.mark.parametrize("item", _unreferenced_targets_files(), ids=lambda i: i.where)
async def test_documented_targets_file_serves(item: Documented, docs_env: DocsEnv,
                                              topology: Topology,
                                              request: pytest.FixtureRequest) -> None:
    path = docs_env.home / Path(item.where).name
    path.write_text(docs_env.rewrite(item.text))
    prepared = Prepared(["--config", str(path)], topology.client_env(docs_env.home) | DOC_ENV,
                        _expected_up(path), path)
    async with _live_shares(path, docs_env, topology, request):
        targets = await _serve(item, prepared, docs_env)
    # A shares row over SSH has the share kept live on its host; this machine's has none.
    for name, target in tomllib.loads(path.read_text())["targets"].items():
        if target.get("shared"):
            members = [SHARE_NAME] if "ssh" in target else []
            assert targets[name]["browsers"] == members, (name, targets)
