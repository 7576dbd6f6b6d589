"""Stop strategies: when is the user's turn over, and when to answer?

Every stop strategy here waits for the words of the speech that just ended
before it answers, through one sub-machine, :class:`~rxvoice.turns.words_wait.WordsWait`
(see there for the rule: words that arrived after the speech ended, or the
STT's published latency, or :data:`TRANSCRIPT_GRACE`). What each strategy
adds is its own idea: a silence (:class:`SpeechTimeoutStop`), an end-of-turn
model's verdict (:class:`TurnAnalyzerStop`), a stop decided elsewhere
(:class:`ExternalStop`), an external judge (:class:`ExternalCompletionStop`).
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
    InterimTranscriptionFrame,
    ProposedUserStartedSpeakingFrame,
    ProposedUserStoppedSpeakingFrame,
    StartFrame,
    TranscriptionFrame,
    UserStartedSpeakingFrame,
    UserStoppedSpeakingFrame,
    UserTurnInferenceCompletedFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from ._tuples import build
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
from .analyzer import verdict_effects as verdict_effects
from .reasons import (
    WAITED_FOR_WORDS,
    TurnEndReason,
    fallback_reason,
    model_label,
    model_reason,
    no_vad_reason,
    silence_reason,
)
from .strategy import (
    LIKELY,
    LIKELY_BEFORE_WORDS,
    NOTHING,
    Arm,
    Disarm,
    Effect,
    Effects,
    Finalize,
    StopStrategy,
    Strategy,
    stopped,
)
from .words_wait import TRANSCRIPT_GRACE, WORDS_TYPES, WordsState, WordsWait, has_words

__all__ = [
    "TRANSCRIPT_GRACE",
    "Deferred",
    "ExternalCompletionStop",
    "ExternalState",
    "ExternalStop",
    "SpeechTimeoutState",
    "SpeechTimeoutStop",
    "TurnAnalyzerState",
    "TurnAnalyzerStop",
]

log = logging.getLogger("rxvoice.turns.stop")


def words_timeout(stt_known: bool, stt_timeout: float) -> float:
    """Seconds after the end of speech to wait for its words: the STT's p99, else :data:`TRANSCRIPT_GRACE`."""
    return stt_timeout if stt_known else TRANSCRIPT_GRACE


def _non_negative(owner: str, **values: float) -> None:
    for name, value in values.items():
        check_seconds(value, f"{owner}.{name}")


class SpeechTimeoutState(NamedTuple):
    """Where a speech-timeout decision stands."""

    words: WordsState = WordsState()
    speech_done: bool = False
    """``user_speech_timeout`` of silence passed since the VAD stop (or since the words, without a VAD)."""
    stop_secs: float = 0.0
    """The last VAD stop's ``stop_secs`` (the silence it had already heard), for the reason."""

    @property
    def speaking(self) -> bool:
        """The VAD hears speech."""
        return self.words.speaking


_SPEECH = "speech"
_DISARM_SPEECH = Disarm(_SPEECH)


