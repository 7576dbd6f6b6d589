"""The end-of-turn buffer (sample-count timing), and the Smart Turn stream on top of it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rxvoice.audio.turn import (
    EndOfTurnBuffer,
    EndOfTurnState,
    SmartTurnAnalyzer,
    SmartTurnParams,
)
from rxvoice.errors import ConfigurationError, InvalidAudioError

INC, COMP = EndOfTurnState.INCOMPLETE, EndOfTurnState.COMPLETE
CHUNK = 320  # 20 ms at 16 kHz


def chunk(value: float, n: int = CHUNK) -> np.ndarray:
    return np.full(n, value, dtype=np.float32)


def test_defaults_and_validation() -> None:
    p = SmartTurnParams()
    assert (p.stop_secs, p.pre_speech_ms, p.max_duration_secs) == (3.0, 500.0, 8.0)
    for bad in ({"stop_secs": -1}, {"pre_speech_ms": float("nan")}, {"max_duration_secs": 0},
                {"stop_secs": "3"}):
        with pytest.raises(ConfigurationError):
            SmartTurnParams(**bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        EndOfTurnBuffer(16000, {"stop_secs": 3})  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        EndOfTurnBuffer(16000).update_vad_start_secs(-0.1)
    with pytest.raises(ConfigurationError):
        EndOfTurnBuffer(0)
    with pytest.raises(InvalidAudioError):
        EndOfTurnBuffer().append_audio(b"\x00", True)


def test_segment_starts_before_speech_by_pre_speech_and_vad_start() -> None:
    buf = EndOfTurnBuffer(16000, vad_start_secs=0.2)
    for i in range(100):  # 2 s of pre-speech, each chunk tagged with its index
        assert buf.append_audio(chunk(i / 1000), False) is INC
    assert not buf.speech_triggered
    buf.append_audio(chunk(0.5), True)  # speech confirmed at t = 2.02 s
    assert buf.speech_triggered
    seg = buf.segment()
    # Chunks whose arrival time is ≥ 2.02 − 0.7 = 1.32 s: arrivals 1.32 .. 2.00 s.
    assert seg.shape[0] == 35 * CHUNK + CHUNK
    assert seg[0] == np.float32(65 / 1000) and seg[-1] == np.float32(0.5)


def test_silence_fallback_completes_and_clears() -> None:
    buf = EndOfTurnBuffer(16000)
    buf.append_audio(chunk(0.1), True)
    states = [buf.append_audio(chunk(0.0), False) for _ in range(150)]  # exactly 3 s
    assert states == [INC] * 149 + [COMP]
    assert not buf.speech_triggered and buf.buffered_samples == 0
    # Speech resets the silence count.
    buf.append_audio(chunk(0.1), True)
    for _ in range(149):
        buf.append_audio(chunk(0.0), False)
    assert buf.append_audio(chunk(0.1), True) is INC
    assert buf.append_audio(chunk(0.0), False) is INC


def test_pre_speech_is_trimmed_to_11_5_seconds() -> None:
    buf = EndOfTurnBuffer(16000)
    for _ in range(50 * 20):  # 20 s of silence
        buf.append_audio(chunk(0.0), False)
    # Chunks whose arrival (end) time is within 11.5 s are kept: one more chunk.
    assert buf.buffered_samples == round(11.5 * 16000) + CHUNK


def test_segment_keeps_the_last_max_duration() -> None:
    buf = EndOfTurnBuffer(16000)
    for i in range(50 * 10):  # 10 s of speech
        buf.append_audio(chunk(i / 1e4), True)
    seg = buf.segment()
    assert seg.shape[0] == 8 * 16000 and seg[-1] == np.float32(499 / 1e4)
    buf.clear()
    assert buf.segment().shape == (0,)


def test_other_rates_are_resampled_to_16k() -> None:
    buf = EndOfTurnBuffer(8000)
    for _ in range(50):
        buf.append_audio(np.zeros(160, np.float32) + 0.01, True)
    assert abs(buf.segment().shape[0] - 16000) <= 2


def test_timing_is_by_samples_not_chunking() -> None:
    rng = np.random.default_rng(0)
    audio = (rng.standard_normal(16000 * 4) * 0.1).astype(np.float32)
    speech = np.zeros(audio.shape[0], bool)
    speech[16000 * 2 :] = True
    a, b = EndOfTurnBuffer(), EndOfTurnBuffer()
    for i in range(0, audio.shape[0], 320):
        a.append_audio(audio[i : i + 320], bool(speech[i]))
    for i in range(0, audio.shape[0], 1600):
        b.append_audio(audio[i : i + 1600], bool(speech[i]))
    np.testing.assert_array_equal(a.segment(), b.segment())


def test_stream_judges_the_first_booking_turn(smart_turn_model: Path, booking: np.ndarray) -> None:
    """Nothing buffered: no model run; "Boston, next Friday." then 0.2 s: complete, and the buffer is cleared."""
    stream = SmartTurnAnalyzer(smart_turn_model).open_stream(16000)
    assert stream.analyze() == (False, None) and stream.analyses == 0
    end = round(5.596 * 16000)
    for i in range(0, end, 320):
        is_speech = 0.5 * 16000 <= i < 5.396 * 16000
        stream.append_audio(booking[i : min(i + 320, end)].tobytes(), is_speech)
    complete, probability = stream.analyze()
    assert complete and probability is not None and probability > 0.5
    assert not stream.buffer.speech_triggered and stream.analyses == 1
