"""Shaping results for a model and a disk: sizes, images, redaction, allowed paths."""
