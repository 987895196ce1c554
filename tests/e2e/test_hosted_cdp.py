"""A hosted ``cdp = "wss://…?token=${POOL_TOKEN}"`` target with an ``Authorization`` header.

A token-checking TLS websocket proxy (``token_proxy``, the shape of browserless
or Browserbase) runs on h1 in front of h1's real Chromium, with a self-signed
certificate the target trusts through ``ca_file``. The right token works end to
end, directly and through SSH to the host's loopback; a wrong one fails at connect
with a clear error; and the token (right or wrong) appears nowhere: not in tool
results, not on stderr, not in the call log.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.helpers import (
    call_err,
    call_ok,
    data_url,
    open_gateway,
    wait_for_targets,
    write_targets,
)
from tests.topology import RemoteHost, Topology

pytestmark = pytest.mark.anyio

PROXY_PORT = 9443
LOOPBACK_PROXY_PORT = 9444  # the same proxy on h1's loopback: reachable only through SSH
ROOT = Path(__file__).resolve().parents[2]


class Pool:
    def __init__(self, host: RemoteHost, token: str, ca_file: Path) -> None:
        self.host, self.token, self.ca_file = host, token, ca_file

    def url(self, *, through_ssh: bool = False) -> str:
        where = f"127.0.0.1:{LOOPBACK_PROXY_PORT}" if through_ssh else (
            f"{self.host.address}:{PROXY_PORT}")
        return f"wss://{where}/chromium?token=${{POOL_TOKEN}}"


@pytest.fixture(scope="module")
def pool(topology: Topology, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pool]:
    host = topology.host("h1")
    certs = tmp_path_factory.mktemp("pool-tls")
    cert, key = certs / "cert.pem", certs / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=csgw test pool",
                    "-addext", f"subjectAltName=IP:{host.address},IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    token = f"tok-{uuid.uuid4().hex}"
    proxies = [subprocess.Popen(
        host.netns_exec(sys.executable, "-m", "tests.e2e.token_proxy", address, str(port),
                        str(host.chrome_port()), token, str(cert), str(key)),
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=ROOT, start_new_session=True)
        for address, port in ((host.address, PROXY_PORT), ("127.0.0.1", LOOPBACK_PROXY_PORT))]
    try:
        for proxy in proxies:
            assert proxy.stdout is not None and proxy.stdout.readline().strip() == b"ready"
        yield Pool(host, token, cert)
    finally:
        for proxy in proxies:
            proxy.terminate()
            proxy.wait(timeout=10)


def _targets(tmp_path: Path, pool: Pool, **extra: object) -> Path:
    return write_targets(tmp_path / "targets.toml", {"pool": {
        "cdp": pool.url(through_ssh="ssh" in extra),
        "headers": {"Authorization": "Bearer ${POOL_TOKEN}"},
        "ca_file": str(pool.ca_file), "reconnect": {"call_wait_s": 5}, **extra}})


async def test_right_token_works_and_is_never_shown(
        topology: Topology, pool: Pool, tmp_path: Path) -> None:
    call_log, stderr = tmp_path / "calls.jsonl", tmp_path / "stderr.txt"
    env = topology.client_env() | {"POOL_TOKEN": pool.token, "MCP_DEBUG_LOG": str(call_log)}
    results = []
    with stderr.open("w") as errlog:
        async with open_gateway(env, ["--config", str(_targets(tmp_path, pool))],
                                errlog=errlog) as gw:
            listed = await wait_for_targets(gw, {"pool": "up"})
            endpoint = listed["pool"]["cdp_endpoint"]
            assert "token=[redacted]" in endpoint and "/chromium" in endpoint, endpoint
            opened = await call_ok(gw, "new_tab", {"target": "pool",
                                                   "url": data_url("pool-page")})
            title = await call_ok(gw, "evaluate", {"tab": opened["tab"],
                                                   "expression": "document.title"})
            assert title["value"] == "pool-page"
            results += [listed, opened, title, await call_ok(gw, "ping", {"target": "pool"}),
                        await call_ok(gw, "list_targets")]
            await call_ok(gw, "close_tab", {"tab": opened["tab"]})
    everything = json.dumps(results) + stderr.read_text() + call_log.read_text()
    assert call_log.read_text().count("\n") >= 5
    assert pool.token not in everything


async def test_through_ssh_to_a_pool_on_the_hosts_loopback(
        topology: Topology, pool: Pool, tmp_path: Path) -> None:
    """With ``ssh``, the TLS websocket goes through the SSH host's private route (the
    certificate still checked against the URL's host)."""
    env = topology.client_env() | {"POOL_TOKEN": pool.token}
    async with open_gateway(env, ["--config", str(_targets(tmp_path, pool, ssh="h1"))]) as gw:
        listed = await wait_for_targets(gw, {"pool": "up"})
        assert listed["pool"]["transport"] == "ssh", listed
        opened = await call_ok(gw, "navigate", {"target": "pool", "url": data_url("via-ssh")})
        title = await call_ok(gw, "evaluate", {"tab": opened["tab"],
                                               "expression": "document.title"})
        assert title["value"] == "via-ssh"
        # On the SSH host's loopback, yet its files are the pool's, not h1's: said so.
        downloads = await call_ok(gw, "downloads", {"target": "pool"})
        assert downloads["downloads"] == [], downloads
        assert downloads["unreachable"].startswith("it is a hosted browser"), downloads
        await call_ok(gw, "close_tab", {"tab": opened["tab"]})


