"""A progress bar on stderr for folder runs (no dependency: one line rewritten in place).

Drawn only on a terminal, so logs and pipes stay clean; ``force`` draws it anyway.
"""

from __future__ import annotations

from typing import TextIO

__all__ = ["Progress"]


class Progress:
    """``[#######.......] 12/32 name.wav``, rewritten with a carriage return.

    Args:
        total: the number of steps.
        stream: where to draw (stderr).
        force: draw even when ``stream`` is not a terminal.
        width: bar cells.
    """

    def __init__(self, total: int, stream: TextIO, *, force: bool = False, width: int = 28) -> None:
        self.total = max(1, total)
        self.stream = stream
        self.width = width
        self.done = 0
        isatty = getattr(stream, "isatty", None)
        self.enabled = force or bool(isatty and isatty())
        self._last = 0

    def step(self, label: str) -> None:
        """Show that the next item (``label``) is being worked on."""
        self._draw(label)
        self.done += 1

    def _draw(self, label: str) -> None:
        if not self.enabled:
            return
        filled = round(self.width * self.done / self.total)
        text = f"[{'#' * filled}{'.' * (self.width - filled)}] {self.done}/{self.total} {label[:50]}"
        pad = max(0, self._last - len(text))
        self.stream.write("\r" + text + " " * pad)
        self.stream.flush()
        self._last = len(text)

    def finish(self) -> None:
        """Draw the full bar and end the line."""
        if not self.enabled:
            return
        self._draw("done")
        self.stream.write("\n")
        self.stream.flush()
