"""The summary of a saved V8 heap snapshot, read from the file in bounded memory.

A ``.heapsnapshot`` is one JSON object: ``snapshot.meta`` (the node layout:
``node_fields`` such as ``type, name, id, self_size, edge_count, detachedness`` and the
``node_types``), then ``nodes`` (a flat array of integers, ``len(node_fields)`` per
node), ``edges`` and other integer arrays, and last ``strings`` (names are indices
into it). A 50 MB heap gives a file of ~150 MB, so it is never loaded whole.

The file is read in ``READ_CHARS`` pieces. Node numbers are aggregated as they are
read (by constructor: an object's or DOM node's name, else its type, grouped as
DevTools does: ``(string)``, ``(closure)``, ``(compiled code)``, …), the other
arrays are skipped, and of ``strings`` only the few names the result shows are kept.
So memory is bounded by one read, one batch of numbers and one table entry per
distinct constructor name — less than the node array, far less than the text.

Pure (file reading only); tested on a captured snapshot
(``fixtures/profiles/leak.heapsnapshot.gz``).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from typing import IO, Any

from pydantic import BaseModel

__all__ = ["Constructor", "HeapFormatError", "HeapSummary", "summarize_snapshot"]

READ_CHARS = 1 << 18  # a piece's numbers as Python ints take ~40x its size
MAX_STRING_CHARS = 64 << 20
MAX_META_CHARS = 1 << 20  # the header is ~2 kB
TOP, TOP_DETACHED = 10, 5
DETACHED = 2  # the ``detachedness`` value of a DOM node outside every document

# Node types shown by their own name; the rest are grouped under one name per type.
_NAMED = frozenset({"object", "native", "synthetic"})
_GROUPS = {"hidden": "(system)", "array": "(array)", "string": "(string)",
           "concatenated string": "(string)", "sliced string": "(string)",
           "code": "(compiled code)", "closure": "(closure)", "regexp": "(regexp)",
           "number": "(number)", "symbol": "(symbol)", "bigint": "(bigint)",
           "object shape": "(object shape)"}
_STRING = re.compile(r'\s*("(?:[^"\\]|\\.)*")\s*([,\]])')  # one complete JSON string


class HeapFormatError(ValueError):
    """The file is not a V8 heap snapshot (or it was cut off)."""


class Constructor(BaseModel):
    constructor: str
    count: int
    self_bytes: int


class HeapSummary(BaseModel):
    nodes: int
    heap_bytes: int
    top: list[Constructor]
    detached_nodes: int
    detached: list[Constructor]


class _Text:
    """The file's text from a position on, read a piece at a time."""

    def __init__(self, file: IO[str]) -> None:
        self._file = file
        self.buf, self.pos = "", 0

    def more(self, *, keep_all: bool = False) -> bool:
        """Read the next piece; what was already consumed is dropped unless ``keep_all``."""
        piece = self._file.read(READ_CHARS)
        if not piece:
            return False
        if keep_all:
            self.buf += piece
        else:
            self.buf, self.pos = self.buf[self.pos:] + piece, 0
        return True

    def skip_to(self, token: str) -> None:
        """Move past the next ``token``."""
        while True:
            found = self.buf.find(token, self.pos)
            if found >= 0:
                self.pos = found + len(token)
                return
            self.pos = max(self.pos, len(self.buf) - len(token))
            if not self.more():
                raise HeapFormatError(f"no {token!r} in the snapshot (is it cut off?)")

    def numbers(self) -> Iterator[list[int]]:
        """Batches of the integers up to the closing ``]`` of the array being read."""
        while True:
            end = self.buf.find("]", self.pos)
            stop = end if end >= 0 else self.buf.rfind(",", self.pos)  # a number may go on
            if stop > self.pos and self.buf[self.pos:stop].strip():
                part = self.buf[self.pos:stop].strip().strip(",")
                try:
                    yield list(map(int, part.split(",")))
                except ValueError:
                    raise HeapFormatError("a snapshot array holds a non-integer") from None
            if stop >= self.pos:
                self.pos = stop + 1
            if end >= 0:
                return
            if not self.more():
                raise HeapFormatError("the snapshot ends inside an array (is it cut off?)")

    def strings(self) -> Iterator[str]:
        """The strings of the array being read, in order (each decoded only if asked:
        the generator yields the JSON text; ``json.loads`` it)."""
        while True:
            found = _STRING.match(self.buf, self.pos)
            if found is None:
                if len(self.buf) - self.pos > MAX_STRING_CHARS or not self.more():
                    raise HeapFormatError("the snapshot's strings are cut off or "
                                          "malformed")
                continue
            self.pos = found.end()
            yield found.group(1)
            if found.group(2) == "]":
                return


