"""The lines of a view being written: inline runs, indentation, blank lines between blocks."""

from __future__ import annotations

__all__ = ["Out"]


_NO_SPACE_AFTER = ("(", "[", "{", "\u201c")


_NO_SPACE_BEFORE = (")", "]", "}", ",", ".", ";", ":", "!", "?", "\u201d")


class Out:
    """Lines of the view: one inline run at a time, indentation, blank lines between blocks.

    In ``inline`` mode (a table cell) everything lands on one line.
    """

    def __init__(self, *, inline: bool = False) -> None:
        self.inline = inline
        self.lines: list[str] = []
        self.parts: list[str] = []
        self.indent: list[str] = []
        self.prefix = ""
        self.blank = False  # a blank line is due before the next line
        self.after_label = False  # just printed a label line: no blank line right after
        self.owed: str | None = None  # a space owed to "text" whitespace or after an "item"

    def text(self, text: str) -> None:
        """Page text: its own whitespace counts, runs of it become one space."""
        core = " ".join(text.split())
        if not core:
            if text and self.parts:
                self.owed = "text"
            return
        if self.parts and (self.owed == "text" or text[0].isspace() or (
                self.owed == "item" and not core.startswith(_NO_SPACE_BEFORE))):
            self.parts.append(" ")
        self.parts.append(core)
        self.owed = "text" if text[-1].isspace() else None

    def item(self, text: str) -> None:
        """A control or image: set off by a space unless it follows an opening bracket."""
        if self.parts and (self.owed or not self.parts[-1].endswith(_NO_SPACE_AFTER)):
            self.parts.append(" ")
        self.parts.append(text)
        self.owed = "item"

    def newline(self) -> None:
        if self.inline:
            if self.parts:
                self.owed = "text"
            return
        if not self.parts:
            return
        if self.blank and not self.after_label and self.lines:
            self.lines.append("")
        self.lines.append("".join(self.indent) + self.prefix + "".join(self.parts))
        self.parts.clear()
        self.prefix = ""
        self.blank = self.after_label = False
        self.owed = None

    def block(self) -> None:
        self.newline()
        self.blank = True

    def line_prefix(self, prefix: str) -> None:
        """Start a line that begins with ``prefix`` (``## ``, ``- ``) once it has content."""
        self.newline()
        if not self.inline:
            self.prefix = prefix

    def label(self, text: str) -> None:
        """A container's label line; what follows is not separated from it."""
        self.block()
        self.item(text)
        self.newline()
        self.after_label = True

    def take(self) -> str:
        """The line so far (inline mode), leaving this run empty for the next cell."""
        line = "".join(self.parts)
        self.parts.clear()
        self.owed = None
        return line

    def result(self) -> str:
        self.newline()
        if self.inline:
            return "".join(self.parts)
        return "\n".join(self.lines)
