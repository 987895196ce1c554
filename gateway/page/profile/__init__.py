"""Profiling a page: traces and heap snapshots, streamed and summarised."""
