"""The ``model`` phase: what reaches the model, per tool, per kind of client.

Against h1's Chromium over SSH and the news page of the ``view`` phase (served on the
loopback of h1's namespace), one gateway over stdio — the real MCP client — calls
every tool it defines once (``--tools all``), and each result is read as a structured-first client
(Claude Code, Codex: ``structuredContent`` as JSON when present, else the text) and
as a text-first one (Cursor, VS Code: the text) reads it (``benchmarks/model_view.py``,
the readers of ``tests/e2e/test_model_view.py``).  Also the tool definitions a model
is given (name + description + inputSchema as JSON), for the default tool list and
``--tools core``.

Peers, the same way on the same browser and page: chrome-devtools-mcp 1.11.0
(``take_snapshot``) and @playwright/mcp 0.0.83 (``browser_snapshot``), installed and
connected as ``benchmarks/peers.py`` says (npm into a cache directory, a local asyncssh
forward to h1's DevTools port). Skipped, with the reason printed, when npm is absent or
the install fails.

Tokens (o200k) are counted with ``gpt-tokenizer`` from the same npm cache, which
counts offline; without it the phase says "tokens: no offline tokenizer".

Every tool is called once (results are deterministic in size but for the page
view, whose ref numbers count on across views: only the first view is a fair
size), so the table has one sample per cell, no medians.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import anyio
import asyncssh
from mcp import Client

from benchmarks.bench import Bench
from benchmarks.clients import CALL_TIMEOUT_S, describe
from benchmarks.model_view import (
    definition_json,
    every_tool_once,
    structured_first,
    text_first,
)
from benchmarks.page_server import page_server
from benchmarks.peers import (
    NPM_DIR,
    PEERS,
    Peer,
    browser_version,
    call_peer,
    close_pages,
    forward,
    installed,
    npm_install,
    open_page,
    page_ids,
)
from benchmarks.results import RowMaker, progress
from tests.topology import Topology

__all__ = ["ROW_KEYS", "define_rows", "model_phase", "run"]

TOKENIZER = "gpt-tokenizer@4.0.0"
ROW_KEYS = ("model_view_sf", "model_view_tf", "model_defs_all", "model_defs_core",
            "model_cdm_view", "model_cdm_defs", "model_pw_view", "model_pw_defs")

Gateway = Callable[[dict[str, str], list[str]], AbstractAsyncContextManager[Client]]
Serve = Callable[..., AbstractAsyncContextManager[str]]


def define_rows(row: RowMaker) -> None:
    row("model_view_sf", "what a structured-first client (Claude Code, Codex) shows the model "
        "of `browse_view`, news page (`model` phase; per tool: the table below)",
        unit="chars", show_p90=False)
    row("model_view_tf", "↳ the same in a text-first client (Cursor, VS Code)", unit="chars",
        show_p90=False)
    row("model_defs_all", "tool definitions a model is given (name+description+inputSchema "
        "JSON), default tool list", unit="chars", show_p90=False)
    row("model_defs_core", "↳ the same, `--tools core`", unit="chars", show_p90=False)
    row("model_cdm_view", "chrome-devtools-mcp 1.11.0 `take_snapshot` of the news page, "
        "structured-first", unit="chars", show_p90=False, target="peer")
    row("model_cdm_defs", "↳ its tool definitions", unit="chars", show_p90=False, target="peer")
    row("model_pw_view", "@playwright/mcp 0.0.83 `browser_snapshot` of the news page, "
        "structured-first", unit="chars", show_p90=False, target="peer")
    row("model_pw_defs", "↳ its tool definitions", unit="chars", show_p90=False, target="peer")


class Tokens:
    """o200k token counts by gpt-tokenizer (offline), through one node process per batch."""

    SCRIPT = ("const {countTokens}=require('gpt-tokenizer/cjs/encoding/o200k_base');"
              "let s='';process.stdin.on('data',d=>s+=d).on('end',()=>process.stdout.write("
              "JSON.stringify(JSON.parse(s).map(t=>countTokens(t)))))")

    def __init__(self) -> None:
        self.why_not = ""
        if shutil.which("node") is None or not installed(TOKENIZER):
            self.why_not = "no offline tokenizer"

    def count(self, texts: list[str]) -> list[int | None]:
        if self.why_not or not texts:
            return [None] * len(texts)
        try:
            done = subprocess.run(["node", "-e", self.SCRIPT], input=json.dumps(texts),
                                  capture_output=True, text=True, timeout=120,
                                  cwd=str(NPM_DIR), check=True)
            counts = json.loads(done.stdout)
        except (OSError, subprocess.SubprocessError, ValueError) as exc:
            self.why_not = f"no offline tokenizer ({exc})"
            return [None] * len(texts)
        return [int(c) for c in counts]


def _definitions(tools: list[Any]) -> str:
    return "[" + ",".join(definition_json(t) for t in tools) + "]"


async def _peer(peer: Peer, port: int, home: Path, news: str) -> dict[str, Any]:
    """A peer's tool definitions and its snapshot of the news page."""
    before = await anyio.to_thread.run_sync(page_ids, port)
    try:
        async with Client(peer.params(port, home),
                          read_timeout_seconds=CALL_TIMEOUT_S) as client:
            with anyio.fail_after(CALL_TIMEOUT_S):
                tools = (await client.list_tools()).tools
            page = await open_page(client, peer, news)
            snapshot = await call_peer(client, peer, peer.snapshot, page)
    finally:
        with anyio.CancelScope(shield=True):
            opened = await anyio.to_thread.run_sync(page_ids, port) - before
            await anyio.to_thread.run_sync(close_pages, port, opened)
    return {"tools": tools, "snapshot": snapshot}


