"""Speech-to-text stages: microphone audio in, interim and final transcriptions out.

Every stage here is an :class:`STTService`: place it after the VAD
(``VADProcessor`` or a detector), before the user aggregator::

    pipeline(transport.input(), VADProcessor(), PocketSphinxSTT(), pair.user(), llm, tts, transport.output(),
             pair.assistant())

The VAD's ``VADUserStartedSpeakingFrame`` / ``VADUserStoppedSpeakingFrame``
delimit each utterance. While one is open its audio (plus a short pre-roll
from before the VAD noticed the speech) goes to the stage's recognizer;
streaming engines answer with an ``InterimTranscriptionFrame`` now and then,
and when the VAD closes the utterance the recognizer's last word comes out
as a ``TranscriptionFrame(finalized=True)`` with the user id, an ISO 8601
timestamp and, as its ``result``, the :class:`Utterance` (where in the audio
the words were said). All audio and every other frame go on untouched.

Recognition runs off the session, on the stage's ``offload`` (default
:func:`rxvoice.workers.default_offload`; the HTTP stage uses its own I/O
threads); results re-enter through the session's gate, in order. One job per
session is in flight at a time, so a recognizer never sees two calls at once.

* ``InterruptionFrame`` passes: the user is the one speaking, nothing of
  theirs is dropped.
* ``EndFrame`` waits until the open utterance is recognized, so its words
  come out before the end. The input completing is an end too: the output
  completes once the last words are out (the quickstart's async generator
  that yields ``EndFrame`` and stops). Each recognition the end waits for
  gets ``end_grace`` seconds; past that its words are reported lost and the
  end goes on.
* ``CancelFrame`` drops what is still being recognized and passes at once.
* ``STTMuteFrame(mute=True)`` stops listening (an open utterance is finished
  with what was heard); ``mute=False`` resumes.
* A recognizer that fails is reported (``on_error``, an ``ErrorFrame``
  upstream) and logged; the session goes on with the next utterance.
* An utterance the recognizer heard nothing in gives no transcription (logged
  at debug level): an empty string is not something the user said.

Install the offline engine with ``pip install 'rxvoice[stt]'`` (PocketSphinx;
its wheel carries an English acoustic model, language model and dictionary,
so nothing is downloaded); the HTTP engine needs httpx (``rxvoice[openai]``).
"""

from __future__ import annotations

import concurrent.futures
import io
import json
import logging
import os
import re
import threading
import wave
from abc import abstractmethod
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol
from urllib.parse import urlsplit

import numpy as np
from reactivex import abc

