"""The VAD analyzer: audio chunks in, a :class:`VADState` out, per Pipecat's rules.

A concrete analyzer (Silero, WebRTC) only says how confident it is that one
fixed-size window is speech (:meth:`VADAnalyzer.confidence`). This base class
does everything around it, the same way for every model:

* buffers chunks of any size, analyzes each whole window in order and carries
  the remainder to the next chunk;
* per window: the model's confidence, the volume (``volume.py``) fed that
  window and smoothed, ``speaking = confidence ≥ params.confidence and
  volume ≥ params.min_volume``, one state-machine step;
* after the chunk, one promotion check (``state_machine.py``).

Everything is counted in samples, so the result never depends on when or how
fast audio arrives. Per-window numbers are kept for whoever wants to look:
:attr:`VADAnalyzer.last_confidence` / :attr:`VADAnalyzer.last_volume` after
every call, or the full list from :meth:`VADAnalyzer.analyze_windows`.

Analyzers are not thread-safe: one analyzer per audio stream, fed from one
thread at a time (the model sessions behind them may be shared).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from types import TracebackType
from typing import ClassVar

import numpy as np

from ...errors import ConfigurationError, ModelError
from ..convert import AudioConverter
from ..pcm import AudioInput, Float32Array, pcm16_to_float32, to_float32_mono
from .params import VADParams, VADState
from .state_machine import VADStateMachine
from .volume import SMOOTHING_FACTOR, VolumeMeter

__all__ = ["VADAnalyzer", "WindowAnalysis"]


@dataclass(frozen=True, slots=True)
class WindowAnalysis:
    """What the analyzer saw in one window (for plots and debugging).

    Attributes:
        start_sample: where the window starts, in samples since the last reset.
        confidence: the model's speech confidence, 0..1.
        volume: the smoothed volume, 0..1 (0 until 0.4 s of audio arrived).
        speaking: whether the window counted as speech.
        state: the state right after this window (before the chunk's promotion
            check, which the last window of a chunk may still be subject to).
    """

    start_sample: int
    confidence: float
    volume: float
    speaking: bool
    state: VADState


class VADAnalyzer(ABC):
    """Base of the VAD analyzers: buffering, volume gate and state machine.

    Subclasses set :attr:`supported_sample_rates`, implement
    :meth:`_window_samples_for` and :meth:`_window_confidence`, and may hook
    :meth:`_on_sample_rate` / :meth:`_reset_model`.
    """

    supported_sample_rates: ClassVar[tuple[int, ...]] = ()

    def __init__(self, sample_rate: int, params: VADParams | None = None) -> None:
        """Create an analyzer for mono audio at ``sample_rate`` Hz.

        Raises:
            ConfigurationError: the rate is not supported or ``params`` is not
                a :class:`VADParams`.
        """
        self._params = self._check_params(VADParams() if params is None else params)
        self._closed = False
        self._sample_rate = 0
        self._window = 0
        self.last_confidence = 0.0
        """The model confidence of the last analyzed window."""
        self.last_volume = 0.0
        """The smoothed volume of the last analyzed window."""
        self._apply_sample_rate(sample_rate)

    # ----------------------------------------------------------------- config

    @property
    def sample_rate(self) -> int:
        """The sample rate of the audio this analyzer expects, in Hz."""
        return self._sample_rate

    @property
    def params(self) -> VADParams:
        """The current :class:`VADParams`."""
        return self._params

    @property
    def window_samples(self) -> int:
        """Samples per analysis window (512 for Silero at 16 kHz)."""
        return self._window

    @property
    def state(self) -> VADState:
        """The state after the last analyzed chunk."""
        return self._machine.state

    @property
    def volume(self) -> float:
        """The current smoothed volume (0..1)."""
        return self._volume

    def set_sample_rate(self, sample_rate: int) -> None:
        """Switch to another input rate: clears buffered audio, volume and state.

        Raises:
            ConfigurationError: the rate is not supported.
        """
        self._check_open()
        self._apply_sample_rate(sample_rate)

    def set_params(self, params: VADParams) -> None:
        """Use new parameters: recomputes the window counts and goes back to QUIET.

        The volume history is kept, as in Pipecat: the room did not get quieter.

        Raises:
            ConfigurationError: ``params`` is not a :class:`VADParams`.
        """
        self._params = self._check_params(params)
        self._machine = VADStateMachine.for_params(params, self._window, self._sample_rate)

    # --------------------------------------------------------------- analysis

    def analyze_audio(self, pcm: AudioInput) -> VADState:
        """Analyze a chunk of mono audio and return the state after it.

        Args:
            pcm: 16-bit LE PCM bytes, or an int16/float array (see ``pcm.py``);
                any length, including 0.

        Raises:
            InvalidAudioError: the chunk is not usable audio.
            ModelError: the analyzer was closed.
        """
        for window in self._split(pcm):
            self._finish_window(window, self._window_confidence(window), None)
        return self._machine.settle()

    def analyze_windows(self, pcm: AudioInput) -> list[WindowAnalysis]:
        """Like :meth:`analyze_audio`, but return what each window looked like.

        The chunk's final state is :attr:`state` afterwards.
        """
        records: list[WindowAnalysis] = []
        for window in self._split(pcm):
            self._finish_window(window, self._window_confidence(window), records)
        self._machine.settle()
        return records

    def confidence(self, window: AudioInput) -> float:
        """The model's speech confidence (0..1) for exactly one window.

        Stateful for recurrent models (Silero): call it on consecutive windows.
        It does not touch the buffering, volume or state of :meth:`analyze_audio`.

        Raises:
            InvalidAudioError: the window is not exactly :attr:`window_samples`
                samples of usable audio.
            ModelError: the analyzer was closed.
        """
        self._check_open()
        samples = to_float32_mono(window, expected_samples=self._window)
        return self._window_confidence(samples)

    def reset(self) -> None:
        """Forget everything heard: buffered audio, volume, state, model memory."""
        self._check_open()
        self._reset_stream()
        self._reset_model()

    def converter(self) -> AudioConverter:
        """A converter that brings any frame's audio (any rate, any channels) to this analyzer; one per stream."""
        return AudioConverter(self)

    def close(self) -> None:
        """Release the analyzer; it cannot be used afterwards. Idempotent."""
        self._closed = True

    def __enter__(self) -> VADAnalyzer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # ---------------------------------------------------------- for subclasses

    @abstractmethod
    def _window_samples_for(self, sample_rate: int) -> int:
        """Window size at ``sample_rate`` (already known to be supported)."""

    @abstractmethod
    def _window_confidence(self, window: Float32Array) -> float:
        """Confidence for one validated float32 window; errors must become 0."""

    def _on_sample_rate(self) -> None:  # noqa: B027 - an optional hook
        """Hook: the sample rate was (re)applied."""

    def _reset_model(self) -> None:  # noqa: B027 - an optional hook
        """Hook: forget the model's memory of earlier audio."""

    # ----------------------------------------------------------------- inside

    def _check_params(self, params: object) -> VADParams:
        if not isinstance(params, VADParams):
            raise ConfigurationError(f"params must be a VADParams, not {type(params).__name__}")
        return params

    def _check_open(self) -> None:
        if self._closed:
            raise ModelError(f"this {type(self).__name__} is closed")

    def _apply_sample_rate(self, sample_rate: int) -> None:
        if (
            isinstance(sample_rate, bool)
            or not isinstance(sample_rate, int)
            or sample_rate not in self.supported_sample_rates
        ):
            rates = ", ".join(str(r) for r in self.supported_sample_rates)
            raise ConfigurationError(
                f"{type(self).__name__} supports sample rates {rates} Hz, got {sample_rate!r}; "
                "resample the audio first (rxvoice.audio.resample)"
            )
        self._sample_rate = sample_rate
        self._window = self._window_samples_for(sample_rate)
        self._meter = VolumeMeter(sample_rate)
        self._pending = np.zeros(self._window, dtype=np.float32)
        self._reset_stream()
        self._on_sample_rate()

    def _reset_stream(self) -> None:
        self._pending_len = 0
        self._position = 0
        self._volume = 0.0
        self.last_confidence = 0.0
        self.last_volume = 0.0
        self._meter.reset()
        self._machine = VADStateMachine.for_params(self._params, self._window, self._sample_rate)

    def _split(self, pcm: AudioInput) -> list[Float32Array]:
        """Validate a chunk and return its whole windows; keep the remainder."""
        return self._split_samples(self._to_samples(pcm))

    def _to_samples(self, pcm: AudioInput) -> Float32Array:
        self._check_open()
        if type(pcm) is bytes:
            return pcm16_to_float32(pcm)
        return to_float32_mono(pcm, allow_empty=True)

    def _split_samples(self, samples: Float32Array) -> list[Float32Array]:
        window = self._window
        pending = self._pending_len
        if pending == 0 and samples.shape[0] == window:
            return [samples]
        if pending:
            samples = np.concatenate((self._pending[:pending], samples))
        whole = samples.shape[0] // window
        rest = samples.shape[0] - whole * window
        if rest:
            self._pending[:rest] = samples[whole * window :]
        self._pending_len = rest
        return list(samples[: whole * window].reshape(whole, window)) if whole else []

    def _finish_window(
        self, window: Float32Array, confidence: float, records: list[WindowAnalysis] | None
    ) -> None:
        """Volume, decision and one state-machine step for an analyzed window."""
        meter = self._meter
        meter.add(window)
        self._apply_window(confidence, meter.volume(), records)

    def _apply_window(
        self, confidence: float, raw: float, records: list[WindowAnalysis] | None
    ) -> None:
        """Smooth the raw volume, decide, and step the state machine."""
        volume = self._volume + SMOOTHING_FACTOR * (raw - self._volume)
        self._volume = volume
        params = self._params
        speaking = confidence >= params.confidence and volume >= params.min_volume
        self._machine.update(speaking)
        self.last_confidence = confidence
        self.last_volume = volume
        if records is not None:
            records.append(
                WindowAnalysis(self._position, confidence, volume, speaking, self._machine.state)
            )
        self._position += self._window