@dataclass(frozen=True)
class SpeechTimeoutStop(StopStrategy[SpeechTimeoutState]):
    """The turn ends after ``user_speech_timeout`` seconds of silence, transcript in hand.

    After a VAD stop it waits ``user_speech_timeout``; a transcript that is
    not finalized also waits out the STT's latency; and with
    ``wait_for_transcript`` nothing is answered before there is text. With no
    VAD at all (text-only input), the silence is counted from the last
    transcript.
    """

    user_speech_timeout: float = 0.6
    wait_for_transcript: bool = True
    enable_user_speaking_frames: bool = True
    words: WordsWait = field(init=False, repr=False, compare=False)
    _arm_speech: Arm = field(init=False, repr=False, compare=False)
    """The silence timer's arming (the same value on every VAD stop: built once)."""
    _ends: dict[tuple[bool, float, bool], Effects] | None = field(init=False, repr=False, compare=False)
    """The effects that end a turn, by what their reason says (VAD stop seen, its ``stop_secs``, waited): the
    same few values turn after turn, built once (the reason and the ``Finalize`` are frozen)."""
    handles: ClassVar[frozenset[type[Frame]]] = WORDS_TYPES

    def __post_init__(self) -> None:
        _non_negative("SpeechTimeoutStop", user_speech_timeout=self.user_speech_timeout)
        object.__setattr__(self, "words", WordsWait(wait=self.wait_for_transcript))
        object.__setattr__(self, "_arm_speech", Arm(_SPEECH, self.user_speech_timeout))
        # Kept only while the reason is this class's own (a subclass's may read more of the state).
        object.__setattr__(self, "_ends", {} if type(self).end_reason is SpeechTimeoutStop.end_reason else None)

    def initial(self) -> SpeechTimeoutState:
        return SpeechTimeoutState()

    def _check(
        self, s: SpeechTimeoutState, effects: Effects, waited: bool = False
    ) -> tuple[SpeechTimeoutState, Effects]:
        w = s.words
        if w.speaking:
            return s, effects
        words = self.words
        if s.speech_done and w.stt_done and words.ready(w):
            ends = self._ends
            key = (w.vad_stopped, s.stop_secs, waited)
            end = ends.get(key) if ends is not None else None
            if end is None:
                end = (_DISARM_SPEECH, *words.cancel, *stopped(reason=self.end_reason(s, waited)))
                if ends is not None:
                    if len(ends) >= 64:  # a bound: stop_secs comes from the frames
                        ends.clear()
                    ends[key] = end
            return s, (*effects, *end) if effects else end
        if w.vad_stopped:
            # Only the silence is left (and the words, if they are not in: an interim guess may stand for them).
            return s, (*effects, LIKELY if words.ready(w) else LIKELY_BEFORE_WORDS)
        return s, effects

    def end_reason(self, s: SpeechTimeoutState, waited: bool = False) -> TurnEndReason:
        """Why this strategy ends a turn in state ``s`` (``waited``: the words came last)."""
        if not s.words.vad_stopped:
            return no_vad_reason(self.user_speech_timeout)
        return silence_reason(s.stop_secs + self.user_speech_timeout, waited=waited)

    # The states of the frames every turn brings are built whole (``build``: positional, every field).

    def on_frame(
        self, state: SpeechTimeoutState, frame: Frame, now: float
    ) -> tuple[SpeechTimeoutState, Effects]:
        t = type(frame)
        if t is InterimTranscriptionFrame and not state.words.finalized:
            return state, NOTHING  # the words wait's own answer to an interim before a final, without asking it
        words, effects = self.words.on_frame(state.words, frame, now)
        if t is VADUserStartedSpeakingFrame:
            return build(SpeechTimeoutState, (words, False, 0.0)), (_DISARM_SPEECH, *effects)
        if t is VADUserStoppedSpeakingFrame:
            stop_secs = float(getattr(frame, "stop_secs", 0.0))
            return self._check(build(SpeechTimeoutState, (words, False, stop_secs)), (self._arm_speech, *effects))
        if t is TranscriptionFrame and words is not state.words:  # words came (the words wait checked them)
            w = state.words
            if not w.speaking and not w.vad_stopped:  # no VAD around this transcript: count the silence from it
                return self._check(build(SpeechTimeoutState, (words, False, 0.0)), (*effects, self._arm_speech))
            return self._check(build(SpeechTimeoutState, (words, state.speech_done, state.stop_secs)), effects,
                               waited=True)
        if words is state.words:  # nothing changed (most interims): the same state
            return state, effects
        return build(SpeechTimeoutState, (words, state.speech_done, state.stop_secs)), effects

    def on_timer(self, state: SpeechTimeoutState, key: str, now: float) -> tuple[SpeechTimeoutState, Effects]:
        if key == _SPEECH:
            return self._check(build(SpeechTimeoutState, (state.words, True, state.stop_secs)), NOTHING)
        words = self.words.on_timer(state.words, key)
        return (state, NOTHING) if words is None else self._check(
            build(SpeechTimeoutState, (words, state.speech_done, state.stop_secs)), NOTHING)

    def on_turn_started(self, state: SpeechTimeoutState, now: float) -> tuple[SpeechTimeoutState, Effects]:
        words, effects = self.words.reset(state.words)
        return build(SpeechTimeoutState, (words, False, 0.0)), (_DISARM_SPEECH, *effects)

    on_turn_stopped = on_turn_started

    def on_turn_resumed(self, state: SpeechTimeoutState, words: str, now: float) -> tuple[SpeechTimeoutState, Effects]:
        return state._replace(words=self.words.resumed(state.words, words)), NOTHING


