"""The wheel as a user gets it (issue 19): ``scripts/check-wheel --offline`` builds the
sdist and the wheel, installs the wheel alone into a fresh venv, and runs
``chrome-ssh-gateway --version`` and an MCP handshake over stdio (``initialize``, then
``tools/list``) — the steps the release workflow runs before it publishes.

Offline: uv builds with hatchling and installs the dependencies from its cache, which
``scripts/setup`` fills; the handshake's one connection is refused on 127.0.0.1:9. The
fresh venv uses this test's Python, whose wheels (``google-re2``, ``pydantic-core``) are
the ones in the cache.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def test_the_wheel_installs_into_a_fresh_venv_and_serves_mcp(tmp_path: Path) -> None:
    out = tmp_path / "dist"
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "check-wheel"), "--offline", "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL,
        env={**os.environ, "CHECK_WHEEL_PYTHON": sys.executable, "TMPDIR": str(tmp_path)})
    assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert f"\nchrome-ssh-gateway {VERSION}\n" in f"\n{done.stdout}"
    handshake = re.search(r"^protocol \S+, chrome-ssh-gateway (\S+), (\d+) tools: (.*)$",
                          done.stdout, re.M)
    assert handshake, done.stdout
    assert handshake[1] == VERSION and int(handshake[2]) >= 10, handshake[0]
    wheel = out / f"chrome_ssh_gateway-{VERSION}-py3-none-any.whl"
    assert (out / f"chrome_ssh_gateway-{VERSION}.tar.gz").is_file()
    with zipfile.ZipFile(wheel) as archive:
        assert "gateway/__main__.py" in archive.namelist()
    # The fresh venv is gone with the script's exit; nothing was left beside the dist.
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("csgw-check-wheel-")]
