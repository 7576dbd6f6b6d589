"""The end-of-turn audio buffer: what Smart Turn should hear, and the silence fallback.

The buffer alone: no model. :class:`~rxvoice.audio.turn.SmartTurnStream`
puts a judge (the model) on top of it.

This is the buffering of Pipecat 1.14's ``BaseSmartTurn``, made pure and
deterministic: time is counted in **samples received**,
not read from a clock, so a recording replayed at any speed (or a marble test
in virtual time) gives the same segments and the same decisions. A chunk's
time is the moment it has fully arrived, i.e. the sample count after it,
which is what Pipecat's arrival timestamps measure on a live stream.

* :meth:`EndOfTurnBuffer.append_audio` stores each chunk. Speech resets the
  silence count and marks the turn started (its start = the first speech
  chunk's time); silence after that adds up, and reaching ``stop_secs``
  (3 s) returns COMPLETE and clears everything: the fallback for when the
  model never says "complete". Before any speech, only the last
  ``pre_speech_ms + stop_secs + max_duration_secs`` (11.5 s) are kept.
* :meth:`EndOfTurnBuffer.segment` is the audio the model should judge: the
  chunks from ``speech start − (pre_speech_ms + vad_start_secs · 1000)`` on
  (the VAD confirms speech ``start_secs`` after it began, and a little lead-in
  helps the model), the last ``max_duration_secs`` of them, at 16 kHz.
"""

from __future__ import annotations

import math

import numpy as np

from ..._seconds import check_seconds
from ...errors import ConfigurationError
from ..pcm import AudioInput, Float32Array, to_float32_mono
from ..resample import resample
from .features import SAMPLE_RATE
from .params import EndOfTurnState, SmartTurnParams

__all__ = ["EndOfTurnBuffer", "EndOfTurnState", "SmartTurnParams"]


class EndOfTurnBuffer:
    """Audio of the current turn, timed by sample counts. One per audio stream."""

    def __init__(
        self,
        sample_rate: int = SAMPLE_RATE,
        params: SmartTurnParams | None = None,
        *,
        vad_start_secs: float = 0.0,
    ) -> None:
        """Create an empty buffer for mono audio at ``sample_rate`` Hz.

        Raises:
            ConfigurationError: a bad rate, params or ``vad_start_secs``.
        """
        if params is not None and not isinstance(params, SmartTurnParams):
            raise ConfigurationError(
                f"params must be a SmartTurnParams, not {type(params).__name__}"
            )
        self._params = params or SmartTurnParams()
        self._vad_start_secs = 0.0
        self.update_vad_start_secs(vad_start_secs)
        self._sample_rate = 0
        self.set_sample_rate(sample_rate)

    @property
    def params(self) -> SmartTurnParams:
        """The buffering parameters."""
        return self._params

    @property
    def sample_rate(self) -> int:
        """Sample rate of the appended audio, in Hz."""
        return self._sample_rate

    @property
    def speech_triggered(self) -> bool:
        """Whether speech has been heard since the last clear."""
        return self._speech_start is not None

    @property
    def vad_start_secs(self) -> float:
        """The VAD's start delay used to place the segment start."""
        return self._vad_start_secs

    @property
    def buffered_samples(self) -> int:
        """Samples currently held."""
        return sum(chunk.shape[0] for _, chunk in self._chunks)

    def set_sample_rate(self, sample_rate: int) -> None:
        """Use another input rate; clears the buffer.

        Raises:
            ConfigurationError: not an int in 1000..384000.
        """
        if isinstance(sample_rate, bool) or not isinstance(sample_rate, int) or not (
            1000 <= sample_rate <= 384000
        ):
            raise ConfigurationError(f"sample_rate must be an int in Hz, got {sample_rate!r}")
        self._sample_rate = sample_rate
        rate = sample_rate
        p = self._params
        self._stop_samples = round(p.stop_secs * rate)
        self._max_samples = round(p.max_duration_secs * rate)
        self._keep_samples = round((p.pre_speech_ms / 1000 + p.stop_secs + p.max_duration_secs)
                                   * rate)
        self._clock = 0
        self.clear()

    def update_vad_start_secs(self, secs: float) -> None:
        """Set the VAD's ``start_secs`` (from its start frame) for the segment start.

        Raises:
            ConfigurationError: not a finite number in [0, 60].
        """
        self._vad_start_secs = check_seconds(secs, "vad_start_secs", high=60.0)

    def clear(self) -> None:
        """Drop all audio and forget the speech start (a finished turn)."""
        self._chunks: list[tuple[int, Float32Array]] = []
        self._speech_start: int | None = None
        self._silence = 0

    def append_audio(self, pcm: AudioInput, is_speech: bool) -> EndOfTurnState:
        """Add a chunk; COMPLETE only when the silence fallback fires (then cleared).

        Args:
            pcm: mono audio at :attr:`sample_rate` (PCM bytes or an array).
            is_speech: whether the VAD considers the user to be speaking.

        Raises:
            InvalidAudioError: not usable audio.
        """
        samples = np.array(to_float32_mono(pcm, allow_empty=True), dtype=np.float32)
        self._clock += samples.shape[0]
        now = self._clock
        self._chunks.append((now, samples))
        if is_speech:
            self._silence = 0
            if self._speech_start is None:
                self._speech_start = now
        elif self._speech_start is not None:
            self._silence += samples.shape[0]
            if self._silence >= self._stop_samples:
                self.clear()
                return EndOfTurnState.COMPLETE
        else:
            oldest = now - self._keep_samples
            chunks = self._chunks
            drop = 0
            while drop < len(chunks) and chunks[drop][0] < oldest:
                drop += 1
            if drop:
                del chunks[:drop]
        return EndOfTurnState.INCOMPLETE

    def segment(self) -> Float32Array:
        """The audio the model should judge: 16 kHz float32, at most ``max_duration_secs``.

        Empty when nothing is buffered.
        """
        if self._speech_start is None:
            start = -math.inf
        else:
            lead = (self._params.pre_speech_ms / 1000 + self._vad_start_secs) * self._sample_rate
            start = self._speech_start - round(lead)
        parts = [chunk for time, chunk in self._chunks if time >= start]
        if not parts:
            return np.zeros(0, dtype=np.float32)
        audio = np.concatenate(parts)[-self._max_samples :]
        if self._sample_rate != SAMPLE_RATE:
            audio = resample(audio, self._sample_rate, SAMPLE_RATE)
        return audio
