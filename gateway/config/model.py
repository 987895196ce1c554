"""The configuration models: a ``GatewayConfig`` of named ``TargetConfig`` browsers.

They are pydantic models that validate themselves, wherever they are built: from
the targets file (``gateway.config.file``, which reads each ``[targets.<name>]``
table into ``TargetSettings``), from the environment (``gateway.config.sources``)
or from code. Validation is strict — ``expose = true`` is not port 1, ``redact =
1`` is not true — and bounded, so the rest of the gateway relies on these values
without checking again. A reason raised here is a plain sentence; which file and
key it concerns is added by whoever validated (``file.py`` maps pydantic's errors
to ``ConfigError`` in one place).

Values are frozen: change one with ``config.model_copy(update={...})``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    model_validator,
)
from pydantic_core import PydanticKnownError

from gateway.config.addresses import (
    CdpAddress,
    SshDestination,
    parse_ssh_destination,
)
from gateway.config.launch_args import chrome_flag, display_name
from gateway.config.remote import (
    DEFAULT_CAPABILITIES,
    NO_HEADERS,
    Capabilities,
    Headers,
    HostedUrl,
    WebDriverUrl,
    parse_cdp_or_hosted,
    parse_webdriver_url,
    remote_problem,
)
from gateway.config.text import breaks_a_line, show

__all__ = [
    "HOST_KEY_POLICIES",
    "LAUNCH_KEYS",
    "MAX_BUFFER",
    "MAX_HANDED",
    "MAX_HANDED_CHARS",
    "MAX_SECONDS",
    "MIN_BUFFER",
    "OPT_IN_SCHEMES",
    "SCAN_INTERVAL_S",
    "SHARES_INTERVAL_S",
    "TARGET_KEYS",
    "TARGET_NAME_RE",
    "FieldProblem",
    "GatewayConfig",
    "HostKeyPolicy",
    "ReconnectPolicy",
    "StrictModel",
    "TabScope",
    "TargetConfig",
    "TargetName",
    "TargetSettings",
    "table_keys",
]

HostKeyPolicy = Literal["strict", "accept-new"]
HOST_KEY_POLICIES: tuple[HostKeyPolicy, ...] = ("strict", "accept-new")

# Target names appear in tool arguments, log lines and socket file names: keep
# them short, lower-case and free of anything a shell or a path would interpret.
TARGET_NAME_RE = re.compile(r"^[a-z0-9_-]{1,32}$")

# Upper bound for every timeout / delay: larger values are almost surely a unit
# mistake (milliseconds written as seconds) and would make a call look hung.
MAX_SECONDS = 3600.0

SCAN_INTERVAL_S, SHARES_INTERVAL_S = 2.0, 1.0  # a group's look, unless scan_interval_s

# Per-tab console / network ring sizes: enough for a busy page, bounded in memory.
MIN_BUFFER = 10
MAX_BUFFER = 100_000

# URL schemes a tab is never sent to unless its target lists them in
# ``allow_schemes``: they read the remote host's files or change the browser itself.
OPT_IN_SCHEMES = frozenset({"file", "chrome", "chrome-extension", "devtools", "view-source"})
# ``cdp_allow`` entries: a whole domain (``Runtime.*``) or one method (``Page.reload``).
_CDP_PATTERN_RE = re.compile(r"[A-Z][A-Za-z0-9]{0,63}\.(\*|[a-z][A-Za-z0-9]{0,127})")


class FieldProblem(ValueError):
    """A check across fields, naming the field to fix (``key``, relative to the
    model that raised it) so the message points at the line the user must change,
    not at the table that holds it."""

    def __init__(self, reason: str, *key: str) -> None:
        super().__init__(reason)
        self.key = key


# --------------------------------------------------------------------------- value types


def _duration(*, zero_ok: bool) -> AfterValidator:
    low = ">= 0" if zero_ok else "> 0"

    def check(seconds: float) -> float:
        low_ok = seconds >= 0 if zero_ok else seconds > 0
        if not math.isfinite(seconds) or not low_ok or seconds > MAX_SECONDS:
            raise ValueError(f"{seconds:g} is not a sane duration; "
                             f"expected seconds {low} and <= {MAX_SECONDS:g}")
        return seconds

    return AfterValidator(check)


def _in_range(low: int, high: int, *, what: str = "", unit: str = "") -> AfterValidator:
    def check(value: int) -> int:
        if not low <= value <= high:
            raise ValueError(f"{what}{value} is out of range; expected {low}..{high}{unit}")
        return value

    return AfterValidator(check)


def _parsed(kind: type[object] | tuple[type[object], ...],
            parse: Callable[..., object]) -> BeforeValidator:
    """Accept an already-parsed ``kind`` or a string for ``parse`` (the env and
    the file give strings; code may give either)."""

    def validate(value: object) -> object:
        if isinstance(value, kind):
            return value
        if not isinstance(value, str):
            raise PydanticKnownError("string_type")
        return parse(value)  # a BadValue: file.py makes it the key's ConfigError

    return BeforeValidator(validate)


def _target_name(name: str) -> str:
    if not TARGET_NAME_RE.fullmatch(name):
        raise ValueError(f"target name {show(name)} is invalid; "
                         "expected 1-32 characters of a-z, 0-9, '_', '-'")
    return name


def _profile(value: str) -> str:
    """A profile is a path on the target host: refuse what could escape or break it."""
    if breaks_a_line(value):
        raise ValueError("profile path must not contain NUL or newline characters")
    if not (value.startswith("/") or value.startswith("~/")):
        raise ValueError(f"profile {show(value)} must be an absolute path or start with '~/'")
    if ".." in value.split("/"):
        raise ValueError(f"profile {show(value)} must not contain '..' segments")
    return value


def _cdp_pattern(pattern: str) -> str:
    if not _CDP_PATTERN_RE.fullmatch(pattern):
        raise ValueError(f"{show(pattern)} is not a CDP method pattern; "
                         "expected Domain.* or Domain.method, e.g. \"Runtime.*\"")
    return pattern


def _some_patterns(patterns: tuple[str, ...]) -> tuple[str, ...]:
    if not patterns:
        raise ValueError("an empty cdp_allow allows nothing; "
                         "write allow_cdp = false to turn cdp_command off")
    return patterns


def _opt_in_scheme(scheme: str) -> str:
    if scheme == "javascript":
        raise ValueError("javascript: URLs are never navigated to; run code with evaluate instead")
    if scheme not in OPT_IN_SCHEMES:
        raise ValueError(f"{show(scheme)} cannot be allowed; expected any of "
                         f"{', '.join(sorted(OPT_IN_SCHEMES))} (http, https, about, "
                         "data and blob are always allowed)")
    return scheme


MAX_HANDED, MAX_HANDED_CHARS = 8, 200  # (they travel in a share's manifest too)


def _handed(text: str) -> str:
    if not text.strip() or breaks_a_line(text):
        raise ValueError(f"{show(text)} names no tab; expected a URL (or its start) or "
                         "words of a tab's title")
    return text


Seconds = Annotated[float, _duration(zero_ok=False)]
Browsers = Literal["one", "all"]
TabScope = Literal["all", "agent"]
"""Which of a browser's tabs the agent sees: ``all``, or only the ``agent``'s own (those
it opened and those the person handed it) — ``gateway/browsers/scope.py``."""
Port = Annotated[int, _in_range(1, 65535, what="port ")]
BufferSize = Annotated[int, _in_range(MIN_BUFFER, MAX_BUFFER, unit=" entries")]
CaptureSize = Annotated[int, _in_range(1, 100_000, unit=" MB")]
TargetName = Annotated[str, AfterValidator(_target_name)]
Ssh = Annotated[SshDestination, _parsed(SshDestination, parse_ssh_destination)]
Cdp = Annotated[CdpAddress | HostedUrl, _parsed((CdpAddress, HostedUrl), parse_cdp_or_hosted)]
WebDriver = Annotated[WebDriverUrl, _parsed(WebDriverUrl, parse_webdriver_url)]
# Arrays: any sequence (TOML gives lists, code may give tuples or sets), of strict strings.
CdpPatterns = Annotated[
    tuple[Annotated[str, Field(strict=True), AfterValidator(_cdp_pattern)], ...],
    Field(strict=False), AfterValidator(_some_patterns),
]
HandedTabs = Annotated[
    tuple[Annotated[str, Field(strict=True, max_length=MAX_HANDED_CHARS),
                    AfterValidator(_handed)], ...],
    Field(strict=False, max_length=MAX_HANDED),
]
ChromeArgs = Annotated[
    tuple[Annotated[str, Field(strict=True), AfterValidator(chrome_flag)], ...],
    Field(strict=False, max_length=64),
]
Schemes = Annotated[
    frozenset[Annotated[str, Field(strict=True), AfterValidator(_opt_in_scheme)]],
    Field(strict=False),
]


class StrictModel(BaseModel):
    """Frozen, strict, no unknown fields. Fields are set by their Python names;
    a field whose file key differs (``expose``) names it in ``validation_alias``,
    used only when reading the file (``by_alias=True, by_name=False``)."""

    model_config = ConfigDict(frozen=True, strict=True, extra="forbid",
                              validate_by_name=True, validate_by_alias=False)


def table_keys(model: type[BaseModel]) -> tuple[str, ...]:
    """The keys ``model``'s table takes in the targets file, in declaration order."""
    return tuple(field.validation_alias if isinstance(field.validation_alias, str) else name
                 for name, field in model.model_fields.items())


