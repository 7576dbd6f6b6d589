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

The second half of this module is the plumbing a stop strategy uses to talk
to a model, as pure steps and effects: feeding it audio (:func:`feed_audio`,
mono), asking it one question at a time per speech (:class:`Asks`,
:func:`ask`, :func:`answered`), announcing its parameters
(:func:`announce_params`), clearing it when the turn ends.
"""

from __future__ import annotations

import logging
import math
import sys
from array import array
from collections.abc import Callable
from typing import Any, NamedTuple, Protocol, runtime_checkable

from ..errors import InvalidAudioError
from ..frames import Frame, MetricsFrame, SpeechControlParamsFrame, TurnMetricsData
from .strategy import Analyze, Effect, Effects, Push, Touch

__all__ = [
    "VERDICT",
    "AnalyzerSession",
    "Answer",
    "Asks",
    "EndOfTurnAnalyzer",
    "EndOfTurnStream",
    "announce_params",
    "answered",
    "ask",
    "clear_stream",
    "close_session",
    "downmix_pcm16",
    "fed",
    "feed_audio",
    "open_session",
    "vad_started",
    "verdict_effects",
]

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
    mid-verdict) and a ``cancel()`` method: called on the session, while an
    ``analyze`` of it is asked for or running, when its verdict can no
    longer be used (the user spoke again, or the turn ended); the stream may
    then drop the work and ``analyze`` answer ``(False, None)`` at once. A
    stream without ``cancel`` judges every pause it is asked about.
    """

    def open_stream(self, sample_rate: int) -> EndOfTurnStream:
        """A fresh stream for audio at ``sample_rate`` Hz (mono, 16-bit)."""
        ...


class AnalyzerSession:
    """One session's stream, kept single-threaded around the verdicts running on a worker.

    Everything but :meth:`analyze` is called on the session. Between
    :meth:`begin` and :meth:`end` (a verdict in flight) calls for the stream
    are held back in order and replayed by :meth:`end`; a change of sample
    rate opens a fresh stream. A stream that can drop a verdict (``cancel``)
    is told when its verdict became useless meanwhile: speech again (a
    chunk the VAD calls speech) or the end of the turn (:meth:`clear`).
    """

    __slots__ = ("_cancelled", "_held", "analyzer", "busy", "rate", "stream")

    def __init__(self, analyzer: EndOfTurnAnalyzer, sample_rate: int) -> None:
        self.analyzer = analyzer
        self.rate = sample_rate
        self.stream: EndOfTurnStream = analyzer.open_stream(sample_rate)
        self.busy = False
        self._cancelled = False
        self._held: list[Callable[[], bool]] = []

    def append(self, pcm: bytes, sample_rate: int, is_speech: bool) -> bool:
        """Feed a chunk; ``True`` when the stream's silence fallback says the turn is over."""
        if self.busy:
            if is_speech:
                self._cancel()  # speech again: the verdict on the pause before it is stale
            self._held.append(lambda: self._append(pcm, sample_rate, is_speech))
            return False
        return self._append(pcm, sample_rate, is_speech)

    def _cancel(self) -> None:
        """The verdict in flight is no longer needed: a stream that can drop it is told (once)."""
        cancel: Any = getattr(self.stream, "cancel", None)
        if self._cancelled or not callable(cancel):
            return
        self._cancelled = True
        try:
            cancel()
        except Exception:
            log.exception("cancelling an end-of-turn verdict failed; contained")

    def _append(self, pcm: bytes, sample_rate: int, is_speech: bool) -> bool:
        if sample_rate != self.rate:
            self._close_stream()
            self.rate = sample_rate
            self.stream = self.analyzer.open_stream(sample_rate)
        return bool(self.stream.append_audio(pcm, is_speech))

    def clear(self) -> bool:
        """Forget the buffered audio."""
        if self.busy:
            self._cancel()  # the turn ended: its verdict is not needed any more
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
        self._cancelled = False

    def analyze(self) -> tuple[bool, float | None]:
        """The verdict (on the worker); ``(False, None)`` when it was cancelled before it started."""
        if self._cancelled:
            return False, None
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


