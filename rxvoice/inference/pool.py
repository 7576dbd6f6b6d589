"""The shared model work in local worker processes: Smart Turn and the recognizer off this process's GIL.

A server process runs every session's frames on one event loop; model work
on its threads still competes for its GIL (PocketSphinx holds it while it
decodes, Smart Turn's feature extraction in part). :class:`ProcessPoolBackend`
sends Smart Turn windows to ``processes`` worker processes (spawned, each
loading the model once); windows that queue while every worker is busy go
out together as one batch (one model call), so a loaded server batches by
itself. PocketSphinx runs in ``stt_processes`` processes of its own (a long
utterance never delays a verdict): whole segments (:meth:`~ProcessPoolBackend.transcribe`)
or streamed as the caller speaks (:meth:`~ProcessPoolBackend.open_recognizer`:
each session's audio goes to one process as it comes, so its words are ready
when the utterance ends, and the waiting thread holds no GIL).
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


def _init(model: str | None, stt: str | None) -> None:
    if model is not None:
        from ..audio.turn import SmartTurnAnalyzer

        _MODELS["turn"] = SmartTurnAnalyzer(model)
    if stt == "pocketsphinx":
        from .sphinx import DecoderPool

        _MODELS["stt"] = DecoderPool(keep=1)


def _ready() -> bool:
    return bool(_MODELS)


def _judge(windows: list[Float32Array]) -> list[float]:
    return list(_MODELS["turn"].probabilities(windows))


def _shard(conn: Any) -> None:
    """A PocketSphinx process: each session's utterance on a lent decoder, its adaptation kept per session."""
    from .sphinx import DecoderPool, _PooledRecognizer

    pool = DecoderPool(keep=2)
    sessions: dict[int, _PooledRecognizer] = {}
    conn.send(("ready", None))
    while True:
        try:
            key, op, payload = conn.recv()
        except EOFError:
            return
        try:
            if op == "segment":
                conn.send(("ok", pool._decode(*payload)))
                continue
            recognizer = sessions.get(key)
            if recognizer is None:
                recognizer = sessions[key] = _PooledRecognizer(pool)
            if op == "accept":
                conn.send(("ok", recognizer.accept(payload)))
            elif op == "finish":
                conn.send(("ok", recognizer.finish()))
            else:  # close
                sessions.pop(key, None)
                recognizer.close()
                conn.send(("ok", None))
        except Exception as exc:  # the caller's utterance fails, the process goes on
            conn.send(("error", repr(exc)))


class _Shard:
    """One PocketSphinx process and the pipe to it (one request at a time; the waiting thread holds no GIL)."""

    def __init__(self, context: Any, start_timeout: float) -> None:
        self.conn, child = context.Pipe()
        self.process = context.Process(target=_shard, args=(child,), daemon=True, name="rxvoice-sphinx")
        self.process.start()
        child.close()
        self.lock = threading.Lock()
        if not self.conn.poll(start_timeout):
            self.process.terminate()
            raise ConfigurationError("a PocketSphinx process did not start")
        self.conn.recv()

    def call(self, key: int, op: str, payload: Any) -> Any:
        with self.lock:
            try:
                self.conn.send((key, op, payload))
                status, value = self.conn.recv()
            except (EOFError, OSError) as exc:
                raise InferenceError(f"the PocketSphinx process is gone: {exc!r}") from exc
        if status == "error":
            raise InferenceError(f"the PocketSphinx process failed: {value}")
        return value

    def close(self) -> None:
        self.conn.close()
        self.process.terminate()


class _RemoteRecognizer:
    """A session's recognizer in a PocketSphinx process (the ``Recognizer`` protocol; calls block on the pipe)."""

    def __init__(self, shard: _Shard, key: int) -> None:
        self.shard = shard
        self.key = key

    def accept(self, audio: bytes) -> str | None:
        result = self.shard.call(self.key, "accept", audio)
        return None if result is None else str(result)

    def finish(self) -> str:
        return str(self.shard.call(self.key, "finish", None))

    def close(self) -> None:
        self.shard.call(self.key, "close", None)


class ProcessPoolBackend:
    """Smart Turn windows and STT segments judged in ``processes`` local worker processes.

    Args:
        model: The Smart Turn model file (default: found the usual way).
        processes: Smart Turn worker processes (each loads the model once).
        stt: ``"pocketsphinx"`` to run the recognizer in processes too, or ``None``.
        stt_processes: PocketSphinx processes (each decodes one utterance piece at a time).
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
        processes: int = 1,
        stt: str | None = None,
        stt_processes: int = 1,
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
        context = multiprocessing.get_context("spawn")
        self._pool = concurrent.futures.ProcessPoolExecutor(
            processes, mp_context=context, initializer=_init, initargs=(str(self.model_path), None),
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
        self._shards: list[_Shard] = []
        if stt is not None:
            try:
                self._shards = [_Shard(context, start_timeout) for _ in range(max(1, stt_processes))]
            except Exception:
                self.close()
                raise
        self._next = 0
        self._keys = 0

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

    def _shard_for(self) -> tuple[_Shard, int]:
        if not self._shards:
            raise InferenceError("this backend runs no speech-to-text (give it stt='pocketsphinx')")
        with self._lock:
            self._keys += 1
            self._next = (self._next + 1) % len(self._shards)
            return self._shards[self._next], self._keys

    def transcribe(self, pcm: bytes, sample_rate: int) -> concurrent.futures.Future[str]:
        from .backend import waiter_offload

        try:
            shard, key = self._shard_for()
        except InferenceError as exc:
            failed: concurrent.futures.Future[str] = concurrent.futures.Future()
            failed.set_exception(exc)
            return failed
        return waiter_offload(lambda: str(shard.call(key, "segment", (pcm, sample_rate))))

    def open_recognizer(self) -> _RemoteRecognizer:
        """A session's streaming recognizer in one of the PocketSphinx processes (for an STT stage)."""
        shard, key = self._shard_for()
        return _RemoteRecognizer(shard, key)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        for shard in getattr(self, "_shards", []):
            shard.close()

    def __repr__(self) -> str:
        return f"ProcessPoolBackend(processes={self.processes}, stt={self.stt!r}, stt_processes={len(self._shards)})"
