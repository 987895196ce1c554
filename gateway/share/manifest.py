"""Shares: browsers their own machines forwarded to a host over SSH (pure parts).

``chrome-ssh-gateway share DEST`` runs where the browser is (a laptop behind NAT, a
CI runner nobody can dial): it logs in to DEST and has sshd there listen on
``~/.cache/chrome-ssh-gateway/shared/<name>.sock``, which leads to the browser's
DevTools port, with ``<name>.json`` beside it saying what is shared. A gateway that
follows the shares on DEST (``shared = true``) lists that directory with one exec of
``scripts/shares.sh`` and makes each share a target.

Both sides read this module: the sharer writes ``ShareManifest.to_text`` and the
gateway reads the listing with ``parse_listing``. On the gateway's side a manifest is
untrusted input — whoever can write that directory wrote it — so its size, every
field's type and length, and the name's characters are checked here, and a bad one
is a ``BadShare`` (listed ``down`` with the reason), never an exception.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from importlib import resources
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from gateway.config import MAX_HANDED, MAX_HANDED_CHARS, TARGET_NAME_RE, TabScope

__all__ = [
    "MAX_MANIFEST_BYTES",
    "SHARED_DIR",
    "BadShare",
    "Listing",
    "SeenShare",
    "ShareManifest",
    "clean_text",
    "parse_listing",
    "shares_script",
    "valid_share_name",
]

SHARED_DIR = ".cache/chrome-ssh-gateway/shared"
"""Where the shares live on a host, relative to the user's home."""
MAX_MANIFEST_BYTES = 4096
_US = "\x1f"

# The free text of a manifest reaches the model (list_targets): names, versions and
# dates only — no quotes, no markup, nothing that reads as an instruction.
_TEXT_CHARS = r"A-Za-z0-9 ._:+/()-"
_Text = Annotated[str, StringConstraints(max_length=200, pattern=f"^[{_TEXT_CHARS}]*$")]


def clean_text(text: str) -> str:
    """``text`` as a manifest may hold it: other characters become ``-``, cut to 200."""
    return re.sub(f"[^{_TEXT_CHARS}]", "-", text)[:200]


def valid_share_name(name: str) -> bool:
    return TARGET_NAME_RE.fullmatch(name) is not None


class ShareManifest(BaseModel):
    """What ``<name>.json`` says of a shared browser. Unknown keys are ignored (a
    newer sharer may say more); every known one is typed and bounded."""

    model_config = ConfigDict(frozen=True, strict=True, extra="ignore")

    name: Annotated[str, StringConstraints(pattern=TARGET_NAME_RE.pattern)]
    share_id: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{16,64}$")]
    browser: _Text | None = None        # "Chrome/156.0.8078.114"
    pid: Annotated[int, Field(ge=1, le=2**31)] | None = None
    program: _Text | None = None        # chromium, google-chrome, …
    started: _Text | None = None        # when the browser started (ISO 8601)
    started_by: _Text | None = None     # puppeteer, chromedriver, …
    sharer: _Text                       # the sharing machine's host name
    shared_at: _Text                    # ISO 8601, UTC
    expires: _Text | None = None        # ISO 8601, UTC; None: until stopped
    # The sharer's say over its tabs (``share --tabs``, ``--tab``): "agent" keeps the
    # person's other tabs from the agent, whatever the gateway's own config says.
    tabs: TabScope | None = None
    handed_tabs: Annotated[tuple[Annotated[str, StringConstraints(
        min_length=1, max_length=MAX_HANDED_CHARS)], ...],
        Field(max_length=MAX_HANDED)] | None = None
    # A person's own Chrome (its remote-debugging setting on) serves no /json: the
    # sharer says its websocket's path, read from its DevToolsActivePort, and that
    # opening it asks the person — the sharer itself never does.
    path: Annotated[str, StringConstraints(
        pattern=r"^/devtools/browser/[A-Za-z0-9-]{1,64}$")] | None = None
    personal: bool | None = None

    def to_text(self) -> str:
        """One line of JSON (the listing blanks newlines anyway)."""
        return self.model_dump_json(exclude_none=True)

    def expired(self, now: datetime | None = None) -> bool:
        if self.expires is None:
            return False
        try:
            until = datetime.fromisoformat(self.expires)
        except ValueError:
            return False
        if until.tzinfo is None:
            until = until.replace(tzinfo=UTC)
        return until <= (now or datetime.now(UTC))