# -- talking to the model, as pure steps (what a stop strategy uses) ---------------------------------

_MAX_CHANNELS = 32
_BIG_ENDIAN = sys.byteorder == "big"


def downmix_pcm16(pcm: bytes | bytearray | memoryview, num_channels: int) -> bytes:
    """Interleaved 16-bit PCM of ``num_channels`` channels as mono 16-bit PCM.

    The channels of each frame are averaged and rounded to the nearest
    integer (halves to even), so the result stays in range; mono input comes
    back as the same bytes. This is what an end-of-turn stream is fed with
    multi-channel input (it keeps 16-bit PCM). Written with the standard
    library's :mod:`array` so the turn decisions need no numpy: multi-channel
    input is rare, and a 20 ms stereo chunk costs tens of microseconds.

    Raises:
        InvalidAudioError: ``num_channels`` is not an int from 1 to 32, or the
            bytes are not a whole number of frames.
    """
    if isinstance(num_channels, bool) or not isinstance(num_channels, int) or not (
        1 <= num_channels <= _MAX_CHANNELS
    ):
        raise InvalidAudioError(f"num_channels must be an int from 1 to {_MAX_CHANNELS}, got {num_channels!r}")
    if isinstance(pcm, memoryview) and pcm.itemsize != 1:
        pcm = pcm.cast("B")
    if len(pcm) % (2 * num_channels):
        raise InvalidAudioError(
            f"{len(pcm)} bytes is not a whole number of {num_channels}-channel "
            f"16-bit frames ({2 * num_channels} bytes each)"
        )
    if num_channels == 1:
        return bytes(pcm)
    samples = array("h")
    samples.frombytes(pcm)
    if _BIG_ENDIAN:
        samples.byteswap()
    n = num_channels
    mono = array("h", [round(sum(frame) / n) for frame in zip(*(samples[c::n] for c in range(n)), strict=True)])
    if _BIG_ENDIAN:
        mono.byteswap()
    return mono.tobytes()


def feed_audio(frame: Frame, speech: bool, key: str) -> Effects:
    """Hand an audio frame to the strategy's end-of-turn stream (as mono; ``speech``: the VAD says speaking).

    The stream's answer (its own silence fallback said the turn is over)
    comes back to ``on_result(key)``; read it with :func:`fed`.
    """
    audio: bytes = frame.audio  # type: ignore[attr-defined]
    rate: int = frame.sample_rate  # type: ignore[attr-defined]
    channels: int = frame.num_channels  # type: ignore[attr-defined]
    if channels > 1:
        audio = downmix_pcm16(audio, channels)
    return (Touch(lambda r: r.append(audio, rate, speech), key),)


def fed(value: Any) -> bool:
    """What feeding the stream answered: ``True`` when its silence fallback ended the turn (a failure is logged)."""
    if isinstance(value, BaseException):
        log.warning("feeding the end-of-turn analyzer failed (%s); chunk skipped", value)
        return False
    return value is True


def vad_started(frame: Frame) -> Effects:
    """The VAD's start delay goes to the stream (speech began ``start_secs`` before the frame)."""
    secs = float(getattr(frame, "start_secs", 0.0))
    return (Touch(lambda r: r.update_vad_start_secs(secs)),)


def announce_params(analyzer: Any) -> Effects:
    """The model's parameters, both ways, at the session's start (``SpeechControlParamsFrame``)."""
    params = getattr(analyzer, "params", None)
    return (Push(SpeechControlParamsFrame(turn_params=params), both_ways=True),)


def open_session(analyzer: EndOfTurnAnalyzer | None, sample_rate: int) -> AnalyzerSession | None:
    """A strategy's per-session resource: the analyzer's stream at ``sample_rate`` (``None``: no analyzer)."""
    return None if analyzer is None else AnalyzerSession(analyzer, sample_rate)


