"""The example targets files in examples/ are valid configurations."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.config import load_config

EXAMPLES = sorted((Path(__file__).parents[2] / "examples").glob("*.toml"))
TARGET_FILES = [p for p in EXAMPLES if not p.name.startswith("codex")]


@pytest.mark.parametrize("path", TARGET_FILES, ids=lambda p: p.name)
def test_example_targets_file_loads(path: Path) -> None:
    config = load_config({"HOME": "/home/alice"}, str(path))
    assert config.targets
    assert all(t.ssh is not None for t in config.targets)


def test_there_are_examples() -> None:
    assert {p.name for p in TARGET_FILES} >= {"devvms.toml", "ci-runner.toml"}
