"""Stop strategies: when is the user's turn over, and when to answer?

Every stop strategy here waits for the words of the speech that just ended
before it answers. A VAD stop or a model's verdict can arrive before the
speech-to-text service has delivered the transcript of the last phrase;
answering then would give the model the turn without its last words (a bug
users report against the reference systems). So a strategy that saw speech
(a VAD start) waits for a transcript that came after it, for as long as the
service's published latency (``STTMetadataFrame.ttfs_p99_latency``, or
:data:`TRANSCRIPT_GRACE` when the service published none).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple

from ..errors import ConfigurationError
from ..frames import (
    Frame,
    InterimTranscriptionFrame,
    ProposedUserStartedSpeakingFrame,
    ProposedUserStoppedSpeakingFrame,
    STTMetadataFrame,
    TranscriptionFrame,
    UserStartedSpeakingFrame,
    UserStoppedSpeakingFrame,
    UserTurnInferenceCompletedFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from .strategy import NOTHING, Arm, Disarm, Effects, Finalize, StopStrategy, Strategy, stopped

__all__ = [
    "TRANSCRIPT_GRACE",
    "Deferred",
    "ExternalCompletionStop",
    "ExternalStop",
    "SpeechTimeoutState",
    "SpeechTimeoutStop",
]

TRANSCRIPT_GRACE = 1.0
"""Seconds after the end of speech to wait for its transcript when the STT published no latency."""


def _words(frame: Frame) -> bool:
    text = getattr(frame, "text", "")
    return isinstance(text, str) and text.strip() != ""


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

    def _check(self, s: SpeechTimeoutState, effects: Effects) -> tuple[SpeechTimeoutState, Effects]:
        if (
            not s.speaking and s.speech_done and s.stt_done and s.grace_done
            and (s.has_text or not self.wait_for_transcript)
        ):
            return s, (*effects, *stopped())
        return s, effects

    def on_frame(
        self, state: SpeechTimeoutState, frame: Frame, now: float
    ) -> tuple[SpeechTimeoutState, Effects]:
        s = state
        t = type(frame)
        if t is VADUserStartedSpeakingFrame:
            return SpeechTimeoutState(
                True, False, s.has_text, False, False, False, False, False, s.stt_timeout, s.stt_known
            ), _CLEAR_TIMERS
        if t is VADUserStoppedSpeakingFrame:
            stop_secs = float(getattr(frame, "stop_secs", 0.0))
            effects: list[Arm | Disarm] = [Arm("speech", self.user_speech_timeout)]
            stt_wait = s.stt_timeout - stop_secs
            stt_done = s.finalized or stt_wait <= 0
            if not stt_done:
                effects.append(Arm("stt", stt_wait))
            grace_done = s.segment_text
            if not grace_done:
                grace = (s.stt_timeout if s.stt_known else TRANSCRIPT_GRACE) - stop_secs
                grace_done = grace <= 0
                if not grace_done:
                    effects.append(Arm("grace", grace))
            return SpeechTimeoutState(
                False, True, s.has_text, s.segment_text, s.finalized, False, stt_done, grace_done,
                s.stt_timeout, s.stt_known,
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
                s.stt_timeout, s.stt_known,
            ), tuple(out))
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


class ExternalState(NamedTuple):
    """Where an externally decided turn stands."""

    speaking: bool = False
    announced_elsewhere: bool = False
    has_text: bool = False
    interim_pending: bool = False
    turn_open: bool = False


@dataclass(frozen=True)
class ExternalStop(StopStrategy[ExternalState]):
    """Turn ends decided elsewhere: a proposed stop, or a user-stopped frame already announced.

    The turn ends when the user stopped and a final transcript is in (no
    interim outstanding); a stop that came before its transcript ends the turn
    ``timeout`` seconds after the last final transcript.
    """

    timeout: float = 0.5
    wait_for_transcript: bool = True
    enable_user_speaking_frames: bool = True
    resolves_proposals: ClassVar[bool] = True
    handles: ClassVar[frozenset[type[Frame]]] = frozenset({
        ProposedUserStartedSpeakingFrame, ProposedUserStoppedSpeakingFrame, UserStartedSpeakingFrame,
        UserStoppedSpeakingFrame, TranscriptionFrame, InterimTranscriptionFrame,
    })

    def __post_init__(self) -> None:
        _non_negative("ExternalStop", timeout=self.timeout)

    def initial(self) -> ExternalState:
        return ExternalState()

    def _check(self, s: ExternalState) -> tuple[ExternalState, Effects]:
        if not s.turn_open or s.speaking:
            return s, NOTHING
        if self.wait_for_transcript and (not s.has_text or s.interim_pending):
            return s, NOTHING
        return s, stopped(False if s.announced_elsewhere else None)

    def on_frame(self, state: ExternalState, frame: Frame, now: float) -> tuple[ExternalState, Effects]:
        t = type(frame)
        _, _, has_text, interim, turn_open = state
        if t is InterimTranscriptionFrame:
            return ExternalState(state[0], state[1], has_text, True, turn_open), NOTHING
        if t is TranscriptionFrame:
            if not _words(frame):
                return state, NOTHING
            return ExternalState(state[0], state[1], True, False, turn_open), (Arm("tick", self.timeout),)
        if t is ProposedUserStartedSpeakingFrame:
            return ExternalState(True, False, has_text, interim, turn_open), NOTHING
        if t is UserStartedSpeakingFrame:
            return ExternalState(True, True, has_text, interim, turn_open), NOTHING
        if t is ProposedUserStoppedSpeakingFrame:
            return self._check(ExternalState(False, False, has_text, interim, turn_open))
        if t is UserStoppedSpeakingFrame:
            return self._check(ExternalState(False, True, has_text, interim, turn_open))
        return state, NOTHING

    def on_timer(self, state: ExternalState, key: str, now: float) -> tuple[ExternalState, Effects]:
        return self._check(state)

    def on_turn_started(self, state: ExternalState, now: float) -> tuple[ExternalState, Effects]:
        return ExternalState(turn_open=True), (Disarm("tick"),)

    def on_turn_stopped(self, state: ExternalState, now: float) -> tuple[ExternalState, Effects]:
        return ExternalState(), (Disarm("tick"),)


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
        return None, (Finalize(),)


def _no_finalize(effects: Effects) -> Effects:
    return tuple(e for e in effects if not isinstance(e, Finalize))


@dataclass(frozen=True)
class Deferred(StopStrategy[Any]):
    """Wraps a stop strategy so it only triggers early inference, never ends the turn.

    The wrapped strategy's verdict writes what the user said so far and runs
    the model; another strategy (a judge) decides when the turn is over.
    """

    inner: Strategy[Any] = field(default=None)  # type: ignore[assignment]

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
