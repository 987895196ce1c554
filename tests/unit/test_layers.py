"""The package's layering, read from the source: a folder per layer, dependencies pointing
one way (mcp → tools → page → fleet → browsers → tabs → share → discovery → cdp → hosts →
config → errors), and no import cycle between modules — imports under ``TYPE_CHECKING``
and inside functions included.

``benchmarks/`` is held to the same: the runner over the phases, each phase over what
every phase is given (``bench``, ``peers``) and the shared helpers beneath; no phase
imports another; ``gateway`` never imports ``benchmarks``. A module is as long as its
concept: past ``LONG_LINES`` a warning asks whether it holds two; past ``MAX_LINES`` it
surely does, and the test fails."""

from __future__ import annotations

import ast
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parents[2] / "gateway"
BENCHMARKS = PACKAGE.parent / "benchmarks"

# Lower layers never import higher ones; a layer may import its own modules.
LAYERS = {
    "errors": 0, "concurrency": 0, "progress": 0, "__init__": 0,
    "config": 1, "output": 1,
    "hosts": 2,
    "cdp": 3,         # one browser-level websocket and its frames
    "discovery": 4,   # finding a browser on a host
    "share": 5,       # a browser forwarded from a machine nobody can dial: its manifest, the sharer
    "tabs": 6,        # a tab and what it records
    "browsers": 7,    # one browser kept connected: its pages, contexts, downloads, uploads
    "fleet": 8,       # many browsers: the registry, groups, host scans, shares received
    "page": 9,
    "live": 10,       # the live view: over page, under the tools that hand out its URLs
    "tools": 11, "doctor": 11,
    "mcp": 12,
    "daemon": 13, "client": 13,
    "cli": 14, "__main__": 15,
}
LONG_LINES = 600
MAX_LINES = 900


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> Iterator[str]:
    """Every ``gateway.*`` module this file imports, wherever the import statement is."""
    tree = ast.parse(path.read_text(), str(path))
    own = module_name(path)
    package = own if path.name == "__init__.py" else own.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name.split(".")[0] == "gateway")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            if target.split(".")[0] != "gateway":
                continue
            for alias in node.names:  # `from gateway.tools import cdp` imports a module
                sub = f"{target}.{alias.name}"
                yield sub if (PACKAGE.parent / sub.replace(".", "/")).with_suffix(".py").exists() \
                    or (PACKAGE.parent / sub.replace(".", "/")).is_dir() else target


def graph() -> dict[str, set[str]]:
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {name: {i for i in imports_of(path) if i in modules and i != name}
            for name, path in modules.items()}


def layer(module: str) -> tuple[str, int]:
    top = module.split(".")[1] if "." in module else "__init__"
    return top, LAYERS[top]


def test_every_folder_is_a_known_layer() -> None:
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert len(folders) >= 5
    assert folders <= set(LAYERS), f"unknown layer folders: {folders - set(LAYERS)}"


def test_dependencies_point_down() -> None:
    upward = []
    for module, imported in graph().items():
        name, rank = layer(module)
        for other in imported:
            other_name, other_rank = layer(other)
            if other_name != name and other_rank >= rank:
                upward.append(f"{module} → {other}")
    assert not upward, "imports against the layering:\n" + "\n".join(sorted(upward))