from .._seconds import check_seconds
from ..aggregators.reports import iso8601
from ..audio.pcm import float_to_pcm16
from ..audio.resample import StreamResampler
from ..errors import ConfigurationError, RxVoiceError, ServiceError
from ..events import EventRegistry
from ..frames import (
    DOWN,
    CancelFrame,
    Direction,
    EndFrame,
    Frame,
    InputAudioRawFrame,
    InterimTranscriptionFrame,
    StartFrame,
    STTMetadataFrame,
    STTMuteFrame,
    TranscriptionFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from ..pipeline.offload import Offload, default_offload
from ..pipeline.processor import EventfulProcessor, Port
from ..pipeline.shell import StageShell
from ._http import Answer, BoundedHTTP, split_credentials

__all__ = [
    "SPHINX_FAST",
    "STT_EVENTS",
    "OpenAITranscriptionSTT",
    "PocketSphinxSTT",
    "Recognizer",
    "STTService",
    "Utterance",
    "http_error",
    "io_offload",
    "need_httpx",
    "pocketsphinx_available",
    "sphinx_offload",
    "wav_bytes",
    "word_error_rate",
]

log = logging.getLogger("rxvoice.services.stt")

STT_EVENTS = ("on_error", "on_transcription")
"""The events of every STT stage: ``on_error`` (a typed error), ``on_transcription`` (each final frame)."""

_PRE_ROLL_KEEP = 1.0  # seconds of audio kept from before an utterance


@dataclass(frozen=True)
class Utterance:
    """Where the words of a final ``TranscriptionFrame`` were said (its ``result``).

    Seconds of audio into the session (counted from the first audio frame the
    stage saw): from the VAD's start minus its ``start_secs`` to its stop
    minus its ``stop_secs``.
    """

    start: float
    end: float


class Recognizer(Protocol):
    """One session's speech recognizer. Its methods run on a worker, one call at a time, never two at once."""

    def accept(self, audio: bytes) -> str | None:
        """Take the next audio of the open utterance (16-bit mono PCM); return the current guess, or None."""

    def finish(self) -> str:
        """The open utterance ended: return its final text ("" for nothing heard); be ready for the next."""

    def close(self) -> None:
        """The session ended: release what the recognizer holds."""


def wav_bytes(pcm: bytes, sample_rate: int) -> bytes:
    """16-bit mono PCM as a WAV file in memory."""
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(sample_rate)
        w.writeframes(pcm)
    return buf.getvalue()


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9']+", text.lower())


def word_error_rate(reference: str, hypothesis: str) -> float:
    """Word error rate: (substitutions + deletions + insertions) / words of ``reference``.

    Case and punctuation are ignored. A dozen lines of edit distance, written
    here rather than pulling in a dependency for them.
    """
    ref, hyp = _words(reference), _words(hypothesis)
    if not ref:
        return 0.0 if not hyp else 1.0
    row = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        prev, row[0] = row[0], i
        for j, h in enumerate(hyp, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (r != h))
    return row[-1] / len(ref)


_IO_POOL: concurrent.futures.ThreadPoolExecutor | None = None
_IO_LOCK = threading.Lock()


def io_offload(job: Callable[[], Any]) -> concurrent.futures.Future[Any]:
    """Run ``job`` on rxvoice's I/O threads (16, shared): the default offload of stages that wait on the network.

    Waiting for an HTTP answer costs no CPU, so it does not belong on the two
    compute workers of :func:`rxvoice.workers.shared_pool`, where it would hold
    up end-of-turn verdicts.
    """
    global _IO_POOL
    pool = _IO_POOL
    if pool is None:
        with _IO_LOCK:
            pool = _IO_POOL
            if pool is None:
                pool = _IO_POOL = concurrent.futures.ThreadPoolExecutor(16, thread_name_prefix="rxvoice-io")
    return pool.submit(job)


def _positive(name: str, value: object) -> float:
    return check_seconds(value, name, positive=True)


class STTService(EventfulProcessor):
    """The speech-to-text interface: subclasses say how to make a :class:`Recognizer`.

    Args:
        user_id: Stamped on every transcription.
        language: Stamped on every transcription (``None``: not stated).
        interim_interval: Seconds of new audio between two interim guesses
            (streaming recognizers only).
        pre_roll: Seconds of audio from before the VAD's start that go into
            the utterance, on top of the VAD's own ``start_secs`` (the VAD
            notices speech after it began).
        ttfs_p99_latency: Announced in an ``STTMetadataFrame`` at the start:
            how long after the end of speech the final words arrive, at worst
            (stop strategies wait this long for them).
        end_grace: Seconds an end (``EndFrame``, the input completing) waits
            at most for each recognition still to run; past it that
            utterance's words are reported lost (``ServiceError``) and the end
            goes on.
        offload: Where recognition runs (default: the shared worker pool).
        scheduler: The scheduler of the stage (default: the session's).

    Events: ``on_error`` (a typed error), ``on_transcription`` (each final frame).
    """

    name = "STTService"
    sample_rate: int = 16000
    """The rate the recognizer is given (other rates are resampled, channels averaged)."""

    def __init__(
        self,
        *,
        user_id: str = "user",
        language: str | None = "en",
        interim_interval: float = 0.5,
        pre_roll: float = 0.3,
        ttfs_p99_latency: float = 0.5,
        end_grace: float = 10.0,
        offload: Offload | None = None,
        scheduler: abc.SchedulerBase | None = None,
    ) -> None:
        if not isinstance(user_id, str):
            raise ConfigurationError(f"user_id must be a str, got {user_id!r}")
        self.user_id = user_id
        self.language = language
        self.interim_interval = _positive("interim_interval", interim_interval)
        self.pre_roll = check_seconds(pre_roll, "pre_roll", high=0.5)
        self.ttfs_p99_latency = _positive("ttfs_p99_latency", ttfs_p99_latency)
        self.end_grace = _positive("end_grace", end_grace)
        self.offload: Offload = offload if offload is not None else default_offload
        self.scheduler = scheduler
        self.events = EventRegistry(self, STT_EVENTS)

    @abstractmethod
    def new_recognizer(self) -> Recognizer:
        """A recognizer for one session (called on a worker: it may load a model)."""

    def open(self, port: Port) -> _STTSession:
        return _STTSession(self, port)


_FEED = 0
_FINISH = 1
_OPEN = 2
_BACKSTOP = 86_400.0  # the link's own bound on a held end of input (the stage's watchdog comes far sooner)


class _Work:
    __slots__ = ("audio", "kind", "span")

    def __init__(self, kind: int, audio: bytes = b"", span: Utterance | None = None) -> None:
        self.kind = kind
        self.audio = bytearray(audio)
        self.span = span


class _STTSession:
    """One session: the utterance being heard, the work queued for the recognizer."""

    def __init__(self, stt: STTService, port: Port) -> None:
        self.stt = stt
        self.port = port
        self.shell = StageShell(stt, port, stt.events, offload=stt.offload)  # events, work, timers, failures
        self.recognizer: Recognizer | None = None
        self.lock = threading.Lock()  # held by the worker running a job; close() never waits on it
        self.dead = False
        self.closed = False
        self.work: deque[_Work] = deque()
        self.inflight: concurrent.futures.Future[Any] | None = None
        self.running: _Work | None = None  # the job whose outcome counts (a cancelled one's does not)
        self.utterance = False
        self.muted = False
        self.announced = False
        self.pre: deque[bytes] = deque()
        self.pre_bytes = 0
        self.resampler: StreamResampler | None = None
        self.resample_from = 0
        self.held_end: tuple[Frame, Direction] | None = None
        self.input_ended = False  # the input completed: the output completes after the last words
        self.watchdog: abc.DisposableBase | None = None  # bounds each recognition an end waits for
        self.last_interim = ""
        self.heard = 0.0  # seconds of audio seen
        self.started_at = 0.0
        self.min_feed = round(stt.interim_interval * stt.sample_rate) * 2

    # -- frames (inside the session) ---------------------------------------------------

    def on_frame(self, frame: Frame, direction: Direction) -> None:
        t = type(frame)
        if direction is not DOWN:
            self.port.push(frame, direction)
            return
        if t is InputAudioRawFrame or isinstance(frame, InputAudioRawFrame):
            self.port.push_down(frame)
            self._audio(frame)  # type: ignore[arg-type]
        elif t is VADUserStartedSpeakingFrame:
            self.port.push_down(frame)
            if not self.muted:
                self._start(frame.start_secs)  # type: ignore[attr-defined]
        elif t is VADUserStoppedSpeakingFrame:
            self.port.push_down(frame)
            self._stop(frame.stop_secs)  # type: ignore[attr-defined]
        elif t is StartFrame:
            self.port.push_down(frame)
            self._announce()
        elif t is EndFrame:
            self._stop()
            if self.running is None and not self.work:
                self.port.push_down(frame)
            else:
                self.held_end = (frame, direction)  # after the last words
                self._watch()
        elif t is CancelFrame:
            self._drop()
            self.port.push_down(frame)
        elif t is STTMuteFrame:
            self.port.push_down(frame)
            if frame.mute:  # type: ignore[attr-defined]
                self._stop()
            self.muted = bool(frame.mute)  # type: ignore[attr-defined]
        else:
            self.port.push_down(frame)

    def on_input_end(self, direction: Direction) -> float | None:
        """No more input: an open utterance ends here, and the output completes after its words."""
        if direction is not DOWN:
            return None
        self._stop()
        if self.running is None and not self.work and self.held_end is None:
            return None
        self.input_ended = True
        self._watch()
        return _BACKSTOP  # the watchdog bounds each recognition; this only backs it up

    def close(self) -> None:
        self.closed = True
        self._disarm()
        self.shell.close()  # no outcome comes back, no timer fires, the events end
        self.work.clear()
        self.inflight = self.running = None
        self.pre.clear()
        if self.recognizer is not None or not self.dead:
            try:
                self.stt.offload(self._close_recognizer)
            except RuntimeError:  # the pool was shut down (interpreter exit): close here
                self._close_recognizer()

    # -- audio ---------------------------------------------------------------------------

    def _announce(self) -> None:
        if not self.announced:
            self.announced = True
            self.port.push_down(STTMetadataFrame(self.stt.name, self.stt.ttfs_p99_latency))
            self.work.appendleft(_Work(_OPEN))  # load the recognizer before the first words
            self._pump()

    def _pcm(self, frame: InputAudioRawFrame) -> bytes:
        rate = self.stt.sample_rate
        if frame.sample_rate == rate and frame.num_channels == 1:
            return frame.audio
        samples = np.frombuffer(frame.audio, dtype="<i2").astype(np.float32) / 32768.0
        if frame.num_channels > 1:
            samples = samples.reshape(-1, frame.num_channels).mean(axis=1)
        if frame.sample_rate != rate:
            if self.resampler is None or self.resample_from != frame.sample_rate:
                self.resampler = StreamResampler(frame.sample_rate, rate)
                self.resample_from = frame.sample_rate
            samples = self.resampler.process(samples)
        return float_to_pcm16(samples)

    def _audio(self, frame: InputAudioRawFrame) -> None:
        self.heard += frame.num_frames / frame.sample_rate
        if not self.announced:
            self._announce()
        if self.muted:
            return
        try:
            pcm = self._pcm(frame)
        except RxVoiceError as exc:
            self.port.report_error(exc, frame)
            return
        if self.utterance:
            self._feed(pcm)
            self._pump()
            return
        self.pre.append(pcm)
        self.pre_bytes += len(pcm)
        keep = round(_PRE_ROLL_KEEP * self.stt.sample_rate) * 2
        while self.pre and self.pre_bytes - len(self.pre[0]) >= keep:
            self.pre_bytes -= len(self.pre.popleft())

    def _feed(self, pcm: bytes) -> None:
        work = self.work
        if work and work[-1].kind == _FEED:
            work[-1].audio += pcm
        else:
            work.append(_Work(_FEED, pcm))

    def _start(self, start_secs: float) -> None:
        if self.utterance:
            return
        self.utterance = True
        self.started_at = max(0.0, self.heard - start_secs)
        self.last_interim = ""
        want = round((start_secs + self.stt.pre_roll) * self.stt.sample_rate) * 2
        pre = b"".join(self.pre)[-want:] if want > 0 else b""
        self.pre.clear()
        self.pre_bytes = 0
        self._feed(pre)
        self._pump()

    def _stop(self, stop_secs: float = 0.0) -> None:
        if not self.utterance:
            return
        self.utterance = False
        span = Utterance(round(self.started_at, 3), round(max(self.started_at, self.heard - stop_secs), 3))
        self.work.append(_Work(_FINISH, span=span))
        self._pump()

    def _drop(self) -> None:
        """Forget the open utterance and the queued work (a cancel); a job in flight is ignored."""
        self.utterance = False
        self.work.clear()
        self._cancel()
        self.held_end = None
        self._disarm()
        self.work.append(_Work(_FINISH))  # the recognizer starts clean; its words are dropped
        self._pump(silent=True)

    # -- the end, held until the last words are out --------------------------------------

    def _watch(self) -> None:
        """(Re)arm the watchdog for the recognition the held end waits for now."""
        self._disarm()
        if self.held_end is not None or self.input_ended:
            self.watchdog = self.shell.later(self.stt.end_grace, self._give_up)

    def _disarm(self) -> None:
        if self.watchdog is not None:
            self.watchdog.dispose()
            self.watchdog = None

    def _give_up(self) -> None:
        """A recognition took longer than ``end_grace``: its words are lost (reported), the end goes on."""
        self.watchdog = None
        pending = self.running is not None or bool(self.work)
        self.work.clear()
        self._cancel()
        if pending:
            self.shell.failed(ServiceError(
                f"{self.stt.name}: the recognizer took more than {self.stt.end_grace:g} s after the end; "
                "the words still being recognized are lost", retryable=True,
            ), "recognition")
        self._release()
        self.work.append(_Work(_FINISH))  # the recognizer starts clean for whatever comes after the end
        self._pump(silent=True)

    def _release(self) -> None:
        """Nothing is left to recognize: a held ``EndFrame`` goes on, then a held end of input."""
        if self.running is not None or self.work:
            self._watch()
            return
        self._disarm()
        if self.held_end is not None:
            frame, direction = self.held_end
            self.held_end = None
            self.port.push(frame, direction)
        if self.input_ended:
            self.input_ended = False
            self.port.finish_input()

    # -- jobs ------------------------------------------------------------------------------

    def _pump(self, silent: bool = False) -> None:
        if self.running is not None or not self.work or self.closed:
            return
        head = self.work[0]
        if head.kind == _FEED and len(self.work) == 1 and len(head.audio) < self.min_feed:
            return  # wait for more audio before the next guess
        self.work.popleft()
        self.running = head
        future = self.shell.submit(partial(self._run, head.kind, bytes(head.audio)),
                                   partial(self._result, head, silent))
        if self.running is head:
            self.inflight = future

    def _cancel(self) -> None:
        """Drop the job in flight: its outcome no longer counts."""
        if self.inflight is not None:
            self.inflight.cancel()
        self.inflight = self.running = None

    def _run(self, kind: int, audio: bytes) -> str | None:
        """On the worker: one call of the recognizer."""
        with self.lock:
            if self.dead:
                return None
            if self.recognizer is None:
                self.recognizer = self.stt.new_recognizer()
            if kind == _OPEN:
                return None
            text = self.recognizer.accept(audio) if audio else None
            if kind == _FINISH:
                return self.recognizer.finish()
            return text

    def _close_recognizer(self) -> None:
        with self.lock:
            self.dead = True
            recognizer, self.recognizer = self.recognizer, None
        if recognizer is not None:
            try:
                recognizer.close()
            except Exception:
                log.exception("%s: closing the recognizer failed; contained", self.stt.name)

    def _result(self, work: _Work, silent: bool, outcome: Any) -> None:
        """A recognition came back (inside the session): its words, or its failure (reported; the session goes on)."""
        if work is not self.running:
            return  # cancelled meanwhile
        self.inflight = self.running = None
        if isinstance(outcome, BaseException):
            self.shell.failed(outcome, "the recognizer")
        elif not silent:
            self._emit(work.kind, outcome, work.span)
        self._pump()
        if self.held_end is not None or self.input_ended:
            self._release()

    def _emit(self, kind: int, text: str | None, span: Utterance | None) -> None:
        stt = self.stt
        if text is None:
            return
        text = " ".join(text.split())
        if kind == _FINISH:
            self.last_interim = ""
            if not text:
                log.debug("%s: nothing recognized in the utterance", stt.name)
                return
            frame = TranscriptionFrame(
                text, user_id=stt.user_id, timestamp=iso8601(self.port.time()), language=stt.language,
                result=span, finalized=True,
            )
            self.port.push_down(frame)
            self.shell.event("on_transcription", frame)
        elif text and text != self.last_interim and (self.utterance or self.work):
            self.last_interim = text
            self.port.push_down(InterimTranscriptionFrame(
                text, user_id=stt.user_id, timestamp=iso8601(self.port.time()), language=stt.language
            ))


# -- PocketSphinx ------------------------------------------------------------------------------


_SPHINX_PIECE = 1600  # 50 ms at 16 kHz


class _SphinxRecognizer:
    def __init__(self, config: Mapping[str, Any]) -> None:
        from pocketsphinx import Decoder

        self.decoder = Decoder(**config)
        self.open = False

    def accept(self, audio: bytes) -> str | None:
        if not self.open:
            self.decoder.start_utt()
            self.open = True
        # PocketSphinx holds the GIL while it decodes: small pieces let the event loop run in between.
        for i in range(0, len(audio), _SPHINX_PIECE):
            self.decoder.process_raw(audio[i:i + _SPHINX_PIECE], False, False)
        hyp = self.decoder.hyp()
        return hyp.hypstr if hyp is not None else ""

    def finish(self) -> str:
        if not self.open:
            return ""
        self.open = False
        self.decoder.end_utt()
        hyp = self.decoder.hyp()
        return hyp.hypstr if hyp is not None else ""

    def close(self) -> None:
        if self.open:
            self.open = False
            self.decoder.end_utt()


_STT_POOL: concurrent.futures.ThreadPoolExecutor | None = None


def sphinx_offload(job: Callable[[], Any]) -> concurrent.futures.Future[Any]:
    """Run ``job`` on PocketSphinx's own thread (one, shared): the default offload of :class:`PocketSphinxSTT`.

    PocketSphinx holds the GIL while it decodes, so more threads would not run
    it faster; on a thread of its own its queue never delays the end-of-turn
    verdicts waiting in :func:`rxvoice.workers.shared_pool`.
    """
    global _STT_POOL
    pool = _STT_POOL
    if pool is None:
        with _IO_LOCK:
            pool = _STT_POOL
            if pool is None:
                pool = _STT_POOL = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="rxvoice-stt")
    return pool.submit(job)


