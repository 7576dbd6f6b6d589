"""``FullResponse``: report each whole model response, leave the frames alone."""

from __future__ import annotations

import logging

from ..events import EventRegistry
from ..frames import (
    DOWN,
    Direction,
    Frame,
    InterruptionFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    LLMTextFrame,
)
from ..pipeline.processor import EventfulProcessor, Port
from .reports import EVENT_COMPLETION, Completion

__all__ = ["FullResponse"]

log = logging.getLogger("rxvoice.aggregators.text")


class FullResponse(EventfulProcessor):
    """Gathers each whole model response and raises ``on_completion`` with it.

    For something that wants each reply whole and off the frame path: a
    transcript, a moderation check, an evaluation. Every frame is forwarded
    untouched; nothing is consumed.

    * ``LLMFullResponseStartFrame`` starts gathering; ``LLMTextFrame`` text is
      appended only while gathering, joined as is (tokens carry their spacing).
    * ``LLMFullResponseEndFrame`` raises ``on_completion`` with
      ``Completion(text, completed=True)`` (also for an empty response) and
      starts over.
    * ``InterruptionFrame`` raises ``Completion(text_so_far, completed=False)``
      and starts over. As in both references it does so even when no response
      was in progress (with empty text), so every interruption is accounted for.

    Matching is by exact type, as in jargo (the Go port of Pipecat). Only frames travelling
    downstream are gathered; frames travelling upstream pass.

    Events: ``on_completion`` (:class:`~rxvoice.aggregators.Completion`),
    ``on_error``.

    Examples:
        >>> import reactivex
        >>> from rxvoice import frames as F
        >>> full = FullResponse()
        >>> got = []
        >>> _ = full.events.on("on_completion", lambda _src, c: got.append(c))
        >>> frames = [F.LLMFullResponseStartFrame(), F.LLMTextFrame("Hi "), F.LLMTextFrame("there."),
        ...           F.LLMFullResponseEndFrame()]
        >>> _ = reactivex.from_iterable(frames).pipe(full).subscribe(lambda f: None)
        >>> got
        [Completion(text='Hi there.', completed=True)]
    """

    name = "FullResponse"

    def __init__(self) -> None:
        self.events = EventRegistry(self, (EVENT_COMPLETION, "on_error"))

    def __repr__(self) -> str:
        return "FullResponse()"

    def open(self, port: Port) -> _FullResponseSession:
        return _FullResponseSession(self, port)



class _FullResponseSession:
    """One subscription's response in progress."""

    __slots__ = ("_events", "_link", "_parts", "_started")

    def __init__(self, owner: FullResponse, port: Port) -> None:
        self._events = port.events = owner.events.session(port.time)  # this session's clock, not the stage's
        self._link = port.link
        self._parts: list[str] = []
        self._started = False

    def on_frame(self, frame: Frame, direction: Direction) -> None:
        if direction is not DOWN:
            self._link.emit_up(frame)
            return
        t = type(frame)
        if t is LLMTextFrame:
            if self._started:
                self._parts.append(frame.text)  # type: ignore[attr-defined]
        elif t is LLMFullResponseStartFrame:
            self._started = True
        elif t is LLMFullResponseEndFrame:
            self._report(True)
        elif t is InterruptionFrame:
            self._report(False)
        self._link.emit_down(frame)

    def _report(self, completed: bool) -> None:
        text = "".join(self._parts)
        self._parts = []
        self._started = False
        self._events.emit(EVENT_COMPLETION, Completion(text, completed))

    def on_input_end(self, direction: Direction) -> None:
        return None

    def close(self) -> None:
        self._parts = []
        self._events.close()
