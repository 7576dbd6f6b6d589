"""The recommended stop strategy: the audio model, the words and the silence, weighed together.

An end-of-turn audio model alone (Smart Turn) is wrong often enough on
speech it was not trained on: it says "complete" after "preferably in the"
and "incomplete" after "yes that's right". The words say what the audio
cannot (:mod:`rxvoice.turns.ending`: a completion signal learned from data,
read on plain words), and the silence, the longer it lasts, makes a
mid-turn pause less likely. :class:`FusedTurnStop` weighs the three in one
calibrated model (:mod:`rxvoice.turns.wait`): once the words of the speech
that just ended are in, it answers when the odds that the turn is over cross
a threshold, which one knob, ``patience``, moves along the cut-off/latency
curve. A number or a spelled word still being read waits as long as its own
rhythm says; a turn reopened after a false end keeps its words and its
rhythm.

New speech before the answer cancels it; the next pause is judged afresh on
the whole turn's words. Without an analyzer (``analyzer=None``) the audio
weighs nothing: words and silence decide.
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
from .config import RECOVERY_WINDOW
from .ending import UNSURE, WordsEnd, WordsEndModel, default_words_end, plain_words, reading_in_progress, stt_confidence
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
from .wait import DEFAULT_WAIT, Evidence, WaitModel, check_patience, end_log_odds, needed_silence

__all__ = ["FusedTurnState", "FusedTurnStop"]

log = logging.getLogger("rxvoice.turns.fused")

_EPS = 1e-6
_TICK = 1e-3
"""Timers are compared at a millisecond: a clock that rounds never re-arms a wait shorter than this."""
_NEVER = -math.inf
_VERDICT = "v"
_TIMERS: Effects = (Disarm("decide"), Disarm("grace"), Disarm("stt"))
_VERDICT_WAIT = 0.5
"""Seconds after the VAD stop an audio verdict is waited for before the words and silence decide alone."""


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
    probability: float | None = None
    segment: int = 0
    inflight: bool = False
    reanalyze: bool = False
    asked_at: float = 0.0
    stt_timeout: float = 0.0
    stt_known: bool = False
    answered: bool = False
    confidence: float | None = None
    """The STT's confidence in the last final's words (``None``: not given)."""
    foreign: bool = False
    """The STT said the last final is in a language the words' signal does not read."""
    longest_pause: float = 0.0
    """The longest pause the speaker came back from in this turn (its rhythm)."""
    stopped_at: float = _NEVER
    carried: tuple[str, float] = ("", 0.0)
    """The words and rhythm of the turn that ended last, for a turn reopened right after it."""


def _after(seconds: float) -> Arm:
    """The decide timer, ``seconds`` from now rounded up to the millisecond (the clocks round to the
    microsecond: a deadline finer than that would be re-armed forever)."""
    return Arm("decide", math.ceil(max(seconds, _TICK) * 1000.0 - 1e-6) / 1000.0)


def _text_of(frame: Frame) -> str:
    return str(getattr(frame, "text", "")).strip()