# -------------------------------------------------------------------------- the phase


async def model_phase(topo: Topology, rows: dict[str, Any], *, gateway: Gateway,
                      serve: Serve, connect: Callable[[], Awaitable[asyncssh.SSHClientConnection]],
                      progress: Callable[[str], None], workdir: Path) -> dict[str, Any]:
    """Fill the model rows; returns the per-tool table (Markdown) and the raw figures."""
    host = topo.host("h1")
    env = {**topo.client_env(), "SSH_PROXY_TO": host.name}
    shown: dict[str, dict[str, Any]] = {}    # tool → sf / tf / images
    defs: dict[str, dict[str, Any]] = {}     # server (tool set) → json, tools
    peers_note = ""
    browser = ""
    why_not = await anyio.to_thread.run_sync(
        npm_install, [*(p.spec for p in PEERS.values()), TOKENIZER], progress)
    async with serve(host) as base:
        news = base + "news.html"
        for label, args in (("gateway (default list)", []),
                            ("gateway --tools core", ["--tools", "core"]),
                            ("gateway --tools all", ["--tools", "all"])):
            async with gateway(env, args) as gw:
                with anyio.fail_after(CALL_TIMEOUT_S):
                    tools = (await gw.list_tools()).tools
                defs[label] = {"json": _definitions(tools), "tools": len(tools)}
                if label != "gateway --tools all":  # every tool is called on this one
                    continue
                async for tool, result in every_tool_once(gw, news):
                    (sf, images), (tf, _) = structured_first(result), text_first(result)
                    shown[tool] = {"sf": sf, "tf": tf, "images": images}
                for definition in tools:
                    shown.setdefault(definition.name, {"sf": None, "tf": None, "images": 0})
        if why_not is None:
            with anyio.fail_after(4 * CALL_TIMEOUT_S):
                async with forward(topo, connect) as port:
                    browser = await anyio.to_thread.run_sync(browser_version, port)
                    for name, peer in PEERS.items():
                        try:
                            seen = await _peer(peer, port, workdir, news)
                        except Exception as exc:  # one peer failing leaves the other
                            peers_note += f"{name}: not measured ({describe(exc)[:400]}); "
                            continue
                        defs[name] = {"json": _definitions(seen["tools"]),
                                      "tools": len(seen["tools"])}
                        sf, images = structured_first(seen["snapshot"])
                        tf, _ = text_first(seen["snapshot"])
                        shown[f"{name} {peer.snapshot}"] = {"sf": sf, "tf": tf,
                                                           "images": images}
        else:
            peers_note = f"peers: not measured ({why_not})"
    return {**_report(rows, shown, defs, peers_note), "browser": browser}


