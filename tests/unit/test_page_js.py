"""The in-page scripts (gateway/page/js/*.js): loaded from the package, includes expanded,
and each one valid JavaScript in the form CDP compiles it."""

from __future__ import annotations

import json
import shutil
import subprocess
from importlib.resources import files
from pathlib import Path

import pytest

from gateway.page.js import call, script

SCRIPTS = sorted(p.name for p in files("gateway.page.js").iterdir() if p.name.endswith(".js"))
NODE = shutil.which("node")


def test_every_script_sent_to_pages_is_a_file_of_the_package() -> None:
    assert {"prepare.js", "frame_point.js", "serialize.js", "has_text.js"} <= set(SCRIPTS)


def test_include_lines_are_replaced_by_the_shared_file() -> None:
    climb = script("climb.js").rstrip("\n")
    for name in ("prepare.js", "frame_point.js"):
        text = script(name)
        assert "// include:" not in text
        assert climb in text


def test_call_applies_the_function_to_json_arguments() -> None:
    wanted = 'say "hi"\n</script>'
    expression = call("has_text.js", wanted)
    assert expression.startswith("(") and expression.endswith(")(" + json.dumps(wanted) + ")")
    assert script("has_text.js") in expression


@pytest.mark.skipif(NODE is None, reason="node is not installed")
@pytest.mark.parametrize("name", [n for n in SCRIPTS if n != "climb.js"])
def test_script_parses_as_cdp_wraps_it(name: str, tmp_path: Path) -> None:
    # Runtime.callFunctionOn compiles "(" + functionDeclaration + ")"; an expression
    # for Runtime.evaluate parses the same way inside parentheses.
    source = tmp_path / "wrapped.js"
    source.write_text("(\n" + script(name) + "\n);\n")
    checked = subprocess.run([str(NODE), "--check", str(source)], capture_output=True,
                             text=True, timeout=30)
    assert checked.returncode == 0, checked.stderr
