"""``share``: a browser on a machine nobody can dial, driven by a gateway elsewhere (issue 18).

The sharer runs in a ``ShareHost`` — a network namespace with no sshd, linked only to
h2's — and dials out to h2's sshd, as a laptop behind NAT or a hosted CI runner does.
Gateways drive what it shares through the MCP client over stdio: one in the root
namespace over SSH to h2 (``shared = true``), and one on h2 itself as its login user with
nothing configured (the embedded default serves the machine's shares). Everything is
real: sshd makes the socket, Chromium answers through it, the files are checked on h2.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import stat
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from tests.e2e.helpers import (
    call_err,
    call_ok,
    eventually,
    open_gateway,
    open_stdio,
    present,
    targets_by_name,
    write_targets,
)
from tests.e2e.share_host import GATEWAY, ShareBrowser, ShareHost, as_login_user
from tests.topology import RemoteHost, Topology

pytestmark = pytest.mark.anyio

INTERVAL_S = 0.5   # the gateways' scan_interval_s here: a share shows within about this
STATUS_S = 20.0    # a sharer prints its status line within this (a cold python import)
EXIT_S = 15.0      # a stopped sharer is gone within this (its clean-up is bounded by 10 s)


def shared_dir(host: RemoteHost) -> Path:
    return host.home / ".cache" / "chrome-ssh-gateway" / "shared"


class Sharer:
    """One ``chrome-ssh-gateway share`` process in the share host, its output in files."""

    def __init__(self, share: ShareHost, out: Path, *args: str) -> None:
        self.out, self.err = out.with_suffix(".out"), out.with_suffix(".err")
        with self.out.open("wb") as stdout, self.err.open("wb") as stderr:
            self.process = share.spawn(*GATEWAY, "share", *args, stdout=stdout,
                                       stderr=stderr)

    @property
    def stdout(self) -> str:
        return self.out.read_text()

    def wait_status(self) -> str:
        """The status line, once printed (fails with the output if the sharer exits)."""
        deadline = time.monotonic() + STATUS_S
        while time.monotonic() < deadline:
            for line in self.stdout.splitlines():
                if line.startswith("chrome-ssh-gateway share: sharing "):
                    return line
            if self.process.poll() is not None:
                break
            time.sleep(0.05)
        raise AssertionError(f"no status line (exit {self.process.poll()}): "
                             f"{self.stdout}{self.err.read_text()}")

    def stop(self, sig: int = signal.SIGINT) -> int:
        if self.process.poll() is None:
            os.kill(self.process.pid, sig)
        return self.process.wait(timeout=EXIT_S)


@pytest.fixture(scope="module")
def share(topology: Topology) -> Iterator[ShareHost]:
    """A machine nobody can dial, with one browser in its default profile."""
    with ShareHost(topology, topology.host("h2"), index=1) as host:
        host.start_browser()
        yield host


@pytest.fixture
def sharers(share: ShareHost, tmp_path: Path) -> Iterator[list[Sharer]]:
    """Start sharers with ``start(*args)``; every one still running is stopped after."""
    started: list[Sharer] = []
    yield started
    for sharer in started:
        with contextlib.suppress(subprocess.TimeoutExpired):
            sharer.stop(signal.SIGTERM)


def start(sharers: list[Sharer], share: ShareHost, tmp_path: Path, *args: str) -> Sharer:
    sharer = Sharer(share, tmp_path / f"sharer-{len(sharers)}", *args)
    sharers.append(sharer)
    return sharer


@contextlib.asynccontextmanager
async def over_ssh(topology: Topology, tmp_path: Path) -> AsyncIterator[Client]:
    """A gateway in the root namespace following the shares on h2 over SSH."""
    path = write_targets(tmp_path / "targets.toml", {
        "h2": {"ssh": "h2", "shared": True, "scan_interval_s": INTERVAL_S}})
    async with open_gateway(topology.client_env(), ["--config", str(path)]) as client:
        yield client


async def up(client: Client, name: str, timeout: float = 20) -> dict[str, Any]:
    async def listed() -> dict[str, Any] | None:
        target = (await targets_by_name(client)).get(name)
        return target if target is not None and target["state"] == "up" else None

    return await eventually(listed, until=present, timeout=timeout, what=f"target {name} up")


async def title_of(client: Client, tab: int) -> str:
    result = await call_ok(client, "evaluate", {"tab": tab, "expression": "document.title"})
    value: str = result["value"]
    return value


async def test_a_browser_nobody_can_dial_is_driven_over_ssh(
        topology: Topology, share: ShareHost, sharers: list[Sharer], tmp_path: Path) -> None:
    h2 = topology.host("h2")
    browser = share.browsers[0]
    sharer = start(sharers, share, tmp_path, "h2", "--name", "laptop")  # found by discovery
    status = sharer.wait_status()
    assert "as laptop (~/.cache/chrome-ssh-gateway/shared/laptop.sock) on h2" in status
    assert f"pid {browser.pid}" in status
    assert "Whoever logs in as csgw on h2 controls this browser." in status

    directory, sock = shared_dir(h2), shared_dir(h2) / "laptop.sock"
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert stat.S_ISSOCK(sock.stat().st_mode) and stat.S_IMODE(sock.stat().st_mode) == 0o600
    assert (sock.stat().st_uid, directory.stat().st_uid) == (h2.uid, h2.uid)
    manifest = json.loads((directory / "laptop.json").read_text())
    assert stat.S_IMODE((directory / "laptop.json").stat().st_mode) == 0o600
    assert {k: manifest[k] for k in ("name", "pid", "program")} == {
        "name": "laptop", "pid": browser.pid, "program": "chromium"}
    assert manifest["browser"].startswith("Chrome/") and manifest["sharer"]
    assert "expires" not in manifest

    async with over_ssh(topology, tmp_path) as client:
        laptop = await up(client, "laptop")
        assert (laptop["pid"], laptop["sharer"], laptop["host"]) == (
            browser.pid, manifest["sharer"], "h2")
        assert (await targets_by_name(client))["h2"]["browsers"] == ["laptop"]
        opened = await call_ok(client, "navigate", {
            "target": "laptop", "url": "data:text/html,<title>shared-page</title>"})
        assert await title_of(client, opened["tab"]) == "shared-page"
        view = await call_ok(client, "browse_view", {"tab": opened["tab"]})
        assert "shared-page" in json.dumps(view)
        downloads = await call_ok(client, "downloads", {"tab": opened["tab"]})
        assert downloads["unreachable"] == ("it is a share: the browser runs on another "
                                            "machine and h2 only holds its socket"), downloads
        # It is that browser: the page is open in the share host's Chromium.
        pages = share.run_in_netns(lambda: _pages(browser))
        assert "shared-page" in [p["title"] for p in pages]

        doctor = subprocess.run(
            [*GATEWAY, "--config", str(tmp_path / "targets.toml"), "doctor"],
            env=topology.client_env(), capture_output=True, text=True, timeout=60)
        assert doctor.returncode == 0, doctor.stdout + doctor.stderr
        assert "1 share, 1 answering: laptop: answers; checked share laptop from" \
            in doctor.stdout

        assert sharer.stop() == 0
        assert "stopped; the shares were removed from h2" in sharer.stdout
        assert not sock.exists() and not (directory / "laptop.json").exists()
        gone = await eventually(lambda: _is_gone(client, opened["tab"]), until=present,
                                timeout=10,
                                what="the tab to answer that its share ended")
        assert "laptop" in gone and "ended (its share was stopped or expired)" in gone
        listed = await targets_by_name(client)
        assert (listed["laptop"]["state"], listed["h2"]["browsers"]) == ("gone", [])
        assert "ended" in listed["laptop"]["error"]


async def _is_gone(client: Client, tab: int) -> str | None:
    result = await client.call_tool("evaluate", {"tab": tab, "expression": "1"})
    text = result.content[0].text if result.is_error else ""  # type: ignore[union-attr]
    return text if "ended" in text else None


def _pages(browser: ShareBrowser) -> list[dict[str, Any]]:
    import urllib.request

    with urllib.request.urlopen(f"http://127.0.0.1:{browser.port}/json/list",
                                timeout=5) as answer:
        pages: list[dict[str, Any]] = json.load(answer)
    return pages


async def test_the_receiving_host_serves_its_shares_with_nothing_configured(
        topology: Topology, share: ShareHost, sharers: list[Sharer], tmp_path: Path) -> None:
    h2 = topology.host("h2")
    sharer = start(sharers, share, tmp_path, "h2", "--name", "desk",
                   "--cdp", f"127.0.0.1:{share.browsers[0].port}")
    sharer.wait_status()
    argv = as_login_user(h2, *GATEWAY, "serve", env={"CHROME_SSH_GATEWAY_SHARED": "1"})
    async with open_stdio(argv[0], argv[1:]) as client:
        desk = await up(client, "desk")
        assert (desk["transport"], desk["host"]) == ("local", "this machine")
        listed = await targets_by_name(client)
        assert listed["shared"]["browsers"] == ["desk"]
        # No target named: the one share there is.
        opened = await call_ok(client, "navigate", {
            "url": "data:text/html,<title>on-h2</title>"})
        assert opened["target"] == "desk"
        assert await title_of(client, opened["tab"]) == "on-h2"


async def test_the_embedded_default_serves_this_machines_shares_beside_its_own(
        topology: Topology, share: ShareHost, sharers: list[Sharer], tmp_path: Path) -> None:
    h2 = topology.host("h2")
    start(sharers, share, tmp_path, "h2", "--name", "lap").wait_status()
    argv = as_login_user(h2, *GATEWAY, "serve")
    async with open_stdio(argv[0], argv[1:]) as client:
        lap = await up(client, "lap", timeout=30)  # the default looks every 2 s
        assert lap["sharer"]
        listed = await targets_by_name(client)
        assert {"local", "shared", "lap"} <= set(listed)
        assert listed["shared"]["browsers"] == ["lap"]
        # Two browsers now, its own and the laptop's: a call must say which.
        err = await call_err(client, "navigate", {"url": "data:text/html,x"})
        assert "several targets are configured (lap, local, shared)" in err


async def test_ssh_proxy_to_with_shared_follows_the_shares_there(
        topology: Topology, share: ShareHost, sharers: list[Sharer], tmp_path: Path) -> None:
    start(sharers, share, tmp_path, "h2", "--name", "envy").wait_status()
    env = topology.client_env() | {"SSH_PROXY_TO": "h2", "CHROME_SSH_GATEWAY_SHARED": "1"}
    async with open_gateway(env) as client:
        await up(client, "envy", timeout=30)
        assert (await targets_by_name(client))["default"]["browsers"] == ["envy"]
        opened = await call_ok(client, "navigate", {"url": "data:text/html,<title>e</title>"})
        assert opened["target"] == "envy"


async def test_every_browser_here_is_shared_and_followed(
        topology: Topology, share: ShareHost, sharers: list[Sharer], tmp_path: Path) -> None:
    extra = [share.start_browser(), share.start_browser()]
    try:
        sharer = start(sharers, share, tmp_path, "h2", "--name", "box", "--browsers", "all")
        status = sharer.wait_status()
        assert "following the browsers here as they start and exit" in status
        async with over_ssh(topology, tmp_path) as client:
            boxes = await eventually(lambda: _boxes(client, 3), until=present, timeout=20,
                                     what="three shared browsers")
            pids = {b["pid"] for b in boxes.values()}
            assert pids == {share.browsers[0].pid, *(b.pid for b in extra)}
            late = share.start_browser()
            extra.append(late)
            boxes = await eventually(lambda: _boxes(client, 4), until=present, timeout=20,
                                     what="the browser started later shared too")
            [late_name] = [n for n, b in boxes.items() if b["pid"] == late.pid]
            assert late_name == "box-4"  # numbers are never reused
            assert (shared_dir(topology.host("h2")) / "box-4.sock").exists()

            victim = extra[0]
            [victim_name] = [n for n, b in boxes.items() if b["pid"] == victim.pid]
            opened = await call_ok(client, "navigate", {
                "target": victim_name, "url": "data:text/html,<title>doomed</title>"})
            share.kill_browser(victim)
            await eventually(lambda: _boxes(client, 3), until=present, timeout=20,
                             what="the killed browser's share removed")
            assert not (shared_dir(topology.host("h2")) / f"{victim_name}.sock").exists()
            err = await call_err(client, "evaluate", {"tab": opened["tab"],
                                                      "expression": "1"})
            # The renderer dies with its browser: the tab may have been heard crashing
            # before its share was: either is what happened.
            assert (victim_name in err and "ended" in err) or "crashed (killed)" in err, err
            assert f"stopped sharing {victim_name} (its browser exited)" in sharer.stdout
    finally:
        for browser in extra:
            share.kill_browser(browser)


async def _boxes(client: Client, n: int) -> dict[str, dict[str, Any]] | None:
    targets = await targets_by_name(client)
    boxes = {name: t for name, t in targets.items()
             if name.startswith("box-") and t["state"] == "up"}
    return boxes if len(boxes) == n and len(targets["h2"]["browsers"]) == n else None


async def test_a_killed_sharer_leaves_a_stale_socket_the_next_one_replaces(
        topology: Topology, share: ShareHost, sharers: list[Sharer], tmp_path: Path) -> None:
    sock = shared_dir(topology.host("h2")) / "stale.sock"
    first = start(sharers, share, tmp_path, "h2", "--name", "stale")
    first.wait_status()
    async with over_ssh(topology, tmp_path) as client:
        await up(client, "stale")
        opened = await call_ok(client, "navigate", {
            "target": "stale", "url": "data:text/html,<title>kept</title>"})
        assert first.stop(signal.SIGKILL) == -signal.SIGKILL
        assert stat.S_ISSOCK(sock.stat().st_mode)  # sshd left it behind

        said: list[str] = []  # on the way: sshd may still take the connection, then close it

        async def down() -> str | None:  # once sshd's session of the sharer is gone too
            target = (await targets_by_name(client))["stale"]
            error = target.get("error") or ""
            said.append(error)
            return error if "nothing answers on the share's socket" in error else None

        reason = await eventually(down, until=present, timeout=20, what="the stale share down")
        assert "comes back when the share does" in reason
        assert not [e for e in said if "can't handle" in e or "role=" in e], said  # h11's

        again = start(sharers, share, tmp_path, "h2", "--name", "stale")
        again.wait_status()
        await up(client, "stale")
        # The same browser: the same tab id, the same page.
        assert await title_of(client, opened["tab"]) == "kept"


async def test_a_name_live_on_dest_is_refused(
        topology: Topology, share: ShareHost, sharers: list[Sharer], tmp_path: Path) -> None:
    start(sharers, share, tmp_path, "h2", "--name", "taken").wait_status()
    second = start(sharers, share, tmp_path, "h2", "--name", "taken")
    assert second.process.wait(timeout=STATUS_S) == 1
    assert ("a share named taken is already live on h2; use --name"
            in second.err.read_text())
    assert (shared_dir(topology.host("h2")) / "taken.sock").exists()  # the first's, intact


async def test_a_share_ends_by_itself(
        topology: Topology, share: ShareHost, sharers: list[Sharer], tmp_path: Path) -> None:
    directory = shared_dir(topology.host("h2"))
    sharer = start(sharers, share, tmp_path, "h2", "--name", "brief", "--for", "4s")
    status = sharer.wait_status()
    assert " UTC. Whoever logs in" in status and "until 20" in status
    expires = json.loads((directory / "brief.json").read_text())["expires"]
    assert expires.endswith("+00:00")
    assert sharer.process.wait(timeout=4 + EXIT_S) == 0
    assert "--for ran out: stopping the share on h2" in sharer.stdout
    assert not (directory / "brief.sock").exists()
    assert not (directory / "brief.json").exists()


async def test_hostile_manifests_and_an_unsafe_directory(
        topology: Topology, share: ShareHost, sharers: list[Sharer], tmp_path: Path) -> None:
    h2 = topology.host("h2")
    directory = shared_dir(h2)
    start(sharers, share, tmp_path, "h2", "--name", "good").wait_status()
    planted = {"evil.json": '{"name": "evil", "share_id": "00000000000000ff", "pid": "1", '
                            '"sharer": "x", "shared_at": "now"}',
               "huge.json": "[" * 5000,
               "Bad Name.json": "{}"}
    for name, text in planted.items():
        (directory / name).write_text(text)
        os.chown(directory / name, h2.uid, h2.uid)
    # Bytes that are not UTF-8, in a name and in a manifest: over SSH these once closed
    # the gateway's whole connection to the host at every look.
    latin = os.fsencode(directory) + b"/caf\xe9.json"
    with open(latin, "wb") as file:
        file.write(b'{"name": "caf\xe9"}')
    os.chown(latin, h2.uid, h2.uid)
    try:
        async with over_ssh(topology, tmp_path) as client:
            await up(client, "good")

            async def judged() -> dict[str, dict[str, Any]] | None:
                targets = await targets_by_name(client)
                bad = {n: targets.get(n) for n in ("evil", "huge")}
                return targets if all(t and t["state"] == "down" for t in bad.values()) \
                    else None

            targets = await eventually(judged, until=present,
                                       timeout=20, what="the bad shares listed down")
            assert "pid: Input should be a valid integer" in targets["evil"]["error"]
            assert "larger than 4096 bytes" in targets["huge"]["error"]
            skipped = " ".join(targets["h2"]["skipped"])
            assert "Bad Name.json: its name is not" in skipped and "caf" in skipped
            err = await call_err(client, "navigate", {"target": "evil",
                                                      "url": "data:text/html,x"})
            assert "cannot be used" in err
            # The others are served all along.
            await call_ok(client, "navigate", {"target": "good", "url": "data:text/html,y"})

            directory.chmod(0o770)

            async def refused() -> str | None:
                group = (await targets_by_name(client))["h2"]
                return group["error"] if group["state"] == "down" else None

            reason = await eventually(refused, until=present,
                                      timeout=20, what="the unsafe directory refused")
            assert "writable by group or others (mode 770)" in reason
            # What it served is no longer: a socket there could be anyone's now.
            listed = await targets_by_name(client)
            assert listed["good"]["state"] == "gone"
            assert "is no longer served" in listed["good"]["error"]
    finally:
        directory.chmod(0o700)
        for name in planted:
            (directory / name).unlink(missing_ok=True)
        Path(os.fsdecode(latin)).unlink(missing_ok=True)


async def test_the_share_comes_back_after_its_link_drops(
        topology: Topology, share: ShareHost, sharers: list[Sharer], tmp_path: Path) -> None:
    h2 = topology.host("h2")
    sharer = start(sharers, share, tmp_path, "h2", "--name", "roam")
    sharer.wait_status()
    argv = as_login_user(h2, *GATEWAY, "serve", "--config", str(_here_config(h2)))
    async with open_stdio(argv[0], argv[1:]) as client:
        await up(client, "roam")
        opened = await call_ok(client, "navigate", {
            "target": "roam", "url": "data:text/html,<title>before-the-drop</title>"})
        h2.kill_ssh_sessions()  # the sharer's SSH session ends, as a dropped link does

        await eventually(lambda: _said(sharer, "reconnected to h2"), timeout=20,
                         what="the sharer to reconnect")
        assert "lost the link to h2; reconnecting" in sharer.stdout
        await up(client, "roam")
        assert await title_of(client, opened["tab"]) == "before-the-drop"


async def _said(sharer: Sharer, text: str) -> bool:
    return text in sharer.stdout


def _here_config(host: RemoteHost) -> Path:
    """A targets file the login user can read: this machine's shares, looked at often."""
    path = host.home / "share-targets.toml"
    write_targets(path, {"here": {"shared": True, "scan_interval_s": INTERVAL_S}})
    os.chown(path, host.uid, host.uid)
    return path