# --------------------------------------------------------------------------- models


class ReconnectPolicy(StrictModel):
    """How a target's link is kept alive and re-established (asyncssh never does).

    The supervisor retries after ``initial_delay_s``, doubling up to ``max_delay_s``
    (kept short so a target is back within seconds of its host, without a call).
    ``call_wait_s`` is how long a tool call waits for a target that is connecting or
    down to come up before it fails with the last reason; 0 fails at once.
    """

    initial_delay_s: Seconds = 0.5
    max_delay_s: Seconds = 5.0
    connect_timeout_s: Seconds = 10.0
    keepalive_interval_s: Seconds = 15.0
    keepalive_count_max: Annotated[int, _in_range(1, 100)] = 3
    call_wait_s: Annotated[float, _duration(zero_ok=True)] = 10.0

    @model_validator(mode="after")
    def _backoff_grows(self) -> ReconnectPolicy:
        if self.max_delay_s < self.initial_delay_s:
            raise FieldProblem(f"max_delay_s ({self.max_delay_s:g}) is smaller than "
                               f"initial_delay_s ({self.initial_delay_s:g})", "max_delay_s")
        return self


class TargetSettings(StrictModel):
    """What a ``[targets.<name>]`` table says: how to reach the host, where its
    Chrome listens and what an agent may do there. Every key is optional."""

    ssh: Ssh | None = None
    cdp: Cdp | None = None
    profile: Annotated[str, AfterValidator(_profile)] | None = None
    host_key_policy: HostKeyPolicy = "strict"
    expose_port: Port | None = Field(default=None, validation_alias="expose")
    redact: bool = True
    command_timeout_s: Seconds = 30.0
    # Launching a browser when none is found (gateway/discovery/launcher.py).
    launch: bool = False
    launch_profile: Annotated[str, AfterValidator(_profile)] | None = None  # None: per target
    headless: bool = True
    display: Annotated[str, AfterValidator(display_name)] | None = None  # headless = false only
    chrome_args: ChromeArgs = ()
    keep_running: bool = True                  # leave a launched browser running on exit
    reconnect: ReconnectPolicy = Field(default_factory=ReconnectPolicy)
    console_buffer: BufferSize = 1000          # console entries kept per tab
    network_buffer: BufferSize = 1000          # network requests kept per tab
    max_capture_mb: CaptureSize = 1024         # largest trace / heap snapshot file saved
    allow_cdp: bool = True                     # cdp_command may be used at all
    cdp_allow: CdpPatterns | None = None       # Domain.* / Domain.method; None = any
    allow_evaluate: bool = True                # evaluate, and CDP methods that run page JS
    allow_schemes: Schemes = frozenset()       # of OPT_IN_SCHEMES, e.g. {"file"}
    browsers: Browsers = "one"                 # "all": every debuggable browser on the host
    # None: "agent" for a person's own browser (found through its remote-debugging
    # setting), else "all"; handed_tabs: the person's tabs the agent may use too.
    tabs: TabScope | None = None
    handed_tabs: HandedTabs = ()
    scan_interval_s: Seconds | None = None     # how often "all" / shared look again
    shared: bool = False                       # the shares on the host (``share``)
    # A WebDriver endpoint's sessions; a hosted cdp URL's handshake (config/remote.py).
    webdriver: WebDriver | None = None
    capabilities: Capabilities = Field(default_factory=lambda: dict(DEFAULT_CAPABILITIES))
    sessions: Annotated[int, _in_range(1, 16, what="sessions ")] = 1
    headers: Headers = NO_HEADERS
    ca_file: Annotated[str, AfterValidator(_profile)] | None = None

    @model_validator(mode="after")
    def _launch_settings_fit(self) -> TargetSettings:
        cdp = self.cdp
        if self.launch and isinstance(cdp, HostedUrl):
            raise FieldProblem("launch cannot start a browser behind a hosted cdp URL", "launch")
        if self.launch and isinstance(cdp, CdpAddress) and (
                cdp.host not in ("127.0.0.1", "localhost", "::1") or cdp.browser_path):
            raise FieldProblem("with cdp, launch starts a browser on that port of the host's "
                               "loopback: cdp must be 127.0.0.1:PORT (no /devtools/browser/ "
                               "path, which a new browser would not have)", "launch")
        if not self.launch:
            for key in LAUNCH_KEYS[1:]:
                if key in self.model_fields_set:
                    raise FieldProblem(f"{key} only applies with launch = true", key)
        if self.display is not None and self.headless:
            raise FieldProblem("display only applies with headless = false", "display")
        if self.handed_tabs and self.tabs == "all":
            raise FieldProblem('handed_tabs names the person\'s tabs the agent may use with '
                               'tabs = "agent"; with "all" it sees every tab already',
                               "handed_tabs")
        return self

    @model_validator(mode="after")
    def _all_finds_its_own(self) -> TargetSettings:
        problem = remote_problem(self)
        if problem is not None:
            raise FieldProblem(*problem)
        if self.browsers == "all":
            for key in ("cdp", "profile", "launch", "webdriver"):
                if getattr(self, key):
                    raise FieldProblem(f'browsers = "all" finds every browser on the host '
                                       f"by itself; drop {key!r}, or use a target of its own "
                                       "for that browser", key)
        for key, field in (("cdp", "cdp"), ("profile", "profile"), ("launch", "launch"),
                           ("webdriver", "webdriver"), ("expose", "expose_port"),
                           ("browsers", "browsers")):
            if self.shared and getattr(self, field) not in (None, False, "one"):
                raise FieldProblem(f"shared = true serves the browsers shared to the host; "
                                   f"drop {key!r}, or use a target of its own", key)
        return self


