"""The gateway's own log: structlog, one readable line per event, on stderr.

stdout is the MCP channel, so nothing is ever logged there. Library loggers
that repeat what the gateway already says are turned down to warnings.
"""

from __future__ import annotations

import logging
import sys

import structlog

__all__ = ["configure_logging"]


def configure_logging(level: str = "INFO") -> None:
    """structlog → stderr, one readable line per event."""
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="%H:%M:%S", utc=False),
            structlog.dev.ConsoleRenderer(colors=False),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelNamesMapping().get(level.upper(), logging.INFO)),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        cache_logger_on_first_use=True,
    )
    # asyncssh logs every channel open/close at INFO; the gateway reports what matters.
    logging.getLogger("asyncssh").setLevel(logging.WARNING)
    # The MCP SDK logs each failed tool call again; ``calls.py`` already did.
    logging.getLogger("mcp").setLevel(logging.WARNING)
