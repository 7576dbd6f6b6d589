"""``LLMText``: a model's streamed tokens in, aggregated text (sentences, patterns) out."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from ..events import EventRegistry
from ..frames import (
    DOWN,
    AggregatedTextFrame,
    Direction,
    EndFrame,
    Frame,
    InterruptionFrame,
    LLMFullResponseEndFrame,
    LLMTextFrame,
)
from ..operators._aggregate_text import AggregatorFactory, AggregatorSource
from ..pipeline.processor import EventfulProcessor, Port
from ..text.aggregation import TOKEN, Aggregation, TextAggregator

__all__ = ["LLMText"]

log = logging.getLogger("rxvoice.aggregators.text")


class LLMText(EventfulProcessor):
    """Groups the tokens a model streams into units with a text aggregator.

    Sits between the model and whatever reads its output (a synthesizer, the
    assistant aggregator) and is where the raw stream is grouped, typed or
    filtered: sentences for a synthesizer that speaks better with whole
    sentences, code blocks pulled out with a
    :class:`~rxvoice.text.PatternPairAggregator` so they are not read aloud,
    ``<spell>`` spans kept whole with a :class:`~rxvoice.text.SkipTagsAggregator`,
    or tokens passed straight through.

    * Each ``LLMTextFrame`` is consumed; each unit the aggregator completes goes
      on as an ``AggregatedTextFrame(text, aggregated_by=unit.type,
      raw_text=unit.original(), append_to_context=True)`` with the token's
      ``skip_tts``. Token units keep their own spacing
      (``includes_inter_frame_spaces=True``); other units are trimmed and are
      joined with a space downstream.
    * ``LLMFullResponseEndFrame`` and ``EndFrame`` flush what is left (so the last
      unit is not held back waiting for a boundary that will never come), then
      go on. The end frame's ``skip_tts`` is used for the flushed unit.
    * ``InterruptionFrame`` (travelling either way) drops what is held without
      calling any pattern handler (``handle_interruption()``), then goes on.
    * Everything else passes untouched, and so do frames travelling upstream.

    Matching is by exact type (``type(frame) is LLMTextFrame``), as in jargo (the Go port of Pipecat):
    it keeps the per-token path to one identity test, and a subclass of
    ``LLMTextFrame`` that means something else is not rewritten by accident.

    Each subscription gets its own aggregator. ``aggregator`` is an aggregator
    (used by the first session; a second session running at the same time gets
    a copy) or a zero-argument factory called once per session.

    This is :func:`rxvoice.operators.aggregate_text` on a frame stream: both
    drive the aggregator the same way and hand out aggregators the same way.

    Args:
        aggregator: A :class:`~rxvoice.text.TextAggregator` or a factory of them;
            sentences (``SimpleTextAggregator()``) if ``None``.

    Examples:
        >>> import reactivex
        >>> from rxvoice import frames as F
        >>> out = []
        >>> tokens = ["Hello", ",", " world", ". ", "Next", " one"]
        >>> src = reactivex.from_iterable([F.LLMTextFrame(t) for t in tokens] + [F.LLMFullResponseEndFrame()])
        >>> _ = src.pipe(LLMText()).subscribe(out.append)
        >>> [(type(f).__name__, getattr(f, "text", None)) for f in out]  # doctest: +NORMALIZE_WHITESPACE
        [('AggregatedTextFrame', 'Hello, world.'), ('AggregatedTextFrame', 'Next one'),
         ('LLMFullResponseEndFrame', None)]
    """

    name = "LLMText"

    def __init__(self, aggregator: TextAggregator | AggregatorFactory | None = None) -> None:
        self._source = AggregatorSource(aggregator, owner="LLMText")
        self._lock = threading.Lock()
        self._sessions: list[_LLMTextSession] = []
        self.events = EventRegistry(self, ("on_error",))

    def __repr__(self) -> str:
        return f"LLMText({self._source!r})"

    @property
    def aggregator(self) -> TextAggregator | None:
        """The aggregator given at construction (``None`` when built by a factory)."""
        return self._source.template

    def open(self, port: Port) -> _LLMTextSession:
        session = _LLMTextSession(self, self._source.acquire(), port)
        with self._lock:
            self._sessions.append(session)
        return session

    def _closed(self, session: _LLMTextSession) -> None:
        self._source.release(session.aggregator)
        with self._lock:
            if session in self._sessions:
                self._sessions.remove(session)

    def reset(self) -> None:
        """Drop what every running session has gathered (each inside its own session)."""
        with self._lock:
            sessions = list(self._sessions)
        if not sessions and self._source.template is not None:
            self._source.template.reset()
        for s in sessions:
            s.port.session.run(_reset_in_session, s)



def _reset_in_session(session: _LLMTextSession) -> None:
    session.port.inject_call(session.aggregator.reset)


class _LLMTextSession:
    """One subscription: its aggregator and its way out."""

    __slots__ = ("_aggregate", "_interrupted", "_push_down", "_push_up", "aggregator", "operator", "port")

    def __init__(self, operator: LLMText, aggregator: TextAggregator, port: Port) -> None:
        self.operator = operator
        self.aggregator = aggregator
        self.port = port
        self._push_down = port.push_down
        self._push_up = port.push_up
        self._aggregate = aggregator.aggregate
        # Aggregators written against jargo's v0.1.0 interface only know reset().
        self._interrupted: Callable[[], None] = getattr(aggregator, "handle_interruption", None) or aggregator.reset

    def on_frame(self, frame: Frame, direction: Direction) -> None:
        t = type(frame)
        if t is LLMTextFrame and direction is DOWN:
            units = self._aggregate(frame.text)  # type: ignore[attr-defined]
            if units:
                self._emit(units, frame.skip_tts)  # type: ignore[attr-defined]
            return
        if t is InterruptionFrame:
            self._interrupted()
        elif direction is DOWN:
            if t is LLMFullResponseEndFrame:
                self._flush(frame.skip_tts)  # type: ignore[attr-defined]
            elif t is EndFrame:
                self._flush(None)
        if direction is DOWN:
            self._push_down(frame)
        else:
            self._push_up(frame)

    def _emit(self, units: list[Aggregation], skip_tts: bool | None) -> None:
        emit = self._push_down
        for u in units:
            kind = u.type
            emit(AggregatedTextFrame(
                u.text,
                skip_tts=skip_tts,
                includes_inter_frame_spaces=kind == TOKEN,
                append_to_context=True,
                aggregated_by=kind,
                raw_text=u.original(),
            ))

    def _flush(self, skip_tts: bool | None) -> None:
        last = self.aggregator.flush()
        if last is not None:
            self._emit([last], skip_tts)

    def on_input_end(self, direction: Direction) -> None:
        if direction is DOWN:
            self._flush(None)

    def close(self) -> None:
        self.operator._closed(self)
