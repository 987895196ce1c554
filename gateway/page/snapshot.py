"""Fetching a tab's ``PageSnapshot`` live: every frame's accessibility tree.

The I/O half of the page view (``gateway.page.view`` renders). Cross-site iframes live
in their own processes, so a tab is several CDP sessions: the page's and one
per out-of-process frame (``Tab.frame_sessions``). Each session reports the
frames it owns (``Page.getFrameTree``); an OOPIF's own session wins for its
frame. Calls that do not depend on each other are sent together, so a view
costs a few round trips whatever the number of frames.
"""

from __future__ import annotations

from typing import Any

import anyio

from gateway.browsers.session import TabSession
from gateway.concurrency import gather
from gateway.page.view import FrameSnapshot, PageSnapshot, attribute_requests

__all__ = ["fetch_snapshot", "order_frames"]

Json = dict[str, Any]

LATE_FRAME_TRIES = 3    # fetches more for a shown frame whose tree has nothing in it yet
LATE_FRAME_WAIT_S = 0.05


def walk_frame_tree(tree: Json) -> list[Json]:
    """Frames of a ``Page.getFrameTree`` result, parents before children."""
    out, stack = [], [tree]
    while stack:
        node = stack.pop()
        out.append(node["frame"])
        stack.extend(reversed(node.get("childFrames", [])))
    return out


def _blank(nodes: list[Json]) -> bool:
    """Nothing of the document in the tree but its root: not yet laid out, or empty."""
    return all(n.get("ignored") or n.get("role", {}).get("value") == "RootWebArea"
               for n in nodes)


def _shown(nodes: list[Json], backend_node_id: int | None) -> bool:
    """Whether the parent's tree has the frame's ``<iframe>`` as something rendered."""
    return any(n.get("backendDOMNodeId") == backend_node_id and not n.get("ignored")
               for n in nodes)


def order_frames(frames: dict[str, Json]) -> list[Json]:
    """Frames parents-first, siblings in the order their sessions reported them."""
    children: dict[str | None, list[Json]] = {}
    for frame in frames.values():
        parent = frame.get("parentId")
        children.setdefault(parent if parent in frames else None, []).append(frame)
    ordered: list[Json] = []
    stack = list(reversed(children.get(None, [])))
    while stack:
        frame = stack.pop()
        ordered.append(frame)
        stack.extend(reversed(children.get(frame["id"], [])))
    return ordered


async def fetch_snapshot(session: TabSession) -> tuple[PageSnapshot, str]:
    """The tab's snapshot and its main frame's loaderId (which identifies the document)."""
    tab = session.tab
    main = tab.session_id
    if main is None:  # first use after a detach: let tab_call attach
        await session.call("Page.getFrameTree")
        main = tab.session_id
    sessions = [s for s in (main, *tab.frame_sessions.values()) if s is not None]

    async def call(method: str, params: Json | None, frame_session: str) -> Json:
        return await session.call(method, params, session=frame_session)

    # Each session's own root frame is its default for getFullAXTree: its tree is
    # asked for beside the frame tree, so a page of one frame costs one round trip.
    trees, root_trees = await gather(
        gather(*(call("Page.getFrameTree", None, s) for s in sessions)),
        gather(*(call("Accessibility.getFullAXTree", None, s) for s in sessions)))
    owner: dict[str, str] = {}
    frames: dict[str, Json] = {}
    for session_id, tree in zip(sessions, trees, strict=True):
        for frame in walk_frame_tree(tree["frameTree"]):
            owner[frame["id"]] = session_id
            frames[frame["id"]] = frame
    nodes_of: dict[str, list[Json]] = {}
    for session_id, tree, ax_tree in zip(sessions, trees, root_trees, strict=True):
        root_id = tree["frameTree"]["frame"]["id"]
        if owner[root_id] == session_id:
            nodes_of[root_id] = ax_tree["nodes"]
    ordered = order_frames(frames)
    children = [f for f in ordered if f.get("parentId") in owner]
    rest = [f for f in ordered if f["id"] not in nodes_of]
    ax_trees, owners = await gather(
        gather(*(call("Accessibility.getFullAXTree", {"frameId": f["id"]}, owner[f["id"]])
                 for f in rest)),
        gather(*(call("DOM.getFrameOwner", {"frameId": f["id"]}, owner[f["parentId"]])
                 for f in children)),
    )
    owner_of = {f["id"]: o["backendNodeId"] for f, o in zip(children, owners, strict=True)}
    nodes_of.update((f["id"], t["nodes"]) for f, t in zip(rest, ax_trees, strict=True))
    # A frame that just loaded can answer with a tree of its root alone for a moment
    # (its layout not done), though its <iframe> is shown: ask it again, a few times
    # (not an about:blank one: an empty ad slot is blank for good).
    for _ in range(LATE_FRAME_TRIES):
        late = [f for f in children if f.get("url") not in ("", "about:blank")
                and _blank(nodes_of[f["id"]])
                and _shown(nodes_of[f["parentId"]], owner_of[f["id"]])]
        if not late:
            break
        await anyio.sleep(LATE_FRAME_WAIT_S)
        again = await gather(*(call("Accessibility.getFullAXTree", {"frameId": f["id"]},
                                    owner[f["id"]]) for f in late))
        nodes_of.update((f["id"], t["nodes"]) for f, t in zip(late, again, strict=True))
    attributes: dict[str, dict[int, dict[str, str]]] = {f["id"]: {} for f in ordered}
    snaps = [FrameSnapshot(frame_id=f["id"], parent_frame_id=f.get("parentId"),
                           session=owner[f["id"]], url=f.get("url", ""),
                           owner_backend_node_id=owner_of.get(f["id"]), nodes=nodes_of[f["id"]],
                           attributes=attributes[f["id"]], loader_id=str(f.get("loaderId", "")))
             for f in ordered]
    root = next((n for n in snaps[0].nodes if n.get("role", {}).get("value") == "RootWebArea"),
                None)
    title = str(((root or {}).get("name") or {}).get("value", tab.title))
    snapshot = PageSnapshot(url=ordered[0].get("url", tab.url), title=title, frames=snaps)
    tab.shows(snapshot.url, snapshot.title)
    wanted = attribute_requests(snapshot)
    if wanted:
        by_id = {s.frame_id: s for s in snaps}
        described = await gather(*(call("DOM.describeNode", {"backendNodeId": b},
                                        by_id[f].session) for f, b in wanted))
        for (frame_id, backend), result in zip(wanted, described, strict=True):
            flat = result.get("node", {}).get("attributes", [])
            attributes[frame_id][backend] = dict(zip(flat[::2], flat[1::2], strict=False))
    return snapshot, str(ordered[0].get("loaderId", ""))
