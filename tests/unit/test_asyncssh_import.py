"""asyncssh's liboqs probe answered by the dynamic loader; every other lookup unchanged."""

from __future__ import annotations

import ctypes.util

from gateway.hosts import asyncssh_import
from gateway.hosts.asyncssh_import import _loadable_liboqs


def test_other_libraries_are_found_as_before() -> None:
    asked: list[str] = []

    def find_library(name: str) -> str:
        asked.append(name)
        return f"lib{name}.so.8"

    find = _loadable_liboqs(find_library)
    assert find("nettle") == "libnettle.so.8"
    assert asked == ["nettle"]


def test_liboqs_is_asked_of_the_loader_not_find_library() -> None:
    asked: list[str] = []

    def find_library(name: str) -> None:
        asked.append(name)

    find = _loadable_liboqs(find_library)
    try:
        ctypes.CDLL("liboqs.so")
        loadable = True
    except OSError:
        loadable = False
    for name in ("oqs", "liboqs"):
        assert find(name) == ("liboqs.so" if loadable else None)
    assert asked == []


def test_find_library_is_itself_again_after_the_import() -> None:
    assert ctypes.util.find_library is asyncssh_import._find_library
