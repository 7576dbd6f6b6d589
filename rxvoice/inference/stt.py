"""Speech-to-text through a backend: streamed where the backend can, else each utterance sent whole.

:class:`BackendSTT` is an ordinary STT stage (placed after the VAD). With a
backend that opens streaming recognizers (``open_recognizer()``:
:class:`~rxvoice.inference.ProcessPoolBackend`), each session's audio goes to
its recognizer as it comes, with interim guesses, and the final words are
ready when the utterance ends. Otherwise it keeps each utterance's audio and,
when the VAD closes it, asks the backend for its words (no interim guesses:
the segment is judged whole), waiting a bounded time. A backend
that fails or does not answer within ``timeout`` seconds loses that
utterance's words: the stage reports it (``on_error`` with an
:class:`~rxvoice.inference.InferenceError`, an ``ErrorFrame`` upstream) and
an :class:`~rxvoice.inference.InferenceFallback` to ``on_fallback``; the
turn strategy then ends the turn without words as it would for an
utterance nobody understood, and the session goes on.
"""

from __future__ import annotations

import concurrent.futures
import logging
import math
import time
from collections.abc import Callable
from typing import Any

from ..errors import ConfigurationError
from ..services.stt import Recognizer, STTService
from .backend import InferenceBackend, InferenceError, InferenceFallback, waiter_offload

__all__ = ["BackendSTT"]

log = logging.getLogger("rxvoice.inference")


class _SegmentRecognizer:
    def __init__(self, stt: BackendSTT) -> None:
        self.stt = stt
        self.audio = bytearray()

    def accept(self, audio: bytes) -> str | None:
        self.audio += audio
        return None

    def finish(self) -> str:
        audio, self.audio = bytes(self.audio), bytearray()
        if not audio:
            return ""
        return self.stt.words(audio)

    def close(self) -> None:
        self.audio = bytearray()


class BackendSTT(STTService):
    """The words of each utterance from an :class:`~rxvoice.inference.InferenceBackend`.

    Args:
        backend: Where segments are transcribed.
        timeout: Seconds a whole utterance's words are waited for.
        on_fallback: Called with each :class:`~rxvoice.inference.InferenceFallback`.
        streaming: Stream to the backend's recognizers when it has them (``open_recognizer``).
        **kwargs: As for :class:`~rxvoice.services.stt.STTService` (the offload defaults to
            :func:`~rxvoice.inference.waiter_offload`; ``ttfs_p99_latency`` to ``timeout``).
    """

    name = "BackendSTT"

    def __init__(
        self,
        backend: InferenceBackend,
        *,
        timeout: float = 2.0,
        on_fallback: Callable[[InferenceFallback], None] | None = None,
        streaming: bool = True,
        **kwargs: Any,
    ) -> None:
        if not callable(getattr(backend, "transcribe", None)):
            raise ConfigurationError(f"BackendSTT needs an InferenceBackend, got {backend!r}")
        if (isinstance(timeout, bool) or not isinstance(timeout, int | float) or not math.isfinite(timeout)
                or timeout <= 0):
            raise ConfigurationError(f"timeout must be a positive number of seconds, got {timeout!r}")
        kwargs.setdefault("offload", waiter_offload)
        kwargs.setdefault("ttfs_p99_latency", float(timeout))
        super().__init__(**kwargs)
        self.backend = backend
        self.timeout = float(timeout)
        self.on_fallback = on_fallback
        self.streaming = streaming

    def __repr__(self) -> str:
        return f"BackendSTT({self.backend!r})"

    def new_recognizer(self) -> Recognizer:
        opener = getattr(self.backend, "open_recognizer", None)
        if self.streaming and callable(opener):
            recognizer: Recognizer = opener()
            return recognizer
        return _SegmentRecognizer(self)

    def words(self, pcm: bytes) -> str:
        """On the STT worker: the backend's words for one utterance, or InferenceError after the fallback."""
        started = time.monotonic()  # a real clock is the point: the bound on a real wait
        future = self.backend.transcribe(pcm, self.sample_rate)
        try:
            return str(future.result(timeout=self.timeout))
        except concurrent.futures.TimeoutError:
            future.cancel()
            reason = f"no answer within {self.timeout:g} s"
        except Exception as exc:
            reason = f"{type(exc).__name__}: {exc}"
        fallback = InferenceFallback("stt", getattr(self.backend, "name", type(self.backend).__name__), reason,
                                     round(time.monotonic() - started, 3))
        if self.on_fallback is not None:
            try:
                self.on_fallback(fallback)
            except Exception:
                log.exception("an inference fallback handler failed; contained")
        raise InferenceError(f"the {fallback.backend} backend gave no words: {reason}")
