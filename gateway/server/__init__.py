"""The MCP side: the server and its one error boundary, stdio, the call log."""
