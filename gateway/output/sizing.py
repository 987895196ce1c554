"""Keeping values within a model's context: cut what is too long, and say so.

Pure, so the rule is tested on plain data. A value whose JSON text fits the
bound is returned untouched. A longer string is cut to the bound; any other
value is replaced by the first ``max_chars`` characters of its JSON text —
still readable, and honest about being partial through ``truncated`` and the
number of characters left out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

__all__ = ["DEFAULT_MAX_CHARS", "Fitted", "fit"]

DEFAULT_MAX_CHARS = 100_000


@dataclass(frozen=True)
class Fitted:
    value: Any
    truncated: bool
    omitted_chars: int
    total_chars: int


def fit(value: Any, max_chars: int = DEFAULT_MAX_CHARS) -> Fitted:
    if isinstance(value, str):
        if len(value) <= max_chars:
            return Fitted(value, False, 0, len(value))
        return Fitted(value[:max_chars], True, len(value) - max_chars, len(value))
    if value is None or isinstance(value, bool | int | float):
        return Fitted(value, False, 0, 0)
    text = json.dumps(value, ensure_ascii=False, default=str)
    if len(text) <= max_chars:
        return Fitted(value, False, 0, len(text))
    return Fitted(text[:max_chars], True, len(text) - max_chars, len(text))
