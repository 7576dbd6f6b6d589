"""Stop strategies: when is the user's turn over, and when to answer?

Every stop strategy here waits for the words of the speech that just ended
before it answers. A VAD stop or a model's verdict can arrive before the
speech-to-text service has delivered the transcript of the last phrase;
answering then would give the model the turn without its last words (a bug
users report against the reference systems). So a strategy waits for a
transcript that arrived **after that speech ended** (the VAD stop's time
minus its ``stop_secs``), not merely after it began: when a caller says two
sentences 60 ms apart (one stretch of speech for the VAD), the first
sentence's final arrives while the second is still being spoken, and it is
not the last speech's words. When no such transcript comes, the wait is
bounded by the service's published latency
(``STTMetadataFrame.ttfs_p99_latency``), or :data:`TRANSCRIPT_GRACE` when the
service published none, counted from the end of the speech.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple

import numpy as np

from ..errors import ConfigurationError
from ..frames import (
    Frame,
    InputAudioRawFrame,
    InterimTranscriptionFrame,
    MetricsFrame,
    ProposedUserStartedSpeakingFrame,
    ProposedUserStoppedSpeakingFrame,
    SpeechControlParamsFrame,
    StartFrame,
    STTMetadataFrame,
    TranscriptionFrame,
    TurnMetricsData,
    UserStartedSpeakingFrame,
    UserStoppedSpeakingFrame,
    UserTurnInferenceCompletedFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from ..text.blank import is_blank
from .analyzer import AnalyzerSession, EndOfTurnAnalyzer
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
    NOTHING,
    Analyze,
    Arm,
    Disarm,
    Effect,
    Effects,
    Finalize,
    Push,
    StopStrategy,
    Strategy,
    Touch,
    stopped,
)

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

TRANSCRIPT_GRACE = 1.0
"""Seconds after the end of speech to wait for its transcript when the STT published no latency."""


def _downmix(pcm: bytes, channels: int) -> bytes:
    """Interleaved 16-bit PCM of ``channels`` channels as mono (the channels averaged)."""
    samples = np.frombuffer(pcm, dtype="<i2").reshape(-1, channels).astype(np.int32)
    return bytes(samples.mean(axis=1).round().astype("<i2").tobytes())


def _feed(frame: Frame, speech: bool, key: str) -> Effects:
    """Hand an audio frame to the strategy's end-of-turn stream (mono; ``speech``: the VAD says speaking)."""
    audio: bytes = frame.audio  # type: ignore[attr-defined]
    rate: int = frame.sample_rate  # type: ignore[attr-defined]
    channels: int = frame.num_channels  # type: ignore[attr-defined]
    if channels > 1:
        audio = _downmix(audio, channels)
    return (Touch(lambda r: r.append(audio, rate, speech), key),)


_EPS = 1e-6
_NEVER = -math.inf


def words_timeout(stt_known: bool, stt_timeout: float) -> float:
    """Seconds after the end of speech to wait for its words: the STT's p99, else :data:`TRANSCRIPT_GRACE`."""
    return stt_timeout if stt_known else TRANSCRIPT_GRACE


def _fresh(text_at: float, speech_end: float) -> bool:
    """Whether words that arrived at ``text_at`` are those of speech that ended at ``speech_end``."""
    return text_at >= speech_end - _EPS


def _words(frame: Frame) -> bool:
    text = getattr(frame, "text", "")
    return isinstance(text, str) and not is_blank(text)


def _non_negative(owner: str, **values: float) -> None:
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
            raise ConfigurationError(f"{owner} needs {name} >= 0 seconds, got {value!r}")


class SpeechTimeoutState(NamedTuple):
    """Where a speech-timeout decision stands."""

    speaking: bool = False
    vad_stopped: bool = False
    has_text: bool = False
    segment_text: bool = False
    finalized: bool = False
    speech_done: bool = False
    stt_done: bool = False
    grace_done: bool = False
    stt_timeout: float = 0.0
    stt_known: bool = False
    text_at: float = _NEVER
    stop_secs: float = 0.0


