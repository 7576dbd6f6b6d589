"""The recommended stop strategy: the audio model, the words and the silence, weighed together.

An end-of-turn audio model alone (Smart Turn) is wrong often enough on
speech it was not trained on: it says "complete" after "preferably in the"
and "incomplete" after "Yes, that's right.". The words say what the audio
cannot (:mod:`rxvoice.turns.completion`), and the silence bounds every wait.
:class:`FusedTurnStop` answers a pause, counted in seconds of silence after
the speech ended, once the words of that speech are in:

============================  ====================  =======================================
the words say                 the model says         answer after
============================  ====================  =======================================
unfinished ("to", "the", um)  anything               ``unfinished_timeout`` (bounded wait)
a number / letters being read anything               ``sequence_timeout``
finished ("...today?")        complete               at once
finished                      incomplete, or none    ``finished_timeout``
unsure (no rule decides)      complete               at once
unsure                        incomplete, or none    ``unsure_timeout`` (bounded fallback)
============================  ====================  =======================================

New speech before the answer cancels it; the next pause is judged afresh on
the whole turn's words. Without an analyzer (``analyzer=None``) the model
never says complete: words and silence decide.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple

from .._seconds import check_seconds
from ..errors import ConfigurationError
from ..frames import (
    Frame,
    InputAudioRawFrame,
    StartFrame,
    TranscriptionFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from .analyzer import (
    AnalyzerSession,
    Asks,
    EndOfTurnAnalyzer,
    announce_params,
    answered,
    ask,
    clear_stream,
    close_session,
    fed,
    feed_audio,
    open_session,
    vad_started,
)
from .completion import Completion, CompletionRules, CompletionVerdict, completion_rules
from .reasons import TurnEndReason, model_label, no_vad_reason
from .strategy import NOTHING, Arm, Disarm, Effect, Effects, StopStrategy, stopped
from .words_wait import WORDS_TYPES, WordsState, WordsWait, has_words

__all__ = ["FusedTurnState", "FusedTurnStop"]

log = logging.getLogger("rxvoice.turns.fused")

_EPS = 1e-6
_DECIDE = "decide"
_NO_WORDS = CompletionVerdict(Completion.UNSURE, "no words for the last speech")


class FusedTurnState(NamedTuple):
    """Where a fused decision stands (one session's, never mutated)."""

    words: WordsState = WordsState()
    """The wait for the words of the last speech (and the turn's words so far)."""
    asks: Asks = Asks()
    """The questions to the audio model."""
    model_complete: bool = False
    """The model's verdict on the last pause: complete."""
    probability: float | None = None
    no_vad: bool = False
    """No VAD around the words: the quiet after them decides."""
    answered: bool = False

    @property
    def speaking(self) -> bool:
        """The VAD hears speech."""
        return self.words.speaking

    @property
    def text(self) -> str:
        """The turn's words so far."""
        return self.words.text


def _seconds(name: str, value: object, high: float = 30.0) -> None:
    check_seconds(value, f"FusedTurnStop.{name}", high=high)


@dataclass(frozen=True)
class FusedTurnStop(StopStrategy[FusedTurnState]):
    """Ends the turn on the audio model's verdict, the words and the silence together.

    Every timeout counts seconds of silence after the speech ended (the VAD
    stop minus its ``stop_secs``), and the words of that speech are always
    awaited first: a final transcript that arrived after the speech ended,
    or, when none comes, the STT's published p99 latency
    (``STTMetadataFrame.ttfs_p99_latency``) or
    :data:`~rxvoice.turns.TRANSCRIPT_GRACE`.

    The defaults were chosen on the rxvoice development recordings (ten
    synthetic phone calls, 45 ends of turn and 30 mid-sentence pauses, plus
    the single-utterance set), tuned on half and checked on the rest; see
    ``docs/turn-taking.md`` ("Choosing the recommended stop").

    Args:
        analyzer: the end-of-turn audio model (``SmartTurnAnalyzer()``), or
            ``None`` to decide on words and silence alone.
        language: the completion rules to read the words with
            (:func:`~rxvoice.turns.completion.register_completion`); a
            language with none makes every verdict on words "unsure".
        complete_threshold: the model's probability above which it says
            complete (Smart Turn's own threshold is 0.5).
        finished_timeout: silence after which finished words are answered
            although the model said incomplete.
        unsure_timeout: silence after which words no rule decides are
            answered although the model said incomplete (the bounded fallback;
            keep it shorter than a normal gap between turns, about 1.2 s).
        sequence_timeout: silence after which a number or a spelled sequence
            still being read ("four five", "j o r") is answered.
        unfinished_timeout: silence after which clearly unfinished words
            ("a flight to", "um") are answered anyway.
        transcript_timeout: with no VAD around the words (text input), the
            quiet after the last transcript that ends the turn.
        wait_for_transcript: never answer without words (as the other stops).
    """

    analyzer: EndOfTurnAnalyzer | None = None
    language: str = "en"
    complete_threshold: float = 0.5
    finished_timeout: float = 0.0
    unsure_timeout: float = 0.8
    sequence_timeout: float = 1.2
    unfinished_timeout: float = 2.0
    transcript_timeout: float = 0.5
    wait_for_transcript: bool = True
    enable_user_speaking_frames: bool = True
    _rules: CompletionRules | None = field(default=None, init=False, repr=False, compare=False)
    words: WordsWait = field(init=False, repr=False, compare=False)
    handles: ClassVar[frozenset[type[Frame]]] = WORDS_TYPES | {InputAudioRawFrame, StartFrame}

    def __post_init__(self) -> None:
        if self.analyzer is not None and not callable(getattr(self.analyzer, "open_stream", None)):
            raise ConfigurationError(
                f"FusedTurnStop needs an end-of-turn analyzer with open_stream(sample_rate), or None; "
                f"got {self.analyzer!r}"
            )
        if not isinstance(self.language, str) or not self.language.strip():
            raise ConfigurationError(f"FusedTurnStop.language must be a language code, got {self.language!r}")
        p = self.complete_threshold
        if isinstance(p, bool) or not isinstance(p, int | float) or not 0.0 <= p < 1.0:
            raise ConfigurationError(f"FusedTurnStop.complete_threshold must be in [0, 1), got {p!r}")
        for name in ("finished_timeout", "unsure_timeout", "sequence_timeout", "unfinished_timeout",
                     "transcript_timeout"):
            _seconds(name, getattr(self, name))
        if not self.finished_timeout <= self.unsure_timeout <= self.unfinished_timeout:
            raise ConfigurationError(
                "FusedTurnStop needs finished_timeout <= unsure_timeout <= unfinished_timeout "
                f"(got {self.finished_timeout}, {self.unsure_timeout}, {self.unfinished_timeout})"
            )
        object.__setattr__(self, "_rules", completion_rules(self.language))
        object.__setattr__(self, "words", WordsWait(wait=self.wait_for_transcript))

    # -- the decision: what the words and the model say, and how much silence that needs ----------

    def words_verdict(self, text: str) -> CompletionVerdict:
        """What the words say (``UNSURE`` when the language has no rules or they fail)."""
        rules = self._rules
        if rules is None:
            return CompletionVerdict(Completion.UNSURE, f"no completion rules for {self.language!r}")
        try:
            verdict = rules.judge(text)
        except Exception as exc:  # a caller's rules must not break a turn
            return CompletionVerdict(Completion.UNSURE, f"the completion rules failed ({type(exc).__name__})")
        return verdict if isinstance(verdict, CompletionVerdict) else _NO_WORDS

    def needed_silence(self, words: CompletionVerdict, model_complete: bool) -> float:
        """Seconds of silence after the speech after which this verdict pair answers."""
        if words.completion is Completion.INCOMPLETE:
            return self.sequence_timeout if words.tentative else self.unfinished_timeout
        if model_complete:
            return 0.0
        if words.completion is Completion.COMPLETE:
            return self.finished_timeout
        return self.unsure_timeout

    def _words_of_last_speech(self, s: FusedTurnState) -> CompletionVerdict | None:
        """The verdict on the words, once the last speech's words are in (``None``: still waiting)."""
        w = s.words
        if not self.words.ready(w):
            return None  # no words at all, or not the last speech's yet (the watchdog closes an empty turn)
        if not self.wait_for_transcript:
            return self.words_verdict(w.text) if w.text else _NO_WORDS
        return self.words_verdict(w.text) if w.fresh else _NO_WORDS

    def _decide(self, s: FusedTurnState, now: float, effects: list[Effect]) -> tuple[FusedTurnState, Effects]:
        """Answer now, or arm the wait for the silence the verdicts need."""
        if s.words.speaking or not s.words.vad_stopped or s.answered:
            return s, tuple(effects)
        words = self._words_of_last_speech(s)
        if words is None:
            return s, tuple(effects)
        need = self.needed_silence(words, s.model_complete)
        silence = now - s.words.speech_end
        if silence >= need - _EPS:
            return self._answer(s, effects, self.end_reason(s, words, now))
        return s, (*effects, Arm(_DECIDE, need - silence))

    def _decide_without_vad(self, text: str) -> float:
        """With no VAD around the words, the quiet after them that answers."""
        wait = self.transcript_timeout
        words = self.words_verdict(text)
        if words.completion is Completion.INCOMPLETE:
            wait = max(wait, self.needed_silence(words, False))
        return wait

    def _answer(
        self, s: FusedTurnState, effects: list[Effect], reason: TurnEndReason
    ) -> tuple[FusedTurnState, Effects]:
        return s._replace(answered=True), (*effects, Disarm(_DECIDE), *self.words.cancel, *stopped(reason=reason))

    def end_reason(self, s: FusedTurnState, words: CompletionVerdict, now: float) -> TurnEndReason:
        """Why this strategy answers now: the words' verdict, the model's and the silence that rule asks for."""
        need = self.needed_silence(words, s.model_complete)
        waited = abs(now - s.words.text_at) < _EPS  # the rule was met before the words came: they decided the instant
        w = ", then waited for the words" if waited else ""
        said = words.reason if words is _NO_WORDS else f"words {words.completion.value}: {words.reason}"
        judged = None if words is _NO_WORDS else words.completion.value
        model = model_label(self.analyzer)
        p = " (no verdict yet)" if s.probability is None else f" (p={s.probability:.2f})"
        if words.completion is Completion.INCOMPLETE:
            kind, text = ("sequence" if words.tentative else "unfinished"), f"{said}; waited {need:g} s of silence{w}"
        elif s.model_complete:
            kind, text = "model", f"{model}: complete{p}, {said}{w}"
        else:
            kind = "words" if words.completion is Completion.COMPLETE else "unsure"
            verdict = "" if self.analyzer is None else f"; {model} incomplete{p}"
            text = f"{said}{verdict}; {need:g} s of silence{w}"
        return TurnEndReason(kind, text, probability=s.probability, silence=need, words=judged, waited_for_words=waited)

    # -- the waiting: the words of the last speech, the model's verdicts, the timers --------------

    def initial(self) -> FusedTurnState:
        return FusedTurnState()

    def open_resource(self, sample_rate: int) -> AnalyzerSession | None:
        return open_session(self.analyzer, sample_rate)

    def close_resource(self, resource: Any) -> None:
        close_session(resource)

    def _ask(self, s: FusedTurnState, now: float, effects: list[Effect]) -> FusedTurnState:
        return s if self.analyzer is None else s._replace(asks=ask(s.asks, now, effects))

    def on_frame(self, state: FusedTurnState, frame: Frame, now: float) -> tuple[FusedTurnState, Effects]:
        s = state
        t = type(frame)
        if t is InputAudioRawFrame:
            return (s, NOTHING) if self.analyzer is None else (s, feed_audio(frame, s.words.speaking, "audio"))
        if t is StartFrame:
            return (s, NOTHING) if self.analyzer is None else (s, announce_params(self.analyzer))
        words, effects = self.words.on_frame(s.words, frame, now)
        if t is VADUserStartedSpeakingFrame:
            s = FusedTurnState(words, s.asks.next_segment())
            if self.analyzer is None:
                return s, (Disarm(_DECIDE), *effects)
            return s, (Disarm(_DECIDE), *effects, *vad_started(frame))
        if t is VADUserStoppedSpeakingFrame:
            out: list[Effect] = [Disarm(_DECIDE), *effects]
            s = self._ask(s._replace(words=words, no_vad=False, model_complete=False, probability=None), now, out)
            return self._decide(s, now, out)
        if t is TranscriptionFrame and has_words(frame):
            if s.words.no_vad:  # no VAD around these words: count the quiet from them
                s = s._replace(words=words, no_vad=True, answered=False)
                return s, (*effects, Arm(_DECIDE, self._decide_without_vad(words.text)))
            return self._decide(s._replace(words=words), now, list(effects))
        return s._replace(words=words), effects

    def on_timer(self, state: FusedTurnState, key: str, now: float) -> tuple[FusedTurnState, Effects]:
        s = state
        if key == _DECIDE:
            if s.no_vad:
                return self._answer(s, [], no_vad_reason(self.transcript_timeout))
            return self._decide(s, now, [])
        words = self.words.on_timer(s.words, key)
        return (s, NOTHING) if words is None else self._decide(s._replace(words=words), now, [])

    def on_result(self, state: FusedTurnState, key: str, value: Any, now: float) -> tuple[FusedTurnState, Effects]:
        asks, answer, effects = answered(state.asks, key, value, now)
        if answer is None:  # audio fed: the stream's own 3 s fallback is not used (the timeouts bound every wait)
            fed(value)
            return state, NOTHING
        s = state._replace(asks=asks)
        if not answer.current or s.words.speaking:
            return s, tuple(effects)
        p = answer.probability
        model_complete = answer.complete if p is None else p > self.complete_threshold
        return self._decide(s._replace(model_complete=model_complete, probability=p), now, effects)

    def on_turn_started(self, state: FusedTurnState, now: float) -> tuple[FusedTurnState, Effects]:
        words, effects = self.words.reset(state.words)
        return FusedTurnState(words, state.asks), (Disarm(_DECIDE), *effects)

    def on_turn_stopped(self, state: FusedTurnState, now: float) -> tuple[FusedTurnState, Effects]:
        words, effects = self.words.reset(state.words)
        s = FusedTurnState(words, state.asks.next_segment())
        if self.analyzer is None:
            return s, (Disarm(_DECIDE), *effects)
        return s, (Disarm(_DECIDE), *effects, *clear_stream())

    def on_turn_resumed(self, state: FusedTurnState, words: str, now: float) -> tuple[FusedTurnState, Effects]:
        # The reopened turn keeps its words: a continuation without words (a cough) is bounded like any other.
        return state._replace(words=self.words.resumed(state.words, words)), NOTHING