async def test_a_launched_browser_with_a_temporary_profile_stops_with_the_share(
        topology: Topology, sharers: list[Sharer], tmp_path: Path) -> None:
    with ShareHost(topology, topology.host("h2"), index=2) as bare:  # no browser runs there
        sharer = start(sharers, bare, tmp_path, "h2", "--name", "fresh", "--launch",
                       "--temporary-profile")
        status = sharer.wait_status()
        pid = int(status.split(", pid ")[1].split(",")[0])
        assert _cmdline(pid) and "--user-data-dir=" in " ".join(_cmdline(pid))
        async with over_ssh(topology, tmp_path) as client:
            await up(client, "fresh")
        assert sharer.stop() == 0
        await eventually(lambda: _exited(pid), timeout=EXIT_S, what="the browser stopped")


async def _exited(pid: int) -> bool:
    return not _cmdline(pid)


def _cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")[:-1]
    except OSError:
        return []


async def test_an_unknown_host_key_is_refused_unless_accepted(
        topology: Topology, share: ShareHost, sharers: list[Sharer], tmp_path: Path) -> None:
    known = share.home / ".ssh" / "known_hosts"
    saved = known.read_text()
    known.write_text("")
    try:
        refused = start(sharers, share, tmp_path, "h2", "--name", "tofu")
        assert refused.process.wait(timeout=STATUS_S) == 1
        assert "known_hosts" in refused.err.read_text()
        accepted = start(sharers, share, tmp_path, "h2", "--name", "tofu", "--accept-new")
        accepted.wait_status()
        assert known.read_text().strip()
    finally:
        known.write_text(saved)


