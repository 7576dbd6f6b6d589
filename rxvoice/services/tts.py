"""Text-to-speech stages: the model's text in, the bot's voice out, at speaking pace.

Every stage here is a :class:`TTSService`: place it after the model, before
the output transport and the assistant aggregator::

    pipeline(transport.input(), vad, stt, pair.user(), llm, EspeakTTS(), transport.output(), pair.assistant())

What goes in, downstream: streamed ``LLMTextFrame``/``TextFrame`` (grouped
into sentences here, with :class:`~rxvoice.text.SimpleTextAggregator`),
``AggregatedTextFrame`` (an upstream ``Sentence`` or ``LLMText`` already
grouped it: spoken as it is) and ``TTSSpeakFrame`` (say this, no model). Text
marked ``skip_tts`` is not spoken and goes on in its place. A
``BotBackchannelFrame`` (a continuer the app says during a long user turn)
is spoken without a bot turn: no started/stopped or bot-speaking frames,
nothing for the conversation; the frame itself goes downstream as it starts
(the assistant aggregator raises ``on_assistant_backchannel``), and an
interruption does not cut it off. Each unit is
synthesized off the session (on ``offload``), the next one while the current
one plays.

What comes out, downstream, in the order a listener hears it:
``TTSStartedFrame``, then ``OutputAudioRawFrame`` chunks of ``chunk_secs``
released at speaking pace by the scheduler (``lead`` seconds ahead, so a
player's buffer never runs dry), a ``TTSTextFrame`` per word as it is spoken,
``TTSStoppedFrame`` when the speech runs out; and ``BotStartedSpeakingFrame``
/ ``BotStoppedSpeakingFrame`` both ways, so the user side's mute strategies
and idle detection and the assistant aggregator's "what was actually said"
follow the voice, not the model. Data and control frames that come after
text (``LLMFullResponseEndFrame``, ``EndFrame``, ...) wait until that text
has been spoken, so the assistant aggregator closes the turn on the words the
user heard. The text frames themselves stop here: the spoken words replace
them. The input completing is an end too: text still grouped is spoken, and
the output completes after the last word. Each synthesis an end waits for
gets ``end_grace`` seconds; past that its text is reported and not spoken.

An ``InterruptionFrame`` stops at once: pending audio, words and syntheses
are dropped (frames that cannot be interrupted, such as ``EndFrame``, go on),
the interruption goes on, then ``TTSStoppedFrame`` and
``BotStoppedSpeakingFrame``. A ``BotSpeechPauseFrame`` (the user began to
speak over the bot, and it may be a backchannel) stops the playback at once
and keeps its place: no more words or audio go out, no bot notice; a
``BotSpeechResumeFrame`` plays on from there, an ``InterruptionFrame`` drops
it as above (both pass on; the audio already sent, at most ``lead`` ahead, is
the player's to pause). A ``CancelFrame`` drops everything and passes.
A synthesis that fails is reported (``on_error``, an ``ErrorFrame`` upstream)
and its text skipped; the session goes on.

Word times are estimated by spreading the utterance's duration over its words
in proportion to their length (none of the engines here reports them).
"""

from __future__ import annotations

import logging
import re
import shutil
import subprocess
from abc import abstractmethod
from collections.abc import Mapping
from typing import Any

from reactivex import abc

from .._seconds import check_seconds
from ..errors import ConfigurationError, ServiceError
from ..events import EventRegistry
from ..pipeline.offload import Offload, default_offload, inline_offload
from ..pipeline.processor import EventfulProcessor, Port
from ._http import Answer, BoundedHTTP, HTTPStage, http_error
from .stt import _positive
from .tts_session import Speech, _TTSSession

__all__ = [
    "TTS_EVENTS",
    "EspeakTTS",
    "OpenAISpeechTTS",
    "PacedTextTTS",
    "Speech",
    "TTSService",
    "read_wav_pcm",
    "word_times",
]

log = logging.getLogger("rxvoice.services.tts")

TTS_EVENTS = ("on_error", "on_speech_started", "on_speech_stopped")
"""The events of every TTS stage: ``on_error``, ``on_speech_started`` (the text of each unit as it starts playing),
``on_speech_stopped`` (``True`` when the speech was interrupted)."""


