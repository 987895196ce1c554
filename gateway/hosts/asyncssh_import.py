"""asyncssh, imported without the compiler runs of its liboqs probe.

At import, asyncssh looks for liboqs (a post-quantum key exchange library it can
use beside ``cryptography``'s) with ``ctypes.util.find_library``, for two names.
Where liboqs is absent, as on most machines, each lookup runs ``ldconfig -p``,
then ``gcc`` and ``ld``: ~27 ms of every start spent waiting on a compiler, on the
critical path (the SDK's import starts only once the registry has its SSH host),
and a compiler's CPU taken from a 2-core machine. The dynamic loader answers the
same question at once: during the import, those two lookups ask it to load the
library by its development name (``liboqs.so``) instead; every other lookup goes to
``find_library`` unchanged. A liboqs installed without that name is not seen —
asyncssh then offers the same key exchanges, less ``sntrup761`` (ML-KEM comes from
``cryptography``).
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Callable

_LIBOQS = ("oqs", "liboqs")   # the names asyncssh.crypto.pq looks up
_LIBOQS_FILE = "liboqs.so"


Lookup = Callable[[str], "str | None"]  # ctypes.util.find_library's shape


def _loadable_liboqs(find_library: Lookup) -> Lookup:
    def find(name: str) -> str | None:
        if name not in _LIBOQS:
            return find_library(name)
        try:
            ctypes.CDLL(_LIBOQS_FILE)
        except OSError:
            return None
        return _LIBOQS_FILE

    return find


_find_library = ctypes.util.find_library
ctypes.util.find_library = _loadable_liboqs(_find_library)  # type: ignore[assignment]
try:
    import asyncssh
finally:
    ctypes.util.find_library = _find_library

__all__ = ["asyncssh"]
