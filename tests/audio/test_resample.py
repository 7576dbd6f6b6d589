"""Resampling: frequency and amplitude kept, streaming equals one-shot."""

from __future__ import annotations

import numpy as np
import pytest

from rxvoice.audio import StreamResampler, resample
from rxvoice.errors import ConfigurationError


def _sine(rate: int, seconds: float, freq: float = 1000.0, amp: float = 0.5) -> np.ndarray:
    t = np.arange(int(rate * seconds)) / rate
    return (amp * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def _peak(x: np.ndarray, rate: int) -> tuple[float, float]:
    spectrum = np.abs(np.fft.rfft(x * np.hanning(x.shape[0])))
    k = int(np.argmax(spectrum))
    return k * rate / x.shape[0], float(np.sqrt(2 * np.mean(x.astype(np.float64) ** 2)))


@pytest.mark.parametrize("rate", [8000, 22050, 24000, 44100, 48000])
def test_sine_keeps_frequency_and_amplitude(rate: int) -> None:
    out = resample(_sine(rate, 1.0), rate, 16000)
    assert abs(out.shape[0] - 16000) <= 1
    core = out[800:-800]  # away from the edges
    freq, amp = _peak(core, 16000)
    assert abs(freq - 1000.0) < 2.0
    assert abs(amp - 0.5) < 0.005


@pytest.mark.parametrize("rate", [8000, 44100, 48000])
def test_streaming_in_odd_chunks_equals_one_shot(rate: int) -> None:
    x = _sine(rate, 0.7, freq=440.0) + _sine(rate, 0.7, freq=3100.0, amp=0.2)
    whole = resample(x, rate, 16000)
    stream = StreamResampler(rate, 16000)
    parts, pos, sizes = [], 0, [1, 7, 333, 160, 4097, 2]
    for i in range(10_000):
        n = sizes[i % len(sizes)]
        if pos >= x.shape[0]:
            break
        parts.append(stream.process(x[pos : pos + n]))
        pos += n
    parts.append(stream.flush())
    streamed = np.concatenate(parts)
    assert streamed.shape == whole.shape
    np.testing.assert_allclose(streamed, whole, atol=1e-5)


def test_same_rate_is_pass_through_and_int16_accepted() -> None:
    x = np.arange(-100, 100, dtype=np.int16)
    np.testing.assert_array_equal(resample(x, 16000, 16000), x / np.float32(32768))
    assert StreamResampler(16000, 16000).process(x.tobytes()).shape == (200,)
    assert resample(b"", 48000, 16000).shape == (0,)


def test_reset_starts_a_fresh_stream() -> None:
    x = _sine(48000, 0.1)
    r = StreamResampler(48000, 16000)
    first = np.concatenate([r.process(x), r.flush()])
    r.process(x[:1000])
    r.reset()
    again = np.concatenate([r.process(x), r.flush()])
    np.testing.assert_array_equal(first, again)


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [((0, 16000), {}), ((16000, 999_999), {}), ((16000.0, 8000), {}),
     ((48000, 16000), {"quality": "best"})],
)
def test_bad_configuration(args: tuple[object, object], kwargs: dict[str, str]) -> None:
    with pytest.raises(ConfigurationError):
        StreamResampler(*args, **kwargs)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        resample(np.zeros(10, np.float32), *args, **kwargs)  # type: ignore[arg-type]