@dataclass(frozen=True)
class FusedTurnStop(StopStrategy[FusedTurnState]):
    """Ends the turn when one calibrated model of the audio, the words and the silence says it is over.

    Every wait counts seconds of silence after the speech ended (the VAD stop
    minus its ``stop_secs``), and the words of that speech are always awaited
    first: a final transcript that arrived after the speech ended, or, when
    none comes, the STT's published p99 latency
    (``STTMetadataFrame.ttfs_p99_latency``) or
    :data:`~rxvoice.turns.TRANSCRIPT_GRACE`. Then the evidence (the audio
    model's probability, the words' end probability from ``words_end``, a
    number or spelling being read and its rhythm, the turn's length) gives
    the odds that the turn is over, growing with the silence
    (:mod:`rxvoice.turns.wait`); the turn is answered when they cross the
    threshold.

    The model was fitted on the tune half of a generated corpus of several
    hundred calls and reported on the other half, with words as an STT
    delivers them (lower case, no punctuation); see ``docs/turn-taking.md``
    ("The recommended setup").

    Args:
        analyzer: the end-of-turn audio model (``SmartTurnAnalyzer()``), or
            ``None`` to decide on words and silence alone.
        language: the language of the words; the default words' signal reads
            English (another language: the words weigh nothing).
        patience: how sure the model must be before it answers, in
            ``[0.1, 10]``; 1 is the measured default, 2 asks for twice the
            odds (fewer cut-offs, later answers), 0.5 for half.
        words_end: the words' end-of-turn signal (default:
            :func:`~rxvoice.turns.ending.default_words_end`, the trigram model
            from the ``pocketsphinx`` wheel when installed, else the hand rules).
        wait_model: the coefficients (:data:`~rxvoice.turns.wait.DEFAULT_WAIT`).
        transcript_timeout: with no VAD around the words (text input), the
            quiet after the last transcript that ends the turn (longer when
            the words say more is coming).
        wait_for_transcript: never answer without words (as the other stops).

    Raises:
        ConfigurationError: a ``patience`` out of range, a bad analyzer or timeout.
        ModelError: the words' language model file is corrupt.
    """

    analyzer: EndOfTurnAnalyzer | None = None
    language: str = "en"
    patience: float = 1.0
    words_end: WordsEndModel | None = None
    wait_model: WaitModel = DEFAULT_WAIT
    transcript_timeout: float = 0.5
    wait_for_transcript: bool = True
    enable_user_speaking_frames: bool = True
    _words_end: WordsEndModel | None = field(default=None, init=False, repr=False, compare=False)
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
        check_patience(self.patience, "FusedTurnStop.patience")
        if not isinstance(self.wait_model, WaitModel):
            raise ConfigurationError(f"FusedTurnStop.wait_model must be a WaitModel, got {self.wait_model!r}")
        t = self.transcript_timeout
        if isinstance(t, bool) or not isinstance(t, int | float) or not math.isfinite(t) or not 0.0 <= t <= 30.0:
            raise ConfigurationError(f"FusedTurnStop.transcript_timeout must be in [0, 30] seconds, got {t!r}")
        words_end = self.words_end
        if words_end is None:
            words_end = default_words_end(self.language)
        elif not callable(getattr(words_end, "judge", None)):
            raise ConfigurationError(
                f"FusedTurnStop.words_end needs a judge(text, confidence) method, got {words_end!r}"
            )
        object.__setattr__(self, "_words_end", words_end)

    # -- the decision -------------------------------------------------------------------------

    def judge_words(self, text: str, confidence: float | None = None) -> WordsEnd:
        """What the words say (unsure, weighing nothing, when the signal cannot read them or fails)."""
        model = self._words_end
        if model is None or not text:
            return UNSURE
        try:
            verdict = model.judge(text, confidence)
        except Exception as exc:  # a caller's signal must not break a turn
            return WordsEnd(0.5, 0.0, f"the words' signal failed ({type(exc).__name__})")
        if not isinstance(verdict, WordsEnd) or not 0.0 <= verdict.probability <= 1.0:
            return WordsEnd(0.5, 0.0, "the words' signal gave no probability")
        return verdict

    def evidence(
        self, text: str, probability: float | None, *, confidence: float | None = None,
        longest_pause: float = 0.0, fresh: bool = True, foreign: bool = False,
    ) -> Evidence:
        """The evidence for a pause after ``text`` (``fresh``: the last speech's words are in it)."""
        words = plain_words(text) if text else []
        judged = self.judge_words(text, confidence) if fresh and not foreign else UNSURE
        return Evidence(probability, judged, reading_in_progress(words), len(words), longest_pause)

    def needed_silence(self, evidence: Evidence) -> float:
        """Seconds of silence after the speech after which this evidence answers."""
        return needed_silence(self.wait_model, evidence, self.patience)

    def explain(self, evidence: Evidence) -> tuple[str, str]:
        """``(cause, reason)`` of an answer on this evidence: ``model``/``words`` when it answered as soon
        as the words were in (the audio or the words carried it), ``sequence`` when a reading waited its
        rhythm, ``unfinished`` when the words held it, ``unsure`` otherwise."""
        need = self.needed_silence(evidence)
        audio = "no audio verdict" if evidence.audio is None else f"audio p={evidence.audio:.2f}"
        odds = end_log_odds(self.wait_model, evidence)
        said = f"{audio}, {evidence.words.reason}, end odds {odds:+.1f}"
        if need <= _EPS:
            cause = "model" if evidence.audio is not None and evidence.audio > 0.5 else "words"
            return cause, f"{said}: answered when the words were in"
        if evidence.reading:
            cause = "sequence"
        elif evidence.words.weight > 0 and evidence.words.probability < 0.2:
            cause = "unfinished"
        else:
            cause = "unsure"
        return cause, f"{said}: waited {need:.2f} s of silence"

    def _evidence(self, s: FusedTurnState) -> Evidence | None:
        """The evidence, once the last speech's words are in (``None``: still waiting)."""
        fresh = s.text_at >= s.speech_end - _EPS
        if self.wait_for_transcript:
            if not s.text:
                return None  # no words at all: nothing to answer (the watchdog closes an empty turn)
            if not (s.finalized or s.stt_done):
                return None
            if not fresh and not s.grace_done:
                return None
        return self.evidence(s.text, s.probability, confidence=s.confidence, longest_pause=s.longest_pause,
                             fresh=fresh, foreign=s.foreign)

    def _decide(self, s: FusedTurnState, now: float, effects: list[Effect]) -> tuple[FusedTurnState, Effects]:
        if s.speaking or not s.vad_stopped or s.answered:
            return s, tuple(effects)
        evidence = self._evidence(s)
        if evidence is None:
            return s, tuple(effects)
        if s.inflight and s.probability is None and self.analyzer is not None:
            # The audio model's verdict on this pause is on its way: wait for it (bounded).
            pending = s.asked_at + _VERDICT_WAIT - now
            if pending > _TICK:
                return s, (*effects, _after(pending))
        need = self.needed_silence(evidence)
        silence = now - s.speech_end
        if silence >= need - _TICK:
            return s._replace(answered=True), (*effects, *_TIMERS, *stopped())
        return s, (*effects, _after(need - silence))

    def _ask(self, s: FusedTurnState, now: float, effects: list[Effect]) -> FusedTurnState:
        if self.analyzer is None:
            return s
        if s.inflight:
            return s._replace(reanalyze=True)
        effects.append(Touch(_begin))
        effects.append(Analyze(f"{_VERDICT}{s.segment}", _analyze))
        return s._replace(inflight=True, reanalyze=False, asked_at=now)

    def _foreign(self, frame: Frame) -> bool:
        language = getattr(frame, "language", None)
        if not isinstance(language, str) or not language.strip():
            return False
        ours = self.language.strip().replace("_", "-").split("-", 1)[0].lower()
        return language.strip().replace("_", "-").split("-", 1)[0].lower() != ours

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
            longest = s.longest_pause
            if s.speech_end > _NEVER:  # the speaker comes back from a pause of this turn
                longest = max(longest, now - secs - s.speech_end)
            s = s._replace(
                speaking=True, vad_stopped=False, no_vad=False, probability=None, grace_done=False,
                stt_done=False, segment=s.segment + 1, reanalyze=False, answered=False, longest_pause=longest,
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
                speaking=False, vad_stopped=True, no_vad=False, speech_end=speech_end, probability=None,
                stt_done=stt_done, grace_done=fresh or grace <= 0,
            )
            s = self._ask(s, now, effects)
            return self._decide(s, now, effects)
        if t is TranscriptionFrame:
            if not _words(frame):
                return s, NOTHING
            text = f"{s.text} {_text_of(frame)}".strip()
            finalized = bool(getattr(frame, "finalized", False)) or s.finalized
            s = s._replace(
                text=text, text_at=now, finalized=finalized, stt_done=s.stt_done or finalized,
                confidence=stt_confidence(getattr(frame, "result", None)), foreign=self._foreign(frame),
            )
            if not s.speaking and not s.vad_stopped:
                # No VAD around these words: count the quiet from them.
                evidence = self.evidence(text, None, confidence=s.confidence, foreign=s.foreign)
                wait = max(self.transcript_timeout, self.needed_silence(evidence))
                return s._replace(no_vad=True, answered=False), (Disarm("grace"), Disarm("stt"), _after(wait))
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
            return s._replace(answered=True), (*_TIMERS, *stopped())
        if key == "grace":
            s = s._replace(grace_done=True)
        elif key == "stt":
            s = s._replace(stt_done=True)
        elif key == "decide":
            if s.inflight and s.probability is None and now >= s.asked_at + _VERDICT_WAIT - _TICK:
                s = s._replace(inflight=False)  # the verdict is late: the words and the silence decide
        else:
            return s, NOTHING
        return self._decide(s, now, [])

    def on_result(self, state: FusedTurnState, key: str, value: Any, now: float) -> tuple[FusedTurnState, Effects]:
        s = state
        if not key.startswith(_VERDICT):
            # Audio feeding: the stream's own 3 s fallback is not used (the wait bounds itself).
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
        if probability is None:
            probability = 0.9 if complete else 0.1
        return self._decide(s._replace(probability=probability), now, effects)

    def on_turn_started(self, state: FusedTurnState, now: float) -> tuple[FusedTurnState, Effects]:
        words, rhythm = state.carried
        reopened = bool(words) and now - state.stopped_at <= RECOVERY_WINDOW + _EPS
        # A turn reopened right after a false end goes on with its words and rhythm (the aggregator
        # joins them into one message); any other turn starts afresh.
        s = state._replace(
            vad_stopped=False, no_vad=False, text=words if reopened else "", text_at=_NEVER, finalized=False,
            probability=None, grace_done=False, stt_done=False, answered=False,
            speech_end=state.speech_end if reopened else _NEVER, longest_pause=rhythm if reopened else 0.0,
            carried=("", 0.0), confidence=state.confidence if reopened else None,
        )
        return s, _TIMERS

    def on_turn_stopped(self, state: FusedTurnState, now: float) -> tuple[FusedTurnState, Effects]:
        s = state._replace(
            vad_stopped=False, no_vad=False, text="", text_at=_NEVER, finalized=False, probability=None,
            grace_done=False, stt_done=False, segment=state.segment + 1, reanalyze=False, answered=False,
            stopped_at=now, carried=(state.text, state.longest_pause),
        )
        if self.analyzer is None:
            return s, _TIMERS
        return s, (*_TIMERS, Touch(_clear))