async def test_no_browser_here_exits_1_with_the_ways_to_give_it_one(
        topology: Topology) -> None:
    with ShareHost(topology, topology.host("h2"), index=2) as bare:  # no browser runs there
        done = bare.run(*GATEWAY, "share", "h2", "--name", "none", timeout=STATUS_S)
        assert done.returncode == 1, done.stderr
        assert "no browser to share on this machine (no DevToolsActivePort" in done.stderr
        assert "--cdp 127.0.0.1:PORT, or add --launch" in done.stderr
        done = bare.run(*GATEWAY, "share", "h2", "--cdp", "127.0.0.1:9", timeout=STATUS_S)
        assert done.returncode == 1, done.stderr
        assert "no browser to share at --cdp: /json/version at 127.0.0.1:9" in done.stderr
        assert not (shared_dir(topology.host("h2")) / "none.json").exists()


async def test_bad_options_exit_2_before_anything_is_contacted(share: ShareHost) -> None:
    for args, reason in ((("h2", "--for", "0"), "out of range"),
                         (("h2", "--name", "UPPER"), "--name 'UPPER'"),
                         (("h2", "--cdp", "10.1.1.1:9222"), "expected 127.0.0.1:PORT"),
                         (("h2", "--browsers", "all", "--launch"), "drop --cdp and --launch")):
        done = share.run(*GATEWAY, "share", *args, timeout=STATUS_S)
        assert done.returncode == 2, (args, done.stderr)
        assert reason in done.stderr


