"""Smart Turn through a backend: an end-of-turn analyzer whose verdicts wait a bounded time.

:class:`BackendTurnAnalyzer` is an ordinary
:class:`~rxvoice.turns.EndOfTurnAnalyzer`: any stop strategy takes it
(``recommended_turn_setup(analyzer=...)``, ``TurnAnalyzerStop(...)``), and
its streams buffer each session's audio exactly as
:class:`~rxvoice.audio.turn.SmartTurnAnalyzer`'s do. Only the verdict goes
elsewhere: the stream's window is sent to the backend, and the analysis job
(on the stage's offload, :func:`~rxvoice.inference.waiter_offload` in
``rxvoice serve``) waits for the answer at most ``timeout`` seconds.

**The fallback.** A backend that fails or does not answer in time never
holds the turn: the verdict is taken as incomplete (no probability), an
:class:`~rxvoice.inference.InferenceFallback` is reported to ``on_fallback``
and logged, and the stop strategy decides without the model: the
recommended stop (:class:`~rxvoice.turns.FusedTurnStop`) on the words and
the silence (finished words are answered at once, others after its
``unsure_timeout``), :class:`~rxvoice.turns.TurnAnalyzerStop` at the next
pause or after Smart Turn's 3 s of silence. The session goes on; the next
pause asks the backend again.

**A verdict nobody needs is dropped.** When the caller speaks again, or the
turn ends on the words and the silence, before the verdict is back, the
session cancels it (:class:`~rxvoice.turns.AnalyzerSession`): a window still
queued at the backend is never judged, and the wait ends at once, with no
fallback reported (the decision did not need it; :attr:`BackendTurnAnalyzer.dropped`
counts them). Under load this is where the model's time goes first: the
pauses of callers who already went on.
"""

from __future__ import annotations

import concurrent.futures
import logging
import math
import threading
import time
from collections.abc import Callable

from ..audio.pcm import Float32Array
from ..audio.turn import SmartTurnParams, SmartTurnStream
from ..errors import ConfigurationError
from .backend import InferenceBackend, InferenceError, InferenceFallback

__all__ = ["BackendTurnAnalyzer"]

log = logging.getLogger("rxvoice.inference")


