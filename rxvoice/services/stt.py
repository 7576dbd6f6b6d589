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
import re
import wave
from abc import abstractmethod
from collections.abc import Callable, Mapping
from typing import Any

from reactivex import abc

from .._seconds import check_seconds
from ..errors import ConfigurationError, ServiceError
from ..events import EventRegistry
from ..pipeline.offload import LazyPool, Offload, default_offload
from ..pipeline.offload import io_offload as io_offload
from ..pipeline.processor import EventfulProcessor, Port
from ._http import Answer, BoundedHTTP, HTTPStage, http_error, need_httpx
from .stt_session import _FINISH as _FINISH  # (with _STTSession: what a recognizer of its own builds on)
from .stt_session import Recognizer, Utterance
from .stt_session import _STTSession as _STTSession

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

_WHISPER_NAMES = frozenset({"WhisperResult", "WhisperSTT", "whisper_installed"})


def __getattr__(name: str) -> Any:
    """``WhisperSTT``, ``WhisperResult``, ``whisper_installed``: importable from here, defined in ``.whisper``.

    Imported on first use (that module builds on this one's base class).
    """
    if name in _WHISPER_NAMES:
        import importlib

        return getattr(importlib.import_module(f"{__package__}.whisper"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

log = logging.getLogger("rxvoice.services.stt")

STT_EVENTS = ("on_error", "on_transcription")
"""The events of every STT stage: ``on_error`` (a typed error), ``on_transcription`` (each final frame)."""

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


_SPHINX = LazyPool(1, "rxvoice-stt")


def sphinx_offload(job: Callable[[], Any]) -> concurrent.futures.Future[Any]:
    """Run ``job`` on PocketSphinx's own thread (one, shared): the default offload of :class:`PocketSphinxSTT`.

    PocketSphinx holds the GIL while it decodes, so more threads would not run
    it faster; on a thread of its own its queue never delays the end-of-turn
    verdicts waiting in :func:`rxvoice.workers.shared_pool`.
    """
    return _SPHINX.submit(job)


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
        kwargs.setdefault("ttfs_p99_latency", 1.5)
        HTTPStage.stage_arguments(self, kwargs, timeout, offload)
        super().__init__(**kwargs)
        self.endpoint = HTTPStage(self.name, model, "audio/transcriptions", base_url, api_key, timeout)
        self.model, self.base_url, self.url = self.endpoint.model, self.endpoint.base_url, self.endpoint.url
        self.headers, self.auth, self.timeout = self.endpoint.headers, self.endpoint.auth, self.endpoint.timeout
        self.params = {k: str(v) for k, v in (params or {}).items()}

    def __repr__(self) -> str:
        return f"OpenAITranscriptionSTT({self.model!r}, base_url={self.base_url!r})"

    def new_recognizer(self) -> Recognizer:
        return _HTTPRecognizer(self)


