"""Shared Smart Turn inference: the verdicts of many sessions in one model call.

A server running many conversations asks Smart Turn for a verdict at every
pause of every caller. One ONNX call on a batch of N windows costs much less
than N calls, so :class:`SmartTurnBatcher` gathers the windows that are
waiting and judges them together on one model thread:

* :meth:`SmartTurnBatcher.submit` hands a window in (from any thread) and
  returns a future at once; the model thread takes **everything queued** when
  it is free (up to ``max_batch``), runs one ``probabilities`` call and
  settles the futures. Windows that arrive while a batch runs form the next
  one, so a loaded server batches by itself and an idle one adds no delay.
  ``window`` (seconds, default 0) optionally waits a little after the first
  arrival for company.
* Used as an *offload* (``pair.user().offload = batcher``), it runs each
  session's analysis job on a small pool of waiter threads, so many sessions'
  :class:`~rxvoice.audio.turn.SmartTurnStream` analyses can block on the
  batcher at the same time (the default offload is one worker thread, which
  would judge them one by one).

The results are exactly those of unbatched calls (the model's batch rows are
independent; tests check equality). The model thread is real infrastructure,
like a thread pool: nothing of a session's logic runs on it, and its answers
re-enter each session through the session's gate.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from ...errors import ConfigurationError, ModelError
from ..pcm import AudioInput
from .params import SmartTurnParams
from .smart_turn import SmartTurnAnalyzer
from .stream import SmartTurnStream

__all__ = ["SmartTurnBatcher"]

log = logging.getLogger("rxvoice.audio.turn")

_Job = tuple[AudioInput, "concurrent.futures.Future[float]"]


class SmartTurnBatcher:
    """Judges Smart Turn windows of many sessions together, one model call per batch.

    Args:
        analyzer: The Smart Turn analyzer (model) to run; default: a
            :class:`SmartTurnAnalyzer` with the model found the usual way.
        max_batch: The most windows in one model call.
        window: Seconds to wait after the first window of an idle batcher for
            others to join (0: run at once; batches still form under load).
        waiters: Threads that run offloaded analysis jobs (see the module
            docstring); at least the number of sessions expected to pause
            at the same moment.

    Example:
        >>> batcher = SmartTurnBatcher(SmartTurnAnalyzer())     # one per process
        >>> stop = TurnAnalyzerStop(batcher)        # its streams judge through the batcher
        >>> pair.user().offload = batcher           # so analyses of many sessions can wait together
    """

    def __init__(
        self,
        analyzer: SmartTurnAnalyzer | None = None,
        *,
        max_batch: int = 32,
        window: float = 0.0,
        waiters: int = 32,
    ) -> None:
        for name, value, low in (("max_batch", max_batch, 1), ("waiters", waiters, 1)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ConfigurationError(f"SmartTurnBatcher needs {name} >= {low}, got {value!r}")
        if isinstance(window, bool) or not isinstance(window, int | float) or not 0 <= window <= 1:
            raise ConfigurationError(f"window must be 0..1 seconds, got {window!r}")
        if analyzer is not None and not isinstance(analyzer, SmartTurnAnalyzer):
            raise ConfigurationError(f"SmartTurnBatcher needs a SmartTurnAnalyzer, got {analyzer!r}")
        self.analyzer = analyzer if analyzer is not None else SmartTurnAnalyzer()
        self.max_batch = max_batch
        self.window = float(window)
        self._waiters = waiters
        self._queue: deque[_Job] = deque()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._closed = False
        self.calls = 0
        """Model calls made so far."""
        self.judged = 0
        """Windows judged so far (``judged / calls`` is the mean batch size)."""

    # -- inference -------------------------------------------------------------------

    def submit(self, samples: AudioInput) -> concurrent.futures.Future[float]:
        """Queue one window (16 kHz mono, last 8 s used); its probability comes back in the future.

        Raises:
            ModelError: the batcher was closed.
        """
        future: concurrent.futures.Future[float] = concurrent.futures.Future()
        with self._cond:
            if self._closed:
                raise ModelError("this SmartTurnBatcher is closed")
            self._queue.append((samples, future))
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name="rxvoice-smart-turn", daemon=True)
                self._thread.start()
            self._cond.notify()
        return future

    def probability(self, samples: AudioInput) -> float:
        """Submit and wait: the probability of one window, judged with whatever else is waiting."""
        return self.submit(samples).result()

    def probabilities(self, windows: Sequence[AudioInput]) -> list[float]:
        """Submit several windows and wait for all of them."""
        futures = [self.submit(w) for w in windows]
        return [f.result() for f in futures]

    @property
    def params(self) -> SmartTurnParams:
        """The buffering parameters of the streams it opens (the analyzer's)."""
        return self.analyzer.params

    def open_stream(self, sample_rate: int) -> SmartTurnStream:
        """A session's end-of-turn stream whose verdicts go through this batcher (``EndOfTurnAnalyzer``)."""
        return SmartTurnStream(self.probability, sample_rate, self.analyzer.params)

    def _take(self) -> list[_Job] | None:
        with self._cond:
            while not self._queue and not self._closed:
                self._cond.wait()
            if not self._queue:
                return None
            if self.window > 0 and len(self._queue) < self.max_batch and not self._closed:
                self._cond.wait(self.window)  # company for the first window; real time, on this thread only
            n = min(len(self._queue), self.max_batch)
            return [self._queue.popleft() for _ in range(n)]

    def _serve(self) -> None:
        while True:
            batch = self._take()
            if batch is None:
                return
            live = [(w, f) for w, f in batch if f.set_running_or_notify_cancel()]
            if live:
                self._run(live)

    def _run(self, batch: list[_Job]) -> None:
        self.calls += 1
        self.judged += len(batch)
        try:
            results = self.analyzer.probabilities([w for w, _ in batch])
        except Exception:
            if len(batch) == 1:
                self._settle_one(batch[0])
                return
            log.warning("a batched Smart Turn call failed; judging its %d windows one by one", len(batch))
            for job in batch:
                self._settle_one(job)
            return
        for (_, future), p in zip(batch, results, strict=True):
            future.set_result(p)

    def _settle_one(self, job: _Job) -> None:
        samples, future = job
        try:
            future.set_result(self.analyzer.probability(samples))
        except Exception as exc:
            future.set_exception(exc)

    # -- as an offload -------------------------------------------------------------------

    def __call__(self, job: Callable[[], Any]) -> concurrent.futures.Future[Any]:
        """Run an analysis job on a waiter thread (an ``Offload`` for aggregators and processors)."""
        with self._cond:
            if self._closed:
                raise ModelError("this SmartTurnBatcher is closed")
            if self._pool is None:
                self._pool = concurrent.futures.ThreadPoolExecutor(
                    self._waiters, thread_name_prefix="rxvoice-smart-turn-wait"
                )
            pool = self._pool
        return pool.submit(job)

    def close(self) -> None:
        """Stop the threads once the queued windows are judged; later submissions raise."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False)

    def __repr__(self) -> str:
        mean = self.judged / self.calls if self.calls else 0.0
        return f"<SmartTurnBatcher calls={self.calls} judged={self.judged} mean_batch={mean:.1f}>"
