"""What a turn strategy needs from an end-of-turn model (Smart Turn and the like).

An :class:`EndOfTurnAnalyzer` is shared configuration (it may hold a loaded
model used by many sessions); each session opens its own
:class:`EndOfTurnStream`, which keeps that conversation's audio. The
strategy (:class:`~rxvoice.turns.TurnAnalyzerStop`) feeds the stream every
audio chunk and asks it for a verdict when the VAD says the user paused.

Threading contract, so an implementation needs no locks: ``append_audio``,
``clear``, ``update_vad_start_secs`` and ``close`` are called on the
session; ``analyze`` is called on a worker thread (it is the heavy part),
and while it runs nothing else of the same stream is called: the session
holds back what it has for the stream (:class:`AnalyzerSession`) and
replays it, in order, once the verdict is back. At most one ``analyze`` of
a stream runs at a time.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

__all__ = ["AnalyzerSession", "EndOfTurnAnalyzer", "EndOfTurnStream"]

log = logging.getLogger("rxvoice.turns.analyzer")


@runtime_checkable
class EndOfTurnStream(Protocol):
    """One conversation's end-of-turn state: its buffered audio and the model's view of it."""

    def append_audio(self, pcm: bytes, is_speech: bool) -> bool:
        """Add a chunk of 16-bit mono PCM; ``is_speech`` is the VAD's view of it.

        Returns ``True`` only when the stream decided on its own that the
        turn is over (a silence fallback: Smart Turn's 3 s of silence after
        speech), having then cleared itself; otherwise ``False``.
        """
        ...

    def analyze(self) -> tuple[bool, float | None]:
        """Judge the buffered turn: ``(is_complete, probability)``. Heavy: runs on a worker.

        ``probability`` is ``None`` when there was nothing to judge (no
        speech buffered); no metrics are reported then. A complete verdict
        clears the buffer; an incomplete one keeps it, so the next pause
        judges the whole, longer turn. May raise: the strategy logs it and
        treats it as incomplete.
        """
        ...

    def clear(self) -> None:
        """Forget the buffered audio (the turn ended)."""
        ...

    def update_vad_start_secs(self, secs: float) -> None:
        """The VAD's confirmation delay, from its started frame: speech began this long before it."""
        ...


@runtime_checkable
class EndOfTurnAnalyzer(Protocol):
    """Opens one :class:`EndOfTurnStream` per session.

    An implementation may also have a ``params`` attribute (announced in a
    ``SpeechControlParamsFrame`` at session start), a ``label`` (how turn-end
    reasons name it: ``"Smart Turn"``) and its streams a
    ``close()`` method (called once when the session ends, possibly while
    an ``analyze`` of it still runs on a worker if the session ended
    mid-verdict).
    """

    def open_stream(self, sample_rate: int) -> EndOfTurnStream:
        """A fresh stream for audio at ``sample_rate`` Hz (mono, 16-bit)."""
        ...


class AnalyzerSession:
    """One session's stream, kept single-threaded around the verdicts running on a worker.

    Everything but :meth:`analyze` is called on the session. Between
    :meth:`begin` and :meth:`end` (a verdict in flight) calls for the stream
    are held back in order and replayed by :meth:`end`; a change of sample
    rate opens a fresh stream.
    """

    __slots__ = ("_held", "analyzer", "busy", "rate", "stream")

    def __init__(self, analyzer: EndOfTurnAnalyzer, sample_rate: int) -> None:
        self.analyzer = analyzer
        self.rate = sample_rate
        self.stream: EndOfTurnStream = analyzer.open_stream(sample_rate)
        self.busy = False
        self._held: list[Callable[[], bool]] = []

    def append(self, pcm: bytes, sample_rate: int, is_speech: bool) -> bool:
        """Feed a chunk; ``True`` when the stream's silence fallback says the turn is over."""
        if self.busy:
            self._held.append(lambda: self._append(pcm, sample_rate, is_speech))
            return False
        return self._append(pcm, sample_rate, is_speech)

    def _append(self, pcm: bytes, sample_rate: int, is_speech: bool) -> bool:
        if sample_rate != self.rate:
            self._close_stream()
            self.rate = sample_rate
            self.stream = self.analyzer.open_stream(sample_rate)
        return bool(self.stream.append_audio(pcm, is_speech))

    def clear(self) -> bool:
        """Forget the buffered audio."""
        if self.busy:
            self._held.append(self._clear)
            return False
        return self._clear()

    def _clear(self) -> bool:
        self.stream.clear()
        return False

    def update_vad_start_secs(self, secs: float) -> bool:
        """Pass on the VAD's start delay."""
        if self.busy:
            self._held.append(lambda: self._vad_start(secs))
            return False
        return self._vad_start(secs)

    def _vad_start(self, secs: float) -> bool:
        self.stream.update_vad_start_secs(secs)
        return False

    def begin(self) -> None:
        """A verdict is about to be asked for on a worker: hold everything else back."""
        self.busy = True

    def analyze(self) -> tuple[bool, float | None]:
        """The verdict (on the worker)."""
        return self.stream.analyze()

    def end(self) -> bool:
        """The verdict is back: replay what was held; ``True`` if a replayed chunk ended the turn."""
        self.busy = False
        held, self._held = self._held, []
        complete = False
        for call in held:
            try:
                complete = call() or complete
            except Exception:
                log.exception("a held end-of-turn call failed; skipped")
        return complete

    def _close_stream(self) -> None:
        close: Any = getattr(self.stream, "close", None)
        if callable(close):
            close()

    def close(self) -> None:
        """Release the stream (the session ended)."""
        self._held = []
        self._close_stream()
