"""Every library ``gateway/`` imports is declared in pyproject.toml (issue 22): one
that only arrives as another's dependency (h11 with the SDK, uvicorn) can be dropped
by that other's next release, and the gateway would fail to start for its users."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _imported_top_levels() -> set[str]:
    names = set()
    for path in (ROOT / "gateway").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return names - set(sys.stdlib_module_names) - {"gateway"}


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_every_imported_library_is_declared() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"].values()
    specs = [*project["dependencies"], *(spec for extra in extras for spec in extra)]
    declared = {_normal(re.split(r"[<>=!~;\[ ]", spec, maxsplit=1)[0]) for spec in specs}
    providers = packages_distributions()
    missing = {module: providers.get(module) for module in _imported_top_levels()
               if not {_normal(d) for d in providers.get(module, [])} & declared}
    assert missing == {}
