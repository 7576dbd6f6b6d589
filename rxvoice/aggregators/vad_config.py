"""Running a VAD inside the user aggregator (``Pair(vad=VADConfig(analyzer))``)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..audio.vad.controller import VADControllerState, VADDecision, VADSettings, vad_audio_idle, vad_step
from ..errors import ConfigurationError, RxVoiceError
from ..frames import DOWN, InputAudioRawFrame
from ..pipeline.deadline import Deadlines

if TYPE_CHECKING:
    from ..pipeline.shell import StageShell

__all__ = ["VADConfig"]

log = logging.getLogger("rxvoice.aggregators.vad")


@dataclass(frozen=True)
class VADConfig:
    """A VAD run by the user aggregator itself.

    Use it when the aggregator is the only thing that needs voice activity;
    where a transport, a recorder or an interruption decision needs it too,
    put the VAD operator after the input instead (running both analyzes the
    audio twice). Muted audio never reaches the analyzer.

    Args:
        analyzer: A VAD analyzer (:class:`rxvoice.audio.vad.SileroVADAnalyzer`,
            :class:`rxvoice.audio.vad.WebRTCVADAnalyzer`). One analyzer keeps
            one stream's state: give each pair its own. Audio at another
            rate or in stereo is converted as the VAD operator converts it
            (resampled, averaged to mono), through the analyzer's
            ``converter()``; an analyzer of your own without one gets the
            frames' bytes unchanged.
        audio_idle_timeout: With the user speaking and no audio arriving at
            all for this long, take the speech to have stopped (a microphone
            muted mid-utterance). ``0`` turns the watch off.
        speech_activity_period: At most one user-speaking heartbeat per this
            many seconds.
    """

    analyzer: Any
    audio_idle_timeout: float = 1.0
    speech_activity_period: float = 0.2

    def __post_init__(self) -> None:
        if self.analyzer is None or not hasattr(self.analyzer, "analyze_audio"):
            raise ConfigurationError(f"VADConfig needs a VAD analyzer, got {self.analyzer!r}")
        VADSettings(audio_idle_timeout=self.audio_idle_timeout, speech_activity_period=self.speech_activity_period)

    def settings(self) -> VADSettings:
        """The timing the analyzer's parameters and this config imply."""
        params = getattr(self.analyzer, "params", None)
        return VADSettings(
            start_secs=float(getattr(params, "start_secs", 0.2)),
            stop_secs=float(getattr(params, "stop_secs", 0.2)),
            speech_activity_period=self.speech_activity_period,
            audio_idle_timeout=self.audio_idle_timeout,
        )

    def open(self, shell: StageShell) -> _InlineVAD:
        """Start the VAD for one session of the aggregator."""
        return _InlineVAD(self, shell)


class _InlineVAD:
    """The VAD of one aggregator session: its frames are fed back into the aggregator, and sent upstream."""

    def __init__(self, config: VADConfig, shell: StageShell) -> None:
        self.analyzer = config.analyzer
        self.settings = config.settings()
        self.shell = shell
        self.port = shell.port
        self.state = VADControllerState()
        self.idle: Deadlines[str] = Deadlines(shell.port, self._audio_idle)
        # The VAD operator's conversion (any rate, any channel count), which every rxvoice analyzer offers; an
        # analyzer of the app's without one gets the frames' bytes as they are.
        make = getattr(self.analyzer, "converter", None)
        self.converter: Any = make() if callable(make) else None

    def analyze(self, frame: InputAudioRawFrame) -> None:
        try:
            converter = self.converter
            analyzer_state = self.analyzer.analyze_audio(frame.audio if converter is None else converter.convert(frame))
        except RxVoiceError as exc:
            self.port.report_error(exc, frame)
            return
        now = self.port.time()
        self.state, decision = vad_step(self.state, analyzer_state, now, self.settings)
        self._apply(decision, now)

    def _apply(self, decision: VADDecision, now: float) -> None:
        port = self.port
        for frame in decision.frames:
            port.requeue(frame, DOWN)
            port.push_up(frame)
        if decision.disarm_idle:
            self.idle.disarm("audio")
        if decision.arm_idle:  # every speech chunk moves the deadline; one scheduled check follows it
            self.idle.arm("audio", self.settings.audio_idle_timeout, now)

    def _audio_idle(self, _key: str, now: float) -> None:
        self.state, decision = vad_audio_idle(self.state, now, self.settings)
        self._apply(decision, now)

    def close(self) -> None:
        self.idle.close()
        closer = getattr(self.analyzer, "reset", None)
        if callable(closer):
            try:
                closer()
            except Exception:
                log.exception("resetting the VAD analyzer failed; contained")
