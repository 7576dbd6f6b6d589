"""Text-to-speech stages: the model's text in, the bot's voice out, at speaking pace.

Every stage here is a :class:`TTSService`: place it after the model, before
the output transport and the assistant aggregator::

    pipeline(transport.input(), vad, stt, pair.user(), llm, EspeakTTS(), transport.output(), pair.assistant())

What goes in, downstream: streamed ``LLMTextFrame``/``TextFrame`` (grouped
into sentences here, with :class:`~rxvoice.text.SimpleTextAggregator`),
``AggregatedTextFrame`` (an upstream ``Sentence`` or ``LLMText`` already
grouped it: spoken as it is) and ``TTSSpeakFrame`` (say this, no model). Text
marked ``skip_tts`` is not spoken and goes on in its place. Each unit is
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
``BotStoppedSpeakingFrame``. A ``CancelFrame`` drops everything and passes.
A synthesis that fails is reported (``on_error``, an ``ErrorFrame`` upstream)
and its text skipped; the session goes on.

Word times are estimated by spreading the utterance's duration over its words
in proportion to their length (none of the engines here reports them).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import re
import shutil
import subprocess
from abc import abstractmethod
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from reactivex import abc

from .._seconds import check_seconds
from ..errors import ConfigurationError, ServiceError
from ..events import EventRegistry
from ..frames import (
    DOWN,
    AggregatedTextFrame,
    AggregationType,
    BotStartedSpeakingFrame,
    BotStoppedSpeakingFrame,
    CancelFrame,
    Direction,
    EndFrame,
    Frame,
    FrameKind,
    InterruptionFrame,
    LLMFullResponseEndFrame,
    LLMTextFrame,
    OutputAudioRawFrame,
    TextFrame,
    TTSSpeakFrame,
    TTSStartedFrame,
    TTSStoppedFrame,
    TTSTextFrame,
)
from ..pipeline.offload import Offload, default_offload, inline_offload
from ..pipeline.processor import EventfulProcessor, Port
from ..pipeline.shell import StageShell
from ..text import SimpleTextAggregator
from ._http import Answer, BoundedHTTP
from .stt import _endpoint, _positive, http_error, io_offload, need_httpx

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


@dataclass(frozen=True)
class Speech:
    """One synthesized unit: 16-bit mono PCM, its rate, and when each word starts (seconds into it)."""

    audio: bytes
    sample_rate: int
    words: tuple[tuple[str, float], ...]
    duration: float


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


_WORDLESS = re.compile(r"\w")
_SLACK = 0.001  # a millisecond: what a timer can resolve
_BACKSTOP = 86_400.0  # the link's own bound on a held end of input (the stage's watchdog comes far sooner)


class _Unit:
    """One piece of text to speak, its synthesis, and how far its playback got."""

    __slots__ = ("append", "chunk", "future", "next_word", "speech", "started", "text", "timer")

    def __init__(self, text: str, append: bool) -> None:
        self.text = text
        self.append = append
        self.future: concurrent.futures.Future[Any] | None = None
        self.speech: Speech | None = None
        self.started: float | None = None
        self.chunk = 0
        self.next_word = 0
        self.timer: abc.DisposableBase | None = None


class _TTSSession:
    """One session: text being grouped, units queued and playing, frames waiting behind them."""

    def __init__(self, tts: TTSService, port: Port) -> None:
        self.tts = tts
        self.port = port
        self.shell = StageShell(tts, port, tts.events, offload=tts.offload)  # events, work, timers, failures
        self.aggregator = SimpleTextAggregator()
        self.append = True
        self.queue: deque[_Unit | tuple[Frame, Direction]] = deque()
        self.playing: _Unit | None = None
        self.synthesizing: _Unit | None = None
        self.bot_speaking = False
        self.tts_started = False
        self.closed = False
        self.end_queued = False  # an EndFrame waits behind the speech
        self.input_ended = False  # the input completed: the output completes after the last word
        self.watchdog: abc.DisposableBase | None = None  # bounds the synthesis an end waits for
        self.watched: _Unit | None = None

    # -- frames (inside the session) ---------------------------------------------------

    def on_frame(self, frame: Frame, direction: Direction) -> None:
        if direction is not DOWN:
            self.port.push(frame, direction)
            return
        t = type(frame)
        if t is LLMTextFrame or t is TextFrame:
            self._text(frame)  # type: ignore[arg-type]
        elif t is AggregatedTextFrame:
            f: AggregatedTextFrame = frame  # type: ignore[assignment]
            if f.skip_tts:
                self._after_speech(frame, direction)
            else:
                self._flush()
                self._say(f.text, f.append_to_context)
        elif t is TTSSpeakFrame:
            self._flush()
            self._say(frame.text, frame.append_to_context)  # type: ignore[attr-defined]
        elif t is InterruptionFrame:
            self._interrupt(frame)
        elif t is CancelFrame:
            self._stop_all()
            self.port.push_down(frame)
            self._end_input()
        elif t is LLMFullResponseEndFrame or t is EndFrame:
            self._flush()
            self._after_speech(frame, direction)
            if t is EndFrame and self.queue:
                self.end_queued = True
                self._watch()
        elif frame.kind is FrameKind.SYSTEM:
            self.port.push_down(frame)
        else:
            self._after_speech(frame, direction)

    def on_input_end(self, direction: Direction) -> float | None:
        """No more input: what is grouped is spoken, and the output completes after the last word."""
        if direction is not DOWN:
            return None
        self._flush()
        if self.playing is None and not self.queue:
            return None
        self.input_ended = True
        self._watch()
        return _BACKSTOP  # the watchdog bounds each synthesis; this only backs it up

    def close(self) -> None:
        self.closed = True
        self._disarm()
        self._stop_all()
        self.shell.close()

    # -- text ---------------------------------------------------------------------------

    def _text(self, frame: TextFrame) -> None:
        if frame.skip_tts:
            self._flush()
            self._after_speech(frame, DOWN)
            return
        self.append = frame.append_to_context
        for unit in self.aggregator.aggregate(frame.text):
            self._say(unit.text, frame.append_to_context)

    def _flush(self) -> None:
        rest = self.aggregator.flush()
        if rest is not None:
            self._say(rest.text, self.append)

    def _say(self, text: str, append: bool) -> None:
        text = " ".join(text.split())
        if not _WORDLESS.search(text):
            return  # nothing to pronounce
        self.queue.append(_Unit(text, append))
        self._synthesize_next()
        self._play()

    def _after_speech(self, frame: Frame, direction: Direction) -> None:
        if self.playing is None and not self.queue:
            self.port.push(frame, direction)
        else:
            self.queue.append((frame, direction))

    # -- synthesis -------------------------------------------------------------------------

    def _synthesize_next(self) -> None:
        if self.synthesizing is not None or self.closed:
            return
        for item in self.queue:
            if isinstance(item, _Unit) and item.speech is None and item.future is None:
                unit = item
                break
        else:
            return
        self.synthesizing = unit
        unit.future = self.shell.submit(partial(self.tts.synthesize, unit.text), partial(self._ready, unit))
        self._watch()

    def _ready(self, unit: _Unit, outcome: Any) -> None:
        """A synthesis came back (inside the session): its speech, or its failure (reported, not spoken)."""
        if unit is not self.synthesizing:
            return  # interrupted meanwhile
        self.synthesizing = None
        if self.watched is unit:
            self._disarm()
        if not isinstance(outcome, BaseException | Speech):
            outcome = ServiceError(f"{self.tts.name}.synthesize returned {outcome!r}, not a Speech")
        if isinstance(outcome, BaseException):
            error = self.shell.failed(outcome, "synthesis")
            log.info("%s: %r is not spoken (%s)", self.tts.name, unit.text[:60], error)
            with contextlib.suppress(ValueError):
                self.queue.remove(unit)
        else:
            unit.speech = outcome
        self._synthesize_next()
        self._play()

    # -- the end, held until the last word is spoken ------------------------------------------

    def _watch(self) -> None:
        """Bound the synthesis running now, if an end waits for it (once per unit)."""
        unit = self.synthesizing
        if unit is self.watched:
            return
        self._disarm()
        if unit is not None and (self.end_queued or self.input_ended):
            self.watched = unit
            self.watchdog = self.shell.later(self.tts.end_grace, partial(self._give_up, unit))

    def _disarm(self) -> None:
        self.watched = None
        if self.watchdog is not None:
            self.watchdog.dispose()
            self.watchdog = None

    def _give_up(self, unit: _Unit) -> None:
        """A synthesis the end waits for took longer than ``end_grace``: reported, not spoken; the rest goes on."""
        self.watchdog = self.watched = None
        if unit is not self.synthesizing:
            return
        self.synthesizing = None
        if unit.future is not None:
            unit.future.cancel()
        self.shell.failed(ServiceError(
            f"{self.tts.name}: synthesizing {unit.text[:60]!r} took more than {self.tts.end_grace:g} s after "
            "the end; it is not spoken", retryable=True,
        ), "synthesis")
        with contextlib.suppress(ValueError):
            self.queue.remove(unit)
        self._synthesize_next()
        self._play()

    def _end_input(self) -> None:
        """Nothing is left to speak: a held end of input goes on (the output completes)."""
        if self.playing is None and not self.queue:
            self.end_queued = False
            self._disarm()
            if self.input_ended:
                self.input_ended = False
                self.port.finish_input()

    # -- playback ---------------------------------------------------------------------------

    def _play(self) -> None:
        """Start the next unit when nothing plays: frames at the head go on first."""
        while self.playing is None and self.queue:
            head = self.queue[0]
            if isinstance(head, _Unit):
                if head.speech is None:
                    return  # still synthesizing: the bot keeps the floor
                self.queue.popleft()
                self._start(head)
                return
            self.queue.popleft()
            if not any(isinstance(i, _Unit) for i in self.queue):
                self._speech_over(False)
            frame, direction = head
            self.port.push(frame, direction)
        if self.playing is None and not self.queue:
            self._speech_over(False)
            self._end_input()

    def _start(self, unit: _Unit) -> None:
        port = self.port
        if not self.tts_started:
            self.tts_started = True
            port.push_down(TTSStartedFrame())
        if not self.bot_speaking:
            self.bot_speaking = True
            started = BotStartedSpeakingFrame()
            port.push_down(started)
            port.push_up(started)
        self.playing = unit
        unit.started = port.time()
        self.shell.event("on_speech_started", unit.text)
        self._tick()

    def _tick(self) -> None:
        unit = self.playing
        if unit is None or unit.speech is None or unit.started is None:
            return
        unit.timer = None
        speech = unit.speech
        tts = self.tts
        elapsed = self.port.time() - unit.started
        step = max(2, round(tts.chunk_secs * speech.sample_rate) * 2)
        audio = speech.audio
        # words spoken by now
        while unit.next_word < len(speech.words) and speech.words[unit.next_word][1] <= elapsed + _SLACK:
            word = speech.words[unit.next_word][0]
            unit.next_word += 1
            self.port.push_down(TTSTextFrame(word, aggregated_by=AggregationType.WORD.value,
                                             append_to_context=unit.append))
        # audio due by now (plus the lead)
        due = (elapsed + tts.lead + _SLACK) * speech.sample_rate * 2
        while unit.chunk * step < len(audio) and unit.chunk * step <= due:
            piece = audio[unit.chunk * step:(unit.chunk + 1) * step]
            unit.chunk += 1
            self.port.push_down(OutputAudioRawFrame(piece, speech.sample_rate))
        done = unit.next_word >= len(speech.words) and unit.chunk * step >= len(audio)
        if done and elapsed >= speech.duration - _SLACK:
            self.playing = None
            self._play()
            return
        # the next moment something is due: a word, a chunk, or the end
        times = [speech.duration]
        if unit.next_word < len(speech.words):
            times.append(speech.words[unit.next_word][1])
        if unit.chunk * step < len(audio):
            times.append(unit.chunk * step / (2 * speech.sample_rate) - tts.lead)
        wait = max(_SLACK, min(times) - elapsed)
        unit.timer = self.shell.later(wait, self._tick)

    def _speech_over(self, interrupted: bool) -> None:
        port = self.port
        if self.tts_started:
            self.tts_started = False
            port.push_down(TTSStoppedFrame())
        if self.bot_speaking:
            self.bot_speaking = False
            stopped = BotStoppedSpeakingFrame()
            port.push_down(stopped)
            port.push_up(stopped)
            self.shell.event("on_speech_stopped", interrupted)

    def _drop_units(self) -> None:
        if self.playing is not None and self.playing.timer is not None:
            self.playing.timer.dispose()
        self.playing = None
        if self.synthesizing is not None and self.synthesizing.future is not None:
            self.synthesizing.future.cancel()
        self.synthesizing = None
        self._disarm()
        self.aggregator.reset()

    def _interrupt(self, frame: Frame) -> None:
        self._drop_units()
        kept = [i for i in self.queue if not isinstance(i, _Unit) and not i[0].interruptible]
        self.queue.clear()
        self.port.push_down(frame)
        self._speech_over(True)
        for f, d in kept:
            self.port.push(f, d)
        self._end_input()

    def _stop_all(self) -> None:
        self._drop_units()
        self.queue.clear()
        self.tts_started = self.bot_speaking = False


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
        offload: Where the requests wait (default: the I/O threads, :func:`rxvoice.services.stt.io_offload`).
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
        need_httpx(self)
        seconds = _positive("timeout", timeout)
        kwargs.setdefault("end_grace", seconds + 1.0)
        super().__init__(offload=offload if offload is not None else io_offload, **kwargs)
        if not isinstance(model, str) or not model:
            raise ConfigurationError(f"OpenAISpeechTTS needs a model name, got {model!r}")
        self.model = model
        self.voice = voice
        self.base_url, self.headers, auth = _endpoint(base_url, api_key)
        self.url = f"{self.base_url}/audio/speech"
        self.params = dict(params or {})
        self.timeout = seconds
        self._http = BoundedHTTP("the speech server", seconds, auth)  # shared by the sessions

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

