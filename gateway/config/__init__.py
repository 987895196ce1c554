"""What the user asked for: the targets file and environment, parsed into models (pure).

Modules, by what they answer:

- ``addresses`` — where a host and its browser are (``SshDestination``, ``CdpAddress``);
- ``model`` — the models the rest of the gateway reads (``GatewayConfig``, ``TargetConfig``);
- ``file`` — the targets file's schema and its error messages;
- ``sources`` — env variables, the file and which wins (``load_config``);
- ``policy`` / ``urls`` — what a target's settings allow an agent to do.

Import the public names from here: ``from gateway.config import TargetConfig``.
"""

from gateway.config.addresses import (
    CdpAddress,
    SshDestination,
    host_port,
    parse_cdp_address,
    parse_ssh_destination,
)
from gateway.config.model import (
    HOST_KEY_POLICIES,
    MAX_SECONDS,
    OPT_IN_SCHEMES,
    TARGET_KEYS,
    TARGET_NAME_RE,
    GatewayConfig,
    HostKeyPolicy,
    ReconnectPolicy,
    TargetConfig,
    TargetSettings,
)
from gateway.config.sources import (
    ENV_BROWSERS,
    ENV_CALL_LOG,
    ENV_CDP_URL,
    ENV_CONFIG,
    ENV_LAUNCH,
    ENV_READ_ONLY,
    ENV_SSH_PROXY_PORT,
    ENV_SSH_PROXY_TO,
    ENV_TOOLS,
    default_call_log_path,
    load_config,
)
from gateway.errors import ConfigError

__all__ = [
    "ENV_BROWSERS",
    "ENV_CALL_LOG",
    "ENV_CDP_URL",
    "ENV_CONFIG",
    "ENV_LAUNCH",
    "ENV_READ_ONLY",
    "ENV_SSH_PROXY_PORT",
    "ENV_SSH_PROXY_TO",
    "ENV_TOOLS",
    "HOST_KEY_POLICIES",
    "MAX_SECONDS",
    "OPT_IN_SCHEMES",
    "TARGET_KEYS",
    "TARGET_NAME_RE",
    "CdpAddress",
    "ConfigError",
    "GatewayConfig",
    "HostKeyPolicy",
    "ReconnectPolicy",
    "SshDestination",
    "TargetConfig",
    "TargetSettings",
    "default_call_log_path",
    "host_port",
    "load_config",
    "parse_cdp_address",
    "parse_ssh_destination",
]
