"""End-to-end tests: real sshd and Chromium in network namespaces, MCP client over stdio."""
