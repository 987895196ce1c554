"""What the user asked for: the targets file and environment, parsed into models (pure).

Modules, by what they answer:

- ``addresses`` — where a host and its browser are (``SshDestination``, ``CdpAddress``);
- ``model`` — the models the rest of the gateway reads (``GatewayConfig``, ``TargetConfig``);
- ``file`` — the targets file's schema and its error messages;
- ``sources`` — env variables, the file and which wins (``load_config``);
- ``policy`` / ``urls`` — what a target's settings allow an agent to do.

Import the public names from here: ``from gateway.config import TargetConfig``; they
are the ``__all__`` of ``addresses``, ``model`` and ``sources`` (said once, there).
"""

from gateway.config import addresses, model, sources
from gateway.config.addresses import *  # noqa: F403
from gateway.config.model import *  # noqa: F403
from gateway.config.sources import *  # noqa: F403
from gateway.errors import ConfigError

__all__ = ["ConfigError"]
__all__ += addresses.__all__
__all__ += model.__all__
__all__ += sources.__all__
