"""The JavaScript the gateway runs in pages, kept as ``.js`` files beside this module.

Scripts are real files so they read, diff and lint as JavaScript rather than as
Python strings. Each is read once (``script`` caches) from the installed
package with ``importlib.resources``, so it works from a wheel or a zip alike.

A line ``// include: other.js`` is replaced by that file's text: ``prepare.js``
and ``frame_point.js`` share ``climb.js`` this way. A file holding a function
expression is either sent as ``Runtime.callFunctionOn``'s
``functionDeclaration`` (``this`` is the element) or, via ``call``, applied to
JSON arguments as a ``Runtime.evaluate`` expression.
"""

from __future__ import annotations

import json
import re
from functools import cache
from importlib.resources import files
from typing import Any

__all__ = ["call", "script"]

_INCLUDE = re.compile(r"^[ \t]*// include: ([\w.-]+\.js)[ \t]*$", re.MULTILINE)


@cache
def script(name: str) -> str:
    """The text of ``gateway/page/js/<name>``, its ``// include:`` lines expanded."""
    text = files(__name__).joinpath(name).read_text(encoding="utf-8")
    return _INCLUDE.sub(lambda m: script(m.group(1)).rstrip("\n"), text)


def call(name: str, *args: Any) -> str:
    """An expression applying the function in ``name`` to ``args`` (as JSON literals)."""
    return "(" + script(name) + ")(" + ", ".join(json.dumps(a) for a in args) + ")"
