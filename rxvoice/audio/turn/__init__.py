"""Smart Turn v3.2 end-of-turn detection: features, model lookup, kernel choice, inference, buffering.

See ``docs/audio.md`` for where the model comes from and how a turn is judged.
"""

from __future__ import annotations

from .batcher import SmartTurnBatcher
from .detector import TURN_DETECTOR_EVENTS, TurnTakingDetector
from .end_of_turn import EndOfTurnBuffer
from .features import WhisperFeatures, fit_window, mel_filterbank, whisper_features
from .kernels import CHECK_PROBABILITY, CHECK_TOLERANCE, KernelCheck, KernelChoice, check_window, choose_kernels
from .model import (
    ENV_VAR,
    MODEL_FILENAME,
    MODEL_SHA256,
    cache_dir,
    cached_model_path,
    find_model,
    install_model,
    sha256_file,
)
from .params import COMPLETE_THRESHOLD, EndOfTurnState, SmartTurnParams
from .smart_turn import SmartTurnAnalyzer
from .stream import SmartTurnStream

__all__ = [
    "CHECK_PROBABILITY",
    "CHECK_TOLERANCE",
    "COMPLETE_THRESHOLD",
    "ENV_VAR",
    "MODEL_FILENAME",
    "MODEL_SHA256",
    "TURN_DETECTOR_EVENTS",
    "EndOfTurnBuffer",
    "EndOfTurnState",
    "KernelCheck",
    "KernelChoice",
    "SmartTurnAnalyzer",
    "SmartTurnBatcher",
    "SmartTurnParams",
    "SmartTurnStream",
    "TurnTakingDetector",
    "WhisperFeatures",
    "cache_dir",
    "cached_model_path",
    "check_window",
    "choose_kernels",
    "find_model",
    "fit_window",
    "install_model",
    "mel_filterbank",
    "sha256_file",
    "whisper_features",
]
