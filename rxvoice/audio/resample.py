"""Sample-rate conversion to the models' rates (16 kHz, or 8 kHz for Silero).

Transports deliver 8, 22.05, 24, 44.1 or 48 kHz; Silero runs at 8 or 16 kHz
and Smart Turn only at 16 kHz. Conversion uses libsoxr (PyPI ``soxr``) at its
"HQ" setting, the same converter and quality Pipecat uses before Smart Turn,
so a resampled segment reaches the model as it would in Pipecat.

:class:`StreamResampler` is for live audio: feed it chunk by chunk and the
output is continuous across chunk boundaries (the filter state is carried),
and identical to resampling the whole signal at once with :func:`resample`.
The converter has a short algorithmic delay: the last few output samples of
a stream only come out when it is flushed (``last=True`` or :meth:`flush`).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import soxr  # type: ignore[import-untyped]

from ..errors import ConfigurationError
from .pcm import AudioInput, Float32Array, to_float32_mono

__all__ = ["Quality", "StreamResampler", "resample"]

Quality = Literal["QQ", "LQ", "MQ", "HQ", "VHQ"]
_QUALITIES = ("QQ", "LQ", "MQ", "HQ", "VHQ")


def _check_rate(name: str, rate: object) -> int:
    if isinstance(rate, bool) or not isinstance(rate, int) or not 1000 <= rate <= 384000:
        raise ConfigurationError(f"{name} must be an int in Hz (1000..384000), got {rate!r}")
    return rate


def _check_quality(quality: object) -> str:
    if quality not in _QUALITIES:
        raise ConfigurationError(f"quality must be one of {_QUALITIES}, got {quality!r}")
    return str(quality)


def resample(
    samples: AudioInput, in_rate: int, out_rate: int, *, quality: Quality = "HQ"
) -> Float32Array:
    """Resample a whole signal (a file, a turn segment) in one call.

    Args:
        samples: audio in any form :func:`~rxvoice.audio.pcm.to_float32_mono` accepts.
        in_rate: its sample rate in Hz.
        out_rate: the wanted sample rate in Hz.
        quality: a soxr quality recipe; "HQ" (the default) matches Pipecat.

    Returns:
        float32 mono samples at ``out_rate`` (a copy-free pass-through when the
        rates are equal).

    Raises:
        ConfigurationError: a rate or quality is invalid.
        InvalidAudioError: the samples are not usable audio.
    """
    _check_rate("in_rate", in_rate)
    _check_rate("out_rate", out_rate)
    q = _check_quality(quality)
    mono = to_float32_mono(samples, allow_empty=True)
    if in_rate == out_rate or mono.shape[0] == 0:
        return mono
    out: Float32Array = soxr.resample(mono, in_rate, out_rate, quality=q)
    return np.ascontiguousarray(out, dtype=np.float32)


class StreamResampler:
    """A stateful resampler for live audio, fed one chunk at a time.

    Example:
        >>> r = StreamResampler(48000, 16000)
        >>> out = r.process(chunk)          # any chunk size, continuous output
        >>> tail = r.flush()                # at the end of the stream

    Not thread-safe: one stream, one resampler.
    """

    __slots__ = ("_in_rate", "_out_rate", "_quality", "_stream")

    def __init__(self, in_rate: int, out_rate: int, *, quality: Quality = "HQ") -> None:
        """Create a resampler from ``in_rate`` to ``out_rate`` (Hz)."""
        self._in_rate = _check_rate("in_rate", in_rate)
        self._out_rate = _check_rate("out_rate", out_rate)
        self._quality = _check_quality(quality)
        self._stream: soxr.ResampleStream | None = None
        if in_rate != out_rate:
            self._stream = soxr.ResampleStream(
                in_rate, out_rate, 1, dtype="float32", quality=self._quality
            )

    @property
    def in_rate(self) -> int:
        """Input sample rate in Hz."""
        return self._in_rate

    @property
    def out_rate(self) -> int:
        """Output sample rate in Hz."""
        return self._out_rate

    def process(self, samples: AudioInput, *, last: bool = False) -> Float32Array:
        """Resample the next chunk; ``last=True`` also flushes the delay line.

        After ``last=True`` the resampler starts a fresh stream.

        Raises:
            InvalidAudioError: the chunk is not usable audio.
        """
        mono = to_float32_mono(samples, allow_empty=True)
        if self._stream is None:
            return mono
        out = self._stream.resample_chunk(mono, last=last)
        if last:
            self._stream.clear()
        return np.ascontiguousarray(out, dtype=np.float32)

    def flush(self) -> Float32Array:
        """Return the samples still held in the delay line and start a fresh stream."""
        return self.process(np.zeros(0, dtype=np.float32), last=True)

    def reset(self) -> None:
        """Drop any buffered input and start a fresh stream."""
        if self._stream is not None:
            self._stream.clear()