async def test_wrong_token_fails_at_connect_clearly(
        topology: Topology, pool: Pool, tmp_path: Path) -> None:
    wrong = f"wrong-{uuid.uuid4().hex}"
    call_log, stderr = tmp_path / "calls.jsonl", tmp_path / "stderr.txt"
    env = topology.client_env() | {"POOL_TOKEN": wrong, "MCP_DEBUG_LOG": str(call_log)}
    with stderr.open("w") as errlog:
        async with open_gateway(env, ["--config", str(_targets(tmp_path, pool))],
                                errlog=errlog) as gw:
            listed = await wait_for_targets(gw, {"pool": "down"})
            error = await call_err(gw, "new_tab", {"target": "pool", "url": "about:blank"})
    for text in (listed["pool"]["error"], error):
        assert "HTTP 401" in text and "credentials" in text and "token=[redacted]" in text, text
    assert wrong not in json.dumps(listed) + error + stderr.read_text() + call_log.read_text()


def test_doctor_names_the_refused_handshake_without_the_token(
        topology: Topology, pool: Pool, tmp_path: Path) -> None:
    config = _targets(tmp_path, pool)
    for token, failed in ((pool.token, False), (f"wrong-{uuid.uuid4().hex}", True)):
        result = subprocess.run(
            [sys.executable, "-m", "gateway", "doctor", "--json", "--config", str(config)],
            env=topology.client_env() | {"POOL_TOKEN": token}, capture_output=True, text=True,
            timeout=90, stdin=subprocess.DEVNULL, cwd=ROOT)
        [target] = json.loads(result.stdout)["targets"]
        steps = {s["name"]: s for s in target["steps"]}
        assert token not in result.stdout + result.stderr
        assert "token=[redacted]" in steps["websocket"]["detail"] or failed, steps
        if failed:
            assert steps["websocket"]["status"] == "failed", steps["websocket"]
            assert "HTTP 401" in steps["websocket"]["detail"]
            assert "check the token" in steps["websocket"]["fix"]
        else:
            assert all(steps[n]["status"] == "ok" for n in ("endpoint", "websocket", "browser",
                                                             "tabs")), steps


async def test_nothing_listening_behind_ssh_is_named_as_such(
        topology: Topology, tmp_path: Path) -> None:
    """A hosted URL on the SSH host's loopback where nothing listens: the route's socket
    opens anyway and only closes, so this read 'refused: InvalidMessage', and doctor's
    fix said to check the token and ca_file."""
    config = write_targets(tmp_path / "targets.toml", {"pool": {
        "ssh": "h1", "cdp": "ws://127.0.0.1:1/chromium?token=${POOL_TOKEN}",
        "reconnect": {"call_wait_s": 5}}})
    env = topology.client_env() | {"POOL_TOKEN": "t0ken"}
    async with open_gateway(env, ["--config", str(config)]) as gw:
        listed = await wait_for_targets(gw, {"pool": "down"})
    error = listed["pool"]["error"]
    assert "nothing listens at 127.0.0.1:1 on h1" in error and "InvalidMessage" not in error, error
    result = subprocess.run(
        [sys.executable, "-m", "gateway", "doctor", "--json", "--config", str(config)],
        env=env, capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL, cwd=ROOT)
    [target] = json.loads(result.stdout)["targets"]
    websocket = {s["name"]: s for s in target["steps"]}["websocket"]
    assert "nothing listens at 127.0.0.1:1 on h1" in websocket["detail"], websocket
    assert "check the token" not in websocket["fix"], websocket
