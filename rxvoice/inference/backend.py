"""Where the shared model work runs: the inference backend protocol, and the in-process backend.

A server with many sessions asks two kinds of heavy questions: "is this
turn over?" (a Smart Turn window: the last seconds of a caller's speech)
and "what was said?" (an STT segment: one utterance's audio). Neither needs
the session's state, so they can be answered anywhere: in this process, in a
pool of local processes, or by a model server on other machines. An
:class:`InferenceBackend` is that "anywhere": it takes windows and segments
and returns futures.

The turn decisions never call a backend themselves (``rxvoice.turns`` stays
pure): a :class:`~rxvoice.inference.BackendTurnAnalyzer` is an ordinary
end-of-turn analyzer whose streams judge through the backend, on the
stage's offload, and a :class:`~rxvoice.inference.BackendSTT` an ordinary
STT stage whose recognizer sends the utterance to it. Both wait a bounded
time and then fall back (see their docs), reporting an
:class:`InferenceFallback`.

Three implementations: :class:`InProcessBackend` (here: the Smart Turn
batcher and a pool of recognizers in this process, the default),
:class:`~rxvoice.inference.ProcessPoolBackend` (local worker processes: the
models' CPU time off this process's GIL) and
:class:`~rxvoice.inference.RayServeBackend` (a Ray Serve deployment, batched
by Serve, that workers on any number of machines call).
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ..audio.pcm import Float32Array
from ..audio.turn import SmartTurnAnalyzer, SmartTurnBatcher
from ..errors import ConfigurationError, ModelError
from .sphinx import DecoderPool

__all__ = [
    "STT_ENGINES",
    "InProcessBackend",
    "InferenceBackend",
    "InferenceError",
    "InferenceFallback",
    "waiter_offload",
]

log = logging.getLogger("rxvoice.inference")

STT_ENGINES = ("pocketsphinx",)
"""The speech-to-text engines a backend can run on segments (``stt=``)."""


class InferenceError(ModelError):
    """A backend failed or did not answer in time; the caller falls back (the session goes on)."""


@dataclass(frozen=True)
class InferenceFallback:
    """What a backend fallback reports: which question, why, and how long it was waited for.

    Attributes:
        kind: ``"turn"`` (a Smart Turn window) or ``"stt"`` (a segment's words).
        backend: The backend's name.
        reason: What went wrong (``"no answer within 1.0 s"``, the error).
        waited: Seconds waited before falling back.
    """

    kind: str
    backend: str
    reason: str
    waited: float


@runtime_checkable
class InferenceBackend(Protocol):
    """The shared model work of many sessions: Smart Turn windows and STT segments, answered as futures.

    Implementations are thread-safe: any session's worker may submit at any time.
    """

    name: str

    def turn_probabilities(self, windows: Sequence[Float32Array]) -> concurrent.futures.Future[list[float]]:
        """The Smart Turn end-of-turn probability of each 16 kHz float32 window (the last 8 s are used)."""
        ...

    def transcribe(self, pcm: bytes, sample_rate: int) -> concurrent.futures.Future[str]:
        """The words of one utterance (16-bit mono PCM); ``""`` when nothing was heard.

        Raises (through the future): InferenceError when the backend runs no STT.
        """
        ...

    def close(self) -> None:
        """Release what the backend holds (threads, processes, connections)."""
        ...


_WAITERS: concurrent.futures.ThreadPoolExecutor | None = None
_WAITERS_LOCK = threading.Lock()


def waiter_offload(job: Callable[[], Any]) -> concurrent.futures.Future[Any]:
    """Run ``job`` on threads that only wait for a backend (32, shared): the offload for backend-judged stages.

    A verdict job blocks until its backend answers; on rxvoice's compute pool
    (:func:`rxvoice.workers.shared_pool`, four threads) four waiting jobs
    would starve everything else, and the in-process backend's own batches,
    which run there.
    """
    global _WAITERS
    pool = _WAITERS
    if pool is None:
        with _WAITERS_LOCK:
            pool = _WAITERS
            if pool is None:
                pool = _WAITERS = concurrent.futures.ThreadPoolExecutor(32, thread_name_prefix="rxvoice-inference")
    return pool.submit(job)


def _failed(error: BaseException) -> concurrent.futures.Future[Any]:
    future: concurrent.futures.Future[Any] = concurrent.futures.Future()
    future.set_exception(error)
    return future


class InProcessBackend:
    """The models in this process: Smart Turn through a :class:`~rxvoice.audio.turn.SmartTurnBatcher` (the windows
    waiting at the same moment judged in one call), PocketSphinx segments on pooled decoders.

    Args:
        model: The Smart Turn model file (default: found the usual way), or
        batcher: a batcher to use (then ``model`` is not given).
        stt: ``"pocketsphinx"`` to transcribe segments, or ``None``.
        max_batch: The most windows in one model call.
        concurrency: Model calls at once (the batcher's ``concurrency``; ``rxvoice serve``: the cores).
    """

    name = "in-process"

    def __init__(
        self,
        model: str | Path | None = None,
        *,
        batcher: SmartTurnBatcher | None = None,
        stt: str | None = None,
        max_batch: int = 32,
        concurrency: int = 1,
    ) -> None:
        if batcher is not None and model is not None:
            raise ConfigurationError("give the Smart Turn model file or a batcher, not both")
        if stt is not None and stt not in STT_ENGINES:
            raise ConfigurationError(f"stt must be one of {', '.join(STT_ENGINES)} or None, got {stt!r}")
        self.batcher = batcher if batcher is not None else SmartTurnBatcher(SmartTurnAnalyzer(model),
                                                                           max_batch=max_batch,
                                                                           concurrency=concurrency)
        self.stt = stt
        self.decoders = DecoderPool() if stt == "pocketsphinx" else None

    @property
    def model_path(self) -> Path:
        return self.batcher.analyzer.model_path

    def turn_probabilities(self, windows: Sequence[Float32Array]) -> concurrent.futures.Future[list[float]]:
        try:
            futures = [self.batcher.submit(w) for w in windows]
        except ModelError as exc:
            return _failed(InferenceError(str(exc)))
        return _gather(futures)

    def transcribe(self, pcm: bytes, sample_rate: int) -> concurrent.futures.Future[str]:
        decoders = self.decoders
        if decoders is None:
            return _failed(InferenceError("this backend runs no speech-to-text (give it stt='pocketsphinx')"))
        return decoders.transcribe(pcm, sample_rate)

    def close(self) -> None:
        self.batcher.close()
        if self.decoders is not None:
            self.decoders.close()

    def __repr__(self) -> str:
        return f"InProcessBackend({self.model_path.name!r}, stt={self.stt!r})"


def _gather(futures: Sequence[concurrent.futures.Future[float]]) -> concurrent.futures.Future[list[float]]:
    """One future of the results of several (the first error wins); cancelling it cancels those not yet
    started (a window still queued at the batcher is then never judged)."""
    out: concurrent.futures.Future[list[float]] = concurrent.futures.Future()
    if not futures:
        out.set_result([])
        return out

    def cancelled(f: concurrent.futures.Future[list[float]]) -> None:
        if f.cancelled():
            for inner in futures:
                inner.cancel()

    out.add_done_callback(cancelled)
    left = [len(futures)]
    lock = threading.Lock()

    def done(_f: concurrent.futures.Future[float]) -> None:
        with lock:
            left[0] -= 1
            last = left[0] == 0
        if not last or out.done():
            return
        try:
            out.set_result([f.result() for f in futures])
        except BaseException as exc:  # handed on as the value
            out.set_exception(exc if isinstance(exc, InferenceError) else InferenceError(str(exc)))

    for f in futures:
        f.add_done_callback(done)
    return out