def word_times(text: str, duration: float) -> tuple[tuple[str, float], ...]:
    """The words of ``text`` with start times spread over ``duration`` in proportion to their length."""
    words = text.split()
    if not words:
        return ()
    weights = [len(w) + 1 for w in words]
    total = float(sum(weights))
    out: list[tuple[str, float]] = []
    at = 0.0
    for w, weight in zip(words, weights, strict=True):
        out.append((w, round(at, 6)))
        at += duration * weight / total
    return tuple(out)


def read_wav_pcm(data: bytes) -> tuple[bytes, int]:
    """The 16-bit mono PCM and rate of a WAV file in memory (streamed WAVs with bogus sizes too).

    Raises:
        ServiceError: not a 16-bit PCM WAV, or one without samples.
    """
    if data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        raise ServiceError("the synthesizer's answer is not a WAV file")
    pos = 12
    rate = channels = width = 0
    while pos + 8 <= len(data):
        tag, size = data[pos:pos + 4], int.from_bytes(data[pos + 4:pos + 8], "little")
        body = pos + 8
        if tag == b"fmt ":
            fmt = int.from_bytes(data[body:body + 2], "little")
            channels = int.from_bytes(data[body + 2:body + 4], "little")
            rate = int.from_bytes(data[body + 4:body + 8], "little")
            width = int.from_bytes(data[body + 14:body + 16], "little") // 8
            if fmt not in (1, 0xFFFE) or width != 2:
                raise ServiceError(f"the synthesizer's WAV is not 16-bit PCM (format {fmt}, {8 * width} bits)")
        elif tag == b"data":
            if not rate:
                break
            pcm = data[body:] if size >= len(data) - body else data[body:body + size]
            pcm = pcm[: len(pcm) - len(pcm) % (2 * channels)]
            if not pcm:
                raise ServiceError("the synthesizer's WAV holds no samples: there is nothing to play")
            if channels > 1:
                import numpy as np

                samples = np.frombuffer(pcm, dtype="<i2").reshape(-1, channels).mean(axis=1)
                pcm = samples.astype("<i2").tobytes()
            return pcm, rate
        pos = body + size + (size & 1)
    raise ServiceError("the synthesizer's WAV has no audio")


class TTSService(EventfulProcessor):
    """The text-to-speech interface: subclasses say how to :meth:`synthesize` one unit of text.

    Args:
        chunk_secs: Seconds of audio per ``OutputAudioRawFrame``.
        lead: Seconds of audio released ahead of the speaking pace.
        end_grace: Seconds an end (``EndFrame``, the input completing) waits
            at most for each synthesis still running; past it that text is
            reported (``ServiceError``), not spoken, and the end goes on.
        offload: Where synthesis runs (default: the shared worker pool).
        scheduler: The scheduler of the stage (default: the session's).

    Events: ``on_error``, ``on_speech_started`` (the unit's text), ``on_speech_stopped`` (interrupted or not).
    """

    name = "TTSService"

    def __init__(
        self,
        *,
        chunk_secs: float = 0.04,
        lead: float = 0.15,
        end_grace: float = 10.0,
        offload: Offload | None = None,
        scheduler: abc.SchedulerBase | None = None,
    ) -> None:
        self.chunk_secs = _positive("chunk_secs", chunk_secs)
        self.end_grace = _positive("end_grace", end_grace)
        self.lead = check_seconds(lead, "lead", high=5.0)
        self.offload: Offload = offload if offload is not None else default_offload
        self.scheduler = scheduler
        self.events = EventRegistry(self, TTS_EVENTS)

    @abstractmethod
    def synthesize(self, text: str) -> Speech:
        """Speak ``text`` (runs on ``offload``; may block)."""

    def open(self, port: Port) -> _TTSSession:
        return _TTSSession(self, port)


# -- engines -----------------------------------------------------------------------------------------