class TurnAnalyzerState(NamedTuple):
    """Where an end-of-turn model's decision stands."""

    words: WordsState = WordsState()
    asks: Asks = Asks()
    complete: bool = False
    """The model (or its stream's silence fallback) said the turn is complete."""
    fallback: bool = False
    """No VAD around the words: the turn ends ``transcript_timeout`` after them."""
    cause: str = ""
    """What said complete, for the reason: ``model``, ``fallback`` (the stream's silence) or ``no-vad``."""
    probability: float | None = None
    """The model's probability behind a complete verdict."""

    @property
    def speaking(self) -> bool:
        """The VAD hears speech."""
        return self.words.speaking


_FALLBACK = "fallback"


@dataclass(frozen=True)
class TurnAnalyzerStop(StopStrategy[TurnAnalyzerState]):
    """An end-of-turn model (Smart Turn) judges each pause; the turn ends on "complete", transcript in hand.

    At every VAD stop the model is asked, off the session, whether the user
    finished or only paused. A complete verdict ends the turn once the words
    of that speech are in (a transcript after its VAD start, a finalized one
    or the STT's latency elapsed; at most :data:`TRANSCRIPT_GRACE` or the
    STT's published p99 when none comes). An incomplete verdict keeps the
    turn open: the next pause is judged again (on the whole, longer turn),
    the stream's own silence fallback (Smart Turn: 3 s) may end it, and the
    stop watchdog bounds it. Each verdict is reported as a
    ``MetricsFrame(TurnMetricsData)``.

    Args:
        analyzer: An :class:`~rxvoice.turns.analyzer.EndOfTurnAnalyzer`.
        wait_for_transcript: Whether a complete verdict waits for the words.
        transcript_timeout: With no VAD around a transcript (typed input,
            speech the VAD missed) there is no pause to judge: the turn ends
            this many seconds after the last transcript.
    """

    analyzer: EndOfTurnAnalyzer = field(default=None)  # type: ignore[assignment]
    wait_for_transcript: bool = True
    transcript_timeout: float = 0.5
    enable_user_speaking_frames: bool = True
    words: WordsWait = field(init=False, repr=False, compare=False)
    handles: ClassVar[frozenset[type[Frame]]] = WORDS_TYPES | {StartFrame, InputAudioRawFrame}

    def __post_init__(self) -> None:
        if not callable(getattr(self.analyzer, "open_stream", None)):
            raise ConfigurationError(
                f"TurnAnalyzerStop needs an end-of-turn analyzer with open_stream(sample_rate), got {self.analyzer!r}"
            )
        _non_negative("TurnAnalyzerStop", transcript_timeout=self.transcript_timeout)
        object.__setattr__(self, "words", WordsWait(wait=self.wait_for_transcript))

    def initial(self) -> TurnAnalyzerState:
        return TurnAnalyzerState()

    def open_resource(self, sample_rate: int) -> AnalyzerSession | None:
        return open_session(self.analyzer, sample_rate)

    def close_resource(self, resource: Any) -> None:
        close_session(resource)

    def _check(
        self, s: TurnAnalyzerState, effects: Effects, waited: bool = False
    ) -> tuple[TurnAnalyzerState, Effects]:
        if not s.words.speaking and s.complete and not s.fallback and self.words.ready(s.words):
            return s, (*effects, Disarm(_FALLBACK), *self.words.cancel, *stopped(reason=self.end_reason(s, waited)))
        return s, effects

    def end_reason(self, s: TurnAnalyzerState, waited: bool = False) -> TurnEndReason:
        """Why this strategy ends a turn in state ``s`` (``waited``: the words came last)."""
        model = model_label(self.analyzer)
        if s.cause == "no-vad":
            return no_vad_reason(self.transcript_timeout)
        if s.cause == "fallback":
            return fallback_reason(model, getattr(getattr(self.analyzer, "params", None), "stop_secs", None))
        return model_reason(model, s.probability, waited=waited)

    def on_frame(self, state: TurnAnalyzerState, frame: Frame, now: float) -> tuple[TurnAnalyzerState, Effects]:
        t = type(frame)
        if t is InputAudioRawFrame:
            return state, feed_audio(frame, state.words.speaking, "silence")
        if t is StartFrame:
            return state, announce_params(self.analyzer)
        words, effects = self.words.on_frame(state.words, frame, now)
        if t is VADUserStartedSpeakingFrame:
            s = TurnAnalyzerState(words, state.asks.next_segment())
            return s, (Disarm(_FALLBACK), *effects, *vad_started(frame))
        if t is VADUserStoppedSpeakingFrame:
            out: list[Effect] = list(effects)
            asks = ask(state.asks, now, out)
            return TurnAnalyzerState(words, asks), tuple(out)
        if t is TranscriptionFrame and words is not state.words:  # words came (the words wait checked them)
            if state.words.no_vad:  # no VAD around this transcript: nothing to judge, count the quiet from it
                s = state._replace(words=words, complete=True, fallback=True, cause="no-vad")
                return s, (*effects, Arm(_FALLBACK, self.transcript_timeout))
            return self._check(state._replace(words=words), effects, waited=True)
        return state._replace(words=words), effects

    def on_timer(self, state: TurnAnalyzerState, key: str, now: float) -> tuple[TurnAnalyzerState, Effects]:
        if key == _FALLBACK:
            return self._check(state._replace(fallback=False), NOTHING)
        words = self.words.on_timer(state.words, key)
        return (state, NOTHING) if words is None else self._check(state._replace(words=words), NOTHING)

    def on_result(
        self, state: TurnAnalyzerState, key: str, value: Any, now: float
    ) -> tuple[TurnAnalyzerState, Effects]:
        asks, answer, effects = answered(state.asks, key, value, now)
        if answer is None:  # audio fed: the stream's silence fallback may have ended the turn
            if fed(value):
                return self._check(state._replace(complete=True, fallback=False, cause="fallback"), NOTHING)
            return state, NOTHING
        s = state._replace(asks=asks)
        if answer.current and answer.complete and not s.words.speaking:
            return self._check(s._replace(complete=True, cause="model", probability=answer.probability), tuple(effects))
        return s, tuple(effects)

    def on_turn_started(self, state: TurnAnalyzerState, now: float) -> tuple[TurnAnalyzerState, Effects]:
        words, effects = self.words.reset(state.words)
        return TurnAnalyzerState(words, state.asks), (Disarm(_FALLBACK), *effects)

    def on_turn_stopped(self, state: TurnAnalyzerState, now: float) -> tuple[TurnAnalyzerState, Effects]:
        words, effects = self.words.reset(state.words)
        return TurnAnalyzerState(words, state.asks.next_segment()), (Disarm(_FALLBACK), *effects, *clear_stream())

    def on_turn_resumed(self, state: TurnAnalyzerState, words: str, now: float) -> tuple[TurnAnalyzerState, Effects]:
        return state._replace(words=self.words.resumed(state.words, words)), NOTHING