_CLEAR_TIMERS: Effects = (Disarm("speech"), Disarm("stt"), Disarm("grace"))


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
    handles: ClassVar[frozenset[type[Frame]]] = frozenset({
        VADUserStartedSpeakingFrame, VADUserStoppedSpeakingFrame, TranscriptionFrame,
        InterimTranscriptionFrame, STTMetadataFrame,
    })

    def __post_init__(self) -> None:
        _non_negative("SpeechTimeoutStop", user_speech_timeout=self.user_speech_timeout)

    def initial(self) -> SpeechTimeoutState:
        return SpeechTimeoutState()

    def _check(
        self, s: SpeechTimeoutState, effects: Effects, waited: bool = False
    ) -> tuple[SpeechTimeoutState, Effects]:
        if (
            not s.speaking and s.speech_done and s.stt_done
            and (not self.wait_for_transcript or (s.has_text and s.grace_done))
        ):
            return s, (*effects, *_CLEAR_TIMERS, *stopped(reason=self.end_reason(s, waited)))
        return s, effects

    def end_reason(self, s: SpeechTimeoutState, waited: bool = False) -> TurnEndReason:
        """Why this strategy ends a turn in state ``s`` (``waited``: the words came last)."""
        if not s.vad_stopped:
            return no_vad_reason(self.user_speech_timeout)
        return silence_reason(s.stop_secs + self.user_speech_timeout, waited=waited)

    def on_frame(
        self, state: SpeechTimeoutState, frame: Frame, now: float
    ) -> tuple[SpeechTimeoutState, Effects]:
        s = state
        t = type(frame)
        if t is VADUserStartedSpeakingFrame:
            return SpeechTimeoutState(
                True, False, s.has_text, False, False, False, False, False, s.stt_timeout, s.stt_known, s.text_at
            ), _CLEAR_TIMERS
        if t is VADUserStoppedSpeakingFrame:
            stop_secs = float(getattr(frame, "stop_secs", 0.0))
            effects: list[Arm | Disarm] = [Arm("speech", self.user_speech_timeout)]
            stt_wait = s.stt_timeout - stop_secs
            stt_done = s.finalized or stt_wait <= 0
            if not stt_done:
                effects.append(Arm("stt", stt_wait))
            segment_text = _fresh(s.text_at, now - stop_secs)
            grace_done = segment_text or not self.wait_for_transcript
            if not grace_done:
                grace = words_timeout(s.stt_known, s.stt_timeout) - stop_secs
                grace_done = grace <= 0
                if not grace_done:
                    effects.append(Arm("grace", grace))
            return SpeechTimeoutState(
                False, True, s.has_text, segment_text, s.finalized, False, stt_done, grace_done,
                s.stt_timeout, s.stt_known, s.text_at, stop_secs,
            ), tuple(effects)
        if t is TranscriptionFrame:
            if not _words(frame):
                return s, NOTHING
            finalized = bool(getattr(frame, "finalized", False)) or s.finalized
            stt_done = s.stt_done or finalized
            out: list[Arm | Disarm] = [Disarm("grace")]
            if finalized:
                out.append(Disarm("stt"))
            speech_done = s.speech_done
            if not s.speaking and not s.vad_stopped:
                # No VAD around this transcript: count the silence from it.
                stt_done = True
                speech_done = False
                out.append(Arm("speech", self.user_speech_timeout))
            return self._check(SpeechTimeoutState(
                s.speaking, s.vad_stopped, True, True, finalized, speech_done, stt_done, True,
                s.stt_timeout, s.stt_known, now, s.stop_secs,
            ), tuple(out), waited=True)
        if t is InterimTranscriptionFrame:
            if not s.finalized:
                return s, NOTHING
            return s._replace(finalized=False), NOTHING
        if t is STTMetadataFrame:
            latency = float(getattr(frame, "ttfs_p99_latency", 0.0))
            return s._replace(stt_timeout=max(0.0, latency), stt_known=True), NOTHING
        return s, NOTHING

    def on_timer(self, state: SpeechTimeoutState, key: str, now: float) -> tuple[SpeechTimeoutState, Effects]:
        if key == "speech":
            return self._check(state._replace(speech_done=True), NOTHING)
        if key == "stt":
            return self._check(state._replace(stt_done=True), NOTHING)
        if key == "grace":
            return self._check(state._replace(grace_done=True), NOTHING)
        return state, NOTHING

    def on_turn_started(self, state: SpeechTimeoutState, now: float) -> tuple[SpeechTimeoutState, Effects]:
        return SpeechTimeoutState(
            speaking=state.speaking, stt_timeout=state.stt_timeout, stt_known=state.stt_known
        ), _CLEAR_TIMERS

    def on_turn_stopped(self, state: SpeechTimeoutState, now: float) -> tuple[SpeechTimeoutState, Effects]:
        return SpeechTimeoutState(stt_timeout=state.stt_timeout, stt_known=state.stt_known), _CLEAR_TIMERS


