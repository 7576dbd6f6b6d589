"""Audio for the conversation layer: PCM conversion, resampling, per-stream conversion for analyzers, VAD, Smart Turn.

Everything here is synchronous and deterministic (time is counted in samples);
the Rx operators wrap these pieces. Subpackages: :mod:`rxvoice.audio.vad` and
:mod:`rxvoice.audio.turn`.
"""

from __future__ import annotations

from .convert import FALLBACK_RATE, AudioConverter
from .pcm import (
    FLOAT_HEADROOM,
    INT16_SCALE,
    AudioInput,
    downmix_pcm16,
    float_to_pcm16,
    pcm16_to_float32,
    to_float32_mono,
)
from .resample import StreamResampler, resample

__all__ = [
    "FALLBACK_RATE",
    "FLOAT_HEADROOM",
    "INT16_SCALE",
    "AudioConverter",
    "AudioInput",
    "StreamResampler",
    "downmix_pcm16",
    "float_to_pcm16",
    "pcm16_to_float32",
    "resample",
    "to_float32_mono",
]