def test_no_import_cycles() -> None:
    deps = graph()
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(deps[node]):
            if state.get(nxt) == 1:
                cycles.append([*stack[stack.index(nxt):], nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(deps):
        if node not in state:
            visit(node)
    assert not cycles, "import cycles:\n" + "\n".join(" → ".join(c) for c in cycles)


def _hold_one_concept(path: Path, name: str) -> None:
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_LINES, f"{name}: {lines} lines — more than one concept; split it"
    if lines > LONG_LINES:
        warnings.warn(f"{name}: {lines} lines — does it hold two concepts?", stacklevel=2)


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: module_name(p))
def test_modules_hold_one_concept(path: Path) -> None:
    _hold_one_concept(path, str(path.relative_to(PACKAGE.parent)))


def library_imports(path: Path, *libraries: str) -> list[int]:
    """Lines of ``path`` that import one of ``libraries`` (``import x``, ``from x… import``);
    ``websockets.asyncio`` is websockets' own module, not asyncio."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module or ""]
        else:
            continue
        if any(name.split(".")[0] in libraries or name in libraries for name in names):
            lines.append(node.lineno)
    return lines


def asyncio_imports(path: Path) -> list[int]:
    return library_imports(path, "asyncio")


def test_asyncio_stays_out_of_the_gateway() -> None:
    """One async idiom: anyio. asyncssh and websockets are asyncio libraries, but the
    gateway only awaits them, which needs no asyncio of its own; what asyncio offered
    beside anyio (futures, ``asyncio.timeout``/``wait``/``open_connection``) has an anyio
    form (``gateway.concurrency``, ``anyio.fail_after``, ``anyio.connect_tcp``). So no
    module is an adapter allowed to import it: one that must should be the only one, and
    say why in its docstring and here."""
    found = {module_name(p): lines for p in PACKAGE.rglob("*.py") if (lines := asyncio_imports(p))}
    assert not found, f"asyncio imported (module: lines): {found}"


def test_the_asyncio_check_sees_each_form_of_import(tmp_path: Path) -> None:
    for text in ("import asyncio", "import asyncio.subprocess as sp",
                 "from asyncio import timeout", "def f():\n    from asyncio.tasks import wait"):
        (tmp_path / "m.py").write_text(text + "\n")
        assert asyncio_imports(tmp_path / "m.py"), text
    (tmp_path / "m.py").write_text("from websockets.asyncio.client import connect\n")
    assert not asyncio_imports(tmp_path / "m.py")


def test_asyncssh_stays_in_hosts() -> None:
    """SSH is the hosts layer's: every other layer asks a ``Host`` (or ``SshLink``,
    ``ssh_login``) in plain values, so asyncssh's types and errors never leak upward."""
    found = {module_name(p): lines for p in PACKAGE.rglob("*.py")
             if p.parent.name != "hosts"
             and (lines := library_imports(p, "asyncssh", "gateway.hosts.asyncssh_import"))}
    assert not found, f"asyncssh imported outside gateway/hosts/ (module: lines): {found}"


# benchmarks/: helpers 0 (may import each other), bench/peers 1, phases 2, the runner 3.
BENCH_HELPERS = {"__init__", "results", "options", "clients", "raw_cdp", "page_server", "docs_page",
                 "model_view", "view_render", "noop_server", "cpu"}
BENCH_GIVEN = {"bench", "peers"}
BENCH_RUNNER = {"run"}


def bench_rank(stem: str) -> int:
    if stem in BENCH_HELPERS:
        return 0
    if stem in BENCH_GIVEN:
        return 1
    if stem.endswith("_phase"):
        return 2
    if stem in BENCH_RUNNER:
        return 3
    raise AssertionError(f"benchmarks/{stem}.py is in no layer: a helper, a *_phase, or "
                         "add it to the layers of tests/unit/test_layers.py")


def top_imports(path: Path, package: str) -> Iterator[str]:
    """The modules of ``package`` (one level deep) this file imports, wherever."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names = [node.module] if node.module != package else \
                [f"{package}.{a.name}" for a in node.names]
        else:
            continue
        yield from (n.split(".")[1] if "." in n else "__init__" for n in names
                    if n.split(".")[0] == package)


def bench_modules() -> list[Path]:
    return sorted(BENCHMARKS.glob("*.py"))


def test_gateway_never_imports_benchmarks() -> None:
    found = [f"{path.relative_to(PACKAGE.parent)} → benchmarks.{name}"
             for path in PACKAGE.rglob("*.py") for name in top_imports(path, "benchmarks")]
    assert not found, "\n".join(found)


def test_benchmarks_dependencies_point_down() -> None:
    assert len(bench_modules()) > 10
    wrong = []
    for path in bench_modules():
        rank = bench_rank(path.stem)
        for name in set(top_imports(path, "benchmarks")) - {path.stem}:
            other = bench_rank(name)
            if other > rank or (other == rank and rank != 0):
                wrong.append(f"benchmarks.{path.stem} ({rank}) → benchmarks.{name} ({other})")
    assert not wrong, "imports against the layering:\n" + "\n".join(sorted(wrong))


def test_benchmark_helpers_have_no_cycles() -> None:
    deps = {p.stem: set(top_imports(p, "benchmarks")) - {p.stem} for p in bench_modules()
            if p.stem in BENCH_HELPERS}
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> None:
        assert node not in path, "import cycle: " + " → ".join([*path, node])
        if node not in done:
            for nxt in sorted(deps.get(node, ())):
                visit(nxt, [*path, node])
            done.add(node)

    for node in sorted(deps):
        visit(node, [])


@pytest.mark.parametrize("path", bench_modules(), ids=lambda p: p.stem)
def test_benchmark_modules_hold_one_concept(path: Path) -> None:
    _hold_one_concept(path, f"benchmarks/{path.name}")


def test_the_length_check_warns_then_fails(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("x = 1\n" * (LONG_LINES + 1))
    with pytest.warns(UserWarning, match="m.py: 601 lines — does it hold two concepts"):
        _hold_one_concept(module, "m.py")
    module.write_text("x = 1\n" * (MAX_LINES + 1))
    with pytest.raises(AssertionError, match="901 lines — more than one concept"):
        _hold_one_concept(module, "m.py")
