"""The MCP server: the SDK's low-level server and the one call handler every call
crosses (``calls.py``), stdio and HTTP, the call log, the files results link."""

__all__ = ["STRUCTURED_META"]

STRUCTURED_META = "chrome-ssh-gateway/structured"
"""A ``tools/call`` ``_meta`` key: ``true`` asks for the structured result of a tool that
answers a model in text (a page view) as well — ``call --json``, tests; never a model
(``calls.as_call_result``)."""