def _meta(text: _Text) -> dict[str, Any]:
    """``snapshot.meta``: everything before ``"nodes":[`` is the small header object."""
    token = '"nodes":['
    while (found := text.buf.find(token)) < 0:
        if len(text.buf) > MAX_META_CHARS or not text.more(keep_all=True):
            raise HeapFormatError("not a V8 heap snapshot: no nodes array near its start")
    head, text.pos = text.buf[:found].rstrip().rstrip(",") + "}", found + len(token)
    try:
        meta = json.loads(head)["snapshot"]["meta"]
        return {"fields": list(meta["node_fields"]), "types": list(meta["node_types"][0])}
    except (ValueError, KeyError, IndexError, TypeError):
        raise HeapFormatError("the snapshot has no readable snapshot.meta") from None


def summarize_snapshot(file: IO[str]) -> HeapSummary:
    """The summary of the snapshot ``file`` (text mode), read once from its start."""
    text = _Text(file)
    meta = _meta(text)
    fields, types = meta["fields"], meta["types"]
    try:
        at = {name: fields.index(name) for name in ("type", "name", "self_size")}
    except ValueError:
        raise HeapFormatError(f"snapshot node_fields {fields} lack type/name/self_size") from None
    detached_at = fields.index("detachedness") if "detachedness" in fields else None
    width = len(fields)
    groups = {i: _GROUPS.get(t) for i, t in enumerate(types) if t not in _NAMED}
    counts: Counter[int] = Counter()       # by name index (or -1-type)
    bytes_of: dict[int, int] = {}
    detached: dict[int, list[int]] = {}
    nodes = heap = 0
    carry: list[int] = []
    for batch in text.numbers():
        batch = carry + batch
        whole = len(batch) - len(batch) % width
        carry = batch[whole:]
        kinds, names = batch[at["type"]:whole:width], batch[at["name"]:whole:width]
        sizes = batch[at["self_size"]:whole:width]
        # Plain loops cost ~1 µs a node; this is ~0.2: keys in a comprehension, counts
        # by Counter (C), only the sums in Python.
        keys = [-1 - kind if kind in groups else name for kind, name in zip(kinds, names,
                                                                             strict=True)]
        counts.update(keys)
        for key, size in zip(keys, sizes, strict=True):
            bytes_of[key] = bytes_of.get(key, 0) + size
        if detached_at is not None:
            marks = batch[detached_at:whole:width]
            for i in [i for i, mark in enumerate(marks) if mark == DETACHED]:
                entry = detached.setdefault(names[i], [0, 0])
                entry[0] += 1
                entry[1] += sizes[i]
        nodes += len(kinds)
        heap += sum(sizes)
    top = [(key, (counts[key], size)) for key, size in
           sorted(bytes_of.items(), key=lambda item: -item[1])[:TOP]]
    worst = sorted(detached.items(), key=lambda item: -item[1][0])[:TOP_DETACHED]
    wanted = {key for key, _ in top + worst if key >= 0}
    names_of: dict[int, str] = {}
    if wanted:
        text.skip_to('"strings":[')
        for index, value in enumerate(text.strings()):
            if index in wanted:
                names_of[index] = str(json.loads(value))[:200]
                if len(names_of) == len(wanted):
                    break

    def named(key: int) -> str:
        if key < 0:
            return groups.get(-1 - key) or f"({types[-1 - key]})"
        return names_of.get(key, f"(string {key})")

    return HeapSummary(
        nodes=nodes, heap_bytes=heap,
        top=[Constructor(constructor=named(k), count=c, self_bytes=b) for k, (c, b) in top],
        detached_nodes=sum(c for c, _ in detached.values()),
        detached=[Constructor(constructor=named(k), count=c, self_bytes=b)
                  for k, (c, b) in worst])
