"""The ``context`` phase: the ``tools/list`` a client gets per tool set, from a real
gateway over stdio (``json.dumps`` of the tools, camelCase keys, as a client receives
them), and the server's instructions. The peers' lists are the ``peers`` phase's, measured
live in its run: a figure of theirs is not kept here."""

from __future__ import annotations

import anyio

from benchmarks.bench import Bench
from benchmarks.clients import CALL_TIMEOUT_S, tools_list_json
from benchmarks.results import RowMaker

__all__ = ["ROW_KEYS", "define_rows", "run"]

TARGET_TOOLS_ALL_CHARS = 14_000
TARGET_TOOLS_CORE_CHARS = 4_000
TOOL_SETS = {"tools_all": "all", "tools_core": "core", "tools_read_only": "all"}
ROW_KEYS = (*TOOL_SETS, "tools_instructions")


def define_rows(row: RowMaker) -> None:
    row("tools_all", "`tools/list` JSON, `--tools all` (16 tools)", unit="chars",
        show_p90=False, target=f"≤ {TARGET_TOOLS_ALL_CHARS:,}")
    row("tools_core", "`tools/list` JSON, `--tools core`", unit="chars", show_p90=False,
        target=f"≤ {TARGET_TOOLS_CORE_CHARS:,}")
    row("tools_read_only", "`tools/list` JSON, `--read-only`", unit="chars",
        show_p90=False, target="≤ all")
    row("tools_instructions", "↳ the server's instructions (`initialize`): shared "
        "arguments and the result convention, said once", unit="chars", show_p90=False)


async def run(bench: Bench) -> None:
    rows = bench.r.rows
    env = bench.env("h1")
    for key, spec in TOOL_SETS.items():
        args = ["--tools", spec] + (["--read-only"] if key == "tools_read_only" else [])
        with anyio.fail_after(CALL_TIMEOUT_S):
            async with bench.gateway(env, args) as gw:
                listed = (await gw.list_tools()).tools
                instructions = gw.instructions or ""
        chars = len(tools_list_json(listed))
        rows[key].samples = [float(chars)]
        rows[key].label = rows[key].label.replace("(16 tools)", f"({len(listed)} tools)")
        bench.r.meta.setdefault("tools_list", {})[key] = {"tools": len(listed), "chars": chars}
        if key == "tools_all":
            rows["tools_instructions"].samples = [float(len(instructions))]
    rows["tools_all"].ok = rows["tools_all"].samples[0] <= TARGET_TOOLS_ALL_CHARS
    rows["tools_core"].ok = rows["tools_core"].samples[0] <= TARGET_TOOLS_CORE_CHARS
    rows["tools_read_only"].ok = (rows["tools_read_only"].samples[0]
                                  <= rows["tools_all"].samples[0])
