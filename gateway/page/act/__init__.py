"""Acting on a page: elements found by ref, clicks, keys, drags, uploads."""
