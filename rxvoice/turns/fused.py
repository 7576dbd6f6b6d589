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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple

from .._seconds import check_seconds
from ..errors import ConfigurationError
from ..frames import (
    Frame,
    InputAudioRawFrame,
    InterimTranscriptionFrame,
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
from .ending import (
    UNSURE,
    WordsEnd,
    WordsEndModel,
    default_words_end,
    plain_words,
    reading_end,
    reading_in_progress,
    stt_confidence,
)
from .reasons import TurnEndReason, model_label, no_vad_reason
from .strategy import LIKELY, LIKELY_BEFORE_WORDS, NOTHING, Arm, Disarm, Effect, Effects, StopStrategy, stopped
from .wait import DEFAULT_WAIT, Evidence, WaitModel, check_patience, end_log_odds, needed_silence, reading_place
from .words_wait import WORDS_TYPES, WordsState, WordsWait, has_words

__all__ = ["ASK_AT_PAUSE", "ASK_AUDIO", "ASK_WHEN_NEEDED", "FusedTurnState", "FusedTurnStop"]

log = logging.getLogger("rxvoice.turns.fused")

_DECIDE = "decide"
_TICK = 1e-3
"""Timers are compared at a millisecond: a clock that rounds never re-arms a wait shorter than this."""
_LIKELY_WITHIN = 1.0
"""A wait the evidence needs of at most this many seconds of silence makes the end likely (``Likely``)."""
_VERDICT_WAIT = 0.5
"""Seconds after the VAD stop an audio verdict is waited for before the words and silence decide alone."""
ASK_AT_PAUSE = "at-pause"
"""``FusedTurnStop.ask_audio``: ask the audio model at every VAD stop, while the words are on their way."""
ASK_WHEN_NEEDED = "when-needed"
"""``FusedTurnStop.ask_audio``: ask it once the pause's words are in, only when its verdict can move the answer."""
ASK_AUDIO = (ASK_AT_PAUSE, ASK_WHEN_NEEDED)
"""The values of ``FusedTurnStop.ask_audio``."""


def _after(seconds: float) -> Arm:
    """The decide timer, ``seconds`` from now rounded up to the millisecond (the clocks round to the
    microsecond: a deadline finer than that would be re-armed forever)."""
    return Arm(_DECIDE, math.ceil(max(seconds, _TICK) * 1000.0 - 1e-6) / 1000.0)


class FusedTurnState(NamedTuple):
    """Where a fused decision stands (one session's, never mutated)."""

    words: WordsState = WordsState()
    """The wait for the words of the last speech (and the turn's words so far)."""
    asks: Asks = Asks()
    """The questions to the audio model."""
    probability: float | None = None
    """The audio model's probability for the last pause (``None``: no verdict yet)."""
    no_vad: bool = False
    """No VAD around the words: the quiet after them decides."""
    answered: bool = False
    confidence: float | None = None
    """The STT's confidence in the last final's words (``None``: not given)."""
    foreign: bool = False
    """The STT said the last final is in a language the words' signal does not read."""
    pauses: tuple[tuple[int, float], ...] = ()
    """The pauses the speaker came back from in this turn, each as (words before it, seconds): a reading
    waits by the ones inside it (not one before it began, nor the one between a reopened turn's sentences)."""
    last_pauses: tuple[tuple[int, float], ...] = ()
    """The pauses of the turn that ended last."""
    reopened_after: float = -math.inf
    """A reopened turn: when the speech before the false end ended (its pause counts as one)."""
    guess: str = ""
    """The latest interim words after the last final (what the last speech may turn out to say)."""
    audio_asked: bool = False
    """The audio model was asked about this pause (``ask_audio="when-needed"``: never twice)."""

    @property
    def longest_pause(self) -> float:
        """The longest pause the speaker came back from in this turn (its rhythm)."""
        return max((p for _, p in self.pauses), default=0.0)

    @property
    def speaking(self) -> bool:
        """The VAD hears speech."""
        return self.words.speaking

    @property
    def text(self) -> str:
        """The turn's words so far."""
        return self.words.text


@dataclass(frozen=True)
class FusedTurnStop(StopStrategy[FusedTurnState]):
    """Ends the turn when one calibrated model of the audio, the words and the silence says it is over.

    Every wait counts seconds of silence after the speech ended (the VAD stop
    minus its ``stop_secs``), and the words of that speech are always awaited
    first (:class:`~rxvoice.turns.words_wait.WordsWait`): a final transcript
    that arrived after the speech ended, or, when none comes, the STT's
    published p99 latency (``STTMetadataFrame.ttfs_p99_latency``) or
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
        ask_audio: when the audio model is asked: ``"at-pause"`` (the default: at every VAD
            stop, while the words are on their way) or ``"when-needed"`` (once the pause's words
            are in, and only when the verdict can move the answer: not when the words and the
            silence answer whatever the audio says, nor when both ends of its range give the same
            wait; never twice for one pause). A server carrying many sessions asks Smart Turn a
            fraction as often this way; a verdict that is needed then comes after the words.

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
    ask_audio: str = ASK_AT_PAUSE
    _words_end: WordsEndModel | None = field(default=None, init=False, repr=False, compare=False)
    _known: Callable[[str], bool] | None = field(default=None, init=False, repr=False, compare=False)
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
        check_patience(self.patience, "FusedTurnStop.patience")
        if not isinstance(self.wait_model, WaitModel):
            raise ConfigurationError(f"FusedTurnStop.wait_model must be a WaitModel, got {self.wait_model!r}")
        check_seconds(self.transcript_timeout, "FusedTurnStop.transcript_timeout", high=30.0)
        if self.ask_audio not in ASK_AUDIO:
            raise ConfigurationError(f"FusedTurnStop.ask_audio must be one of {', '.join(ASK_AUDIO)}, "
                                     f"got {self.ask_audio!r}")
        words_end = self.words_end
        if words_end is None:
            words_end = default_words_end(self.language)
        elif not callable(getattr(words_end, "judge", None)):
            raise ConfigurationError(
                f"FusedTurnStop.words_end needs a judge(text, confidence) method, got {words_end!r}"
            )
        object.__setattr__(self, "_words_end", words_end)
        known = getattr(words_end, "known", None)  # a vocabulary (TrigramWordsEnd's) reads spellings
        object.__setattr__(self, "_known", known if callable(known) else None)
        object.__setattr__(self, "words", WordsWait(wait=self.wait_for_transcript))

    # -- the decision: the evidence, the silence it needs, and why ---------------------------------

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
        pauses: Sequence[tuple[int, float]] | None = None,
    ) -> Evidence:
        """The evidence for a pause after ``text`` (``fresh``: the last speech's words are in it).

        ``pauses``: the turn's pauses as (words before, seconds); inside a reading only those after its
        first word are its rhythm (``None``: ``longest_pause`` is).
        """
        words = plain_words(text) if text else []
        judged = self.judge_words(text, confidence) if fresh and not foreign else UNSURE
        reading = reading_in_progress(words)
        structure = reading_end(words, self._known) if reading else 0.0
        group = 0
        if reading:  # no pauses given: the turn's longest counts as one inside the reading
            given = ((len(words), longest_pause),) if pauses is None else pauses
            longest_pause, group = reading_place(words, given)
        return Evidence(probability, judged, reading, len(words), longest_pause, structure, group)

    def needed_silence(self, evidence: Evidence) -> float:
        """Seconds of silence after the speech after which this evidence answers."""
        return needed_silence(self.wait_model, evidence, self.patience)

    def explain(self, evidence: Evidence) -> tuple[str, str]:
        """``(kind, text)`` of an answer on this evidence: ``model``/``words`` when it answered as soon
        as the words were in (the audio or the words carried it), ``sequence`` when a reading waited its
        rhythm, ``unfinished`` when the words held it, ``unsure`` otherwise."""
        need = self.needed_silence(evidence)
        model = model_label(self.analyzer)
        if self.analyzer is None:
            audio = "no audio model"
        else:
            audio = f"{model}: no verdict" if evidence.audio is None else f"{model} p={evidence.audio:.2f}"
        odds = end_log_odds(self.wait_model, evidence)
        said = f"{audio}, {evidence.words.reason}, end odds {odds:+.1f}"
        if need <= _TICK:
            kind = "model" if evidence.audio is not None and evidence.audio > 0.5 else "words"
            return kind, f"{said}: answered when the words were in"
        if evidence.reading:
            kind = "sequence"
        elif evidence.words.weight > 0 and evidence.words.probability < 0.2:
            kind = "unfinished"
        else:
            kind = "unsure"
        return kind, f"{said}: waited {need:.2f} s of silence"

    def end_reason(self, s: FusedTurnState, evidence: Evidence, now: float) -> TurnEndReason:
        """Why this strategy answers now, as the calibrated wait saw it."""
        kind, text = self.explain(evidence)
        waited = abs(now - s.words.text_at) < _TICK and self.needed_silence(evidence) < now - s.words.speech_end
        words = None if evidence.words.weight == 0 else ("complete" if evidence.words.probability >= 0.5
                                                         else "incomplete")
        return TurnEndReason(kind, text + (", then waited for the words" if waited else ""),
                             probability=s.probability, silence=self.needed_silence(evidence), words=words,
                             waited_for_words=waited)

    def _evidence(self, s: FusedTurnState) -> Evidence | None:
        """The evidence, once the last speech's words are in (``None``: still waiting)."""
        w = s.words
        if not self.words.ready(w):
            return None  # no words at all, or not the last speech's yet (the watchdog closes an empty turn)
        fresh = w.fresh or not self.wait_for_transcript
        return self.evidence(w.text, s.probability, confidence=s.confidence, longest_pause=s.longest_pause,
                             fresh=fresh and bool(w.text), foreign=s.foreign, pauses=s.pauses)

    def _decide(self, s: FusedTurnState, now: float, effects: list[Effect]) -> tuple[FusedTurnState, Effects]:
        """Answer now, or arm the wait for the silence the evidence needs."""
        if s.words.speaking or not s.words.vad_stopped or s.answered:
            return s, tuple(effects)
        evidence = self._evidence(s)
        if evidence is None:
            # Only the final words are awaited: likely when interim words stand for them and need little silence.
            return s, ((*effects, LIKELY_BEFORE_WORDS) if self._likely_before_words(s) else tuple(effects))
        if (self.ask_audio == ASK_WHEN_NEEDED and self.analyzer is not None and s.probability is None
                and not s.audio_asked and self._audio_moves(evidence, now - s.words.speech_end)):
            s = self._ask(s, now, effects)._replace(audio_asked=True)
        if self.analyzer is not None and s.probability is None and s.asks.inflight:
            # The audio model's verdict on this pause is on its way: wait for it (bounded).
            pending = s.asks.asked_at + _VERDICT_WAIT - now
            if pending > _TICK:
                return s, (*effects, _after(pending))
        need = self.needed_silence(evidence)
        silence = now - s.words.speech_end
        if silence >= need - _TICK:
            return self._answer(s, effects, self.end_reason(s, evidence, now))
        likely = (LIKELY,) if need <= _LIKELY_WITHIN else ()  # only the patience is left: the end is likely
        return s, (*effects, *likely, _after(need - silence))

    def _audio_moves(self, evidence: Evidence, silence: float) -> bool:
        """Whether the audio model's verdict could change when this evidence answers (``silence``: so far).

        The wait only shrinks as the audio's probability grows, so its two ends bound every verdict:
        no verdict is needed when even a sure "incomplete" answers now, or when both ends wait alike.
        """
        longest = self.needed_silence(evidence._replace(audio=0.0))
        if longest <= silence + _TICK:
            return False
        return longest - self.needed_silence(evidence._replace(audio=1.0)) > _TICK

    def _likely_before_words(self, s: FusedTurnState) -> bool:
        """The final words are awaited: is an end likely on the interim words (a speculative reply may be asked)?"""
        if not s.guess:
            return False
        said = f"{s.words.text} {s.guess}" if s.words.text else s.guess
        evidence = self.evidence(said, s.probability, confidence=s.confidence, longest_pause=s.longest_pause,
                                 foreign=s.foreign, pauses=s.pauses)
        return self.needed_silence(evidence) <= _LIKELY_WITHIN

    def _decide_without_vad(self, s: FusedTurnState, text: str) -> float:
        """With no VAD around the words, the quiet after them that answers."""
        evidence = self.evidence(text, None, confidence=s.confidence, foreign=s.foreign)
        return max(self.transcript_timeout, self.needed_silence(evidence))

    def _answer(
        self, s: FusedTurnState, effects: list[Effect], reason: TurnEndReason
    ) -> tuple[FusedTurnState, Effects]:
        return s._replace(answered=True), (*effects, Disarm(_DECIDE), *self.words.cancel, *stopped(reason=reason))

    def _foreign(self, frame: Frame) -> bool:
        language = getattr(frame, "language", None)
        if not isinstance(language, str) or not language.strip():
            return False
        ours = self.language.strip().replace("_", "-").split("-", 1)[0].lower()
        return language.strip().replace("_", "-").split("-", 1)[0].lower() != ours

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
        before = s.words
        words, effects = self.words.on_frame(s.words, frame, now)
        if t is VADUserStartedSpeakingFrame:
            pauses = s.pauses
            back_from = before.speech_end if before.vad_stopped else s.reopened_after
            if math.isfinite(back_from):  # back from a pause of this turn
                pause = now - float(getattr(frame, "start_secs", 0.0)) - back_from
                # where it fell, in words: a pause inside the STT's next final (its words not in yet) is
                # placed before that final's words, as the turn's words stood when the speaker went on
                pauses = (*pauses, (len(plain_words(before.text)), pause))
            s = s._replace(words=words, asks=s.asks.next_segment(), probability=None, no_vad=False,
                           answered=False, pauses=pauses, reopened_after=-math.inf, guess="")
            if self.analyzer is None:
                return s, (Disarm(_DECIDE), *effects)
            return s, (Disarm(_DECIDE), *effects, *vad_started(frame))
        if t is VADUserStoppedSpeakingFrame:
            out: list[Effect] = [Disarm(_DECIDE), *effects]
            s = s._replace(words=words, no_vad=False, probability=None, audio_asked=False)
            if self.ask_audio == ASK_AT_PAUSE:
                s = self._ask(s, now, out)
            return self._decide(s, now, out)
        if t is InterimTranscriptionFrame:
            text = getattr(frame, "text", "")
            return s._replace(words=words, guess=text.strip() if isinstance(text, str) else ""), effects
        if t is TranscriptionFrame and has_words(frame):
            s = s._replace(confidence=stt_confidence(getattr(frame, "result", None)), foreign=self._foreign(frame),
                           guess="")
            if s.words.no_vad:  # no VAD around these words: count the quiet from them
                s = s._replace(words=words, no_vad=True, answered=False)
                return s, (*effects, _after(self._decide_without_vad(s, words.text)))
            return self._decide(s._replace(words=words), now, list(effects))
        return s._replace(words=words), effects

    def on_timer(self, state: FusedTurnState, key: str, now: float) -> tuple[FusedTurnState, Effects]:
        s = state
        if key == _DECIDE:
            if s.no_vad:
                return self._answer(s, [], no_vad_reason(self.transcript_timeout))
            if s.asks.inflight and s.probability is None and now >= s.asks.asked_at + _VERDICT_WAIT - _TICK:
                s = s._replace(asks=s.asks._replace(inflight=False))  # late: the words and silence decide
            return self._decide(s, now, [])
        words = self.words.on_timer(s.words, key)
        return (s, NOTHING) if words is None else self._decide(s._replace(words=words), now, [])

    def on_result(self, state: FusedTurnState, key: str, value: Any, now: float) -> tuple[FusedTurnState, Effects]:
        asks, answer, effects = answered(state.asks, key, value, now)
        if answer is None:  # audio fed: the stream's own 3 s fallback is not used (the wait bounds itself)
            fed(value)
            return state, NOTHING
        s = state._replace(asks=asks)
        if not answer.current or s.words.speaking:
            return s, tuple(effects)
        p = answer.probability
        if p is None:
            p = 0.9 if answer.complete else 0.1
        return self._decide(s._replace(probability=p), now, effects)

    def on_turn_started(self, state: FusedTurnState, now: float) -> tuple[FusedTurnState, Effects]:
        words, effects = self.words.reset(state.words)
        s = FusedTurnState(words, state.asks, last_pauses=state.last_pauses)
        return s, (Disarm(_DECIDE), *effects)

    def on_turn_stopped(self, state: FusedTurnState, now: float) -> tuple[FusedTurnState, Effects]:
        words, effects = self.words.reset(state.words)
        s = FusedTurnState(words, state.asks.next_segment(), last_pauses=state.pauses)
        if self.analyzer is None:
            return s, (Disarm(_DECIDE), *effects)
        return s, (Disarm(_DECIDE), *effects, *clear_stream())

    def on_turn_resumed(self, state: FusedTurnState, words: str, now: float) -> tuple[FusedTurnState, Effects]:
        # The reopened turn keeps its words and its rhythm: "one" [answered] "two" reads as a number being
        # read again, and waits as such; the pause that was cut counts as one the speaker came back from.
        w = self.words.resumed(state.words, words)
        return state._replace(words=w, pauses=state.last_pauses, reopened_after=state.words.speech_end), NOTHING
