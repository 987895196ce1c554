"""A tab and what it records: its console, its network, its routes."""