def _grace(s_segment_text: bool, stt_known: bool, stt_timeout: float, stop_secs: float) -> float | None:
    """Seconds to wait for the transcript of the speech that just ended (``None``: no wait)."""
    if s_segment_text:
        return None
    grace = words_timeout(stt_known, stt_timeout) - stop_secs
    return grace if grace > 0 else None


def verdict_effects(value: Any, waited: float) -> tuple[bool, float | None, list[Effect]]:
    """An analyzer's answer: ``(is_complete, probability, effects)``, the effects replaying what was
    held back during the verdict and reporting it as ``TurnMetricsData`` (``waited``: seconds it took)."""
    complete, probability = _verdict(value)
    effects: list[Effect] = [Touch(_end, "flush")]
    if probability is not None:
        data = TurnMetricsData("TurnAnalyzer", complete, probability, waited * 1000.0)
        effects.append(Push(MetricsFrame((data,))))
    return complete, probability, effects


class TurnAnalyzerState(NamedTuple):
    """Where an end-of-turn model's decision stands."""

    speaking: bool = False
    vad_stopped: bool = False
    has_text: bool = False
    segment_text: bool = False
    finalized: bool = False
    complete: bool = False
    stt_done: bool = False
    grace_done: bool = False
    fallback: bool = False
    segment: int = 0
    inflight: bool = False
    reanalyze: bool = False
    asked_at: float = 0.0
    stt_timeout: float = 0.0
    stt_known: bool = False
    text_at: float = _NEVER
    cause: str = ""
    probability: float | None = None


_ANALYZER_TIMERS: Effects = (Disarm("stt"), Disarm("grace"), Disarm("fallback"))
_VERDICT = "v"


def _begin(resource: AnalyzerSession) -> None:
    resource.begin()


def _analyze(resource: AnalyzerSession) -> tuple[bool, float | None]:
    return resource.analyze()


def _end(resource: AnalyzerSession) -> bool:
    return resource.end()


