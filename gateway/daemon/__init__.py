"""The gateway daemon that ``call`` talks to: one per user and config, found or started
from a shell (``control``), serving MCP over HTTP on a private Unix socket until idle
(``serve``), its socket, pid file and log in a private runtime directory
(``runtime_dir``)."""
