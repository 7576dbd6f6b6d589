"""PocketSphinx decoders shared by the sessions of a process: one per utterance being heard, not per connection.

A PocketSphinx decoder costs about 0.2-0.5 s of CPU (with the GIL held) and
tens of MB to create. :class:`~rxvoice.services.stt.PocketSphinxSTT` makes one
per session as it starts, so a connection that never speaks costs that too,
and a client reconnecting in a loop stalls everyone else. Here a
:class:`DecoderPool` lends a decoder to an utterance when it starts and
takes it back when it ends: decoders exist for the utterances being spoken
at once (a handful), an idle connection holds none, and a new one costs
nothing. :class:`PooledPocketSphinxSTT` is the STT stage over a pool (the
same streaming, interim guesses and finals); :meth:`DecoderPool.transcribe`
decodes a whole segment (the in-process backend's STT).

Decoders are used on PocketSphinx's own thread
(:func:`~rxvoice.services.stt.sphinx_offload`): it holds the GIL while it
decodes, so more threads would not decode faster.
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..audio.pcm import float_to_pcm16
from ..audio.resample import resample
from ..errors import ConfigurationError
from ..services.stt import SPHINX_FAST, PocketSphinxSTT, Recognizer, pocketsphinx_available, sphinx_offload

__all__ = ["DecoderPool", "PooledPocketSphinxSTT"]

_PIECE = 1600  # 50 ms at 16 kHz: the event loop runs between pieces


class DecoderPool:
    """Idle PocketSphinx decoders, lent to one utterance at a time.

    Args:
        decoder_config: Extra ``pocketsphinx.Decoder`` settings (as :class:`PocketSphinxSTT`'s).
        keep: Idle decoders kept for the next utterances (more are released).
    """

    def __init__(self, decoder_config: Mapping[str, Any] | None = None, *, keep: int = 4) -> None:
        if not pocketsphinx_available():
            raise ConfigurationError("a PocketSphinx decoder pool needs the pocketsphinx package: "
                                     "pip install 'rxvoice[stt]'")
        if isinstance(keep, bool) or not isinstance(keep, int) or keep < 0:
            raise ConfigurationError(f"keep must be an int >= 0, got {keep!r}")
        self.config: dict[str, Any] = {"samprate": 16000, "loglevel": "FATAL", **SPHINX_FAST,
                                       **dict(decoder_config or {})}
        self.keep = keep
        self._idle: list[Any] = []
        self._lock = threading.Lock()
        self.created = 0
        """Decoders created so far (the pool's whole cost: compare with the sessions served)."""
        self.lent = 0
        """Decoders lent out now."""
        self._initial_cmn: str | None = None

    def acquire(self, cmn: str | None = None) -> Any:
        """An idle decoder, or a new one (on the calling thread: PocketSphinx's), set to ``cmn``.

        ``cmn`` is the cepstral mean a session's previous utterance ended with (``decoder.get_cmn()``):
        with it the decoder goes on adapting to that caller exactly as a decoder of its own would;
        ``None`` starts from a fresh decoder's.
        """
        with self._lock:
            self.lent += 1
            decoder = self._idle.pop() if self._idle else None
            if decoder is None:
                self.created += 1
        if decoder is None:
            from pocketsphinx import Decoder

            decoder = Decoder(**self.config)
            if self._initial_cmn is None:
                self._initial_cmn = decoder.get_cmn()
        decoder.set_cmn(cmn if cmn is not None else self._initial_cmn)
        return decoder

    def release(self, decoder: Any) -> None:
        """Take a decoder back (its utterance ended)."""
        with self._lock:
            self.lent = max(0, self.lent - 1)
            if len(self._idle) < self.keep:
                self._idle.append(decoder)

    def prewarm(self, n: int = 1) -> None:
        """Create ``n`` idle decoders now (at server start, so the first caller does not pay)."""
        decoders = [self.acquire() for _ in range(n)]
        for d in decoders:
            self.release(d)

    def transcribe(self, pcm: bytes, sample_rate: int) -> concurrent.futures.Future[str]:
        """The words of a whole segment, decoded on PocketSphinx's thread."""
        return sphinx_offload(lambda: self._decode(pcm, sample_rate))

    def _decode(self, pcm: bytes, sample_rate: int) -> str:
        if sample_rate != 16000:
            samples = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0
            pcm = float_to_pcm16(resample(samples, sample_rate, 16000))
        decoder = self.acquire()
        try:
            decoder.start_utt()
            for i in range(0, len(pcm), _PIECE):
                decoder.process_raw(pcm[i:i + _PIECE], False, False)
            decoder.end_utt()
            hyp = decoder.hyp()
            return hyp.hypstr if hyp is not None else ""
        finally:
            self.release(decoder)

    def close(self) -> None:
        with self._lock:
            self._idle.clear()


class _PooledRecognizer:
    """A session's recognizer that holds a decoder only while an utterance is open."""

    def __init__(self, pool: DecoderPool) -> None:
        self.pool = pool
        self.decoder: Any = None
        self.cmn: str | None = None  # this caller's adaptation, carried from utterance to utterance

    def accept(self, audio: bytes) -> str | None:
        if self.decoder is None:
            self.decoder = self.pool.acquire(self.cmn)
            self.decoder.start_utt()
        decoder = self.decoder
        for i in range(0, len(audio), _PIECE):
            decoder.process_raw(audio[i:i + _PIECE], False, False)
        hyp = decoder.hyp()
        return hyp.hypstr if hyp is not None else ""

    def finish(self) -> str:
        decoder, self.decoder = self.decoder, None
        if decoder is None:
            return ""
        try:
            decoder.end_utt()
            hyp = decoder.hyp()
            self.cmn = decoder.get_cmn()
            return hyp.hypstr if hyp is not None else ""
        finally:
            self.pool.release(decoder)

    def close(self) -> None:
        decoder, self.decoder = self.decoder, None
        if decoder is not None:
            try:
                decoder.end_utt()
            finally:
                self.pool.release(decoder)


class PooledPocketSphinxSTT(PocketSphinxSTT):
    """:class:`~rxvoice.services.stt.PocketSphinxSTT` on a shared :class:`DecoderPool`: nothing per connection.

    Args:
        pool: The pool (share one per process); default: a new one.
        **kwargs: As for :class:`PocketSphinxSTT`.
    """

    name = "PocketSphinxSTT"

    def __init__(self, pool: DecoderPool | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.pool = pool if pool is not None else DecoderPool(self.decoder_config)

    def __repr__(self) -> str:
        return "PooledPocketSphinxSTT()"

    def new_recognizer(self) -> Recognizer:
        return _PooledRecognizer(self.pool)
