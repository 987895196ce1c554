"""Test suite for chrome-ssh-gateway (unit tests, end-to-end tests, the test topology)."""
