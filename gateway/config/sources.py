"""Where the configuration comes from: env variables, the targets file, precedence.

Pure apart from reading the targets file: the environment is read only through
the mapping given, so every rule is testable on literals. Everything is validated
at start-up, so a typo is refused with a message naming the source, the key and
what is expected, instead of surfacing later as a failed SSH connect mid-session.

Where the targets come from, first match wins:

1. a targets file (``--config`` / ``CHROME_SSH_GATEWAY_CONFIG``) — then the
   single-target env vars (``SSH_PROXY_TO``, ``CDP_URL``, ``SSH_PROXY_PORT``)
   are refused rather than silently ignored;
2. ``SSH_PROXY_TO`` — one SSH target named ``default`` (``CDP_URL`` and
   ``SSH_PROXY_PORT`` refine it);
3. ``CDP_URL`` alone — one local target named ``local`` at that address;
4. nothing — the embedded default: one local target ``local`` that discovers a
   running Chrome or launches a headless Chromium.

``CHROME_SSH_GATEWAY_LAUNCH=1`` sets ``launch = true`` on the ``SSH_PROXY_TO`` or
``CDP_URL`` target (the embedded default launches anyway; with a targets file,
say it there).

The call log (``MCP_DEBUG_LOG`` or ``[gateway] call_log``) is independent of
where the targets come from; a non-empty env value wins over the file.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from gateway.config.addresses import parse_cdp_address, parse_port, parse_ssh_destination
from gateway.config.file import read_targets_file
from gateway.config.model import Browsers, GatewayConfig, TargetConfig
from gateway.config.text import breaks_a_line, keyed, show
from gateway.errors import ConfigError

__all__ = [
    "ENV_BROWSERS",
    "ENV_CALL_LOG",
    "ENV_CDP_URL",
    "ENV_CONFIG",
    "ENV_LAUNCH",
    "ENV_READ_ONLY",
    "ENV_SHARED",
    "ENV_SSH_PROXY_PORT",
    "ENV_SSH_PROXY_TO",
    "ENV_TOOLS",
    "default_call_log_path",
    "load_config",
]

ENV_CONFIG = "CHROME_SSH_GATEWAY_CONFIG"
ENV_SSH_PROXY_TO = "SSH_PROXY_TO"
ENV_CDP_URL = "CDP_URL"
ENV_SSH_PROXY_PORT = "SSH_PROXY_PORT"
ENV_CALL_LOG = "MCP_DEBUG_LOG"
ENV_READ_ONLY = "CHROME_SSH_GATEWAY_READ_ONLY"
ENV_TOOLS = "CHROME_SSH_GATEWAY_TOOLS"
ENV_BROWSERS = "CHROME_SSH_GATEWAY_BROWSERS"
ENV_LAUNCH = "CHROME_SSH_GATEWAY_LAUNCH"
ENV_SHARED = "CHROME_SSH_GATEWAY_SHARED"
SHARED_TARGET = "shared"  # the embedded default's group of this machine's shares

_TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
_FALSE_WORDS = frozenset({"", "0", "false", "no", "off"})


def load_config(
    environ: Mapping[str, str], config_path: str | None = None, *, read_only: bool = False,
    tools: str | None = None,
) -> GatewayConfig:
    """Build the gateway's configuration from ``environ`` and an optional targets file.

    ``config_path`` is the ``--config`` argument; it overrides
    ``CHROME_SSH_GATEWAY_CONFIG``. ``read_only`` is the ``--read-only`` flag; the
    env var and ``[gateway] read_only`` can only turn read-only mode on, never off.
    ``tools`` is the ``--tools`` flag; it overrides ``CHROME_SSH_GATEWAY_TOOLS``, which
    overrides ``[gateway] tools`` (the names are checked where the tools are known,
    ``gateway.tools.sets``). Raises ``ConfigError`` on anything invalid — the only
    exception this function raises.
    """
    config = _load_targets(environ, config_path)
    read_only = read_only or _switch(environ, ENV_READ_ONLY)
    if read_only:
        config = config.model_copy(update={"read_only": True})
    env_tools = _env(environ, ENV_TOOLS)
    for given, source in ((tools, "--tools"), (env_tools, ENV_TOOLS)):
        if given is not None:
            return config.model_copy(update={"tools": given, "tools_source": source})
    return config


def default_call_log_path(environ: Mapping[str, str]) -> Path:
    """``$XDG_CACHE_HOME/chrome-ssh-gateway/calls.jsonl``, falling back to ``~/.cache``.

    A function of ``environ`` rather than a constant so tests and the caller see
    the same value the process environment would give.
    """
    cache = environ.get("XDG_CACHE_HOME", "")
    if not cache or not os.path.isabs(cache):  # XDG: relative values are ignored
        cache = os.path.join(_expand_home("~", environ), ".cache")
    return Path(cache) / "chrome-ssh-gateway" / "calls.jsonl"


def _load_targets(environ: Mapping[str, str], config_path: str | None) -> GatewayConfig:
    """``load_config`` without the read-only switch: where the targets come from."""
    ssh_text = _env(environ, ENV_SSH_PROXY_TO)
    cdp_text = _env(environ, ENV_CDP_URL)
    port_text = _env(environ, ENV_SSH_PROXY_PORT)
    log_text = _env(environ, ENV_CALL_LOG)
    browsers = _browsers(environ)
    launch = _switch(environ, ENV_LAUNCH)
    shared = _switch(environ, ENV_SHARED) if _env(environ, ENV_SHARED) is not None else None

    env_log: Path | None = None
    if log_text is not None:
        env_log = _call_log_from_text(log_text, environ, source=ENV_CALL_LOG)

    path = config_path if config_path is not None else _env(environ, ENV_CONFIG)
    path_source = "--config" if config_path is not None else ENV_CONFIG
    if path is not None:
        if not path.strip():
            raise ConfigError(path_source, "", "empty path; expected a TOML targets file")
        if "\x00" in path:
            raise ConfigError(path_source, "", "path contains a NUL character")
        for name, value in (
            (ENV_SSH_PROXY_TO, ssh_text),
            (ENV_CDP_URL, cdp_text),
            (ENV_SSH_PROXY_PORT, port_text),
            (ENV_BROWSERS, None if browsers == "one" else browsers),
            (ENV_LAUNCH, "1" if launch else None),
            (ENV_SHARED, _env(environ, ENV_SHARED)),
        ):
            if value is not None:
                raise ConfigError(
                    name,
                    "",
                    f"set either {name} or a targets file ({path}), not both; "
                    "move this setting into the file",
                )
        path = _expand_home(path, environ)
        config = _load_file(path, environ)
        return config.model_copy(update={"call_log": env_log}) if log_text is not None else config

    with keyed(ENV_CDP_URL):
        cdp = parse_cdp_address(cdp_text) if cdp_text is not None else None
    if shared:
        return _shared_config(environ, ssh_text, env_log)
    if ssh_text is not None:
        with keyed(ENV_SSH_PROXY_TO):
            ssh = parse_ssh_destination(ssh_text)
        expose = None
        if port_text is not None:
            with keyed(ENV_SSH_PROXY_PORT):
                expose = parse_port(port_text.strip(), what="port")
        if cdp is not None and browsers == "all":
            raise ConfigError(ENV_BROWSERS, "", f"all finds every browser itself; unset "
                              f"{ENV_CDP_URL} or this")
        target = _env_target(launch, name="default", ssh=ssh, cdp=cdp, expose_port=expose,
                             browsers=browsers)
        return GatewayConfig(targets=(target,), call_log=env_log, source=f"env {ENV_SSH_PROXY_TO}")
    if port_text is not None:
        raise ConfigError(
            ENV_SSH_PROXY_PORT, "", f"only applies together with {ENV_SSH_PROXY_TO}; set that too"
        )
    if cdp is not None:
        if browsers == "all":
            raise ConfigError(ENV_BROWSERS, "", f"all finds every browser itself; unset "
                              f"{ENV_CDP_URL} or this")
        target = _env_target(launch, name="local", ssh=None, cdp=cdp)
        return GatewayConfig(targets=(target,), call_log=env_log, source=f"env {ENV_CDP_URL}")
    if browsers == "all":
        target = TargetConfig(name="local", ssh=None, cdp=None, browsers="all")
    else:
        target = TargetConfig(name="local", ssh=None, cdp=None, launch=True,
                              launch_temporary=True, keep_running=False)
    # Beside its own browser, this machine's shares: on a dev box where someone runs
    # ``share`` from a laptop, the laptop's browser is served with nothing to set up.
    here = () if shared is False else (TargetConfig(name=SHARED_TARGET, shared=True),)
    return GatewayConfig(targets=(target, *here), call_log=env_log, source="embedded default")


def _shared_config(environ: Mapping[str, str], ssh_text: str | None,
                   env_log: Path | None) -> GatewayConfig:
    """``CHROME_SSH_GATEWAY_SHARED=1``: the shares on ``SSH_PROXY_TO`` (target ``default``),
    or on this machine (target ``shared``) — and nothing else."""
    for name in (ENV_CDP_URL, ENV_SSH_PROXY_PORT, ENV_LAUNCH):
        if _env(environ, name) is not None:
            raise ConfigError(name, "", f"does not apply with {ENV_SHARED}=1 (the shares are "
                              "found by themselves); unset one of them")
    if _browsers(environ) == "all":
        raise ConfigError(ENV_BROWSERS, "", f"does not apply with {ENV_SHARED}=1; unset one "
                          "of them")
    if ssh_text is None:
        return GatewayConfig(targets=(TargetConfig(name=SHARED_TARGET, shared=True),),
                             call_log=env_log, source=f"env {ENV_SHARED}")
    with keyed(ENV_SSH_PROXY_TO):
        ssh = parse_ssh_destination(ssh_text)
    return GatewayConfig(targets=(TargetConfig(name="default", ssh=ssh, shared=True),),
                         call_log=env_log, source=f"env {ENV_SSH_PROXY_TO}")


def _browsers(environ: Mapping[str, str]) -> Browsers:
    text = _env(environ, ENV_BROWSERS)
    if text is None or text.strip().lower() == "one":
        return "one"
    if text.strip().lower() == "all":
        return "all"
    raise ConfigError(ENV_BROWSERS, "", f"{show(text)} is not a choice; expected all or one")


def _load_file(path: str, environ: Mapping[str, str]) -> GatewayConfig:
    """Everything a targets file says; ``call_log`` is None when absent or false."""
    file = read_targets_file(path, environ)
    gateway = file.gateway
    call_log: Path | None = None
    if gateway.call_log is True:
        call_log = default_call_log_path(environ)
    elif isinstance(gateway.call_log, str):
        call_log = Path(_expand_home(gateway.call_log.strip(), environ))
    tools = {} if gateway.tools is None else {"tools": gateway.tools,
                                              "tools_source": f"{path}: gateway.tools"}
    return GatewayConfig(targets=file.target_configs(), call_log=call_log, source=path,
                         allow_any_path=gateway.allow_any_path, read_only=gateway.read_only,
                         **tools)


def _env(environ: Mapping[str, str], name: str) -> str | None:
    """An env var's value, with "set but empty" treated as unset (MCP clients emit that)."""
    value = environ.get(name, "")
    return value if value != "" else None


