"""What ``share`` was asked to do, checked before anything is contacted (pure)."""

from __future__ import annotations

import re
import socket
from dataclasses import dataclass
from typing import Literal

from gateway.config import MAX_HANDED, CdpAddress, HostKeyPolicy, SshDestination, TabScope
from gateway.config.addresses import parse_cdp_address, parse_ssh_destination
from gateway.config.text import BadValue

__all__ = ["MAX_SHARE_S", "ShareOptions", "name_from_host", "parse_duration", "share_options"]

MAX_SHARE_S = 7 * 24 * 3600.0  # --for longer than a week is a typo (minutes as hours?)
_DURATION_RE = re.compile(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?")
_NAME_BASE = 28  # a name leaves room for "-NN" with --browsers all (names are <= 32)


@dataclass(frozen=True)
class ShareOptions:
    dest: SshDestination
    name: str
    host_key_policy: HostKeyPolicy
    cdp: CdpAddress | None        # --cdp: this browser; None: discovery (or --launch)
    launch: Literal["no", "persistent", "temporary"]
    browsers: Literal["one", "all"]
    for_s: float | None           # --for: the share ends by itself after this long
    interval_s: float = 2.0       # how often the browsers here are looked at again
    tabs: TabScope | None = None  # --tabs (--tab implies agent); None: as the gateway sees fit
    handed_tabs: tuple[str, ...] = ()  # --tab: the person's tabs the agent may use


def parse_duration(text: str) -> float:
    """``45m``, ``2h``, ``90s``, ``1h30m`` or bare seconds → seconds; ``ValueError``
    with the reason otherwise."""
    text = text.strip().lower()
    if text.isdigit():
        seconds = float(text)
    else:
        match = _DURATION_RE.fullmatch(text)
        if not text or match is None:
            raise ValueError(f"{text!r} is not a duration; expected e.g. 45m, 2h, 90s or 1h30m")
        hours, minutes, secs = (int(g) if g else 0 for g in match.groups())
        seconds = hours * 3600.0 + minutes * 60.0 + secs
    if not 0 < seconds <= MAX_SHARE_S:
        raise ValueError(f"{text!r} is out of range; expected more than 0 s and at most "
                         "7 days")
    return seconds


def name_from_host(hostname: str) -> str:
    """This machine's host name made a share name (``Alice's MacBook.local`` →
    ``alice-s-macbook``)."""
    first = hostname.split(".", 1)[0].lower()
    name = re.sub(r"[^a-z0-9_-]+", "-", first).strip("-_")[:_NAME_BASE].strip("-_")
    return name or "browser"


def share_options(dest: str, name: str | None, cdp: str | None, launch: bool,
                  temporary: bool, browsers: str, for_text: str | None,
                  accept_new: bool, tabs: str | None = None,
                  handed: tuple[str, ...] = ()) -> ShareOptions:
    """The command line's values checked together; ``ValueError`` names what to fix."""
    try:
        destination = parse_ssh_destination(dest)
    except BadValue as exc:
        raise ValueError(f"DEST: {exc}") from None
    try:
        address = parse_cdp_address(cdp) if cdp is not None else None
    except BadValue as exc:
        raise ValueError(f"--cdp: {exc}") from None
    if address is not None and address.host not in ("127.0.0.1", "localhost"):
        raise ValueError("--cdp: a share forwards to a browser on this machine's loopback; "
                         "expected 127.0.0.1:PORT")
    if browsers == "all" and (address is not None or launch):
        raise ValueError("--browsers all shares every browser found here; drop --cdp and "
                         "--launch")
    if temporary and not launch:
        raise ValueError("--temporary-profile applies with --launch")
    if handed and tabs == "all":
        raise ValueError("--tab hands the agent one of your tabs, with --tabs agent; "
                         "with --tabs all it sees every tab already")
    if len(handed) > MAX_HANDED:
        raise ValueError(f"--tab: at most {MAX_HANDED} tabs can be handed")
    for text in handed:
        if not text.strip() or len(text) > 200 or any(c in text for c in "\r\n\x00"):
            raise ValueError(f"--tab {text[:40]!r}: expected a URL (or its start) or words "
                             "of a tab's title, at most 200 characters on one line")
    limit = _NAME_BASE if browsers == "all" else 32
    if name is not None and not re.fullmatch(rf"[a-z0-9_-]{{1,{limit}}}", name):
        raise ValueError(f"--name {name!r}: expected 1-{limit} characters of a-z, 0-9, '_', "
                         "'-'" + (" (with --browsers all, -N is added)"
                                  if browsers == "all" else ""))
    return ShareOptions(
        dest=destination, name=name or name_from_host(socket.gethostname()),
        host_key_policy="accept-new" if accept_new else "strict", cdp=address,
        launch="no" if not launch else "temporary" if temporary else "persistent",
        browsers="all" if browsers == "all" else "one",
        for_s=parse_duration(for_text) if for_text is not None else None,
        tabs="agent" if handed else "all" if tabs == "all" else "agent" if tabs else None,
        handed_tabs=tuple(handed))
