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
import math
from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple

from ..errors import ConfigurationError
from ..frames import (
    Frame,
    InputAudioRawFrame,
    InterimTranscriptionFrame,
    SpeechControlParamsFrame,
    StartFrame,
    STTMetadataFrame,
    TranscriptionFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from .analyzer import AnalyzerSession, EndOfTurnAnalyzer
from .completion import Completion, CompletionRules, CompletionVerdict, completion_rules
from .reasons import TurnEndReason, model_label, no_vad_reason
from .stop import (
    _analyze,
    _begin,
    _clear,
    _feed,
    _words,
    verdict_effects,
    words_timeout,
)
from .strategy import NOTHING, Analyze, Arm, Disarm, Effect, Effects, Push, StopStrategy, Touch, stopped

__all__ = ["FusedTurnState", "FusedTurnStop"]

log = logging.getLogger("rxvoice.turns.fused")

_EPS = 1e-6
_NEVER = -math.inf
_VERDICT = "v"
_TIMERS: Effects = (Disarm("decide"), Disarm("grace"), Disarm("stt"))
_NO_WORDS = CompletionVerdict(Completion.UNSURE, "no words for the last speech")


class FusedTurnState(NamedTuple):
    """Where a fused decision stands (one session's, never mutated)."""

    speaking: bool = False
    vad_stopped: bool = False
    no_vad: bool = False
    speech_end: float = _NEVER
    text: str = ""
    text_at: float = _NEVER
    finalized: bool = False
    grace_done: bool = False
    stt_done: bool = False
    model_complete: bool = False
    probability: float | None = None
    segment: int = 0
    inflight: bool = False
    reanalyze: bool = False
    asked_at: float = 0.0
    stt_timeout: float = 0.0
    stt_known: bool = False
    answered: bool = False


def _seconds(name: str, value: object, high: float = 30.0) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigurationError(f"FusedTurnStop.{name} must be a finite number of seconds, got {value!r}")
    if not 0.0 <= value <= high:
        raise ConfigurationError(f"FusedTurnStop.{name} must be in [0, {high:g}] seconds, got {value!r}")


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
    handles: ClassVar[frozenset[type[Frame]]] = frozenset({
        InputAudioRawFrame, StartFrame, VADUserStartedSpeakingFrame, VADUserStoppedSpeakingFrame,
        TranscriptionFrame, InterimTranscriptionFrame, STTMetadataFrame,
    })

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

    # -- the decision -------------------------------------------------------------------------

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
        fresh = s.text_at >= s.speech_end - _EPS
        if not self.wait_for_transcript:
            return self.words_verdict(s.text) if s.text else _NO_WORDS
        if not s.text:
            return None  # no words at all: nothing to answer (the watchdog closes an empty turn)
        if not (s.finalized or s.stt_done):
            return None
        if fresh:
            return self.words_verdict(s.text)
        return _NO_WORDS if s.grace_done else None

    def _decide(self, s: FusedTurnState, now: float, effects: list[Effect]) -> tuple[FusedTurnState, Effects]:
        if s.speaking or not s.vad_stopped or s.answered:
            return s, tuple(effects)
        words = self._words_of_last_speech(s)
        if words is None:
            return s, tuple(effects)
        need = self.needed_silence(words, s.model_complete)
        silence = now - s.speech_end
        if silence >= need - _EPS:
            return s._replace(answered=True), (*effects, *_TIMERS, *stopped(reason=self.end_reason(s, words, now)))
        return s, (*effects, Arm("decide", need - silence))

    def _ask(self, s: FusedTurnState, now: float, effects: list[Effect]) -> FusedTurnState:
        if self.analyzer is None:
            return s
        if s.inflight:
            return s._replace(reanalyze=True)
        effects.append(Touch(_begin))
        effects.append(Analyze(f"{_VERDICT}{s.segment}", _analyze))
        return s._replace(inflight=True, reanalyze=False, asked_at=now)

    # -- the protocol -------------------------------------------------------------------------

    def initial(self) -> FusedTurnState:
        return FusedTurnState()

    def open_resource(self, sample_rate: int) -> AnalyzerSession | None:
        return None if self.analyzer is None else AnalyzerSession(self.analyzer, sample_rate)

    def close_resource(self, resource: Any) -> None:
        if isinstance(resource, AnalyzerSession):
            resource.close()

    def on_frame(self, state: FusedTurnState, frame: Frame, now: float) -> tuple[FusedTurnState, Effects]:
        s = state
        t = type(frame)
        if t is InputAudioRawFrame:
            if self.analyzer is None:
                return s, NOTHING
            return s, _feed(frame, s.speaking, "audio")
        if t is VADUserStartedSpeakingFrame:
            secs = float(getattr(frame, "start_secs", 0.0))
            s = s._replace(
                speaking=True, vad_stopped=False, no_vad=False, model_complete=False, probability=None,
                grace_done=False, stt_done=False, segment=s.segment + 1, reanalyze=False, answered=False,
            )
            if self.analyzer is None:
                return s, _TIMERS
            return s, (*_TIMERS, Touch(lambda r: r.update_vad_start_secs(secs)))
        if t is VADUserStoppedSpeakingFrame:
            stop_secs = float(getattr(frame, "stop_secs", 0.0))
            speech_end = now - stop_secs
            effects: list[Effect] = [Disarm("decide")]
            stt_wait = s.stt_timeout - stop_secs
            stt_done = s.finalized or stt_wait <= 0
            if not stt_done:
                effects.append(Arm("stt", stt_wait))
            grace = words_timeout(s.stt_known, s.stt_timeout) - stop_secs
            fresh = s.text_at >= speech_end - _EPS
            if not fresh and grace > 0:
                effects.append(Arm("grace", grace))
            s = s._replace(
                speaking=False, vad_stopped=True, no_vad=False, speech_end=speech_end, model_complete=False,
                probability=None, stt_done=stt_done, grace_done=fresh or grace <= 0,
            )
            s = self._ask(s, now, effects)
            return self._decide(s, now, effects)
        if t is TranscriptionFrame:
            if not _words(frame):
                return s, NOTHING
            text = f"{s.text} {frame.text.strip()}".strip()  # type: ignore[attr-defined]
            finalized = bool(getattr(frame, "finalized", False)) or s.finalized
            s = s._replace(text=text, text_at=now, finalized=finalized, stt_done=s.stt_done or finalized)
            if not s.speaking and not s.vad_stopped:
                # No VAD around these words: count the quiet from them.
                words = self.words_verdict(text)
                wait = self.transcript_timeout
                if words.completion is Completion.INCOMPLETE:
                    wait = max(wait, self.needed_silence(words, False))
                return s._replace(no_vad=True, answered=False), (Disarm("grace"), Disarm("stt"), Arm("decide", wait))
            out: list[Effect] = [Disarm("grace")]
            if finalized:
                out.append(Disarm("stt"))
            return self._decide(s, now, out)
        if t is InterimTranscriptionFrame:
            return (s._replace(finalized=False), NOTHING) if s.finalized else (s, NOTHING)
        if t is STTMetadataFrame:
            latency = float(getattr(frame, "ttfs_p99_latency", 0.0))
            return s._replace(stt_timeout=max(0.0, latency), stt_known=True), NOTHING
        if t is StartFrame and self.analyzer is not None:
            params = getattr(self.analyzer, "params", None)
            return s, (Push(SpeechControlParamsFrame(turn_params=params), both_ways=True),)
        return s, NOTHING

    def on_timer(self, state: FusedTurnState, key: str, now: float) -> tuple[FusedTurnState, Effects]:
        s = state
        if key == "decide" and s.no_vad:
            return s._replace(answered=True), (*_TIMERS, *stopped(reason=no_vad_reason(self.transcript_timeout)))
        if key == "grace":
            s = s._replace(grace_done=True)
        elif key == "stt":
            s = s._replace(stt_done=True)
        elif key != "decide":
            return s, NOTHING
        return self._decide(s, now, [])

    def on_result(self, state: FusedTurnState, key: str, value: Any, now: float) -> tuple[FusedTurnState, Effects]:
        s = state
        if not key.startswith(_VERDICT):
            # Audio feeding: the stream's own 3 s fallback is not used (the timeouts bound every wait).
            if isinstance(value, BaseException):
                log.warning("feeding the end-of-turn analyzer failed (%s); chunk skipped", value)
            return s, NOTHING
        complete, probability, effects = verdict_effects(value, now - s.asked_at)
        current = key == f"{_VERDICT}{s.segment}"
        reanalyze = s.reanalyze
        s = s._replace(inflight=False, reanalyze=False)
        if reanalyze:
            s = self._ask(s, now, effects)
        if not current or s.speaking:
            return s, tuple(effects)
        model_complete = complete if probability is None else probability > self.complete_threshold
        return self._decide(s._replace(model_complete=model_complete, probability=probability), now, effects)

    def on_turn_started(self, state: FusedTurnState, now: float) -> tuple[FusedTurnState, Effects]:
        return state._replace(
            vad_stopped=False, no_vad=False, text="", text_at=_NEVER, finalized=False, model_complete=False,
            probability=None, grace_done=False, stt_done=False, answered=False,
        ), _TIMERS

    def on_turn_stopped(self, state: FusedTurnState, now: float) -> tuple[FusedTurnState, Effects]:
        s = state._replace(
            vad_stopped=False, no_vad=False, text="", text_at=_NEVER, finalized=False, model_complete=False,
            probability=None, grace_done=False, stt_done=False, segment=state.segment + 1, reanalyze=False,
            answered=False,
        )
        if self.analyzer is None:
            return s, _TIMERS
        return s, (*_TIMERS, Touch(_clear))

    # -- why (its own words, for UserTurnStopped.reason) ----------------------------------------

    def end_reason(self, s: FusedTurnState, words: CompletionVerdict, now: float) -> TurnEndReason:
        """Why this strategy answers now: the words' verdict, the model's and the silence that rule asks for."""
        need = self.needed_silence(words, s.model_complete)
        waited = abs(now - s.text_at) < _EPS  # the rule was met before the words came: they decided the instant
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
