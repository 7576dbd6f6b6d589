"""The way into a pipeline without a reactivex ``Subject``: a hot source you push frames into.

An application feeds a pipeline from its own producers (a microphone
callback, a transport's reader, a test). A ``Subject`` works, but each frame
then pays for the subject's own layers (its disposed check, its observer
wrappers, a lock and a copy of its observer list) before rxvoice sees it.
An :class:`Inlet` is rxvoice's own hot source: ``inlet.on_next(frame)`` hands
the frame to whoever is connected by a plain call. Connected to a pipeline
of rxvoice stages, that is the pipeline's door (the session's gate, which
also checks that the item is a frame), so a frame reaches the first stage in
three calls.

It is a real ``Observable`` (any observer can subscribe to it) and a duck-typed
observer (``on_next``, ``on_error``, ``on_completed``), so it stands where a
``Subject`` stood::

    inlet = Inlet()
    down, up = pipeline(pair.user(), pair.assistant()).connect(inlet)
    down.subscribe(print)
    inlet.on_next(TranscriptionFrame("hello", user_id="user"))

Like a ``Subject``: an observer that subscribes after the end gets the end,
and what is pushed after the end goes nowhere. What it is given is not
trusted to be a frame: the stage it feeds checks (and reports a non-frame).
"""

from __future__ import annotations

from typing import Any

from reactivex import abc

from ..frames import Frame
from .wire import Feed

__all__ = ["Inlet"]


def _ended(_: Frame) -> None:
    return None


class Inlet(Feed, abc.ObserverBase[Frame]):
    """A hot source of frames fed by calls: ``on_next``, ``on_error``, ``on_completed`` (from any thread).

    Args:
        owner: Who feeds it (for log lines).
    """

    def __init__(self, owner: str = "an inlet") -> None:
        super().__init__(owner, trusted=False)

    def on_next(self, frame: Frame) -> None:
        """Hand ``frame`` to everything connected now (a pipeline's door when one is)."""
        self.emit(frame)

    def on_error(self, error: Exception) -> None:
        """The input failed: connected observers get ``error``; nothing more goes through."""
        self.error(error)

    def on_completed(self) -> None:
        """The input ended: connected observers complete; nothing more goes through."""
        self.complete()

    def error(self, error: Exception) -> None:
        with self._lock:
            self._terminal = ("error", error)
            self._bind()
        super().error(error)

    def complete(self, _: Any = None) -> None:
        with self._lock:
            self._terminal = ("completed", None)
            self._bind()
        super().complete()

    def _bind(self) -> None:
        if self._terminal is None:
            super()._bind()
        else:  # ended: a sink that detaches later must not open the way again
            self.emit = _ended
        if type(self).on_next is Inlet.on_next:  # a subclass's own on_next stays
            # ``on_next`` is what is connected now, called directly (a pipeline's door): no call of its own.
            self.on_next = self.emit  # type: ignore[method-assign,assignment]