class BackendTurnAnalyzer:
    """Smart Turn streams judged by an :class:`~rxvoice.inference.InferenceBackend`, each verdict bounded in time.

    Args:
        backend: Where the windows are judged.
        timeout: Seconds a verdict is waited for before the fallback.
        params: Buffering of the streams (Smart Turn's defaults).
        on_fallback: Called with each :class:`~rxvoice.inference.InferenceFallback` (on the worker
            that waited; make one analyzer per session to report to that session).
        on_dropped: Called (on the worker) for each verdict the session cancelled because it no longer
            needed it.
    """

    def __init__(
        self,
        backend: InferenceBackend,
        *,
        timeout: float = 1.0,
        params: SmartTurnParams | None = None,
        on_fallback: Callable[[InferenceFallback], None] | None = None,
        on_dropped: Callable[[], None] | None = None,
    ) -> None:
        if not callable(getattr(backend, "turn_probabilities", None)):
            raise ConfigurationError(f"BackendTurnAnalyzer needs an InferenceBackend, got {backend!r}")
        if (isinstance(timeout, bool) or not isinstance(timeout, int | float) or not math.isfinite(timeout)
                or timeout <= 0):
            raise ConfigurationError(f"timeout must be a positive number of seconds, got {timeout!r}")
        if params is not None and not isinstance(params, SmartTurnParams):
            raise ConfigurationError(f"params must be a SmartTurnParams, got {params!r}")
        self.backend = backend
        self.timeout = float(timeout)
        self.params = params or SmartTurnParams()
        self.on_fallback = on_fallback
        self.on_dropped = on_dropped
        self.fallbacks = 0
        """Verdicts that fell back so far."""
        self.dropped = 0
        """Verdicts cancelled before they were back, because the session no longer needed them."""

    def open_stream(self, sample_rate: int = 16000) -> SmartTurnStream:
        """A session's stream (the ``EndOfTurnAnalyzer`` protocol; it can drop a verdict: ``cancel()``)."""
        return _BackendStream(self, sample_rate, self.params)

    def with_fallback(self, on_fallback: Callable[[InferenceFallback], None]) -> BackendTurnAnalyzer:
        """The same backend and settings, reporting to ``on_fallback`` (one per session)."""
        return BackendTurnAnalyzer(self.backend, timeout=self.timeout, params=self.params, on_fallback=on_fallback,
                                   on_dropped=self.on_dropped)

    def _judge(self, segment: Float32Array, stream: _BackendStream | None = None) -> float:
        """On the analysis worker: the backend's probability, or InferenceError after the fallback.

        Raises:
            _Dropped: ``stream`` cancelled the verdict meanwhile (no fallback).
        """
        started = time.monotonic()  # a real clock is the point: the bound on a real wait
        future = self.backend.turn_probabilities([segment])
        if stream is not None and not stream.waiting_on(future):
            future.cancel()
            raise _Dropped
        try:
            (probability,) = future.result(timeout=self.timeout)
            return float(probability)
        except concurrent.futures.CancelledError:
            if stream is not None and stream.cancelled:
                raise _Dropped from None
            reason = "the backend cancelled the verdict"
        except concurrent.futures.TimeoutError:
            future.cancel()
            reason = f"no answer within {self.timeout:g} s"
        except Exception as exc:
            reason = f"{type(exc).__name__}: {exc}"
        finally:
            if stream is not None:
                stream.waiting_on(None)
        waited = round(time.monotonic() - started, 3)
        fallback = InferenceFallback("turn", getattr(self.backend, "name", type(self.backend).__name__), reason,
                                     waited)
        self.fallbacks += 1
        log.warning("Smart Turn on the %s backend: %s; the turn is decided without the model", fallback.backend,
                    reason)
        if self.on_fallback is not None:
            try:
                self.on_fallback(fallback)
            except Exception:
                log.exception("an inference fallback handler failed; contained")
        raise InferenceError(f"the {fallback.backend} backend: {reason}")

    def __repr__(self) -> str:
        return f"BackendTurnAnalyzer({self.backend!r}, timeout={self.timeout:g})"


class _Dropped(Exception):
    """A verdict the session cancelled (it no longer needed it)."""


class _BackendStream(SmartTurnStream):
    """A :class:`SmartTurnStream` judged by a backend, whose verdict in flight the session can cancel."""

    __slots__ = ("_future", "_lock", "_owner", "cancelled")

    def __init__(self, owner: BackendTurnAnalyzer, sample_rate: int, params: SmartTurnParams) -> None:
        super().__init__(self._judge, sample_rate, params)
        self._owner = owner
        self._lock = threading.Lock()
        self._future: concurrent.futures.Future[list[float]] | None = None
        self.cancelled = False

    def _judge(self, segment: Float32Array) -> float:
        return self._owner._judge(segment, self)

    def waiting_on(self, future: concurrent.futures.Future[list[float]] | None) -> bool:
        """Note the backend's future being waited for (``None``: no more); ``False`` when already cancelled."""
        with self._lock:
            self._future = future
            return not self.cancelled

    def analyze(self) -> tuple[bool, float | None]:
        """As :meth:`SmartTurnStream.analyze`; ``(False, None)`` when the session cancelled the verdict."""
        with self._lock:
            self.cancelled = False
        try:
            return super().analyze()
        except _Dropped:
            owner = self._owner
            owner.dropped += 1
            log.debug("a Smart Turn verdict the session no longer needed was dropped")
            if owner.on_dropped is not None:
                try:
                    owner.on_dropped()
                except Exception:
                    log.exception("a dropped-verdict handler failed; contained")
            return False, None

    def cancel(self) -> None:
        """On the session: the verdict in flight is not needed any more (drop the window if still queued)."""
        with self._lock:
            self.cancelled = True
            future = self._future
        if future is not None:
            future.cancel()
