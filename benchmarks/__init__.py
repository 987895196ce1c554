"""Benchmarks for chrome-ssh-gateway: ``python -m benchmarks.run`` (see README.md here)."""
