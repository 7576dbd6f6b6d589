"""Voice activity detection: Pipecat's VAD rules over Silero or WebRTC VAD.

Start with :class:`SileroVADAnalyzer`; see ``docs/audio.md`` for the state
machine, the volume gate and the choice between the models.
"""

from __future__ import annotations

from .analyzer import VADAnalyzer, WindowAnalysis
from .params import SMART_TURN_MIN_VOLUME, SMART_TURN_STOP_SECS, VADParams, VADState
from .silero import (
    SileroModel,
    SileroStream,
    SileroVADAnalyzer,
    analyze_batch,
    default_silero_model_path,
)
from .state_machine import VADStateMachine, window_count
from .volume import VolumeMeter, block_loudness, k_weighting, loudness_to_volume
from .webrtc import WebRTCVADAnalyzer

__all__ = [
    "SMART_TURN_MIN_VOLUME",
    "SMART_TURN_STOP_SECS",
    "SileroModel",
    "SileroStream",
    "SileroVADAnalyzer",
    "VADAnalyzer",
    "VADParams",
    "VADState",
    "VADStateMachine",
    "VolumeMeter",
    "WebRTCVADAnalyzer",
    "WindowAnalysis",
    "analyze_batch",
    "block_loudness",
    "default_silero_model_path",
    "k_weighting",
    "loudness_to_volume",
    "window_count",
]
