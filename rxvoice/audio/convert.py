"""One stream's audio, converted for an analyzer: mono, at a rate the analyzer runs at.

Transports deliver 16-bit PCM at 8, 11.025, 16, 22.05, 24, 44.1 or 48 kHz,
mono or interleaved stereo; a VAD analyzer runs at a few rates only (Silero
at 8 or 16 kHz, WebRTC at 8, 16, 32 or 48 kHz) and wants mono. An
:class:`AudioConverter` sits between the two, one per stream (per session),
because resampling a live stream keeps filter state from chunk to chunk:

* The analyzer runs at the audio's rate when it supports it, else at 16 kHz
  (the rate every rxvoice analyzer has), else at the rate it has.
  :meth:`AudioConverter.use_rate` sets that up front (a ``StartFrame``'s
  ``audio_in_sample_rate``); a chunk at another rate than the last one
  switches it again, mid-stream (the analyzer's ``set_sample_rate`` restarts
  its state).
* A chunk that is already mono at the analyzer's rate is handed on as the
  bytes it is, without a copy (the common case costs one comparison).
* Other chunks are decoded to float32, their channels averaged to mono, and
  resampled with a streaming libsoxr "HQ" resampler kept for the stream, so
  the output is continuous across chunks; it is replaced (its few samples of
  delay dropped) when the input's or the analyzer's rate changes.
* Audio that is not whole 16-bit samples of its channel count, an invalid
  rate or channel count raise :class:`~rxvoice.errors.InvalidAudioError`; the
  stream goes on with the next chunk.

The VAD operator (:class:`~rxvoice.audio.vad_processor.VADProcessor`) and the
aggregator's own VAD use it, so both analyze 48 kHz, 11,025 Hz and stereo
speech the same way.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ConfigurationError, InvalidAudioError
from ..frames import InputAudioRawFrame
from .pcm import AudioInput, to_float32_mono
from .resample import StreamResampler

__all__ = ["FALLBACK_RATE", "AudioConverter"]

FALLBACK_RATE = 16000
"""The rate an analyzer runs at when it does not support the input's."""

_MAX_CHANNELS = 32


class AudioConverter:
    """Converts one stream's audio to mono at the rate its analyzer runs at.

    Args:
        analyzer: The analyzer the audio is for: it has ``sample_rate`` and
            may have ``supported_sample_rates`` and ``set_sample_rate(rate)``
            (every :class:`~rxvoice.audio.vad.VADAnalyzer` has all three). Without
            ``set_sample_rate`` it keeps its rate and the audio is converted to
            it; without ``supported_sample_rates`` its current rate is the only
            one it supports.

    Raises:
        ConfigurationError: the analyzer has no int ``sample_rate``.

    Example:
        >>> converter = AudioConverter(vad)            # one per stream
        >>> vad.analyze_audio(converter.convert(frame))   # any rate, any channel count

    Not thread-safe: one stream, one converter.
    """

    __slots__ = ("_analyzer", "_input_rate", "_resampler")

    def __init__(self, analyzer: Any) -> None:
        if not isinstance(getattr(analyzer, "sample_rate", None), int):
            raise ConfigurationError(f"AudioConverter needs an analyzer with an int sample_rate, got {analyzer!r}")
        self._analyzer = analyzer
        self._input_rate = 0
        self._resampler: StreamResampler | None = None

    @property
    def analyzer(self) -> Any:
        """The analyzer the audio is converted for."""
        return self._analyzer

    @property
    def input_rate(self) -> int:
        """The rate of the last chunk converted (0 before the first)."""
        return self._input_rate

    def rate_for(self, input_rate: int) -> int:
        """The rate the analyzer would run at for audio at ``input_rate``."""
        current: int = self._analyzer.sample_rate
        supported = getattr(self._analyzer, "supported_sample_rates", None) or (current,)
        if input_rate in supported:
            return input_rate
        return FALLBACK_RATE if FALLBACK_RATE in supported else current

    def use_rate(self, input_rate: int) -> int:
        """Set the analyzer up for audio at ``input_rate``; returns the rate it now runs at.

        The analyzer's rate only changes when it must (``set_sample_rate``
        restarts its state).

        Raises:
            InvalidAudioError: not an int in 1000..384000.
        """
        _check_rate(input_rate)
        target = self.rate_for(input_rate)
        analyzer = self._analyzer
        if target != analyzer.sample_rate:
            setter = getattr(analyzer, "set_sample_rate", None)
            if callable(setter):
                setter(target)
        return int(analyzer.sample_rate)

    def convert(self, frame: InputAudioRawFrame) -> AudioInput:
        """A frame's audio for the analyzer: its bytes when already mono at the right rate, else float32 mono.

        Raises:
            InvalidAudioError: its bytes are not whole samples of its channel count.
        """
        return self._convert(frame.audio, frame.sample_rate, frame.num_channels)

    def convert_pcm(self, audio: bytes | bytearray | memoryview, sample_rate: int, num_channels: int = 1) -> AudioInput:
        """Like :meth:`convert`, for 16-bit little-endian PCM that is not in a frame (checked first).

        Raises:
            InvalidAudioError: not bytes, an invalid rate or channel count, or
                not whole samples of that channel count (an odd byte count).
        """
        if not isinstance(audio, bytes | bytearray | memoryview):
            raise InvalidAudioError(f"audio must be 16-bit PCM bytes, not {type(audio).__name__}")
        _check_rate(sample_rate)
        channels_ok = isinstance(num_channels, int) and not isinstance(num_channels, bool)
        if not channels_ok or not 1 <= num_channels <= _MAX_CHANNELS:
            raise InvalidAudioError(f"num_channels must be an int from 1 to {_MAX_CHANNELS}, got {num_channels!r}")
        _check_whole(audio, num_channels)
        return self._convert(audio, sample_rate, num_channels)

    def reset(self) -> None:
        """Forget the resampler's state (the stream starts over); the analyzer is left as it is."""
        self._resampler = None
        self._input_rate = 0

    def _convert(self, audio: bytes | bytearray | memoryview, sample_rate: int, num_channels: int) -> AudioInput:
        if sample_rate != self._input_rate:
            self.use_rate(sample_rate)
            self._input_rate = sample_rate
        rate: int = self._analyzer.sample_rate
        if num_channels == 1 and sample_rate == rate:
            return audio
        _check_whole(audio, num_channels)
        samples = to_float32_mono(np.frombuffer(audio, dtype="<i2"), num_channels=num_channels, allow_empty=True)
        if sample_rate == rate:
            return samples
        resampler = self._resampler
        if resampler is None or resampler.in_rate != sample_rate or resampler.out_rate != rate:
            resampler = self._resampler = StreamResampler(sample_rate, rate)
        return resampler.process(samples)


def _check_rate(rate: object) -> None:
    if isinstance(rate, bool) or not isinstance(rate, int) or not 1000 <= rate <= 384000:
        raise InvalidAudioError(f"sample_rate must be an int in Hz (1000..384000), got {rate!r}")


def _check_whole(audio: bytes | bytearray | memoryview, num_channels: int) -> None:
    size = audio.nbytes if isinstance(audio, memoryview) else len(audio)
    if size % (2 * num_channels):
        raise InvalidAudioError(
            f"audio holds {size} bytes, not whole 16-bit {num_channels}-channel samples "
            f"({2 * num_channels} bytes each)"
        )
