"""The session-wide test topology (see tests/topology.py).

Without root, sshd, Chromium or iproute2 the e2e tests are skipped — except in CI
(``CI=true``), where a missing piece is a failure: CI must never pass by skipping.
The topology is torn down at the end of the session unless ``CSGW_KEEP_TOPOLOGY=1``
(handy when iterating: the next session reuses the running hosts).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.helpers import stop_daemons
from tests.topology import Topology, down, missing_requirements, up

_HERE = Path(__file__).parent


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in {"1", "true", "yes"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if _HERE in Path(item.path).parents:
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session")
def topology() -> Iterator[Topology]:
    missing = missing_requirements()
    if missing:
        reason = "e2e topology unavailable: " + "; ".join(missing)
        if _env_flag("CI"):
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    topo = up(2)
    try:
        yield topo
    finally:
        if not _env_flag("CSGW_KEEP_TOPOLOGY"):
            down()


@pytest.fixture
def fault_topology(topology: Topology) -> Iterator[Topology]:
    """The session topology for a test that injects faults: every host is reset afterwards
    (link up, original host key, sshd and Chromium running) so later tests start clean."""
    yield topology
    topology.reset()



@pytest.fixture
def run_dir(tmp_path: Path) -> Iterator[Path]:
    """A private ``XDG_RUNTIME_DIR`` for ``call``'s daemons; those left are stopped."""
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    yield run
    stop_daemons(run / "chrome-ssh-gateway")