def _clear(resource: AnalyzerSession) -> bool:
    return resource.clear()


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
    handles: ClassVar[frozenset[type[Frame]]] = frozenset({
        StartFrame, InputAudioRawFrame, VADUserStartedSpeakingFrame, VADUserStoppedSpeakingFrame,
        TranscriptionFrame, InterimTranscriptionFrame, STTMetadataFrame,
    })

    def __post_init__(self) -> None:
        if not callable(getattr(self.analyzer, "open_stream", None)):
            raise ConfigurationError(
                f"TurnAnalyzerStop needs an end-of-turn analyzer with open_stream(sample_rate), got {self.analyzer!r}"
            )
        _non_negative("TurnAnalyzerStop", transcript_timeout=self.transcript_timeout)

    def initial(self) -> TurnAnalyzerState:
        return TurnAnalyzerState()

    def open_resource(self, sample_rate: int) -> AnalyzerSession:
        return AnalyzerSession(self.analyzer, sample_rate)

    def close_resource(self, resource: Any) -> None:
        if isinstance(resource, AnalyzerSession):
            resource.close()

    # -- deciding ---------------------------------------------------------------

    def _check(
        self, s: TurnAnalyzerState, effects: list[Effect], waited: bool = False
    ) -> tuple[TurnAnalyzerState, Effects]:
        if not s.speaking and s.complete and not s.fallback and (
            not self.wait_for_transcript
            or (s.has_text and (s.finalized or s.stt_done) and (s.segment_text or s.grace_done))
        ):
            return s, (*effects, *_ANALYZER_TIMERS, *stopped(reason=self.end_reason(s, waited)))
        return s, tuple(effects)

    def end_reason(self, s: TurnAnalyzerState, waited: bool = False) -> TurnEndReason:
        """Why this strategy ends a turn in state ``s`` (``waited``: the words came last)."""
        model = model_label(self.analyzer)
        if s.cause == "no-vad":
            return no_vad_reason(self.transcript_timeout)
        if s.cause == "fallback":
            return fallback_reason(model, getattr(getattr(self.analyzer, "params", None), "stop_secs", None))
        return model_reason(model, s.probability, waited=waited)

    def _ask(self, s: TurnAnalyzerState, now: float, effects: list[Effect]) -> TurnAnalyzerState:
        """Ask for a verdict on the current segment (at most one in flight)."""
        if s.inflight:
            return s._replace(reanalyze=True)
        effects.append(Touch(_begin))
        effects.append(Analyze(f"{_VERDICT}{s.segment}", _analyze))
        return s._replace(inflight=True, reanalyze=False, asked_at=now)

    # -- inputs -------------------------------------------------------------------

    def on_frame(self, state: TurnAnalyzerState, frame: Frame, now: float) -> tuple[TurnAnalyzerState, Effects]:
        s = state
        t = type(frame)
        if t is InputAudioRawFrame:
            return s, _feed(frame, s.speaking, "silence")
        if t is VADUserStartedSpeakingFrame:
            secs = float(getattr(frame, "start_secs", 0.0))
            return s._replace(
                speaking=True, vad_stopped=False, segment_text=False, finalized=False, complete=False,
                stt_done=False, grace_done=False, fallback=False, segment=s.segment + 1, reanalyze=False,
            ), (*_ANALYZER_TIMERS, Touch(lambda r: r.update_vad_start_secs(secs)))
        if t is VADUserStoppedSpeakingFrame:
            stop_secs = float(getattr(frame, "stop_secs", 0.0))
            effects: list[Effect] = []
            stt_wait = s.stt_timeout - stop_secs
            stt_done = s.finalized or stt_wait <= 0
            if not stt_done:
                effects.append(Arm("stt", stt_wait))
            segment_text = _fresh(s.text_at, now - stop_secs)
            grace = _grace(segment_text, s.stt_known, s.stt_timeout, stop_secs)
            if grace is not None:
                effects.append(Arm("grace", grace))
            s = s._replace(
                speaking=False, vad_stopped=True, complete=False, fallback=False, stt_done=stt_done,
                segment_text=segment_text, grace_done=grace is None,
            )
            return self._ask(s, now, effects), tuple(effects)
        if t is TranscriptionFrame:
            if not _words(frame):
                return s, NOTHING
            finalized = bool(getattr(frame, "finalized", False)) or s.finalized
            if not s.speaking and not s.vad_stopped:
                # No VAD around this transcript: nothing to judge, count the quiet from it.
                return s._replace(
                    has_text=True, segment_text=True, finalized=finalized, complete=True, fallback=True,
                    stt_done=False, grace_done=True, text_at=now, cause="no-vad",
                ), (Disarm("stt"), Disarm("grace"), Arm("fallback", self.transcript_timeout))
            out: list[Effect] = [Disarm("grace")]
            if finalized:
                out.append(Disarm("stt"))
            return self._check(s._replace(
                has_text=True, segment_text=True, finalized=finalized, stt_done=s.stt_done or finalized,
                grace_done=True, text_at=now,
            ), out, waited=True)
        if t is InterimTranscriptionFrame:
            return (s._replace(finalized=False), NOTHING) if s.finalized else (s, NOTHING)
        if t is STTMetadataFrame:
            latency = float(getattr(frame, "ttfs_p99_latency", 0.0))
            return s._replace(stt_timeout=max(0.0, latency), stt_known=True), NOTHING
        if t is StartFrame:
            params = getattr(self.analyzer, "params", None)
            return s, (Push(SpeechControlParamsFrame(turn_params=params), both_ways=True),)
        return s, NOTHING

    def on_timer(self, state: TurnAnalyzerState, key: str, now: float) -> tuple[TurnAnalyzerState, Effects]:
        if key == "stt":
            return self._check(state._replace(stt_done=True), [])
        if key == "grace":
            return self._check(state._replace(grace_done=True), [])
        if key == "fallback":
            return self._check(state._replace(fallback=False, stt_done=True), [])
        return state, NOTHING

    def on_result(
        self, state: TurnAnalyzerState, key: str, value: Any, now: float
    ) -> tuple[TurnAnalyzerState, Effects]:
        s = state
        if key == "silence" or key == "flush":
            if isinstance(value, BaseException):
                log.warning("feeding the end-of-turn analyzer failed (%s); chunk skipped", value)
                return s, NOTHING
            if value is True:  # the stream's silence fallback: speech, then long enough a silence
                return self._check(s._replace(complete=True, fallback=False, cause="fallback"), [])
            return s, NOTHING
        if not key.startswith(_VERDICT):
            return s, NOTHING
        complete, probability, effects = verdict_effects(value, now - s.asked_at)
        current = key == f"{_VERDICT}{s.segment}"
        reanalyze = s.reanalyze
        s = s._replace(inflight=False, reanalyze=False)
        if reanalyze:
            s = self._ask(s, now, effects)
        if current and complete and not s.speaking:
            return self._check(s._replace(complete=True, cause="model", probability=probability), effects)
        return s, tuple(effects)

    def on_turn_started(self, state: TurnAnalyzerState, now: float) -> tuple[TurnAnalyzerState, Effects]:
        return state._replace(
            vad_stopped=False, has_text=False, segment_text=False, finalized=False, complete=False,
            stt_done=False, grace_done=False, fallback=False, text_at=_NEVER,
        ), _ANALYZER_TIMERS

    def on_turn_stopped(self, state: TurnAnalyzerState, now: float) -> tuple[TurnAnalyzerState, Effects]:
        return state._replace(
            vad_stopped=False, has_text=False, segment_text=False, finalized=False, complete=False,
            stt_done=False, grace_done=False, fallback=False, segment=state.segment + 1, reanalyze=False,
            text_at=_NEVER,
        ), (*_ANALYZER_TIMERS, Touch(_clear))