def _report(rows: dict[str, Any], shown: dict[str, dict[str, Any]],
            defs: dict[str, dict[str, Any]], peers_note: str) -> dict[str, Any]:
    tokens = Tokens()
    texts = [t for s in shown.values() for t in (s["sf"], s["tf"]) if t is not None]
    texts += [d["json"] for d in defs.values()]
    counted = dict(zip(texts, tokens.count(texts), strict=True))

    def cell(text: str | None, tokens_too: bool = True) -> str:
        if text is None:
            return "not called"
        n = counted.get(text)
        return f"{len(text):,}" + (f" ({n:,} tok)" if tokens_too and n is not None else "")

    lines = ["| tool result (news page, h1 over SSH) | structured-first (Claude Code, "
             "Codex): chars (o200k tokens) | text-first (Cursor, VS Code) | images |",
             "|---|---:|---:|---:|"]
    for tool, s in shown.items():
        lines.append(f"| `{tool}` | {cell(s['sf'])} | {cell(s['tf'])} | {s['images']} |")
    lines += ["", "| tool definitions (name + description + inputSchema, JSON) | tools | "
              "chars (o200k tokens) |", "|---|---:|---:|"]
    for server, d in defs.items():
        lines.append(f"| {server} | {d['tools']} | {cell(d['json'])} |")
    notes = [f"tokens: {tokens.why_not}" if tokens.why_not else
             "tokens: o200k_base by gpt-tokenizer (npm, offline)"]
    if peers_note:
        notes.append(peers_note.rstrip("; "))
    notes.append("one call per tool (no repeats, so no medians); page view = the tab's first.")
    table = "\n".join(lines) + "\n\n" + "\n".join(notes)

    def put(key: str, text: str | None) -> None:
        if text is not None:
            rows[key].samples = [float(len(text))]
            n = counted.get(text)
            if n is not None:
                rows[key].note = f"{n} o200k tokens"
                rows[key].target = (f"{rows[key].target}; {n:,} tok").lstrip("; ")

    view = shown.get("browse_view", {})
    put("model_view_sf", view.get("sf"))
    put("model_view_tf", view.get("tf"))
    put("model_defs_all", defs.get("gateway (default list)", {}).get("json"))
    put("model_defs_core", defs.get("gateway --tools core", {}).get("json"))
    for key, name, snap in (("cdm", "chrome-devtools-mcp", "take_snapshot"),
                            ("pw", "playwright-mcp", "browser_snapshot")):
        put(f"model_{key}_view", shown.get(f"{name} {snap}", {}).get("sf"))
        put(f"model_{key}_defs", defs.get(name, {}).get("json"))
    figures = {tool: {"sf_chars": len(s["sf"]) if s["sf"] is not None else None,
                      "tf_chars": len(s["tf"]) if s["tf"] is not None else None,
                      "sf_tokens": counted.get(s["sf"]), "tf_tokens": counted.get(s["tf"]),
                      "images": s["images"]} for tool, s in shown.items()}
    figures["definitions"] = {server: {"tools": d["tools"], "chars": len(d["json"]),
                                       "tokens": counted.get(d["json"])}
                              for server, d in defs.items()}
    return {"table": table, "figures": figures, "peers": peers_note or "measured",
            "tokens": tokens.why_not or "o200k (gpt-tokenizer)"}


async def run(bench: Bench) -> None:
    """What reaches the model per tool, beside peers."""
    meta = bench.r.meta
    with tempfile.TemporaryDirectory(prefix="csgw-bench-model-") as workdir:
        meta["model"] = await model_phase(
            bench.topo, bench.r.rows, gateway=bench.gateway, serve=page_server,
            connect=bench.raw("h1").ssh_connect, progress=progress, workdir=Path(workdir))
    if meta["model"].get("browser"):
        meta.setdefault("browser", meta["model"]["browser"])
