"""The progress bar of folder runs, on stderr, drawn by tqdm.

Drawn only on a terminal, so logs and pipes stay clean (``force`` draws it
anyway); notes printed while it runs go through :meth:`Progress.paused` so
they do not tear the bar.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

from tqdm import tqdm

__all__ = ["Progress"]


class Progress:
    """One bar: ``42%|████▏     | 5/12 [00:08<00:11] name.wav``.

    Args:
        total: the number of steps.
        stream: where to draw (stderr).
        force: draw even when ``stream`` is not a terminal.
        enabled: False draws nothing, whatever the stream.
    """

    def __init__(self, total: int, stream: TextIO, *, force: bool = False, enabled: bool = True) -> None:
        isatty = getattr(stream, "isatty", None)
        self.enabled = enabled and (force or bool(isatty and isatty()))
        self._bar = tqdm(total=total, file=stream, disable=not self.enabled, unit="file", dynamic_ncols=True,
                         leave=True, bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}]{postfix}")
        self._pending = False

    def step(self, label: str) -> None:
        """Show that the next item (``label``) is being worked on (the one before it is done)."""
        if self._pending:
            self._bar.update(1)
        self._bar.set_postfix_str(label[:50], refresh=True)
        self._pending = True

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Print other lines to the same stream while the bar is drawn: the bar is cleared, then redrawn."""
        if not self.enabled:
            yield
            return
        with tqdm.external_write_mode(file=self._bar.fp):
            yield

    def finish(self) -> None:
        """Draw the full bar and end the line."""
        if self._pending:
            self._bar.update(1)
            self._pending = False
        self._bar.set_postfix_str("done", refresh=True)
        self._bar.close()
