"""PCM conversion: every audio input becomes float32 mono in [-1, 1].

The models (Silero, Smart Turn) and the loudness meter all want float32 mono
samples scaled like int16 / 32768. Audio arrives as 16-bit little-endian PCM
bytes (transport frames), as numpy int16 arrays, or as float arrays from files
and resamplers. This module is the one place that turns all of them into the
same thing, and the one place that refuses what cannot be audio, with an
:class:`~rxvoice.errors.InvalidAudioError` that says what was wrong.

Rules:

* **Bytes** are 16-bit little-endian PCM, interleaved when ``num_channels`` > 1.
  An odd byte count, or one that is not a whole number of frames, is refused.
* **int16 arrays** are divided by 32768 (so -32768 → -1.0 and 32767 →
  0.99997), exactly as Pipecat and Silero do.
* **float32 / float64 arrays** are taken as already scaled to [-1, 1]. Values
  up to :data:`FLOAT_HEADROOM` (2.0) in magnitude are accepted and clipped to
  [-1, 1]: resamplers and filters overshoot a little around full-scale peaks,
  and that is still audio. Anything louder is refused, because it almost
  always means int16-scaled samples stored as floats (a missing ``/ 32768``),
  which would otherwise reach the models as noise at +90 dB.
* NaN and ±inf are refused: one NaN poisons a recurrent model state for good.
* Other dtypes (int32, uint8, int64, bool, complex, ...) are refused: their
  scaling is ambiguous, so the caller must convert explicitly.
* **Multi-channel** audio is downmixed by averaging the channels (not summing,
  so the result stays in range). A 2-D array is ``(frames, channels)``, the
  layout soundfile and sounddevice use; transpose channel-first arrays first.
  Note that averaging cancels channels in opposite phase; speech captured by
  one microphone is unaffected.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import InvalidAudioError
from ..turns.analyzer import downmix_pcm16 as downmix_pcm16  # the one downmix (the end-of-turn stream's)

__all__ = [
    "FLOAT_HEADROOM",
    "INT16_SCALE",
    "AudioInput",
    "Float32Array",
    "downmix_pcm16",
    "float_to_pcm16",
    "pcm16_to_float32",
    "to_float32_mono",
]

INT16_SCALE = 32768.0
"""int16 samples are divided by this (a power of two, so the division is exact)."""

FLOAT_HEADROOM = 2.0
"""Largest float magnitude accepted (and clipped to [-1, 1]); louder input is refused."""

_MAX_CHANNELS = 32

Float32Array = NDArray[np.float32]
AudioInput = bytes | bytearray | memoryview | NDArray[Any]
"""What the audio functions accept: int16 LE PCM bytes, or an int16/float numpy array."""

_INV_SCALE = np.float32(1.0 / INT16_SCALE)


def pcm16_to_float32(
    data: bytes | bytearray | memoryview, *, out: Float32Array | None = None
) -> Float32Array:
    """Convert mono 16-bit little-endian PCM bytes to float32 in [-1, 1).

    This is the hot path of the VAD (one call per transport frame), so it does
    only the byte-count check; ``out`` lets a caller reuse a buffer.

    Raises:
        InvalidAudioError: the byte count is odd.
    """
    if len(data) % 2:
        raise InvalidAudioError(
            f"16-bit PCM needs an even byte count, got {len(data)} bytes "
            "(is this 8-bit audio, or a frame cut in half?)"
        )
    ints = np.frombuffer(data, dtype="<i2")
    if out is None:
        result: Float32Array = np.multiply(ints, _INV_SCALE, dtype=np.float32)
        return result
    if out.shape != ints.shape:
        raise InvalidAudioError(f"expected {out.shape[0]} samples, got {ints.shape[0]}")
    np.multiply(ints, _INV_SCALE, out=out, dtype=np.float32)
    return out


def float_to_pcm16(samples: NDArray[np.floating[Any]]) -> bytes:
    """Convert float samples in [-1, 1] to 16-bit little-endian PCM bytes.

    Rounds to the nearest integer and clips, so int16 → float → int16 is exact.
    """
    scaled = np.rint(np.asarray(samples, dtype=np.float64) * INT16_SCALE)
    return np.clip(scaled, -32768, 32767).astype("<i2").tobytes()


def to_float32_mono(
    audio: AudioInput,
    *,
    num_channels: int = 1,
    expected_samples: int | None = None,
    allow_empty: bool = False,
) -> Float32Array:
    """Convert any accepted audio input to a 1-D float32 array in [-1, 1].

    Args:
        audio: int16 LE PCM bytes, or a numpy int16/float32/float64 array,
            1-D (mono or interleaved) or 2-D ``(frames, channels)``.
        num_channels: channels interleaved in 1-D input (bytes or 1-D arrays).
            A 2-D array carries its own channel count in ``shape[1]``.
        expected_samples: when given, the number of mono samples required
            (a model window, for example).
        allow_empty: accept zero samples instead of raising.

    Returns:
        A C-contiguous float32 mono array. When the input already is one and
        in range, it is returned as is (not copied): do not write into it.

    Raises:
        InvalidAudioError: for anything that is not usable audio (see module doc).
    """
    if isinstance(num_channels, bool) or not isinstance(num_channels, int) or not (
        1 <= num_channels <= _MAX_CHANNELS
    ):
        raise InvalidAudioError(
            f"num_channels must be an int from 1 to {_MAX_CHANNELS}, got {num_channels!r}"
        )
    if isinstance(audio, bytes | bytearray | memoryview):
        mono = _from_bytes(audio, num_channels)
    elif isinstance(audio, np.ndarray):
        mono = _from_array(audio, num_channels)
    else:
        raise InvalidAudioError(
            f"audio must be 16-bit PCM bytes or a numpy array, not {type(audio).__name__}"
        )
    if mono.shape[0] == 0 and not allow_empty:
        raise InvalidAudioError("audio is empty (0 samples)")
    if expected_samples is not None and mono.shape[0] != expected_samples:
        raise InvalidAudioError(
            f"expected exactly {expected_samples} samples, got {mono.shape[0]}"
        )
    return mono


def _from_bytes(data: bytes | bytearray | memoryview, num_channels: int) -> Float32Array:
    if isinstance(data, memoryview) and data.itemsize != 1:
        data = data.cast("B")
    width = 2 * num_channels
    if len(data) % width:
        if len(data) % 2:
            raise InvalidAudioError(
                f"16-bit PCM needs an even byte count, got {len(data)} bytes "
                "(is this 8-bit audio, or a frame cut in half?)"
            )
        raise InvalidAudioError(
            f"{len(data)} bytes is not a whole number of {num_channels}-channel "
            f"16-bit frames ({width} bytes each)"
        )
    samples = pcm16_to_float32(data)
    if num_channels > 1:
        samples = _downmix(samples.reshape(-1, num_channels))
    return samples


def _from_array(array: NDArray[Any], num_channels: int) -> Float32Array:
    if array.ndim == 0 or array.ndim > 2:
        raise InvalidAudioError(
            f"audio arrays must be 1-D (mono or interleaved) or 2-D (frames, channels); "
            f"got {array.ndim} dimensions with shape {array.shape}"
        )
    if array.ndim == 1 and num_channels > 1:
        if array.shape[0] % num_channels:
            raise InvalidAudioError(
                f"{array.shape[0]} interleaved samples is not a whole number of "
                f"{num_channels}-channel frames"
            )
        array = array.reshape(-1, num_channels)
    if array.ndim == 2 and not 1 <= array.shape[1] <= _MAX_CHANNELS:
        raise InvalidAudioError(
            f"a 2-D audio array is (frames, channels); {array.shape[1]} channels is "
            f"not plausible (at most {_MAX_CHANNELS}); transpose channel-first arrays"
        )
    kind = array.dtype
    if kind == np.int16:
        mono = np.multiply(array, _INV_SCALE, dtype=np.float32)
    elif kind == np.float32 or kind == np.float64:
        mono = _checked_float(array)
    else:
        raise InvalidAudioError(
            f"audio arrays must be int16, float32 or float64, not {kind}; convert "
            "explicitly (int32 PCM: (x >> 16).astype(np.int16); uint8 PCM: "
            "(x.astype(np.int16) - 128) << 8)"
        )
    if mono.ndim == 2:
        mono = _downmix(mono) if mono.shape[1] > 1 else mono[:, 0]
    return np.ascontiguousarray(mono, dtype=np.float32)


def _checked_float(array: NDArray[Any]) -> Float32Array:
    if array.size == 0:
        return array.astype(np.float32, copy=False)
    lo = float(array.min())
    hi = float(array.max())
    if not (lo >= -FLOAT_HEADROOM and hi <= FLOAT_HEADROOM):
        if np.isnan(lo) or np.isnan(hi):
            raise InvalidAudioError("audio contains NaN")
        if np.isinf(lo) or np.isinf(hi):
            raise InvalidAudioError("audio contains an infinite value")
        peak = max(-lo, hi)
        hint = " (it looks int16-scaled: divide by 32768)" if peak > 100.0 else ""
        raise InvalidAudioError(
            f"float audio must lie in [-1, 1] (up to ±{FLOAT_HEADROOM} is clipped); "
            f"got a peak of {peak:g}{hint}"
        )
    out = array.astype(np.float32, copy=False)
    if lo < -1.0 or hi > 1.0:
        out = np.clip(out, -1.0, 1.0)
    return out


def _downmix(frames: NDArray[Any]) -> Float32Array:
    """Average the channels of a ``(frames, channels)`` array."""
    return np.ascontiguousarray(frames.mean(axis=1, dtype=np.float32), dtype=np.float32)
