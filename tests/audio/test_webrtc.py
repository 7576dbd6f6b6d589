"""WebRTC VAD behind the common analyzer."""

from __future__ import annotations

import numpy as np
import pytest

from rxvoice.audio import resample
from rxvoice.audio.vad import VADParams, VADState, WebRTCVADAnalyzer
from rxvoice.errors import ConfigurationError


def test_speech_and_silence(booking: np.ndarray) -> None:
    vad = WebRTCVADAnalyzer(16000, params=VADParams(min_volume=0.0))
    assert vad.window_samples == 480
    assert vad.analyze_audio(np.zeros(16000, np.float32)) is VADState.QUIET
    records = vad.analyze_windows(booking[: 16000 * 6])
    assert {r.confidence for r in records} == {0.0, 1.0}
    vad.reset()
    states = [vad.analyze_audio(booking[i : i + 480]) for i in range(0, 16000 * 6, 480)]
    assert VADState.SPEAKING in states and states[-1] is not VADState.STARTING


@pytest.mark.parametrize(("rate", "frame_ms"), [(8000, 10), (32000, 20), (48000, 30)])
def test_rates_and_frames(booking: np.ndarray, rate: int, frame_ms: int) -> None:
    audio = resample(booking[: 16000 * 3], 16000, rate)
    vad = WebRTCVADAnalyzer(rate, mode=1, frame_ms=frame_ms, params=VADParams(min_volume=0))
    assert vad.window_samples == rate * frame_ms // 1000
    records = vad.analyze_windows(audio)
    assert len(records) == audio.shape[0] // vad.window_samples
    vad.reset()
    assert vad.state is VADState.QUIET


@pytest.mark.parametrize(
    "kwargs", [{"mode": 4}, {"mode": -1}, {"frame_ms": 15}, {"sample_rate": 22050}]
)
def test_bad_configuration(kwargs: dict[str, int]) -> None:
    with pytest.raises(ConfigurationError):
        WebRTCVADAnalyzer(**kwargs)
