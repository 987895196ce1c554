"""chrome-ssh-gateway: an MCP server that drives Chrome browsers on other machines over SSH."""

__version__ = "0.1.0"
__all__ = ["__version__"]
