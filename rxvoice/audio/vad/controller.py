"""Voice activity as frames: a VAD analyzer's states turned into started/stopped frames.

Shared by the VAD operator (a stage of its own) and the user aggregator's
built-in VAD. The analyzer is the numeric part (it keeps audio and model
state); this module is the rest: only a change into SPEAKING or QUIET
matters, a user-speaking heartbeat goes out at most every
``speech_activity_period`` seconds, and when audio stops arriving mid-speech
(a muted microphone) the speech is taken to have stopped after
``audio_idle_timeout`` seconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from ..._seconds import check_seconds
from ...frames import Frame, UserSpeakingFrame, VADUserStartedSpeakingFrame, VADUserStoppedSpeakingFrame

__all__ = [
    "VADAnalyzerLike",
    "VADControllerState",
    "VADDecision",
    "VADSettings",
    "vad_audio_idle",
    "vad_step",
]


class VADAnalyzerLike(Protocol):
    """What the controller needs from an analyzer (see :mod:`rxvoice.audio.vad`)."""

    @property
    def params(self) -> Any: ...

    def analyze_audio(self, audio: Any) -> Any: ...


@dataclass(frozen=True)
class VADSettings:
    """Timing of the VAD's frames."""

    start_secs: float = 0.2
    stop_secs: float = 0.2
    speech_activity_period: float = 0.2
    audio_idle_timeout: float = 1.0

    def __post_init__(self) -> None:
        for name in ("start_secs", "stop_secs", "speech_activity_period", "audio_idle_timeout"):
            check_seconds(getattr(self, name), name)


class VADControllerState(NamedTuple):
    """Whether the user is speaking, when the last heartbeat went out."""

    speaking: bool = False
    last_activity: float = float("-inf")


class VADDecision(NamedTuple):
    """Frames to send (in order) and whether to (re)arm the audio-idle watch."""

    frames: tuple[Frame, ...] = ()
    arm_idle: bool = False
    disarm_idle: bool = False


_NONE = VADDecision()


def vad_step(
    state: VADControllerState, analyzer_state: Any, now: float, settings: VADSettings
) -> tuple[VADControllerState, VADDecision]:
    """React to the analyzer's state after one chunk of audio."""
    name = getattr(analyzer_state, "name", str(analyzer_state))
    watch = settings.audio_idle_timeout > 0
    if name == "SPEAKING":
        if not state.speaking:
            frames: tuple[Frame, ...] = (
                VADUserStartedSpeakingFrame(settings.start_secs, now), UserSpeakingFrame()
            )
            return VADControllerState(True, now), VADDecision(frames, arm_idle=watch)
        if now - state.last_activity >= settings.speech_activity_period - 1e-9:
            return VADControllerState(True, now), VADDecision((UserSpeakingFrame(),), arm_idle=watch)
        return state, VADDecision(arm_idle=watch)
    if name == "QUIET" and state.speaking:
        return VADControllerState(False, state.last_activity), VADDecision(
            (VADUserStoppedSpeakingFrame(settings.stop_secs, now),), disarm_idle=True
        )
    if state.speaking:
        return state, VADDecision(arm_idle=watch)
    return state, _NONE


def vad_audio_idle(
    state: VADControllerState, now: float, settings: VADSettings
) -> tuple[VADControllerState, VADDecision]:
    """No audio arrived for ``audio_idle_timeout`` seconds: speech that was going on has stopped."""
    if not state.speaking:
        return state, _NONE
    return VADControllerState(False, state.last_activity), VADDecision(
        (VADUserStoppedSpeakingFrame(settings.stop_secs, now),)
    )
