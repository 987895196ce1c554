"""``chrome-ssh-gateway share DEST``: this machine's browser, forwarded to DEST over SSH."""