class ExternalState(NamedTuple):
    """Where an externally decided turn stands."""

    words: WordsState = WordsState()
    speaking: bool = False
    """The user speaks, as the starts and stops decided elsewhere say."""
    announced_elsewhere: bool = False
    interim_pending: bool = False
    turn_open: bool = False
    stop_seen: bool = False
    settling: bool = False

    @property
    def has_text(self) -> bool:
        """The turn has words."""
        return bool(self.words.text)


_WAIT = "words"
_SETTLE = "settle"
_EXTERNAL_TIMERS: Effects = (Disarm(_WAIT), Disarm(_SETTLE))


def _external_end(waited: bool, fresh: bool, elsewhere: bool) -> Effects:
    """What :class:`ExternalStop` does to end a turn: its timers go, then inference and the end, for its reason."""
    if waited and not fresh:
        reason = TurnEndReason("external", "a stop decided upstream; the words of that speech did not come")
    else:
        reason = TurnEndReason("external", f"a stop decided upstream{WAITED_FOR_WORDS if waited else ''}",
                               waited_for_words=waited)
    return (*_EXTERNAL_TIMERS, *stopped(False if elsewhere else None, reason))


_EXTERNAL_ENDS: dict[tuple[bool, bool, bool], Effects] = {
    (waited, fresh, elsewhere): _external_end(waited, fresh, elsewhere)
    for waited in (False, True) for fresh in (False, True) for elsewhere in (False, True)
}
"""Every end :class:`ExternalStop` can make, by (waited for the words, the words are the last speech's, the
stop was announced elsewhere): built once at import, the same frozen values turn after turn, where each turn
built a reason, an effect and two tuples."""


