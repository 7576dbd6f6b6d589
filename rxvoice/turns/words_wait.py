"""Waiting for the words of the last speech: the one sub-machine every stop strategy delegates to.

A VAD stop or a model's verdict can come before the speech-to-text service
has delivered the words of the phrase that just ended; answering then gives
the model the turn without its last words (a bug users report against the
reference systems). So a stop strategy waits for words that arrived **after
that speech ended** (the VAD stop's time minus its ``stop_secs``), not merely
after it began: when a caller says two sentences 60 ms apart (one stretch of
speech for the VAD), the first sentence's final arrives while the second is
still being spoken, and it is not the last speech's words. When no such words
come, the wait is bounded by the service's published latency
(``STTMetadataFrame.ttfs_p99_latency``), or :data:`TRANSCRIPT_GRACE` when it
published none, counted from the end of the speech. A transcript that is not
finalized also waits out that latency (a final may still replace it).

:class:`WordsWait` is that rule, configured once; :class:`WordsState` is
where one session's wait stands. A strategy keeps a ``WordsState`` in its
own state, hands it the frames (:meth:`WordsWait.on_frame`) and its timers
(:meth:`WordsWait.on_timer`), and asks :meth:`WordsWait.ready`; its own idea
(a silence, a model's verdict, what the words say) is all it adds::

    words, effects = self.words.on_frame(state.words, frame, now)
    if self.words.ready(words) and <my own condition>:
        return ..., (*effects, *stopped())

Everything here is pure: time comes in as ``now``, timers go out as
:class:`~rxvoice.turns.strategy.Arm` / ``Disarm`` effects on the keys in
:data:`WordsWait.keys`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar, NamedTuple

from ..frames import (
    Frame,
    InterimTranscriptionFrame,
    STTMetadataFrame,
    TranscriptionFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from ..text.blank import is_blank
from ._tuples import build
from .strategy import NOTHING, Arm, Disarm, Effects

__all__ = ["TRANSCRIPT_GRACE", "WORDS_TYPES", "WordsState", "WordsWait", "has_words"]

TRANSCRIPT_GRACE = 1.0
"""Seconds after the end of speech to wait for its transcript when the STT published no latency."""

WORDS_TYPES: frozenset[type[Frame]] = frozenset({
    VADUserStartedSpeakingFrame, VADUserStoppedSpeakingFrame, TranscriptionFrame, InterimTranscriptionFrame,
    STTMetadataFrame,
})
"""The frame types :meth:`WordsWait.on_frame` reads (a strategy's ``handles`` includes them)."""

_EPS = 1e-6
_NEVER = -math.inf
_STT = "stt"
_GRACE = "grace"
_DISARM: Effects = (Disarm(_STT), Disarm(_GRACE))
_DISARM_GRACE: Effects = (Disarm(_GRACE),)


def has_words(frame: Frame) -> bool:
    """Whether a transcript frame carries words (blank or invisible text is no words)."""
    text = getattr(frame, "text", "")
    return isinstance(text, str) and not is_blank(text)


class WordsState(NamedTuple):
    """Where one session's wait for the words stands (never mutated)."""

    speaking: bool = False
    """The VAD hears speech."""
    vad_stopped: bool = False
    """A VAD stop ended the last speech (``False`` with ``speaking``: no VAD around the words)."""
    speech_end: float = _NEVER
    """When the last speech ended: its VAD stop minus ``stop_secs``."""
    text: str = ""
    """The turn's words so far."""
    text_at: float = _NEVER
    """When the latest words arrived."""
    fresh: bool = False
    """The latest words are the last speech's: they came after it began, and after it ended once it did."""
    finalized: bool = False
    """The latest words are the STT's final ones (no interim guess since)."""
    stt_done: bool = False
    """The STT's latency after the speech elapsed, or its final words came."""
    grace_done: bool = False
    """The wait for the last speech's words is over: they came, or the grace ran out."""
    stt_timeout: float = 0.0
    """The STT's published p99 latency (seconds)."""
    stt_known: bool = False
    """Whether the STT published one."""

    @property
    def no_vad(self) -> bool:
        """No VAD around the words: typed input, or speech the VAD missed."""
        return not self.speaking and not self.vad_stopped


def _with_words(
    w: WordsState, text: str, finalized: bool, now: float, stt_done: bool, grace_done: bool
) -> WordsState:
    """``w`` with a transcript's (stripped) words added: the turn's latest, and the last speech's (fresh)."""
    return build(WordsState, (
        w.speaking, w.vad_stopped, w.speech_end, f"{w.text} {text}" if w.text else text, now, True, finalized,
        stt_done, grace_done, w.stt_timeout, w.stt_known,
    ))


def _words_in(w: WordsState, frame: Frame, now: float) -> WordsState:
    """A transcript with words arrived: they are the turn's latest (and the last speech's: fresh)."""
    finalized = w.finalized or bool(getattr(frame, "finalized", False))
    return _with_words(w, frame.text.strip(), finalized, now, w.stt_done, w.grace_done)  # type: ignore[attr-defined]


@dataclass(frozen=True, slots=True)
class WordsWait:
    """The wait for the words of the last speech, configured once (shared by every session).

    Args:
        wait: Whether answers wait for words at all (a strategy's
            ``wait_for_transcript``); without it :meth:`ready` is always true
            and no grace is armed.
        grace: Seconds to wait for the words of a speech when the STT
            published no latency.
    """

    wait: bool = True
    grace: float = TRANSCRIPT_GRACE
    keys: ClassVar[frozenset[str]] = frozenset({_STT, _GRACE})
    """The timer keys it arms (a strategy's own timers use other keys)."""
    cancel: ClassVar[Effects] = _DISARM
    """Effects that cancel its timers (the strategy answered)."""
    types: ClassVar[frozenset[type[Frame]]] = WORDS_TYPES
    """The frame types :meth:`on_frame` reads (a strategy's ``handles`` includes them)."""

    def initial(self) -> WordsState:
        """A session's first state."""
        return WordsState()

    def timeout(self, w: WordsState) -> float:
        """Seconds after the end of speech to wait for its words: the STT's p99, else :attr:`grace`."""
        return w.stt_timeout if w.stt_known else self.grace

    # -- what it reads ----------------------------------------------------------------------------

    # The states of the frames every turn brings are built whole (positional, in field order) rather than
    # with ``_replace``: these steps run on every VAD edge and transcript, and ``_replace`` costs several
    # times a plain construction.

    words_in = staticmethod(_words_in)
    """``words_in(w, frame, now)``: :meth:`heard` for a transcript already known to carry words
    (:func:`has_words`), not checked again."""

    def heard(self, w: WordsState, frame: Frame, now: float) -> WordsState:
        """Note what the frame says about the words, arming nothing (a strategy that times its own wait)."""
        t = type(frame)
        if t is TranscriptionFrame:
            return _words_in(w, frame, now) if has_words(frame) else w
        if t is VADUserStartedSpeakingFrame:
            return build(WordsState, (True, False, w.speech_end, w.text, w.text_at, False, False, w.stt_done,
                                      w.grace_done, w.stt_timeout, w.stt_known))
        if t is VADUserStoppedSpeakingFrame:
            speech_end = now - float(getattr(frame, "stop_secs", 0.0))
            return build(WordsState, (False, True, speech_end, w.text, w.text_at,
                                      w.fresh and w.text_at >= speech_end - _EPS, w.finalized, w.stt_done,
                                      w.grace_done, w.stt_timeout, w.stt_known))
        if t is InterimTranscriptionFrame:
            if not w.finalized:
                return w
            return build(WordsState, (w.speaking, w.vad_stopped, w.speech_end, w.text, w.text_at, w.fresh, False,
                                      w.stt_done, w.grace_done, w.stt_timeout, w.stt_known))
        if t is STTMetadataFrame:
            latency = float(getattr(frame, "ttfs_p99_latency", 0.0))
            return w._replace(stt_timeout=max(0.0, latency), stt_known=True)
        return w

    def on_frame(self, w: WordsState, frame: Frame, now: float) -> tuple[WordsState, Effects]:
        """Note the frame and arm (or cancel) the waits it starts (or ends)."""
        t = type(frame)
        if t is VADUserStoppedSpeakingFrame:
            # :meth:`heard` of the stop and :meth:`timeout`, written out: one state built, every turn.
            stop_secs = float(getattr(frame, "stop_secs", 0.0))
            speech_end = now - stop_secs
            fresh = w.fresh and w.text_at >= speech_end - _EPS
            finalized = w.finalized
            stt_timeout = w.stt_timeout
            stt_wait = stt_timeout - stop_secs
            stt_done = finalized or stt_wait <= 0
            effects: Effects = NOTHING if stt_done else (Arm(_STT, stt_wait),)
            grace_done = fresh or not self.wait
            if not grace_done:
                grace = (stt_timeout if w.stt_known else self.grace) - stop_secs
                grace_done = grace <= 0
                if not grace_done:
                    effects = (*effects, Arm(_GRACE, grace))
            return build(WordsState, (False, True, speech_end, w.text, w.text_at, fresh, finalized, stt_done,
                                      grace_done, stt_timeout, w.stt_known)), effects
        if t is TranscriptionFrame:
            text = getattr(frame, "text", "")  # :func:`has_words`, written out: every transcript
            if not isinstance(text, str) or is_blank(text):
                return w, NOTHING
            # The words in, and what they end, in one state: every transcript.
            finalized = w.finalized or bool(getattr(frame, "finalized", False))
            if not w.speaking and not w.vad_stopped:  # no VAD (:attr:`WordsState.no_vad`): the words end the speech
                return _with_words(w, text.strip(), finalized, now, True, True), _DISARM
            return _with_words(w, text.strip(), finalized, now, w.stt_done or finalized, True), (
                _DISARM if finalized else _DISARM_GRACE)
        if t is VADUserStartedSpeakingFrame:
            return build(WordsState, (True, False, w.speech_end, w.text, w.text_at, False, False, False, False,
                                      w.stt_timeout, w.stt_known)), _DISARM
        return self.heard(w, frame, now), NOTHING

    def on_timer(self, w: WordsState, key: str) -> WordsState | None:
        """One of its timers fired: the new state (``None``: ``key`` is not one of :attr:`keys`)."""
        if key == _STT:
            return w._replace(stt_done=True)
        if key == _GRACE:
            return w._replace(grace_done=True)
        return None

    # -- the answer ---------------------------------------------------------------------------------

    def ready(self, w: WordsState) -> bool:
        """Whether the words of the last speech are in, or waited for long enough.

        True when not waiting at all; else there are words, the STT is done
        with them (final, or its latency elapsed), and they are the last
        speech's (:attr:`WordsState.fresh`) or the grace for those ran out.
        """
        if not self.wait:
            return True
        return bool(w.text) and (w.finalized or w.stt_done) and (w.fresh or w.grace_done)

    def resumed(self, w: WordsState, words: str) -> WordsState:
        """A turn that ended too soon reopened: its words are this turn's so far (not the next speech's)."""
        return w._replace(text=words.strip(), fresh=False)

    def reset(self, w: WordsState) -> tuple[WordsState, Effects]:
        """A turn started or stopped: its words start over (the STT's latency and the VAD's view stay)."""
        # Built whole (positional): twice a turn.
        return build(WordsState, (w.speaking, False, w.speech_end, "", _NEVER, False, False, False, False,
                                  w.stt_timeout, w.stt_known)), _DISARM