def _open_here(share: ShareHost, url: str) -> str:
    """A tab the person opens in the shared browser (``PUT /json/new`` on its loopback)."""
    import http.client
    from urllib.parse import quote

    def put() -> str:
        conn = http.client.HTTPConnection("127.0.0.1", share.browsers[0].port, timeout=10)
        try:
            conn.request("PUT", "/json/new?" + quote(url, safe=":/?=&%#"))
            return str(json.loads(conn.getresponse().read())["id"])
        finally:
            conn.close()

    return share.run_in_netns(put)


async def test_with_tabs_agent_the_gateway_sees_only_the_agents_tabs(
        topology: Topology, share: ShareHost, sharers: list[Sharer], tmp_path: Path) -> None:
    """``share --tab`` hands one of the person's tabs over (and implies ``--tabs agent``):
    the receiving gateway lists that one and the ones its agent opens, never the others."""
    mark = "persons-own-tab-5d1c"
    _open_here(share, f"data:text/html,<title>{mark}</title>")
    _open_here(share, "data:text/html,<title>Handed-over-page</title>")
    start(sharers, share, tmp_path, "h2", "--name", "mine", "--tab", "handed-over",
          "--cdp", f"127.0.0.1:{share.browsers[0].port}").wait_status()
    async with over_ssh(topology, tmp_path) as client:
        mine = await up(client, "mine")
        assert mine["tab_scope"] == "agent"

        async def titles() -> list[str]:
            tabs = (await call_ok(client, "list_tabs", {"target": "mine"}))["tabs"]
            return sorted(t["title"] for t in tabs)

        assert await eventually(titles, until=lambda t: t == ["Handed-over-page"],
                                timeout=10, what="the handed tab listed")
        opened = await call_ok(client, "navigate", {
            "target": "mine", "url": "data:text/html,<title>agents-own</title>"})
        assert await title_of(client, opened["tab"]) == "agents-own"
        assert await titles() == ["Handed-over-page", "agents-own"]
        listed = json.dumps(await call_ok(client, "list_tabs", {"target": "mine"}))
        assert mark not in listed
        error = await call_err(client, "cdp_command", {"target": "mine",
                                                       "method": "Target.getTargets"})
        assert "only its own tabs" in error