@dataclass(frozen=True)
class ExternalStop(StopStrategy[ExternalState]):
    """Turn ends decided elsewhere: a proposed stop, or a user-stopped frame already announced.

    The turn ends when the user has stopped and the words of what they just
    said are in, with no interim guess outstanding:

    * a stop that comes when those words are already in (a final transcript
      after the latest start of speech, and, when VAD frames pass this way,
      after that speech ended: the VAD stop minus its ``stop_secs``) ends the
      turn at once;
    * a stop that comes before them waits: each final transcript after it
      (re)starts a ``settle`` wait (0.5 s, as Pipecat 1.14 waits after the
      last final), and the turn ends when no new final came for that long,
      so a sentence the STT finalizes in pieces ("I want to book", "a table
      for two.") is one message;
    * when no words come at all, the wait is bounded by the STT's published
      p99 latency (``STTMetadataFrame``), or ``timeout`` (1 s) when it
      published none; a stop announced elsewhere then ends the turn empty,
      rather than leaving it to the watchdog (which would announce a second
      stop).
    """

    timeout: float = TRANSCRIPT_GRACE
    wait_for_transcript: bool = True
    enable_user_speaking_frames: bool = True
    settle: float = 0.5
    words: WordsWait = field(init=False, repr=False, compare=False)
    resolves_proposals: ClassVar[bool] = True
    handles: ClassVar[frozenset[type[Frame]]] = WORDS_TYPES | {
        ProposedUserStartedSpeakingFrame, ProposedUserStoppedSpeakingFrame, UserStartedSpeakingFrame,
        UserStoppedSpeakingFrame,
    }

    def __post_init__(self) -> None:
        _non_negative("ExternalStop", timeout=self.timeout, settle=self.settle)
        object.__setattr__(self, "words", WordsWait(wait=self.wait_for_transcript, grace=self.timeout))

    def initial(self) -> ExternalState:
        return ExternalState()

    def _end(self, s: ExternalState, waited: bool = False) -> Effects:
        """The effects that end the turn: one of eight values (:data:`_EXTERNAL_ENDS`), looked up, not built."""
        return _EXTERNAL_ENDS[(waited, s.words.fresh, s.announced_elsewhere)]

    def _check(self, s: ExternalState, waited: bool = False) -> tuple[ExternalState, Effects]:
        if not s.turn_open or s.speaking or not s.stop_seen:
            return s, NOTHING
        if not self.wait_for_transcript:
            return s, self._end(s, waited)
        if not waited and (not s.words.fresh or s.interim_pending or s.settling):
            return s, NOTHING
        if not s.words.text and not s.announced_elsewhere:
            return s, NOTHING  # a proposal with no words at all: the watchdog decides
        return s, self._end(s, waited)

    def on_frame(self, state: ExternalState, frame: Frame, now: float) -> tuple[ExternalState, Effects]:
        # This strategy times its own wait (from the stop decided elsewhere): the words wait only tracks.
        # The states of the frames every turn brings are built whole (in field order), not with _replace.
        t = type(frame)
        if t is InterimTranscriptionFrame:
            if state.interim_pending:
                return state, NOTHING
            w, speaking, elsewhere, _pending, turn_open, stop_seen, settling = state
            return build(ExternalState, (w, speaking, elsewhere, True, turn_open, stop_seen, settling)), NOTHING
        if t is TranscriptionFrame:
            if not has_words(frame):
                return state, NOTHING
            w, speaking, elsewhere, _pending, turn_open, stop_seen, settling = state
            s = build(ExternalState, (self.words.words_in(w, frame, now), speaking, elsewhere, False, turn_open,
                                      stop_seen, settling))
            if turn_open and stop_seen and not speaking and self.wait_for_transcript:
                # The words came after the stop: more finals of the same speech may follow.
                return s._replace(settling=True), (Disarm(_WAIT), Arm(_SETTLE, self.settle))
            return self._check(s)
        s = state
        if t in WORDS_TYPES:
            words = self.words.heard(state.words, frame, now)
            if words is not state.words:
                s = state._replace(words=words)
        if t is ProposedUserStartedSpeakingFrame or t is UserStartedSpeakingFrame:
            w, _speaking, _elsewhere, pending, turn_open, _stop_seen, _settling = s
            return build(ExternalState, (
                w._replace(fresh=False) if w.fresh else w, True, t is UserStartedSpeakingFrame, pending, turn_open,
                False, False,
            )), _EXTERNAL_TIMERS
        if t is ProposedUserStoppedSpeakingFrame or t is UserStoppedSpeakingFrame:
            w, _speaking, _elsewhere, pending, turn_open, _stop_seen, settling = s
            s, effects = self._check(
                build(ExternalState, (w, False, t is UserStoppedSpeakingFrame, pending, turn_open, True, settling))
            )
            if not effects and s.turn_open and not s.settling:
                effects = (Arm(_WAIT, self.words.timeout(s.words)),)
            return s, effects
        return s, NOTHING

    def on_timer(self, state: ExternalState, key: str, now: float) -> tuple[ExternalState, Effects]:
        if key == _SETTLE:
            return self._check(state._replace(settling=False), waited=True)
        if key == _WAIT:
            return self._check(state, waited=True)
        return state, NOTHING

    def on_turn_started(self, state: ExternalState, now: float) -> tuple[ExternalState, Effects]:
        return build(ExternalState, (self.words.reset(state.words)[0], False, False, False, True, False, False)), (
            _EXTERNAL_TIMERS)

    def on_turn_stopped(self, state: ExternalState, now: float) -> tuple[ExternalState, Effects]:
        return build(ExternalState, (self.words.reset(state.words)[0], False, False, False, False, False, False)), (
            _EXTERNAL_TIMERS)

    def on_turn_resumed(self, state: ExternalState, words: str, now: float) -> tuple[ExternalState, Effects]:
        return state._replace(words=self.words.resumed(state.words, words)), NOTHING


