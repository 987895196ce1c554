"""The one golden-file check: a test's output against its pinned copy.

After a deliberate change (the view's format, a tool's description or schema, a fresh
fixture capture), regenerate every golden file and read the diff before committing::

    CSGW_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/unit
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["SWITCH", "assert_golden"]

SWITCH = "CSGW_UPDATE_GOLDEN"


def assert_golden(path: Path, actual: str) -> None:
    """``actual`` is what ``path`` holds; with ``CSGW_UPDATE_GOLDEN=1`` it is written first."""
    if os.environ.get(SWITCH) == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8")
    assert path.exists(), f"no golden {path}; run with {SWITCH}=1 to create it"
    assert actual == path.read_text(encoding="utf-8"), (
        f"{path.name} differs; if the change is meant, run with {SWITCH}=1 and read the diff")