SPHINX_FAST = {"maxhmmpf": 3000, "beam": 1e-40, "wbeam": 1e-30}
"""PocketSphinxSTT's default search settings: narrower beams than PocketSphinx's own, for about 2.5 times less CPU
(measured: real-time factor 0.26 instead of 0.64 on the booking call, and fewer errors on it)."""


class PocketSphinxSTT(STTService):
    """Offline speech recognition with CMU PocketSphinx and the English model its wheel ships.

    Streaming: interim guesses every ``interim_interval`` seconds of speech,
    the final words when the VAD closes the utterance. Small and fast (a
    fraction of real time on one core) but not accurate on every voice: see
    the voice guide for the word error rates measured.

    Args:
        decoder_config: Extra ``pocketsphinx.Decoder`` settings (``hmm``,
            ``lm``, ``dict``, ``kws``, ...), e.g. a language model of your
            domain's phrases; they override :data:`SPHINX_FAST`.
        **kwargs: As for :class:`STTService` (``offload`` defaults to
            :func:`sphinx_offload`).

    Raises:
        ConfigurationError: the ``pocketsphinx`` package is not installed
            (``pip install 'rxvoice[stt]'``).
    """

    name = "PocketSphinxSTT"

    def __init__(self, *, decoder_config: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        if not pocketsphinx_available():
            raise ConfigurationError(
                "PocketSphinxSTT needs the pocketsphinx package: pip install 'rxvoice[stt]'"
            )
        kwargs.setdefault("offload", sphinx_offload)
        super().__init__(**kwargs)
        self.decoder_config: dict[str, Any] = {"samprate": self.sample_rate, "loglevel": "FATAL", **SPHINX_FAST,
                                               **dict(decoder_config or {})}

    def __repr__(self) -> str:
        return "PocketSphinxSTT()"

    def new_recognizer(self) -> Recognizer:
        return _SphinxRecognizer(self.decoder_config)


def pocketsphinx_available() -> bool:
    """Whether the offline engine is installed."""
    import importlib.util

    return importlib.util.find_spec("pocketsphinx") is not None


# -- OpenAI audio transcription ------------------------------------------------------------------


class _HTTPRecognizer:
    def __init__(self, stt: OpenAITranscriptionSTT) -> None:
        self.stt = stt
        self.audio = bytearray()
        self.client = BoundedHTTP("the transcription server", stt.timeout, stt.auth)

    def accept(self, audio: bytes) -> str | None:
        self.audio += audio
        return None

    def finish(self) -> str:
        audio, self.audio = bytes(self.audio), bytearray()
        stt = self.stt
        if not audio:
            return ""
        data = {"model": stt.model, "response_format": "json", **stt.params}
        if stt.language:
            data.setdefault("language", stt.language)
        files = {"file": ("utterance.wav", wav_bytes(audio, stt.sample_rate), "audio/wav")}
        answer = self.client.post(stt.url, data=data, files=files, headers=stt.headers)
        return _transcription_text(answer)

    def close(self) -> None:
        self.client.close()


def _transcription_text(answer: Answer) -> str:
    """The words of a transcription server's answer: a JSON object's ``text``, or a ``text/plain`` body.

    Raises:
        ServiceError: an HTTP error status; an answer that is neither (an HTML
            sign-in page, JSON without ``text``, audio, nothing typed at all):
            a page is not what the user said.
    """
    who = "the transcription server"
    if answer.status >= 400:
        raise http_error(who, answer.status, answer.text())
    kind = answer.media_type
    if kind == "application/json" or kind.endswith("+json"):
        try:
            payload = json.loads(answer.body)
        except ValueError:
            payload = None
        if isinstance(payload, dict) and isinstance(payload.get("text"), str):
            return str(payload["text"])
        raise ServiceError(f"{who}'s answer has no text: {answer.text()[:200]!r}")
    if kind == "text/plain":  # response_format "text"
        return answer.text()
    shown = " ".join(answer.text().split())[:120]
    raise ServiceError(
        f"{who} answered HTTP {answer.status} with {kind or 'no content type'}, not a transcription "
        f"(a sign-in page or a wrong base_url?): {shown!r}"
    )


class OpenAITranscriptionSTT(STTService):
    """Any server that speaks OpenAI's audio transcription API (``POST /audio/transcriptions``).

    One request per utterance, when the VAD closes it (a WAV file, 16 kHz
    mono); no interim guesses. Local servers (faster-whisper or whisper.cpp
    behind an OpenAI-compatible API) work as well as OpenAI's.

    Args:
        model: The model name sent with each request (``whisper-1``, ...).
        base_url: The API's root (``.../v1``); default ``OPENAI_BASE_URL``, else OpenAI's.
        api_key: Sent as a bearer token; default ``OPENAI_API_KEY`` (required for OpenAI's host).
        params: Extra form fields (``prompt``, ``temperature``, ...).
        timeout: Seconds each request may take as a whole (connecting,
            sending, waiting, reading the answer); past it the request is
            cancelled and reported (a retryable ``ServiceError``).
        offload: Where the requests wait (default: :func:`io_offload`).
        **kwargs: As for :class:`STTService` (``ttfs_p99_latency`` defaults to
            1.5 s here, ``end_grace`` to ``timeout`` plus a second).

    Credentials in ``base_url`` (``https://user:key@host/v1``) are sent as
    basic auth and kept out of the URL (and so out of every log line).
    An answer must be JSON with a ``text`` or, for ``response_format=text``,
    ``text/plain``; anything else (an HTML page) is a ``ServiceError``, never
    the user's words.

    Raises:
        ConfigurationError: a bad URL, a missing key for OpenAI's host, or no httpx.
    """

    name = "OpenAITranscriptionSTT"

    def __init__(
        self,
        model: str = "whisper-1",
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        params: Mapping[str, Any] | None = None,
        timeout: float = 30.0,
        offload: Offload | None = None,
        **kwargs: Any,
    ) -> None:
        need_httpx(self)
        seconds = _positive("timeout", timeout)
        kwargs.setdefault("ttfs_p99_latency", 1.5)
        kwargs.setdefault("end_grace", seconds + 1.0)
        super().__init__(offload=offload if offload is not None else io_offload, **kwargs)
        if not isinstance(model, str) or not model:
            raise ConfigurationError(f"OpenAITranscriptionSTT needs a model name, got {model!r}")
        self.model = model
        self.base_url, self.headers, self.auth = _endpoint(base_url, api_key)
        self.url = f"{self.base_url}/audio/transcriptions"
        self.params = {k: str(v) for k, v in (params or {}).items()}
        self.timeout = seconds

    def __repr__(self) -> str:
        return f"OpenAITranscriptionSTT({self.model!r}, base_url={self.base_url!r})"

    def new_recognizer(self) -> Recognizer:
        return _HTTPRecognizer(self)


def need_httpx(stage: object) -> None:
    """Raise a ``ConfigurationError`` naming the extra when httpx is missing (the HTTP speech stages need it)."""
    import importlib.util

    if importlib.util.find_spec("httpx") is None:
        raise ConfigurationError(f"{type(stage).__name__} needs httpx: pip install 'rxvoice[openai]'")


def http_error(who: str, status: int, body: str) -> ServiceError:
    """The typed error for an HTTP error answer (retryable for 408, 429 and 5xx)."""
    detail = " ".join(body.split())[:200]
    return ServiceError(
        f"{who} answered HTTP {status}: {detail or '(no body)'}", status=status,
        retryable=status in (408, 429) or status >= 500,
    )


def _endpoint(
    base_url: str | None, api_key: str | None
) -> tuple[str, dict[str, str], tuple[str, str] | None]:
    """The API root (without credentials), the auth header, and basic-auth credentials from the URL, checked."""
    base = base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
    parts = urlsplit(base)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        shown = split_credentials(parts)[0] if parts.netloc else base
        raise ConfigurationError(
            f"base_url must be an http(s) URL such as https://api.openai.com/v1, got {shown!r}"
        )
    key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
    if not key and parts.hostname == "api.openai.com":
        raise ConfigurationError("OpenAI's API needs a key: pass api_key= or set OPENAI_API_KEY")
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    root, auth = split_credentials(parts)
    return root.rstrip("/"), headers, auth
