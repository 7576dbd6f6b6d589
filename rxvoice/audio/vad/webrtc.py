"""WebRTC VAD behind the common analyzer: tiny, fast, no model file.

``webrtcvad`` (PyPI ``webrtcvad-wheels``) is the GMM voice detector from
WebRTC. It costs a few microseconds per frame against Silero's ~0.1 ms, but it
is far less accurate in noise and says only yes/no, so its "confidence" is
1.0 or 0.0 and the ``confidence`` threshold of :class:`VADParams` has no
middle ground. Choose it for very many sessions per core or where onnxruntime
is unwelcome; choose Silero otherwise.
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar

import numpy as np
import webrtcvad

from ...errors import ConfigurationError
from ..pcm import INT16_SCALE, Float32Array
from .analyzer import VADAnalyzer
from .params import VADParams

__all__ = ["WebRTCVADAnalyzer"]

_log = logging.getLogger("rxvoice.audio.vad")
_FRAME_MS = (10, 20, 30)


class WebRTCVADAnalyzer(VADAnalyzer):
    """VAD on webrtcvad: 10, 20 or 30 ms frames at 8, 16, 32 or 48 kHz.

    Args:
        sample_rate: 8000, 16000, 32000 or 48000.
        mode: aggressiveness 0 (least) to 3 (most eager to call audio non-speech).
        frame_ms: analysis window, 10, 20 or 30 ms.
        params: the common :class:`VADParams` (only ``confidence`` > 0 matters:
            every frame reads 1.0 or 0.0).
    """

    supported_sample_rates: ClassVar[tuple[int, ...]] = (8000, 16000, 32000, 48000)

    def __init__(
        self,
        sample_rate: int = 16000,
        *,
        mode: int = 3,
        frame_ms: int = 30,
        params: VADParams | None = None,
    ) -> None:
        """Create the detector.

        Raises:
            ConfigurationError: an unsupported rate, mode or frame length.
        """
        if isinstance(mode, bool) or mode not in (0, 1, 2, 3):
            raise ConfigurationError(f"webrtcvad mode must be 0, 1, 2 or 3, got {mode!r}")
        if isinstance(frame_ms, bool) or frame_ms not in _FRAME_MS:
            raise ConfigurationError(f"frame_ms must be 10, 20 or 30, got {frame_ms!r}")
        self._mode = mode
        self._frame_ms = frame_ms
        self._vad: Any = webrtcvad.Vad(mode)
        super().__init__(sample_rate, params)

    @property
    def mode(self) -> int:
        """The aggressiveness, 0..3."""
        return self._mode

    @property
    def frame_ms(self) -> int:
        """The frame length in milliseconds."""
        return self._frame_ms

    def _window_samples_for(self, sample_rate: int) -> int:
        return sample_rate * self._frame_ms // 1000

    def _window_confidence(self, window: Float32Array) -> float:
        pcm = np.clip(np.rint(window * INT16_SCALE), -32768, 32767).astype("<i2").tobytes()
        try:
            return 1.0 if self._vad.is_speech(pcm, self._sample_rate) else 0.0
        except Exception as exc:  # webrtcvad raises a bare Error
            _log.warning("webrtcvad failed, confidence 0: %s", exc)
            return 0.0

    def _reset_model(self) -> None:
        self._vad = webrtcvad.Vad(self._mode)