@dataclass(frozen=True)
class SeenShare:
    """A share as the listing showed it: its manifest, and whether its socket exists."""

    manifest: ShareManifest
    socket: str      # absolute path on the host
    has_socket: bool

    @property
    def label(self) -> str:
        """How ``doctor`` names it: the share's name."""
        return self.manifest.name


@dataclass(frozen=True)
class BadShare:
    """A manifest that cannot be used, and why (for ``list_targets`` and ``doctor``)."""

    name: str        # the file's name less .json, when that is a valid name; else ""
    file: str
    problem: str

    @property
    def label(self) -> str:
        """How ``doctor`` names it: its file (a name may be missing or wrong)."""
        return self.file


@dataclass(frozen=True)
class Listing:
    directory: str | None          # absolute; None when the host printed none
    problem: str | None            # the directory is unsafe to use, and why
    shares: tuple[SeenShare, ...]
    bad: tuple[BadShare, ...]
    truncated: bool


@cache
def shares_script() -> str:
    """The listing, for ``Host.run`` (read once from the package)."""
    return resources.files("gateway.share").joinpath("scripts/shares.sh").read_text()


def parse_listing(output: str) -> Listing:
    """The script's output → the shares; a malformed record is a ``BadShare`` or skipped."""
    directory: str | None = None
    problem: str | None = "the host printed no listing"
    shares: list[SeenShare] = []
    bad: list[BadShare] = []
    truncated = False
    for line in output.split("\n"):
        fields = line.split(_US)
        if fields[0] == "D" and len(fields) == 4 and directory is None:
            directory, problem = fields[1], _directory_problem(fields[1], fields[2], fields[3])
        elif fields[0] == "T":
            truncated = True
        elif fields[0] == "M" and len(fields) >= 4 and directory is not None and problem is None:
            seen = _share(directory, fields[1], fields[2] == "S", _US.join(fields[3:]))
            if isinstance(seen, SeenShare):
                shares.append(seen)
            else:
                bad.append(seen)
    return Listing(directory, problem, tuple(shares), tuple(bad), truncated)


def _directory_problem(directory: str, info: str, uid: str) -> str | None:
    """Why the shares directory must not be used (None: it is fine, or absent)."""
    if info == "none":
        return None
    if info == "link":
        return f"{directory} is a symbolic link; it must be a directory of the user's own"
    owner, _, mode = info.partition(" ")
    if not (owner.isdigit() and mode and all(c in "01234567" for c in mode)):
        return f"could not read the owner and mode of {directory} ({info!r})"
    if owner != uid:
        return (f"{directory} belongs to uid {owner}, not to this user (uid {uid}); "
                "remove it, the sharer makes it again")
    if int(mode, 8) & 0o022:
        return (f"{directory} is writable by group or others (mode {mode}): anyone could "
                f"plant a share there; chmod 700 {directory}")
    return None


def _share(directory: str, name: str, has_socket: bool, text: str) -> SeenShare | BadShare:
    file = f"{directory}/{name}.json"
    shown = name if valid_share_name(name) else ""
    if len(text.encode()) > MAX_MANIFEST_BYTES:
        return BadShare(shown, file, f"its manifest is larger than {MAX_MANIFEST_BYTES} bytes")
    if not shown:
        return BadShare("", file, "its name is not 1-32 characters of a-z, 0-9, '_', '-'")
    try:
        manifest = ShareManifest.model_validate_json(text)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "the manifest"
        return BadShare(shown, file, f"its manifest is not valid ({where}: {first['msg']})")
    if manifest.name != name:
        return BadShare(shown, file, f"its manifest names {manifest.name!r}, not {name!r}")
    return SeenShare(manifest, f"{directory}/{name}.sock", has_socket)