@dataclass(frozen=True)
class ExternalCompletionStop(StopStrategy[None]):
    """An external judge (e.g. the model's own ● marker) ends the turn.

    It finalizes only: the turn's words are written, and the model run, when
    the turn closes.
    """

    enable_user_speaking_frames: bool = True
    handles: ClassVar[frozenset[type[Frame]]] = frozenset({UserTurnInferenceCompletedFrame})

    def initial(self) -> None:
        return None

    def on_frame(self, state: None, frame: Frame, now: float) -> tuple[None, Effects]:
        return None, (Finalize(reason=_JUDGED),)


_JUDGED = TurnEndReason("external", "an external judge said the turn is complete")


def _no_finalize(effects: Effects) -> Effects:
    return tuple(e for e in effects if not isinstance(e, Finalize))


@dataclass(frozen=True)
class Deferred(StopStrategy[Any]):
    """Wraps a stop strategy so it only triggers early inference, never ends the turn.

    The wrapped strategy's verdict writes what the user said so far and runs
    the model; another strategy (a judge) decides when the turn is over.
    """

    inner: Strategy[Any] = field(default=None)  # type: ignore[arg-type]

    def __post_init__(self) -> None:
        if not isinstance(self.inner, Strategy):
            raise ConfigurationError(f"Deferred wraps a stop strategy, got {self.inner!r}")

    @property
    def handles(self) -> frozenset[type[Frame]]:  # type: ignore[override]
        return self.inner.handles

    @property
    def resolves_proposals(self) -> bool:  # type: ignore[override]
        return self.inner.resolves_proposals

    @property
    def name(self) -> str:
        return f"Deferred({self.inner.name})"

    def initial(self) -> Any:
        return self.inner.initial()

    def on_frame(self, state: Any, frame: Frame, now: float) -> tuple[Any, Effects]:
        s, e = self.inner.on_frame(state, frame, now)
        return s, _no_finalize(e)

    def on_timer(self, state: Any, key: str, now: float) -> tuple[Any, Effects]:
        s, e = self.inner.on_timer(state, key, now)
        return s, _no_finalize(e)

    def on_result(self, state: Any, key: str, value: Any, now: float) -> tuple[Any, Effects]:
        s, e = self.inner.on_result(state, key, value, now)
        return s, _no_finalize(e)

    def on_turn_started(self, state: Any, now: float) -> tuple[Any, Effects]:
        s, e = self.inner.on_turn_started(state, now)
        return s, _no_finalize(e)

    def on_turn_stopped(self, state: Any, now: float) -> tuple[Any, Effects]:
        s, e = self.inner.on_turn_stopped(state, now)
        return s, _no_finalize(e)

    def on_turn_resumed(self, state: Any, words: str, now: float) -> tuple[Any, Effects]:
        s, e = self.inner.on_turn_resumed(state, words, now)
        return s, _no_finalize(e)

    def open_resource(self, sample_rate: int) -> Any:
        return self.inner.open_resource(sample_rate)

    def close_resource(self, resource: Any) -> None:
        self.inner.close_resource(resource)