LAUNCH_KEYS = ("launch", "launch_profile", "headless", "display", "chrome_args",
               "keep_running")


class TargetConfig(TargetSettings):
    """One named browser: how to reach its host and where its Chrome listens.

    Built from code with keywords (``TargetConfig(name="ci", ssh=SshDestination(...))``),
    or from what a user typed with ``TargetConfig.model_validate({"name": "ci", "ssh":
    "me@ci:22"})``: ``ssh`` and ``cdp`` then go through the same parsers as the file.
    Either way an invalid value raises pydantic's ``ValidationError``.
    """

    name: TargetName
    # The embedded default's way (not a file key): a fresh profile per start, removed
    # with the browser when the gateway exits.
    launch_temporary: bool = False

    @model_validator(mode="after")
    def _temporary_is_stopped(self) -> TargetConfig:
        if self.launch_temporary and (not self.launch or self.keep_running
                                      or self.launch_profile is not None):
            raise FieldProblem("launch_temporary needs launch = true, keep_running = false "
                               "and no launch_profile", "launch_temporary")
        return self

    @property
    def launch_dir(self) -> str | None:
        """Where a launched browser keeps its profile: ``launch_profile``, else the
        configured ``profile`` (so discovery finds it there next time), else one
        persistent directory per target; None for a temporary profile."""
        if self.launch_temporary:
            return None
        return (self.launch_profile or self.profile
                or f"~/.cache/chrome-ssh-gateway/{self.name}")

    @property
    def look_interval_s(self) -> float:
        """How often a group looks at its host: ``scan_interval_s``, else 1 s for shares
        (one small exec: usable a second after it starts), 2 s for a process scan."""
        if self.scan_interval_s is not None:
            return self.scan_interval_s
        return SHARES_INTERVAL_S if self.shared else SCAN_INTERVAL_S

    @property
    def transport(self) -> Literal["ssh", "local"]:
        """``"ssh"`` when the browser runs on another host, ``"local"`` otherwise."""
        return "ssh" if self.ssh is not None else "local"


class GatewayConfig(StrictModel):
    """Everything the gateway needs at start-up; ``source`` says where it came from."""

    targets: tuple[TargetConfig, ...]
    call_log: Path | None
    source: str
    allow_any_path: bool = False        # save_to may write outside the allowed directories
    read_only: bool = False             # serve only the tools that change nothing
    tools: str = "default"              # which tools to offer (gateway.tools.sets)
    tools_source: str = "--tools"       # where ``tools`` came from, for its errors


# Keys a ``[targets.<name>]`` table may hold, in the order the docs list them.
TARGET_KEYS: tuple[str, ...] = table_keys(TargetSettings)