def close_session(resource: Any) -> None:
    """Release what :func:`open_session` returned."""
    if isinstance(resource, AnalyzerSession):
        resource.close()


def _begin(resource: AnalyzerSession) -> None:
    resource.begin()


def _analyze(resource: AnalyzerSession) -> tuple[bool, float | None]:
    return resource.analyze()


def _end(resource: AnalyzerSession) -> bool:
    return resource.end()


def _clear(resource: AnalyzerSession) -> bool:
    return resource.clear()


def clear_stream() -> Effects:
    """The turn ended: the stream forgets its audio."""
    return (Touch(_clear),)


VERDICT = "v"
"""The prefix of a verdict's result key (``v`` and the speech's number)."""


class Asks(NamedTuple):
    """Where one session's questions to the model stand (never mutated)."""

    segment: int = 0
    """The current speech's number: a verdict on an older one is stale."""
    inflight: bool = False
    """A verdict is being computed (at most one at a time)."""
    reanalyze: bool = False
    """Ask again once it is back (a newer pause came meanwhile)."""
    asked_at: float = 0.0
    """When the verdict in flight was asked for."""

    def next_segment(self) -> Asks:
        """A new speech began: a verdict still in flight is on an older one."""
        return self._replace(segment=self.segment + 1, reanalyze=False)


class Answer(NamedTuple):
    """A verdict that came back: for the current speech or not, complete or not, its probability."""

    current: bool
    complete: bool
    probability: float | None


def ask(a: Asks, now: float, effects: list[Effect]) -> Asks:
    """Ask for a verdict on the current speech (at most one in flight: otherwise, again once it is back)."""
    if a.inflight:
        return a._replace(reanalyze=True)
    effects.append(Touch(_begin))
    effects.append(Analyze(f"{VERDICT}{a.segment}", _analyze))
    return a._replace(inflight=True, reanalyze=False, asked_at=now)


def answered(a: Asks, key: str, value: Any, now: float) -> tuple[Asks, Answer | None, list[Effect]]:
    """A result came back: ``(asks, answer, effects)``, ``answer`` ``None`` when ``key`` is no verdict's.

    The effects replay what the stream held back during the verdict, report
    it as ``TurnMetricsData`` and, when a newer pause came meanwhile, ask
    again.
    """
    if not key.startswith(VERDICT):
        return a, None, []
    complete, probability, effects = verdict_effects(value, now - a.asked_at)
    reanalyze = a.reanalyze
    current = key == f"{VERDICT}{a.segment}"
    a = a._replace(inflight=False, reanalyze=False)
    if reanalyze:
        a = ask(a, now, effects)
    return a, Answer(current, complete, probability), effects


def verdict_effects(value: Any, waited: float) -> tuple[bool, float | None, list[Effect]]:
    """An analyzer's answer: ``(is_complete, probability, effects)``, the effects replaying what was
    held back during the verdict and reporting it as ``TurnMetricsData`` (``waited``: seconds it took)."""
    complete, probability = _verdict(value)
    effects: list[Effect] = [Touch(_end, "flush")]
    if probability is not None:
        data = TurnMetricsData("TurnAnalyzer", complete, probability, waited * 1000.0)
        effects.append(Push(MetricsFrame((data,))))
    return complete, probability, effects


def _verdict(value: Any) -> tuple[bool, float | None]:
    """An analyzer's answer as ``(is_complete, probability)``; anything unusable is an incomplete verdict."""
    if isinstance(value, BaseException):
        log.warning("the end-of-turn analyzer failed (%s: %s); taken as incomplete", type(value).__name__, value)
        return False, None
    try:
        complete, probability = value
    except (TypeError, ValueError):
        log.warning("the end-of-turn analyzer answered %r, not (is_complete, probability); taken as incomplete",
                    value)
        return False, None
    if probability is not None:
        try:
            probability = float(probability)
        except (TypeError, ValueError):
            probability = None
        else:
            if not math.isfinite(probability):
                probability = None
    return bool(complete), probability