def _env_target(launch: bool, **fields: Any) -> TargetConfig:
    """The one target the env vars describe; what ``launch`` cannot go with is refused
    under its variable's name."""
    try:
        return TargetConfig(launch=launch, **fields)
    except ValidationError as err:
        problem = err.errors()[0].get("ctx", {}).get("error", err)
        raise ConfigError(ENV_LAUNCH, "", str(problem)) from None


def _switch(environ: Mapping[str, str], name: str) -> bool:
    """An on/off env var (unset or empty: off); anything else is refused."""
    value = _env(environ, name)
    if value is None:
        return False
    word = value.strip().lower()
    if word not in _TRUE_WORDS | _FALSE_WORDS:
        raise ConfigError(name, "", f"{show(value)} is not a switch; "
                          "expected 1/0, true/false, yes/no or on/off")
    return word in _TRUE_WORDS


def _expand_home(text: str, environ: Mapping[str, str]) -> str:
    """Expand a leading ``~`` with the given environment's HOME (pure, unlike os.path)."""
    if text == "~" or text.startswith("~/"):
        home = environ.get("HOME")
        if home:
            return home + text[1:]
    return os.path.expanduser(text) if text.startswith("~") else text


def _call_log_from_text(value: str, environ: Mapping[str, str], *, source: str) -> Path | None:
    """Read ``MCP_DEBUG_LOG``: an on/off word, or a path to log to."""
    word = value.strip().lower()
    if word in _FALSE_WORDS:
        return None
    if breaks_a_line(value):
        raise ConfigError(source, "", "call log path must not contain NUL or newline characters")
    path = (default_call_log_path(environ) if word in _TRUE_WORDS
            else Path(_expand_home(value.strip(), environ)))
    if breaks_a_line(str(path)):  # from HOME or XDG_CACHE_HOME
        raise ConfigError(source, "", f"the call log path would be {show(str(path))}, with a NUL "
                          "or newline from HOME or XDG_CACHE_HOME; give a path instead")
    return path