class PacedTextTTS(TTSService):
    """No audio: the words are released at speaking pace, for tests and machines without a synthesizer.

    Everything else is as for a real voice: started/stopped frames, bot
    speaking notices both ways, words as spoken, interruptions. Synthesis is
    instant and runs inline.

    Args:
        words_per_minute: The speaking pace.
        **kwargs: As for :class:`TTSService`.
    """

    name = "PacedTextTTS"

    def __init__(self, *, words_per_minute: float = 180.0, **kwargs: Any) -> None:
        kwargs.setdefault("offload", inline_offload)
        super().__init__(**kwargs)
        if isinstance(words_per_minute, bool) or not isinstance(words_per_minute, int | float) or not (
            30 <= words_per_minute <= 1000
        ):
            raise ConfigurationError(f"words_per_minute must be 30..1000, got {words_per_minute!r}")
        self.words_per_minute = float(words_per_minute)

    def __repr__(self) -> str:
        return f"PacedTextTTS(words_per_minute={self.words_per_minute:g})"

    def synthesize(self, text: str) -> Speech:
        words = text.split()
        per_word = 60.0 / self.words_per_minute
        timed = tuple((w, round(i * per_word, 6)) for i, w in enumerate(words))
        return Speech(b"", 16000, timed, len(words) * per_word)


def _speech(pcm: bytes, rate: int, text: str) -> Speech:
    duration = len(pcm) / (2 * rate)
    return Speech(pcm, rate, word_times(text, duration), duration)