class ExternalState(NamedTuple):
    """Where an externally decided turn stands."""

    speaking: bool = False
    announced_elsewhere: bool = False
    has_text: bool = False
    interim_pending: bool = False
    turn_open: bool = False
    segment_text: bool = False
    stop_seen: bool = False
    stt_timeout: float = 0.0
    stt_known: bool = False
    text_at: float = _NEVER
    settling: bool = False


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
    resolves_proposals: ClassVar[bool] = True
    handles: ClassVar[frozenset[type[Frame]]] = frozenset({
        ProposedUserStartedSpeakingFrame, ProposedUserStoppedSpeakingFrame, UserStartedSpeakingFrame,
        UserStoppedSpeakingFrame, TranscriptionFrame, InterimTranscriptionFrame, VADUserStartedSpeakingFrame,
        VADUserStoppedSpeakingFrame, STTMetadataFrame,
    })

    def __post_init__(self) -> None:
        _non_negative("ExternalStop", timeout=self.timeout, settle=self.settle)

    def initial(self) -> ExternalState:
        return ExternalState()

    def _end(self, s: ExternalState, waited: bool = False) -> Effects:
        if waited and not s.segment_text:
            reason = TurnEndReason("external", "a stop decided upstream; the words of that speech did not come")
        else:
            reason = TurnEndReason("external", f"a stop decided upstream{WAITED_FOR_WORDS if waited else ''}",
                                   waited_for_words=waited)
        return (Disarm("grace"), Disarm("settle"), *stopped(False if s.announced_elsewhere else None, reason))

    def _check(self, s: ExternalState, waited: bool = False) -> tuple[ExternalState, Effects]:
        if not s.turn_open or s.speaking or not s.stop_seen:
            return s, NOTHING
        if not self.wait_for_transcript:
            return s, self._end(s)
        if not waited and (not s.segment_text or s.interim_pending or s.settling):
            return s, NOTHING
        if not s.has_text and not s.announced_elsewhere:
            return s, NOTHING  # a proposal with no words at all: the watchdog decides
        return s, self._end(s, waited)

    def on_frame(self, state: ExternalState, frame: Frame, now: float) -> tuple[ExternalState, Effects]:
        t = type(frame)
        s = state
        if t is InterimTranscriptionFrame:
            return (s, NOTHING) if s.interim_pending else (s._replace(interim_pending=True), NOTHING)
        if t is TranscriptionFrame:
            if not _words(frame):
                return s, NOTHING
            s = s._replace(has_text=True, interim_pending=False, segment_text=True, text_at=now)
            if s.turn_open and s.stop_seen and not s.speaking and self.wait_for_transcript:
                # The words came after the stop: more finals of the same speech may follow.
                return s._replace(settling=True), (Disarm("grace"), Arm("settle", self.settle))
            return self._check(s)
        if t is VADUserStartedSpeakingFrame:
            return s._replace(segment_text=False), NOTHING
        if t is VADUserStoppedSpeakingFrame:
            speech_end = now - float(getattr(frame, "stop_secs", 0.0))
            return s._replace(segment_text=s.segment_text and _fresh(s.text_at, speech_end)), NOTHING
        if t is ProposedUserStartedSpeakingFrame or t is UserStartedSpeakingFrame:
            return s._replace(
                speaking=True, announced_elsewhere=t is UserStartedSpeakingFrame, segment_text=False,
                stop_seen=False, settling=False,
            ), (Disarm("grace"), Disarm("settle"))
        if t is ProposedUserStoppedSpeakingFrame or t is UserStoppedSpeakingFrame:
            s, effects = self._check(s._replace(
                speaking=False, announced_elsewhere=t is UserStoppedSpeakingFrame, stop_seen=True,
            ))
            if not effects and s.turn_open and not s.settling:
                effects = (Arm("grace", s.stt_timeout if s.stt_known else self.timeout),)
            return s, effects
        if t is STTMetadataFrame:
            latency = float(getattr(frame, "ttfs_p99_latency", 0.0))
            return s._replace(stt_timeout=max(0.0, latency), stt_known=True), NOTHING
        return s, NOTHING

    def on_timer(self, state: ExternalState, key: str, now: float) -> tuple[ExternalState, Effects]:
        if key == "settle":
            return self._check(state._replace(settling=False), waited=True)
        if key == "grace":
            return self._check(state, waited=True)
        return state, NOTHING

    def on_turn_started(self, state: ExternalState, now: float) -> tuple[ExternalState, Effects]:
        return ExternalState(turn_open=True, stt_timeout=state.stt_timeout, stt_known=state.stt_known), (
            Disarm("grace"), Disarm("settle"),
        )

    def on_turn_stopped(self, state: ExternalState, now: float) -> tuple[ExternalState, Effects]:
        return ExternalState(stt_timeout=state.stt_timeout, stt_known=state.stt_known), (
            Disarm("grace"), Disarm("settle"),
        )


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

    def open_resource(self, sample_rate: int) -> Any:
        return self.inner.open_resource(sample_rate)

    def close_resource(self, resource: Any) -> None:
        self.inner.close_resource(resource)
