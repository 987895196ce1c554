"""Real applications nobody here wrote, built for the e2e tests from what PyPI installed
(the dev group): they have what our fixture pages do not — a search in a web worker,
script-made results, pages that navigate."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

__all__ = ["build_docs_site"]


def build_docs_site(root: Path) -> Path:
    """A documentation site built by MkDocs Material under ``root``: two pages, and a
    search that runs in a web worker ("1 matching document" once typed into). Returns
    the folder to serve."""
    (root / "docs").mkdir()
    (root / "mkdocs.yml").write_text(
        "site_name: csgw docs\ntheme:\n  name: material\n  font: false\nplugins:\n  - search\n")
    (root / "docs" / "index.md").write_text(
        "# Home\n\nThe gateway drives browsers.\n\n## Tunnels\n\n"
        "SSH forwards carry the DevTools socket.\n")
    (root / "docs" / "workers.md").write_text(
        "# Workers\n\nA web worker runs scripts off the main thread.\n")
    subprocess.run([sys.executable, "-m", "mkdocs", "build", "--quiet", "--site-dir",
                    str(root / "site")], cwd=root, check=True, timeout=120,
                   env={"PATH": "/usr/bin:/bin", "NO_MKDOCS_2_WARNING": "1"})
    assert any((root / "site" / "assets" / "javascripts" / "workers").glob("search.*.js"))
    return root / "site"
