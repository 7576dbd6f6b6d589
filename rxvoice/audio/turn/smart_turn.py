"""Smart Turn v3.2 inference: "has the user finished their turn?" from audio alone.

:class:`SmartTurnAnalyzer` runs the ONNX model on the Whisper features of the
last 8 s of a turn (``features.py``). One onnxruntime session per model file
(and thread count) is shared by every analyzer in the process, so a server
with many sessions loads the 8 MB model once; ``session.run`` is thread-safe,
so analyzers may be used from worker threads. Session settings follow Pipecat:
sequential execution, 1 inter-op thread, ``threads`` intra-op threads, full
graph optimization; spinning is off so the pool does not fight numpy's.

The model's ``logits`` output already holds the sigmoid probability; the turn
is complete iff it is above 0.5 (:data:`COMPLETE_THRESHOLD`).

Exactness: the model is int8-quantized (QDQ), and its output jumps when an
intermediate value lands in another quantization bin, so tiny arithmetic
differences move the probability a lot (up to ±0.58 on the shared fixtures).
On x64 CPUs without VNNI, onnxruntime's default int8 kernels saturate
intermediate sums and disagree with VNNI machines, where the reference
numbers were made; ``session.x64quantprecision`` selects its exact kernels,
which reproduce the reference to ~4e-4 on every fixture, for ~10 % more time.
That is the default here (``exact_quantization=True``); Pipecat does not set
it, so on such CPUs Pipecat itself misses its own reference numbers.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import onnxruntime as ort

from ...errors import ConfigurationError, InvalidAudioError, ModelError
from ..pcm import AudioInput, to_float32_mono
from .features import N_FRAMES, N_MELS, WhisperFeatures, fit_window
from .model import find_model
from .params import SmartTurnParams

if TYPE_CHECKING:
    from .stream import SmartTurnStream

__all__ = ["COMPLETE_THRESHOLD", "SmartTurnAnalyzer"]

COMPLETE_THRESHOLD = 0.5


class _SharedSession:
    """An onnxruntime session plus a feature extractor, shared per (path, threads)."""

    def __init__(self, path: Path, threads: int, exact: bool) -> None:
        options = ort.SessionOptions()
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.inter_op_num_threads = 1
        options.intra_op_num_threads = threads
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.add_session_config_entry("session.inter_op.allow_spinning", "0")
        if exact:
            options.add_session_config_entry("session.x64quantprecision", "1")
        try:
            self.session: Any = ort.InferenceSession(
                str(path), sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime raises its own exception types
            raise ModelError(f"cannot load Smart Turn model {path}: {exc}") from exc
        names = [i.name for i in self.session.get_inputs()]
        outputs = [o.name for o in self.session.get_outputs()]
        if names != ["input_features"] or "logits" not in outputs:
            raise ModelError(
                f"{path} is not a Smart Turn v3 model (inputs {names}, outputs {outputs})"
            )
        self.features = WhisperFeatures()


class SmartTurnAnalyzer:
    """End-of-turn probability of 16 kHz speech with Smart Turn v3.2.

    Example:
        >>> st = SmartTurnAnalyzer()                 # finds the model (see model.py)
        >>> p = st.probability(turn_samples)         # float32 mono, 16 kHz
        >>> complete = p > 0.5
    """

    _sessions: ClassVar[dict[tuple[str, int, bool], _SharedSession]] = {}
    _sessions_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        *,
        threads: int = 1,
        exact_quantization: bool = True,
        params: SmartTurnParams | None = None,
    ) -> None:
        """Load (or reuse) the shared session for the model.

        Args:
            model_path: the ``.onnx`` file; None looks it up (``model.find_model``).
            threads: onnxruntime intra-op threads (Pipecat's ``cpu_count``).
            exact_quantization: ask onnxruntime for its exact int8 kernels on
                x64 CPUs without VNNI (see the module docstring); False trades
                faithfulness for ~10 % speed on those CPUs.
            params: Buffering of the streams it opens (:meth:`open_stream`);
                Pipecat's defaults.

        Raises:
            ModelNotFoundError: the model file cannot be found.
            ModelError: it cannot be loaded or is not Smart Turn.
            ConfigurationError: ``threads`` is not a positive int, or bad ``params``.
        """
        if params is not None and not isinstance(params, SmartTurnParams):
            raise ConfigurationError(f"params must be a SmartTurnParams, not {type(params).__name__}")
        self.params = params or SmartTurnParams()
        if isinstance(threads, bool) or not isinstance(threads, int) or not 1 <= threads <= 64:
            raise ConfigurationError(f"threads must be an int from 1 to 64, got {threads!r}")
        self._path = find_model(model_path)
        self._threads = threads
        key = (str(self._path.resolve()), threads, bool(exact_quantization))
        with self._sessions_lock:
            shared = self._sessions.get(key)
            if shared is None:
                shared = _SharedSession(self._path, threads, bool(exact_quantization))
                self._sessions[key] = shared
        self._shared = shared

    @property
    def model_path(self) -> Path:
        """The model file in use."""
        return self._path

    @property
    def threads(self) -> int:
        """onnxruntime intra-op threads."""
        return self._threads

    def features(self, samples: AudioInput) -> np.ndarray[Any, np.dtype[np.float32]]:
        """The (80, 800) Whisper features the model would see for ``samples``."""
        return self._shared.features(fit_window(self._samples(samples)))

    def probability(self, samples: AudioInput) -> float:
        """End-of-turn probability of a turn's audio (16 kHz mono; last 8 s used).

        Args:
            samples: float32/float64 in [-1, 1] or int16 (array or PCM bytes) at
                16 kHz; shorter than 8 s is zero-padded at the front.

        Raises:
            InvalidAudioError: not usable audio, or empty.
            ModelError: the model failed to run.
        """
        return self.probabilities([samples])[0]

    def probabilities(self, windows: Sequence[AudioInput]) -> list[float]:
        """Probabilities of several turns in one batched model call."""
        if len(windows) == 0:
            return []
        batch = np.empty((len(windows), N_MELS, N_FRAMES), dtype=np.float32)
        extract = self._shared.features
        for i, samples in enumerate(windows):
            extract(fit_window(self._samples(samples)), out=batch[i])
        try:
            (logits,) = self._shared.session.run(["logits"], {"input_features": batch})
        except Exception as exc:  # onnxruntime raises its own exception types
            raise ModelError(f"Smart Turn inference failed: {exc}") from exc
        return [float(p) for p in np.asarray(logits).reshape(len(windows))]

    def open_stream(self, sample_rate: int = 16000) -> SmartTurnStream:
        """A session's end-of-turn stream for mono 16-bit audio at ``sample_rate`` Hz.

        This makes the analyzer an :class:`~rxvoice.turns.EndOfTurnAnalyzer`:
        ``TurnAnalyzerStop(SmartTurnAnalyzer())`` opens one stream per session.
        Audio at other rates is resampled to 16 kHz when judged.

        Raises:
            ConfigurationError: a rate outside 1000..384000 Hz.
        """
        from .stream import SmartTurnStream

        return SmartTurnStream(self.probability, sample_rate, self.params)

    def is_complete(self, samples: AudioInput) -> bool:
        """Whether the turn is complete (probability > 0.5)."""
        return self.probability(samples) > COMPLETE_THRESHOLD

    @staticmethod
    def _samples(samples: AudioInput) -> np.ndarray[Any, np.dtype[np.float32]]:
        mono = to_float32_mono(samples, allow_empty=True)
        if mono.shape[0] == 0:
            raise InvalidAudioError("Smart Turn needs some audio, got 0 samples")
        return mono