class EspeakTTS(TTSService):
    """The ``espeak-ng`` synthesizer (a program on the PATH; Debian's package ``espeak-ng``).

    Robotic but instant and offline, in many languages and voices.

    Args:
        voice: An espeak-ng voice (``en-us``, ``en-gb+f3``, ``fr``, ...; ``espeak-ng --voices`` lists them).
        words_per_minute: The speaking rate.
        pitch: 0..99.
        program: The program's path (default: ``espeak-ng`` on the PATH).
        **kwargs: As for :class:`TTSService`.

    Raises:
        ConfigurationError: the program is not found (install the Debian package
            ``espeak-ng``: ``apt-get install espeak-ng``).
    """

    name = "EspeakTTS"

    def __init__(
        self, *, voice: str = "en-us", words_per_minute: int = 170, pitch: int = 50, program: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        found = shutil.which(program or "espeak-ng")
        if found is None:
            raise ConfigurationError(
                f"EspeakTTS needs the {program or 'espeak-ng'} program, which is not on the PATH: install the "
                "Debian package espeak-ng (sudo apt-get install espeak-ng), or pass program="
            )
        if not isinstance(voice, str) or not re.fullmatch(r"[\w+\-]+", voice):
            raise ConfigurationError(f"voice must be an espeak-ng voice name such as 'en-us', got {voice!r}")
        for label, value, low, high in (("words_per_minute", words_per_minute, 80, 500), ("pitch", pitch, 0, 99)):
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise ConfigurationError(f"{label} must be an int from {low} to {high}, got {value!r}")
        self.program = found
        self.voice = voice
        self.words_per_minute = words_per_minute
        self.pitch = pitch

    def __repr__(self) -> str:
        return f"EspeakTTS(voice={self.voice!r})"

    def synthesize(self, text: str) -> Speech:
        command = [self.program, "--stdout", "--stdin", "-v", self.voice, "-s", str(self.words_per_minute),
                   "-p", str(self.pitch)]
        try:
            done = subprocess.run(command, input=text.encode("utf-8"), capture_output=True, timeout=30, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ServiceError(f"espeak-ng failed to run: {exc}") from exc
        if done.returncode != 0:
            message = done.stderr.decode("utf-8", "replace").strip()[:200]
            raise ServiceError(f"espeak-ng exited with status {done.returncode}: {message or '(no message)'}")
        pcm, rate = read_wav_pcm(done.stdout)
        return _speech(pcm, rate, text)


_RAW_PCM_TYPES = frozenset({"", "audio/pcm", "audio/x-pcm", "audio/l16", "audio/raw", "application/octet-stream"})
"""Media types a raw 16-bit PCM answer may come with (none at all included)."""

_CONTAINERS = ((b"ID3", "MP3"), (b"OggS", "Ogg"), (b"fLaC", "FLAC"), (b"\x1aE\xdf\xa3", "WebM"))
"""Magic numbers of compressed audio that a raw-PCM media type may still hide."""


def _speech_audio(answer: Answer, raw_rate: int) -> tuple[bytes, int]:
    """The 16-bit mono PCM and rate of a speech server's answer: a WAV, or raw PCM at ``raw_rate``.

    Raises:
        ServiceError: an HTTP error status; an empty body or a WAV without
            samples (nothing to play: its words must not count as spoken);
            compressed audio (``audio/mpeg``, Ogg, FLAC, ...), which played as
            PCM is noise; text or JSON; an odd number of bytes.
    """
    who = "the speech server"
    if answer.status >= 400:
        raise http_error(who, answer.status, answer.text())
    data, kind = answer.body, answer.media_type
    if not data:
        raise ServiceError(f"{who} answered HTTP {answer.status} with an empty body: there is nothing to play")
    if data[:4] == b"RIFF":
        return read_wav_pcm(data)
    found = next((name for magic, name in _CONTAINERS if data.startswith(magic)), None)
    if kind not in _RAW_PCM_TYPES or found is not None:
        what = f"{kind or 'no content type'}{f' ({found})' if found else ''}"
        raise ServiceError(
            f"{who} answered with {what}, not WAV or 16-bit PCM: ask for response_format 'wav' or 'pcm' "
            f"(the answer starts {data[:40]!r})"
        )
    if len(data) % 2:
        raise ServiceError(f"{who}'s raw PCM answer has an odd number of bytes ({len(data)}): not 16-bit samples")
    return data, raw_rate


class OpenAISpeechTTS(TTSService):
    """Any server that speaks OpenAI's speech API (``POST /audio/speech``).

    One request per unit of text; the answer is asked for as WAV (a raw
    ``pcm`` answer is taken as OpenAI's 24 kHz 16-bit mono). An answer with
    nothing to play (an empty body, a WAV without samples) or in another
    format (``audio/mpeg``, ...) is a ``ServiceError``: that text is not
    spoken, so it is not written to the conversation as said.
    Credentials in ``base_url`` are sent as basic auth and kept out of the URL.

    Args:
        model: The model name (``gpt-4o-mini-tts``, ``tts-1``, ...).
        voice: The voice (``alloy``, ...).
        base_url: The API's root (``.../v1``); default ``OPENAI_BASE_URL``, else OpenAI's.
        api_key: Sent as a bearer token; default ``OPENAI_API_KEY`` (required for OpenAI's host).
        params: Extra JSON fields (``speed``, ``instructions``, ...).
        timeout: Seconds each request may take as a whole (connecting,
            sending, waiting, reading the answer); past it the request is
            cancelled and reported (a retryable ``ServiceError``).
        offload: Where the requests wait (default: the I/O threads, :func:`rxvoice.pipeline.io_offload`).
        **kwargs: As for :class:`TTSService` (``end_grace`` defaults to ``timeout`` plus a second).

    Raises:
        ConfigurationError: a bad URL, a missing key for OpenAI's host, or no httpx.
    """

    name = "OpenAISpeechTTS"
    raw_pcm_rate = 24000
    """The rate of a raw ``pcm`` answer (OpenAI's)."""

    def __init__(
        self,
        model: str = "gpt-4o-mini-tts",
        *,
        voice: str = "alloy",
        base_url: str | None = None,
        api_key: str | None = None,
        params: Mapping[str, Any] | None = None,
        timeout: float = 30.0,
        offload: Offload | None = None,
        **kwargs: Any,
    ) -> None:
        HTTPStage.stage_arguments(self, kwargs, timeout, offload)
        super().__init__(**kwargs)
        self.endpoint = HTTPStage(self.name, model, "audio/speech", base_url, api_key, timeout)
        self.model, self.base_url, self.url = self.endpoint.model, self.endpoint.base_url, self.endpoint.url
        self.headers, self.timeout = self.endpoint.headers, self.endpoint.timeout
        self.voice = voice
        self.params = dict(params or {})
        self._http = BoundedHTTP("the speech server", self.timeout, self.endpoint.auth)  # shared by the sessions

    def __repr__(self) -> str:
        return f"OpenAISpeechTTS({self.model!r}, base_url={self.base_url!r})"

    def synthesize(self, text: str) -> Speech:
        body = {"model": self.model, "voice": self.voice, "input": text, "response_format": "wav", **self.params}
        answer = self._http.post(self.url, json=body, headers=self.headers)
        pcm, rate = _speech_audio(answer, self.raw_pcm_rate)
        return _speech(pcm, rate, text)

    def close(self) -> None:
        """Close the HTTP connections (the stage can still be used: they reopen)."""
        self._http.close()

