"""The shared model work in local worker processes: Smart Turn and the recognizer off this process's GIL.

A server process runs every session's frames on one event loop; model work
on its threads still competes for its GIL (PocketSphinx holds it while it
decodes, Smart Turn's feature extraction in part). :class:`ProcessPoolBackend`
sends Smart Turn windows and STT segments to ``processes`` worker processes
(spawned, each loading the models once). Windows that queue while every
worker is busy go out together as one batch (one model call), so a loaded
server batches by itself.
"""

from __future__ import annotations

import concurrent.futures
import logging
import multiprocessing
import threading
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..audio.pcm import Float32Array
from ..audio.turn import find_model
from ..errors import ConfigurationError
from .backend import STT_ENGINES, InferenceError

__all__ = ["ProcessPoolBackend"]

log = logging.getLogger("rxvoice.inference")

_MODELS: dict[str, Any] = {}  # in each worker process: the analyzer and the decoder pool


def _init(model: str, stt: str | None) -> None:
    from ..audio.turn import SmartTurnAnalyzer

    _MODELS["turn"] = SmartTurnAnalyzer(model)
    if stt == "pocketsphinx":
        from .sphinx import DecoderPool

        _MODELS["stt"] = DecoderPool(keep=1)


def _ready() -> bool:
    return "turn" in _MODELS


def _judge(windows: list[Float32Array]) -> list[float]:
    return list(_MODELS["turn"].probabilities(windows))


def _transcribe(pcm: bytes, sample_rate: int) -> str:
    pool = _MODELS.get("stt")
    if pool is None:
        raise InferenceError("this backend runs no speech-to-text (give it stt='pocketsphinx')")
    return str(pool._decode(pcm, sample_rate))


class ProcessPoolBackend:
    """Smart Turn windows and STT segments judged in ``processes`` local worker processes.

    Args:
        model: The Smart Turn model file (default: found the usual way).
        processes: Worker processes (each loads the models once).
        stt: ``"pocketsphinx"`` to transcribe segments there too, or ``None``.
        max_batch: The most windows sent in one call.
        start_timeout: Seconds the workers have to start and load the models.

    Raises:
        ConfigurationError: bad settings, or the workers did not start.
    """

    name = "process-pool"

    def __init__(
        self,
        model: str | Path | None = None,
        *,
        processes: int = 2,
        stt: str | None = None,
        max_batch: int = 32,
        start_timeout: float = 120.0,
    ) -> None:
        if isinstance(processes, bool) or not isinstance(processes, int) or processes < 1:
            raise ConfigurationError(f"processes must be an int >= 1, got {processes!r}")
        if stt is not None and stt not in STT_ENGINES:
            raise ConfigurationError(f"stt must be one of {', '.join(STT_ENGINES)} or None, got {stt!r}")
        self.model_path = find_model(model)
        self.processes = processes
        self.stt = stt
        self.max_batch = max_batch
        self._pool = concurrent.futures.ProcessPoolExecutor(
            processes, mp_context=multiprocessing.get_context("spawn"), initializer=_init,
            initargs=(str(self.model_path), stt),
        )
        self._queue: deque[tuple[Float32Array, concurrent.futures.Future[float]]] = deque()
        self._lock = threading.Lock()
        self._inflight = 0
        self.calls = 0
        self.judged = 0
        try:
            for ready in [self._pool.submit(_ready) for _ in range(processes)]:
                ready.result(timeout=start_timeout)
        except Exception as exc:
            self._pool.shutdown(wait=False, cancel_futures=True)
            raise ConfigurationError(f"the inference worker processes did not start: {exc!r}") from exc

    def turn_probabilities(self, windows: Sequence[Float32Array]) -> concurrent.futures.Future[list[float]]:
        from .backend import _gather

        futures: list[concurrent.futures.Future[float]] = []
        with self._lock:
            for w in windows:
                f: concurrent.futures.Future[float] = concurrent.futures.Future()
                self._queue.append((w, f))
                futures.append(f)
        self._pump()
        return _gather(futures)

    def _pump(self) -> None:
        while True:
            with self._lock:
                if self._inflight >= self.processes or not self._queue:
                    return
                n = min(len(self._queue), self.max_batch)
                batch = [self._queue.popleft() for _ in range(n)]
                live = [(w, f) for w, f in batch if f.set_running_or_notify_cancel()]
                if not live:
                    continue
                self._inflight += 1
                self.calls += 1
                self.judged += len(live)
            try:
                job = self._pool.submit(_judge, [w for w, _ in live])
            except RuntimeError as exc:  # shut down
                with self._lock:
                    self._inflight -= 1
                for _, f in live:
                    f.set_exception(InferenceError(f"the process pool is closed: {exc}"))
                continue
            job.add_done_callback(lambda j, live=live: self._settle(j, live))  # type: ignore[misc]

    def _settle(self, job: concurrent.futures.Future[list[float]],
                live: list[tuple[Float32Array, concurrent.futures.Future[float]]]) -> None:
        with self._lock:
            self._inflight -= 1
        try:
            results = job.result()
        except Exception as exc:
            for _, f in live:
                f.set_exception(InferenceError(f"a worker process failed: {exc!r}"))
        else:
            for (_, f), p in zip(live, results, strict=True):
                f.set_result(p)
        self._pump()

    def transcribe(self, pcm: bytes, sample_rate: int) -> concurrent.futures.Future[str]:
        try:
            return self._pool.submit(_transcribe, pcm, sample_rate)
        except RuntimeError as exc:
            failed: concurrent.futures.Future[str] = concurrent.futures.Future()
            failed.set_exception(InferenceError(f"the process pool is closed: {exc}"))
            return failed

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def __repr__(self) -> str:
        return f"ProcessPoolBackend(processes={self.processes}, stt={self.stt!r})"
