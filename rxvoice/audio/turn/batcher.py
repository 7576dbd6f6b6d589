"""Shared Smart Turn inference: the verdicts of many sessions in one model call.

A server running many conversations asks Smart Turn for a verdict at every
pause of every caller. One ONNX call on a batch of N windows costs much less
than N calls, so :class:`SmartTurnBatcher` judges the windows that are
waiting together:

* :meth:`SmartTurnBatcher.probability` (blocking, what a stream's analysis
  calls on its worker) queues a window and waits. Whoever waits while no
  batch is running leads the next one: it takes **everything queued** (up
  to ``max_batch``), runs one ``probabilities`` call and settles every
  future in it, then hands over to the next waiter. Windows that arrive
  while a batch runs form the next one, so a loaded server batches by
  itself and an idle one adds no delay. ``window`` (seconds, default 0)
  optionally lets a leader wait that long for a full batch first.
  ``concurrency`` (default 1) lets that many batches run at once (the model
  call releases the GIL), the queued windows shared between the free
  leaders: on a CPU where a batch costs as much a window as one window
  alone, two cores judge a burst of pauses in half the time.
* :meth:`SmartTurnBatcher.submit` (non-blocking) queues a window and
  returns a future; when nobody is waiting to lead, a job on rxvoice's
  shared worker pool (:func:`rxvoice.workers.shared_pool`) drains the queue.
* Used as an *offload* (``pair.user().offload = batcher``), it runs each
  session's analysis job on waiter threads of its own, so many sessions'
  :class:`~rxvoice.audio.turn.SmartTurnStream` analyses can wait for one
  batch at the same time. These threads cannot be the shared pool's: an
  analysis job blocks until its batch is judged, so on a pool of two workers
  a batch could never hold more than two windows, and every other stage's
  work would queue behind the waiting jobs.

The results are exactly those of unbatched calls (the model's batch rows are
independent; tests check equality). Nothing of a session's logic runs on
these threads: answers re-enter each session through the session's gate.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from ..._seconds import check_seconds
from ...errors import ConfigurationError, ModelError
from ...pipeline.offload import shared_pool
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
        window: Seconds a leader waits for a full batch before it judges what
            is queued (0: at once; batches still form under load).
        waiters: Threads that run offloaded analysis jobs (see the module
            docstring); at least the number of sessions expected to pause
            at the same moment.
        concurrency: Batches judged at the same time (each on its own
            thread, one core each); the windows waiting are shared between
            the leaders free to take them.

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
        concurrency: int = 1,
    ) -> None:
        for name, value, low in (("max_batch", max_batch, 1), ("waiters", waiters, 1), ("concurrency", concurrency, 1)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ConfigurationError(f"SmartTurnBatcher needs {name} >= {low}, got {value!r}")
        check_seconds(window, "SmartTurnBatcher.window", high=1.0)
        if analyzer is not None and not isinstance(analyzer, SmartTurnAnalyzer):
            raise ConfigurationError(f"SmartTurnBatcher needs a SmartTurnAnalyzer, got {analyzer!r}")
        self.analyzer = analyzer if analyzer is not None else SmartTurnAnalyzer()
        self.max_batch = max_batch
        self.window = float(window)
        self.concurrency = concurrency
        self._waiters = waiters
        self._queue: deque[_Job] = deque()
        self._cond = threading.Condition()
        self._running = 0  # leaders taking or judging a batch (at most concurrency)
        self._waiting = 0  # callers of probability() waiting for their window
        self._driving = 0  # drain jobs on the shared pool
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
            self._enqueue(samples, future)
            drive = self._needs_driver()
        if drive:
            self._start_driver()
        return future

    def probability(self, samples: AudioInput) -> float:
        """The probability of one window, judged with whatever else is waiting (blocks; may lead the batch)."""
        future: concurrent.futures.Future[float] = concurrent.futures.Future()
        with self._cond:
            self._enqueue(samples, future)
            self._waiting += 1
            try:
                while not future.done():
                    if self._running >= self.concurrency:
                        self._cond.wait()
                    else:
                        self._lead()
            finally:
                self._waiting -= 1
            drive = self._needs_driver()
        if drive:
            self._start_driver()
        return future.result()

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

    # -- leading a batch (the lock is held on entry and exit) ---------------------------

    def _enqueue(self, samples: AudioInput, future: concurrent.futures.Future[float]) -> None:
        if self._closed:
            raise ModelError("this SmartTurnBatcher is closed")
        self._queue.append((samples, future))
        self._cond.notify_all()  # a leader waiting for company counts the queue again

    def _lead(self) -> None:
        """Take the next batch and judge it, the lock released meanwhile.

        The batch is the leader's share of what is queued: all of it with one leader at a time, else split
        between this leader and the others that may still start (``concurrency``).
        """
        self._running += 1
        try:
            if self.window > 0:  # real time, on this caller's thread only
                self._cond.wait_for(lambda: len(self._queue) >= self.max_batch or self._closed, self.window)
            free = self.concurrency - self._running + 1  # this leader and those that may still start
            n = min(-(-len(self._queue) // free), self.max_batch)
            batch = [self._queue.popleft() for _ in range(n)]
            spawn = self._needs_driver()  # the rest of the queue for another leader, at the same time
            self._cond.release()
            try:
                if spawn:
                    self._start_driver()
                live = [(w, f) for w, f in batch if f.set_running_or_notify_cancel()]
                if live:
                    self._run(live)
            finally:
                self._cond.acquire()
        finally:
            self._running -= 1
            self._cond.notify_all()

    def _needs_driver(self) -> bool:
        """Whether queued windows have nobody to judge them (then a drain job is marked as started).

        Nobody: no caller is waiting to lead, and every drain job is judging a batch while another may start.
        """
        if (self._queue and not self._waiting and self._running < self.concurrency
                and self._driving < self.concurrency and self._running >= self._driving):
            self._driving += 1
            return True
        return False

    def _start_driver(self) -> None:
        try:
            shared_pool().submit(self._drain)
        except RuntimeError:  # the pool refuses work at interpreter exit: drain here
            self._drain()

    def _drain(self) -> None:
        """The shared pool's job: lead batches until the queue is empty or a waiter leads."""
        with self._cond:
            try:
                while self._queue and self._running < self.concurrency:
                    self._lead()
            finally:
                self._driving -= 1
                drive = self._needs_driver()
        if drive:
            self._start_driver()

    def _run(self, batch: list[_Job]) -> None:
        with self._cond:
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
        """Refuse later submissions; the queued windows are still judged, then the waiter threads end."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False)

    def __repr__(self) -> str:
        mean = self.judged / self.calls if self.calls else 0.0
        return f"<SmartTurnBatcher calls={self.calls} judged={self.judged} mean_batch={mean:.1f}>"
