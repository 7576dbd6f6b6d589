"""How a recording is analyzed: the VAD, the stop strategy and the timings of a run (:class:`Setup`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..audio.recommended import STOP_PARAMETERS, VAD_PARAMETERS, recommended_turn_setup
from ..audio.turn import SmartTurnAnalyzer
from ..audio.vad import (
    VADParams,
)
from ..errors import ConfigurationError
from ..turns import SpeechTimeoutStop, TurnAnalyzerStop
from ..turns.strategy import StopStrategy
from ._common import CLIError

__all__ = ["STOP_CHOICES", "VAD_CHOICES", "Setup", "stop_strategy"]

STOP_CHOICES = ("smart-turn", "speech-timeout", "smart-turn-only")
VAD_CHOICES = ("silero", "webrtc")


@dataclass(frozen=True)
class Setup:
    """How a recording is analyzed.

    Attributes:
        vad: ``"silero"`` or ``"webrtc"``.
        stop: ``"smart-turn"`` (the recommended setup:
            :func:`~rxvoice.audio.recommended.recommended_turn_setup`, a
            :class:`~rxvoice.turns.FusedTurnStop` over Smart Turn),
            ``"smart-turn-only"`` (:class:`~rxvoice.turns.TurnAnalyzerStop`:
            the model's verdicts alone, with the same VAD) or
            ``"speech-timeout"`` (:class:`~rxvoice.turns.SpeechTimeoutStop`).
        model: the Smart Turn model file (needed for ``"smart-turn"``).
        stt_delay: the STT's latency after the end of speech.
        model_latency: virtual seconds each Smart Turn verdict takes.
        speech_timeout: ``SpeechTimeoutStop.user_speech_timeout``.
        tail: seconds of silence played after the recording, so its last turn can end.
        realtime: pace the run with the wall clock on asyncio (Smart Turn at its real speed;
            ``model_latency`` is then not used).
        overrides: ``(name, value)`` pairs: VAD parameters (``stop_secs``, ``min_volume``, ...)
            and stop-strategy parameters (``unsure_timeout``, ...) to use instead of the defaults.
    """

    vad: str = "silero"
    stop: str = "smart-turn"
    model: Path | None = None
    stt_delay: float = 0.3
    model_latency: float = 0.05
    speech_timeout: float = 0.6
    tail: float = 4.0
    realtime: bool = False
    overrides: tuple[tuple[str, float], ...] = ()

    def __post_init__(self) -> None:
        for name, _ in self.overrides:
            if name not in VAD_PARAMETERS and name not in self.strategy_parameters():
                known = ", ".join(sorted(VAD_PARAMETERS | self.strategy_parameters()))
                raise CLIError(f"--stop {self.stop} has no parameter {name!r} (it has {known})")

    def strategy_parameters(self) -> frozenset[str]:
        """The stop-strategy parameters :attr:`overrides` may set."""
        if self.stop == "smart-turn":
            return STOP_PARAMETERS
        if self.stop == "smart-turn-only":
            return frozenset({"transcript_timeout"})
        return frozenset({"user_speech_timeout"})

    def _vad_overrides(self) -> dict[str, Any]:
        return {k: v for k, v in self.overrides if k in VAD_PARAMETERS}

    def _stop_overrides(self) -> dict[str, Any]:
        return {k: v for k, v in self.overrides if k not in VAD_PARAMETERS}

    @property
    def vad_params(self) -> VADParams:
        """The recommended setup's VAD for Smart Turn setups (see ``recommended_turn_setup``), else the defaults."""
        try:
            if self.stop in ("smart-turn", "smart-turn-only"):
                return recommended_turn_setup(smart_turn=False, **self._vad_overrides()).vad_params
            return VADParams(**self._vad_overrides())
        except ConfigurationError as exc:
            raise CLIError(str(exc)) from None

    def describe(self) -> dict[str, Any]:
        """The settings, for JSON."""
        return {
            "vad": self.vad,
            "vad_stop_secs": self.vad_params.stop_secs,
            "stop": self.stop,
            "smart_turn_model": str(self.model) if self.model else None,
            "model_latency": self.model_latency if self.stop == "smart-turn" and not self.realtime else None,
            "speech_timeout": self.speech_timeout if self.stop == "speech-timeout" else None,
            "stt_delay": self.stt_delay,
            "tail": self.tail,
            "realtime": self.realtime,
        }


def stop_strategy(setup: Setup) -> StopStrategy[Any]:
    """The setup's stop strategy: for ``smart-turn``, the recommended one (``recommended_turn_setup``)."""
    try:
        if setup.stop in ("smart-turn", "smart-turn-only"):
            if setup.model is None:
                raise CLIError(f"--stop {setup.stop} needs the Smart Turn model (see `rxvoice model where`)")
            if setup.stop == "smart-turn":
                overrides: dict[str, Any] = dict(setup.overrides)
                return recommended_turn_setup(setup.model, **overrides).stop
            return TurnAnalyzerStop(SmartTurnAnalyzer(setup.model), **setup._stop_overrides())
        timeout: dict[str, Any] = {"user_speech_timeout": setup.speech_timeout, **setup._stop_overrides()}
        return SpeechTimeoutStop(**timeout)
    except ConfigurationError as exc:
        raise CLIError(str(exc)) from None
