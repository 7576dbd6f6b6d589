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

Kernels: the model is int8-quantized (QDQ) and its output jumps when an
intermediate value lands in another quantization bin, so onnxruntime's int8
kernels must be exact for the probabilities to be the reference ones. On
some CPUs the default kernels are exact; on x86-64 without VNNI they are not
(up to ±0.58 off) and ``session.x64quantprecision`` selects exact ones, at a
cost in time there. By default (``exact_quantization=None``) the first
analyzer of a process runs a short self-check (:mod:`.kernels`) and every
analyzer takes the kernels it found faithful, so the probabilities are the
reference ones on every CPU, at the default kernels' speed wherever those
are exact. Pipecat always runs the default kernels.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import onnxruntime as ort

from ...errors import ConfigurationError, InvalidAudioError, ModelError
from ..pcm import AudioInput, to_float32_mono
from .features import N_FRAMES, N_MELS, WhisperFeatures, fit_window
from .kernels import CHECK_PROBABILITY, KernelCheck, KernelChoice, check_window, choose_kernels
from .model import MODEL_SHA256, find_model, sha256_file
from .params import COMPLETE_THRESHOLD, SmartTurnParams
from .stream import SmartTurnStream

__all__ = ["COMPLETE_THRESHOLD", "SmartTurnAnalyzer"]

log = logging.getLogger("rxvoice.audio.turn")


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

    def run(self, batch: np.ndarray[Any, np.dtype[np.float32]]) -> list[float]:
        """The probabilities of a (n, 80, 800) batch of features."""
        try:
            (logits,) = self.session.run(["logits"], {"input_features": batch})
        except Exception as exc:  # onnxruntime raises its own exception types
            raise ModelError(f"Smart Turn inference failed: {exc}") from exc
        return [float(p) for p in np.asarray(logits).reshape(batch.shape[0])]

    def window_probability(self, samples: np.ndarray[Any, np.dtype[np.float32]]) -> float:
        """The probability of one 16 kHz float32 window (the kernel self-check)."""
        batch = np.empty((1, N_MELS, N_FRAMES), dtype=np.float32)
        self.features(fit_window(samples), out=batch[0])
        return self.run(batch)[0]


class SmartTurnAnalyzer:
    """End-of-turn probability of 16 kHz speech with Smart Turn v3.2.

    Example:
        >>> st = SmartTurnAnalyzer()                 # finds the model (see model.py)
        >>> p = st.probability(turn_samples)         # float32 mono, 16 kHz
        >>> complete = p > 0.5
    """

    label: ClassVar[str] = "Smart Turn"
    """How turn-end reasons name this model ("Smart Turn: complete (p=0.87)")."""
    _sessions: ClassVar[dict[tuple[str, int, bool], _SharedSession]] = {}
    _checks: ClassVar[dict[tuple[str, int], KernelCheck]] = {}
    _sessions_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        *,
        threads: int = 1,
        exact_quantization: bool | None = None,
        params: SmartTurnParams | None = None,
    ) -> None:
        """Load (or reuse) the shared session for the model.

        Args:
            model_path: the ``.onnx`` file; None looks it up (``model.find_model``).
            threads: onnxruntime intra-op threads (Pipecat's ``cpu_count``).
            exact_quantization: which int8 kernels to run. ``None`` (the
                default): the ones a self-check found faithful on this CPU,
                decided once per process (see :mod:`rxvoice.audio.turn.kernels`);
                ``True``: onnxruntime's exact kernels; ``False``: its default
                kernels, as Pipecat runs them, faithful or not.
            params: Buffering of the streams it opens (:meth:`open_stream`);
                Pipecat's defaults.

        Raises:
            ModelNotFoundError: the model file cannot be found.
            ModelError: it cannot be loaded or is not Smart Turn.
            ConfigurationError: ``threads`` is not a positive int, bad ``params``,
                or ``exact_quantization`` is not a bool or None.
        """
        if params is not None and not isinstance(params, SmartTurnParams):
            raise ConfigurationError(f"params must be a SmartTurnParams, not {type(params).__name__}")
        self.params = params or SmartTurnParams()
        if isinstance(threads, bool) or not isinstance(threads, int) or not 1 <= threads <= 64:
            raise ConfigurationError(f"threads must be an int from 1 to 64, got {threads!r}")
        if exact_quantization is not None and not isinstance(exact_quantization, bool):
            raise ConfigurationError(f"exact_quantization must be True, False or None, got {exact_quantization!r}")
        self._path = find_model(model_path)
        self._threads = threads
        path = str(self._path.resolve())
        with self._sessions_lock:
            check: KernelCheck | None = None
            if exact_quantization is None:
                check = self._checks.get((path, threads))
                if check is None:
                    check = self._checks[(path, threads)] = self._check_kernels(path, threads)
                exact = check.kernels == "exact"
            else:
                exact = exact_quantization
            self._shared = self._session(path, threads, exact)
        self._check = check
        self._kernels: KernelChoice = "exact" if exact else "default"

    @classmethod
    def _session(cls, path: str, threads: int, exact: bool) -> _SharedSession:
        """The shared session (created on first use); the caller holds the lock."""
        shared = cls._sessions.get((path, threads, exact))
        if shared is None:
            shared = cls._sessions[(path, threads, exact)] = _SharedSession(Path(path), threads, exact)
        return shared

    @classmethod
    def _check_kernels(cls, path: str, threads: int) -> KernelCheck:
        """The self-check (see :mod:`.kernels`); a session loaded only for it is released again."""
        loaded = set(cls._sessions)
        window = check_window().astype(np.float32) / np.float32(32768.0)
        expected = CHECK_PROBABILITY if sha256_file(path) == MODEL_SHA256 else None
        check = choose_kernels(
            expected,
            lambda: cls._session(path, threads, False).window_probability(window),
            lambda: cls._session(path, threads, True).window_probability(window),
        )
        for kernels in (False, True):
            key = (path, threads, kernels)
            if key not in loaded and kernels != (check.kernels == "exact"):
                cls._sessions.pop(key, None)
        if check.faithful:
            log.info("%s", check.describe())
        else:
            log.warning(
                "%s: neither reproduces the reference probabilities on this CPU; Smart Turn's "
                "verdicts may differ from Pipecat's published ones", check.describe()
            )
        return check

    @property
    def kernels(self) -> KernelChoice:
        """The int8 kernels this analyzer runs: ``"default"`` or ``"exact"``."""
        return self._kernels

    @property
    def kernel_check(self) -> KernelCheck | None:
        """What the self-check found (``None`` when ``exact_quantization`` was given)."""
        return self._check

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
        return self._shared.run(batch)

    def open_stream(self, sample_rate: int = 16000) -> SmartTurnStream:
        """A session's end-of-turn stream for mono 16-bit audio at ``sample_rate`` Hz.

        This makes the analyzer an :class:`~rxvoice.turns.EndOfTurnAnalyzer`:
        ``TurnAnalyzerStop(SmartTurnAnalyzer())`` opens one stream per session.
        Audio at other rates is resampled to 16 kHz when judged.

        Raises:
            ConfigurationError: a rate outside 1000..384000 Hz.
        """
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
