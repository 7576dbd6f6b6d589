"""PCM conversion: every accepted form, every refused one."""

from __future__ import annotations

import numpy as np
import pytest

from rxvoice.audio import float_to_pcm16, pcm16_to_float32, to_float32_mono
from rxvoice.errors import InvalidAudioError


def test_int16_scaling_matches_pipecat_scenario_118() -> None:
    ints = np.array([0, 16384, -32768, 32767], dtype=np.int16)
    expected = np.array([0.0, 0.5, -1.0, 32767 / 32768], dtype=np.float32)
    np.testing.assert_array_equal(to_float32_mono(ints), expected)
    np.testing.assert_array_equal(to_float32_mono(ints.astype("<i2").tobytes()), expected)
    np.testing.assert_allclose(to_float32_mono(ints)[3], 0.99997, atol=1e-5)


def test_bytes_fast_path_and_round_trip() -> None:
    ints = np.arange(-32768, 32768, 7, dtype=np.int16)
    samples = pcm16_to_float32(ints.tobytes())
    assert samples.dtype == np.float32
    assert float_to_pcm16(samples) == ints.tobytes()
    out = np.empty(ints.shape[0], dtype=np.float32)
    assert pcm16_to_float32(ints.tobytes(), out=out) is out


def test_bytearray_and_memoryview() -> None:
    data = np.array([1, -1, 300], dtype="<i2").tobytes()
    for form in (bytearray(data), memoryview(data)):
        np.testing.assert_array_equal(to_float32_mono(form), to_float32_mono(data))


def test_float_input_passes_through_and_float64_converts() -> None:
    x = np.linspace(-1, 1, 101, dtype=np.float32)
    assert to_float32_mono(x) is x
    y = to_float32_mono(x.astype(np.float64))
    assert y.dtype == np.float32
    np.testing.assert_array_equal(y, x)


def test_small_overshoot_is_clipped() -> None:
    x = np.array([0.5, 1.2, -1.7], dtype=np.float32)
    np.testing.assert_array_equal(to_float32_mono(x), [0.5, 1.0, -1.0])


def test_downmix_averages_channels() -> None:
    frames = np.array([[0.5, -0.5], [1.0, 0.0], [0.2, 0.4]], dtype=np.float32)
    np.testing.assert_allclose(to_float32_mono(frames), [0.0, 0.5, 0.3], atol=1e-7)
    interleaved = (frames * 32767).astype("<i2").tobytes()
    np.testing.assert_allclose(to_float32_mono(interleaved, num_channels=2), [0, 0.5, 0.3],
                               atol=1e-4)
    np.testing.assert_allclose(to_float32_mono(frames.ravel(), num_channels=2), [0, 0.5, 0.3],
                               atol=1e-7)


def test_expected_length_and_empty() -> None:
    assert to_float32_mono(b"", allow_empty=True).shape == (0,)
    with pytest.raises(InvalidAudioError, match="empty"):
        to_float32_mono(b"")
    with pytest.raises(InvalidAudioError, match="exactly 512"):
        to_float32_mono(np.zeros(511, np.float32), expected_samples=512)


@pytest.mark.parametrize(
    ("audio", "kwargs", "message"),
    [
        (b"\x00\x01\x02", {}, "even byte count"),
        (bytes(6), {"num_channels": 2}, "whole number of 2-channel"),
        (np.zeros(4, np.int32), {}, "int16, float32 or float64"),
        (np.zeros(4, np.uint8), {}, "int16, float32 or float64"),
        (np.zeros(4, np.complex64), {}, "int16, float32 or float64"),
        (np.zeros((2, 2, 2), np.float32), {}, "3 dimensions"),
        (np.array(0.5, np.float32), {}, "0 dimensions"),
        (np.array([0.1, np.nan], np.float32), {}, "NaN"),
        (np.array([0.1, np.inf]), {}, "infinite"),
        (np.array([0.1, -np.inf]), {}, "infinite"),
        (np.array([1000.0, 0.0]), {}, "int16-scaled"),
        (np.array([2.5, 0.0]), {}, "peak of 2.5"),
        (np.zeros((10, 40), np.float32), {}, "40 channels"),
        (np.zeros(5, np.float32), {"num_channels": 2}, "interleaved"),
        ([0.1, 0.2], {}, "numpy array"),
        (np.zeros(4, np.float32), {"num_channels": 0}, "num_channels"),
    ],
)
def test_refused_input(audio: object, kwargs: dict[str, int], message: str) -> None:
    with pytest.raises(InvalidAudioError, match=message):
        to_float32_mono(audio, **kwargs)  # type: ignore[arg-type]


def test_errors_are_value_errors() -> None:
    with pytest.raises(ValueError):
        pcm16_to_float32(b"\x00")
