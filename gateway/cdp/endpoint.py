"""Where a browser's DevTools live, and the pure parsers of what Chrome writes about it.

Tested on files captured from real Chromium (fixtures/devtools).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic_core import from_json

from gateway.config import CdpAddress, host_port
from gateway.config.remote import NO_HEADERS, SecretHeaders, redact_url

__all__ = [
    "DEFAULT_PROFILE_DIRS",
    "FALLBACK_ADDRESS",
    "PROFILE_FILES",
    "REMOTE_DEBUGGING_SETTING",
    "SETTING_SINCE",
    "Endpoint",
    "ProfileDir",
    "parse_active_port",
    "parse_version_payload",
    "read_profiles",
    "remote_debugging_on",
    "seen_from_wsl",
]

# Relative to the user's home directory (where an SSH exec starts; see hosts.base).
DEFAULT_PROFILE_DIRS: tuple[str, ...] = (
    ".config/google-chrome",
    ".config/google-chrome-beta",
    ".config/google-chrome-unstable",
    ".config/chromium",
    "snap/chromium/common/chromium",
    ".var/app/com.google.Chrome/config/google-chrome",
    ".var/app/org.chromium.Chromium/config/chromium",
    "Library/Application Support/Google/Chrome",
    "Library/Application Support/Google/Chrome Beta",
    "Library/Application Support/Google/Chrome Canary",
    "Library/Application Support/Chromium",
    # Windows' Chrome, seen from WSL (each Windows user's; ``*``: see Host.read_files).
    "/mnt/c/Users/*/AppData/Local/Google/Chrome/User Data",
)
FALLBACK_ADDRESS = CdpAddress(host="127.0.0.1", port=9222)


@dataclass(frozen=True)
class Endpoint:
    """Where the browser's DevTools websocket lives, on the host's side."""

    host: str
    port: int
    browser_path: str  # /devtools/browser/<uuid>; a Grid's or a hosted pool's own path
    found_by: str      # "DevToolsActivePort in <dir>" / "/json/version at host:port"
    # A hosted pool's websocket: wss, handshake headers, the CA that signed its cert.
    scheme: str = "ws"
    headers: SecretHeaders = NO_HEADERS
    ca_file: str | None = None
    # A share's Unix socket on the host (``share``): reached there instead of host:port,
    # which then only name the Host header Chrome checks (``localhost``).
    socket: str | None = None
    # A person's own Chrome, debuggable through its remote-debugging setting: each new
    # websocket asks the person ("Allow remote debugging?"), and it serves no /json.
    personal: bool = False
    machine: str | None = None  # where the browser runs, when not on the host (a sharer)

    @property
    def address(self) -> str:
        return self.socket if self.socket is not None else host_port(self.host, self.port)

    @property
    def url(self) -> str:
        """The websocket URL, secrets (a ``?token=``) included: only for connecting."""
        netloc = self.host if self.socket is not None else self.address
        return f"{self.scheme}://{netloc}{self.browser_path}"

    @property
    def shown(self) -> str:
        """``address/path`` with every query value redacted: for messages and results."""
        if self.socket is not None:
            return f"{self.socket} {self.browser_path}"
        return redact_url(self.url).partition("://")[2]

    def __repr__(self) -> str:  # the path may hold a hosted pool's ?token=
        return f"Endpoint({self.scheme}://{self.shown!s}, found by {self.found_by})"

    __str__ = __repr__


def parse_active_port(text: str) -> tuple[int, str] | None:
    """``"<port>\\n/devtools/browser/<uuid>"`` → (port, path); None when malformed."""
    lines = text.strip().splitlines()
    if len(lines) < 2 or not lines[0].strip().isdigit():
        return None
    port = int(lines[0].strip())
    path = lines[1].strip()
    if not 0 < port < 65536 or not path.startswith("/devtools/browser/"):
        return None
    return port, path


def parse_version_payload(body: bytes) -> str:
    """``/json/version`` body → the ``/devtools/browser/…`` path of its websocket URL."""
    payload: Any = from_json(body)  # json.loads: RecursionError on a deep [[[[ body
    url = payload.get("webSocketDebuggerUrl") if isinstance(payload, dict) else None
    if not isinstance(url, str) or "/devtools/browser/" not in url:
        raise ValueError("no webSocketDebuggerUrl in /json/version")
    return url[url.index("/devtools/browser/"):]


REMOTE_DEBUGGING_SETTING = "chrome://inspect/#remote-debugging"
"""Where a person turns on remote debugging of their own Chrome (144+)."""
SETTING_SINCE = 144
"""The first Chrome with that setting."""
PROFILE_FILES = ("DevToolsActivePort", "Local State", "Last Version")
"""What discovery reads in a user-data directory: the port, the setting, the version."""


@dataclass(frozen=True)
class ProfileDir:
    """What a user-data directory says of its browser, as read by discovery."""

    directory: str                       # as the host printed it
    active_port: tuple[int, str] | None  # DevToolsActivePort: (port, browser path)
    remote_debugging: bool               # Local State: the person turned the setting on
    version: str | None                  # Last Version: "156.0.8078.114"
    used: bool                           # a Local State is there: Chrome ran in it

    @property
    def major(self) -> int | None:
        head = (self.version or "").partition(".")[0]
        return int(head) if head.isdigit() else None


def remote_debugging_on(local_state: str) -> bool:
    """Whether a ``Local State`` file has ``devtools.remote_debugging.user-enabled``
    true (the chrome://inspect setting); False for anything else, malformed included."""
    try:
        state: Any = from_json(local_state)
    except ValueError:
        return False
    for key in ("devtools", "remote_debugging", "user-enabled"):
        state = state.get(key) if isinstance(state, dict) else None
    return state is True


def read_profiles(files: dict[str, str]) -> list[ProfileDir]:
    """The user-data directories among ``files`` (path as the host printed it →
    content, of ``PROFILE_FILES``), in the order their files came."""
    dirs: dict[str, dict[str, str]] = {}
    for path, text in files.items():
        directory, _, name = path.rpartition("/")
        if name in PROFILE_FILES:
            dirs.setdefault(directory, {})[name] = text
    return [ProfileDir(directory,
                       parse_active_port(found.get("DevToolsActivePort", "")),
                       remote_debugging_on(found.get("Local State", "")),
                       found.get("Last Version", "").strip()[:40] or None,
                       "Local State" in found)
            for directory, found in dirs.items()]


def seen_from_wsl(directory: str) -> bool:
    """Whether a user-data directory is Windows' own, seen from WSL (``/mnt/c/…``)."""
    return directory.startswith("/mnt/")
