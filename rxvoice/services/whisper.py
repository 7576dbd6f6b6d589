"""WhisperSTT: offline speech-to-text with Whisper base or tiny.en (faster-whisper, int8 on the CPU).

Place it where any STT stage goes, after the VAD::

    pipeline(transport.input(), VADProcessor(), WhisperSTT(), pair.user(), llm, tts, transport.output(),
             pair.assistant())

Whisper is not a streaming model: it reads a stretch of audio and writes its
words. So the stage transcribes the VAD's speech segments. Every pause the
VAD reports (a ``VADUserStoppedSpeakingFrame``) closes the running segment
and transcribes it at once, so its words are ready when the turn decision
asks for them a moment later: one ``TranscriptionFrame(finalized=True)`` per
segment. A segment still running after ``interim_interval`` seconds (4 s by
default) gets an ``InterimTranscriptionFrame`` every ``interim_interval``
seconds of new speech (a guess from the segment alone, without the context:
about a third cheaper than a final). A segment longer than the model's 30 s window is read
window by window (faster-whisper seeks to the last word it heard, so no word
is lost at a window's edge).

Short segments are hard for Whisper ("to" at the end of "a flight to" comes
back as "2"), so each one is transcribed with up to ``context`` seconds of
the session's previous speech before it, and only the words heard in the new
segment are kept (a word belongs to it when its middle falls after the
boundary).

The words come out as a caller says them (:func:`~rxvoice.services.spoken.spoken_words`):
numbers as number words ("forty two", codes digit by digit "four eight two
six one"), spelled letters as single lower-case letters ("j o r d a n"),
lower case without punctuation (``punctuation=True`` keeps Whisper's marks,
which reflect only the audio so far and put a full stop after most
segments). The ``result`` of each final is a :class:`WhisperResult`: where
the segment was said (an :class:`~rxvoice.services.stt.Utterance`), each
word's timing and probability, the segment's average log-probability and
no-speech probability, and Whisper's own text.

Threads: one transcription per session at a time (a session's jobs are
queued), on :func:`whisper_offload`, a pool of :data:`WHISPER_WORKERS`
threads shared by every session of the process (``RXVOICE_WHISPER_WORKERS``,
default: the number of cores, at most 4), each transcription running on
:data:`WHISPER_THREADS` CTranslate2 threads (``RXVOICE_WHISPER_THREADS``,
default 1). CTranslate2 releases the GIL while it
runs, so the event loop and the other sessions go on. One model is loaded per
process and shared (it holds no per-session state); loading takes 0.3-0.8 s,
on the worker, when the first session starts.

Whisper pads every stretch to its 30 s window and its encoder reads all of
it; here the encoder reads the audio and 5 s of that padding (at least 10 s
in all), as whisper.cpp's ``audio_ctx`` does: half the CPU on the
development calls, and fewer errors (Whisper loops less on a short window
than on one of mostly padding). A transcription that still loops (one word
five times running, a phrase three times) is decoded again with no four
tokens said twice.

The model is never downloaded at run time: ``rxvoice model install`` puts it
in the user cache (:mod:`~rxvoice.services.whisper_model`): Whisper base by
default, tiny.en with ``--size tiny.en``; WhisperSTT uses base when it is
installed, else tiny.en. Install the
engine with ``pip install 'rxvoice[stt]'``.
"""

from __future__ import annotations

import concurrent.futures
import difflib
import importlib.util
import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..aggregators.reports import iso8601
from ..errors import ConfigurationError, ModelError, ModelNotFoundError
from ..frames import TranscriptionFrame
from ..pipeline.processor import Port
from .spoken import spoken_words
from .stt import _FINISH, Recognizer, STTService, Utterance, _STTSession
from .whisper_model import WHISPER_SIZES, check_whisper_model, env_count, find_whisper_model, whisper_model_spec

__all__ = [
    "WHISPER_THREADS",
    "WHISPER_WORKERS",
    "WhisperResult",
    "WhisperSTT",
    "WhisperWord",
    "whisper_available",
    "whisper_installed",
    "whisper_label",
    "whisper_offload",
]

log = logging.getLogger("rxvoice.services.whisper")

_RATE = 16000


def _threads() -> int:
    return env_count("RXVOICE_WHISPER_THREADS", 1, 16)


WHISPER_WORKERS = env_count("RXVOICE_WHISPER_WORKERS", max(1, min(4, os.cpu_count() or 1)), 64)
"""Threads transcribing for all the process's WhisperSTT sessions (``RXVOICE_WHISPER_WORKERS``)."""
WHISPER_THREADS = _threads()
"""CTranslate2 threads each transcription runs on (``RXVOICE_WHISPER_THREADS``, default 1): a final decodes
faster with more, but all sessions share the cores (at most WHISPER_WORKERS x WHISPER_THREADS busy)."""


@dataclass(frozen=True, slots=True)
class WhisperWord:
    """One spoken word of a final: seconds into the session, and Whisper's probability for it (0..1)."""

    word: str
    start: float
    end: float
    probability: float


@dataclass(frozen=True)
class WhisperResult(Utterance):
    """The ``result`` of a WhisperSTT final: where it was said, and how sure Whisper was.

    Attributes:
        words: the final's words, with their timings and probabilities (several
            spoken words from one written one, "$42", share its probability and
            split its time).
        avg_logprob: the average log-probability of the tokens (Whisper's
            segment confidence; below -1 the words are often wrong).
        no_speech_prob: Whisper's probability that the audio holds no speech.
        heard: Whisper's own text for the segment (punctuation, digits, case).
    """

    words: tuple[WhisperWord, ...] = ()
    avg_logprob: float = 0.0
    no_speech_prob: float = 0.0
    heard: str = ""


class _Heard(str):
    """A final's text that carries the details to the session (the base stage passes text around)."""

    words: tuple[tuple[str, float, float, float], ...]  # word, start and end (seconds into the segment), p
    avg_logprob: float
    no_speech_prob: float
    heard: str


def whisper_available() -> bool:
    """Whether the engine (faster-whisper) is installed."""
    return importlib.util.find_spec("faster_whisper") is not None


def whisper_installed() -> bool:
    """Whether WhisperSTT can run here: faster-whisper installed and the model found (not hashed here)."""
    from .whisper_model import whisper_model_found

    return whisper_available() and whisper_model_found()


def whisper_label() -> str:
    """The model WhisperSTT() would load, as the output names it ("Whisper base"; "Whisper" when none is found)."""
    try:
        spec = whisper_model_spec(find_whisper_model())
    except ModelNotFoundError:
        return "Whisper"
    return spec.label if spec is not None else "Whisper"


_POOL: concurrent.futures.ThreadPoolExecutor | None = None
_LOCK = threading.Lock()
_MODELS: dict[tuple[str, str, int, int, tuple[float, float] | None], Any] = {}


def whisper_offload(job: Callable[[], Any]) -> concurrent.futures.Future[Any]:
    """Run ``job`` on the Whisper threads (:data:`WHISPER_WORKERS`, shared): WhisperSTT's default offload.

    Apart from the compute workers of :func:`rxvoice.workers.shared_pool`, so a
    queue of transcriptions never delays an end-of-turn verdict.
    """
    global _POOL
    pool = _POOL
    if pool is None:
        with _LOCK:
            pool = _POOL
            if pool is None:
                pool = _POOL = concurrent.futures.ThreadPoolExecutor(WHISPER_WORKERS,
                                                                     thread_name_prefix="rxvoice-whisper")
    return pool.submit(job)


def _shared_model(folder: str, compute_type: str, window: tuple[float, float] | None = None) -> Any:
    """The process's model for ``folder``: loaded once, called from up to WHISPER_WORKERS threads at once.

    ``window`` (margin, least seconds): the encoder reads the audio plus
    ``margin`` seconds of Whisper's padding, at least ``least`` seconds, not
    the full 30 s window (None).
    """
    key = (folder, compute_type, WHISPER_WORKERS, WHISPER_THREADS, window)
    with _LOCK:
        model = _MODELS.get(key)
        if model is None:
            try:
                model = _model_class()(folder, device="cpu", compute_type=compute_type,
                                       cpu_threads=WHISPER_THREADS,
                                       num_workers=WHISPER_WORKERS, local_files_only=True)
            except Exception as exc:  # a file CTranslate2 cannot read
                raise ModelError(f"the Whisper model at {folder} did not load ({exc}): run "
                                 "`rxvoice model install stt` to replace it") from exc
            model.window_frames = None if window is None else (round(window[0] * _FRAMES), round(window[1] * _FRAMES))
            _MODELS[key] = model
    return model


_FRAMES = 100  # log-mel frames a second
_MODEL_CLASS: Any = None


def _model_class() -> Any:
    """faster-whisper's ``WhisperModel`` with an encoder that reads only the audio and a margin of padding.

    Whisper pads every window to 30 s and its encoder reads all of it: for a
    few seconds of speech nine tenths of the cost is padding. As
    whisper.cpp's ``audio_ctx`` does, the encoder here reads the window's
    audio, then ``margin`` seconds of padding (at least ``least`` seconds in
    all): padding frames are exact zeros (faster-whisper pads the log-mel
    features with zeros; speech and recorded silence never give an all-zero
    frame). On the development calls this halves the CPU and, with a margin
    of 5 s and at least 10 s, also removes errors (Whisper loops less on a
    short window than on one of mostly padding).
    """
    global _MODEL_CLASS
    if _MODEL_CLASS is None:
        from faster_whisper import WhisperModel

        class _WindowedModel(WhisperModel):  # type: ignore[misc]
            window_frames: tuple[int, int] | None = None

            def encode(self, features: Any) -> Any:
                if self.window_frames is not None:
                    margin, least = self.window_frames
                    frames = features.shape[-1]
                    voiced = np.flatnonzero(np.any(features.reshape(-1, frames) != 0.0, axis=0))
                    keep = max(least, (int(voiced[-1]) + 1 if len(voiced) else 0) + margin)
                    keep += keep % 2  # the encoder's convolution halves the frames
                    if keep < frames:
                        features = features[..., :keep]
                return super().encode(features)

        _MODEL_CLASS = _WindowedModel
    return _MODEL_CLASS


class _WhisperRecognizer:
    """One session's segments: the running one, and the previous speech kept as context."""

    def __init__(self, stt: WhisperSTT) -> None:
        self.stt = stt
        self.model = _shared_model(stt.model_folder, stt.compute_type, stt.window)
        self.audio = bytearray()
        self.context = bytearray()
        self.said: list[str] = []  # the words of the previous finals (of the context), bare
        self.fresh = 0  # bytes of the running segment not yet transcribed
        self.interim_bytes = round(stt.interim_interval * _RATE) * 2
        self.context_bytes = round(stt.context * _RATE) * 2
        self.tails = 0  # finals whose dropped tail was read again and gave words

    def accept(self, audio: bytes) -> str | None:
        self.audio += audio
        self.fresh += len(audio)
        if self.fresh < self.interim_bytes:
            return None
        self.fresh = 0
        return str(self._transcribe(context=False))  # a guess: the segment alone, about a third cheaper

    def finish(self) -> str:
        if not self.audio:
            return ""
        heard = self._transcribe()
        if self.stt.dropped_tail is not None:
            heard = self._reread_tail(heard)
        if self.context_bytes:
            self.context = (self.context + self.audio)[-self.context_bytes:]
            self.said = (self.said + [_bare(w) for w in heard.split()])[-4 * _ALIGN_WORDS:]
        self.audio = bytearray()
        self.fresh = 0
        return heard

    def close(self) -> None:
        self.audio = bytearray()
        self.context = bytearray()

    def _transcribe(self, *, context: bool = True) -> _Heard:
        before = self.context if context else bytearray()
        pcm = bytes(before + self.audio)
        samples = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0
        boundary = len(before) / 2 / _RATE
        spoken = self._tokens(samples)
        mine = spoken[_split(spoken, boundary, self.said if before else [])]
        heard = _Heard(" ".join(t.text for t in mine))
        heard.words = tuple((t.text, round(max(0.0, t.start - boundary), 3), round(max(0.0, t.end - boundary), 3),
                             round(t.probability, 3)) for t in mine)
        by_segment = {t.segment: (t.avg_logprob, t.no_speech_prob) for t in mine}
        heard.avg_logprob = round(sum(a for a, _ in by_segment.values()) / len(by_segment), 3) if by_segment else 0.0
        heard.no_speech_prob = round(max((n for _, n in by_segment.values()), default=0.0), 3)
        heard.heard = " ".join(t.written for t in mine if t.first)
        return heard

    def _tokens(self, samples: np.ndarray[Any, Any]) -> list[_Token]:
        """Whisper's words for ``samples`` as spoken words (times in seconds into ``samples``)."""
        stt = self.stt
        seconds = len(samples) / _RATE
        options: dict[str, Any] = dict(
            language="en", beam_size=stt.beam_size, best_of=1, temperature=0.0, condition_on_previous_text=False,
            word_timestamps=True, vad_filter=False, max_new_tokens=min(200, 16 + round(8 * min(seconds, 30.0))),
        )
        segments = list(self.model.transcribe(samples, **options)[0])
        if _looped([w.word for segment in segments for w in segment.words or ()]):
            # Whisper's failure mode: one word or phrase over and over ("internet internet ..."). Decoded
            # again, deterministically, with no four tokens said twice (not always: it would also forbid a
            # phrase the caller does repeat).
            segments = list(self.model.transcribe(samples, **options, no_repeat_ngram_size=_NO_REPEAT)[0])
        spoken: list[_Token] = []
        for index, segment in enumerate(segments):
            if _silent(segment):
                continue
            for w in segment.words or ():
                said = spoken_words(w.word, keep_punctuation=stt.punctuation)
                step = (w.end - w.start) / max(1, len(said))
                for i, text in enumerate(said):
                    start = w.start + i * step
                    spoken.append(_Token(text, start, start + step, float(w.probability), w.word.strip(), index,
                                         float(segment.avg_logprob), float(segment.no_speech_prob), i == 0))
        return spoken

    def _reread_tail(self, heard: _Heard) -> _Heard:
        """The final with the words Whisper stopped before: its tail decoded again when speech follows the last word.

        Whisper sometimes ends a transcription early, dropping the segment's
        last words. When more than ``dropped_tail`` seconds of speech-like
        audio (20 ms frames within 20 dB of the segment's loud frames) follow
        the last word's end, that tail is transcribed again (with the second
        of audio before it, the words kept are those after the cut) and its
        words with a probability of at least :data:`_TAIL_PROBABILITY` are
        added (not a first word that repeats the final's last one; none when
        more words come back than 3.5 a second of the tail's speech, which
        Whisper makes up in noise).
        """
        if not heard.words:
            return heard  # nothing heard at all: not a dropped tail (noise, silence)
        samples = np.frombuffer(bytes(self.audio), dtype="<i2").astype(np.float32) / 32768.0
        cut = min(len(samples), round(heard.words[-1][2] * _RATE))
        speech = _speech_seconds(samples, cut)
        if speech <= self.stt.dropped_tail:  # type: ignore[operator]
            return heard
        lead = min(cut, round(_TAIL_LEAD * _RATE))  # the words before it, so the tail is not heard out of context
        tail = [t for t in self._tokens(samples[cut - lead:]) if (t.start + t.end) / 2 * _RATE >= lead]
        if tail and _bare(tail[0].text) == _bare(heard.words[-1][0]):
            tail = tail[1:]
        if len(tail) > 1 + _TAIL_RATE * speech:
            return heard  # more words than the tail can hold (3.5 a second of speech): Whisper making them up
        tail = [t for t in tail if t.probability >= _TAIL_PROBABILITY]
        if not tail:
            return heard
        cut -= lead
        offset = cut / _RATE
        more = _Heard(" ".join([*heard.split(), *(t.text for t in tail)]))
        more.words = heard.words + tuple((t.text, round(offset + t.start, 3), round(offset + t.end, 3),
                                          round(t.probability, 3)) for t in tail)
        more.avg_logprob, more.no_speech_prob = heard.avg_logprob, heard.no_speech_prob
        more.heard = " ".join([heard.heard, *(t.written for t in tail if t.first)]).strip()
        self.tails += 1
        return more


_TAIL_PROBABILITY = 0.3
_TAIL_LEAD = 1.0  # seconds before the tail decoded with it
_TAIL_RATE = 3.5  # words a second of speech, at most, a tail's re-read may add
_FRAME = 320  # 20 ms at 16 kHz


def _speech_seconds(samples: np.ndarray[Any, Any], cut: int) -> float:
    """Seconds of speech-like 20 ms frames after sample ``cut``: within 20 dB of the segment's loud frames."""
    frames = len(samples) // _FRAME
    if frames == 0 or cut >= frames * _FRAME:
        return 0.0
    rms = np.sqrt(np.mean(samples[:frames * _FRAME].reshape(frames, _FRAME) ** 2, axis=1))
    loud = float(np.percentile(rms, 95))
    floor = max(loud * 0.1, 10 ** (-50 / 20))
    return float(np.count_nonzero(rms[cut // _FRAME:] >= floor)) * _FRAME / _RATE


def _silent(segment: Any) -> bool:
    """Whisper's words for audio it thinks holds no speech, said with little confidence ("you" in silence)."""
    words = segment.words or ()
    mean = sum(float(w.probability) for w in words) / len(words) if words else 0.0
    return float(segment.no_speech_prob) > _NO_SPEECH and (float(segment.avg_logprob) < -0.8 or mean < 0.3)


_NO_SPEECH = 0.6
_NO_REPEAT = 4


def _looped(words: list[str]) -> bool:
    """Whether Whisper went round in a loop: one word 5 times running, or a phrase of 2-8 words 3 times."""
    bare = [w.strip().lower().strip(".,?!;:…") for w in words]
    for size in range(1, 9):
        times = 5 if size == 1 else 3
        for start in range(len(bare) - size * times + 1):
            phrase = bare[start:start + size]
            if all(bare[start + k * size: start + (k + 1) * size] == phrase for k in range(1, times)):
                return True
    return False


@dataclass(frozen=True, slots=True)
class _Token:
    """One spoken word of a transcription, with its written word's details (times in the transcribed audio)."""

    text: str
    start: float
    end: float
    probability: float
    written: str
    segment: int
    avg_logprob: float
    no_speech_prob: float
    first: bool  # the first spoken word of its written word


def _split(tokens: list[_Token], boundary: float, said: list[str]) -> slice:
    """The tokens heard in the new segment, after the context's.

    By time, a token is new when its middle falls after the boundary; but
    Whisper's word times can be off by half a second, so when the context's
    words (what the previous finals said) are found at the start, the new
    words begin right after them.
    """
    by_time = next((i for i, t in enumerate(tokens) if (t.start + t.end) / 2 >= boundary), len(tokens))
    tail = said[-_ALIGN_WORDS:]
    if not tail:
        return slice(by_time, None)
    words = [_bare(t.text) for t in tokens]
    matcher = difflib.SequenceMatcher(None, words, tail, autojunk=False)
    blocks = [b for b in matcher.get_matching_blocks() if b.size]
    if not blocks:
        return slice(by_time, None)
    last = blocks[-1]
    matched = sum(b.size for b in blocks)
    if last.b + last.size < len(tail) - 1 or matched * 2 < len(tail):
        return slice(by_time, None)  # the previous words are not there: trust the times
    by_text = last.a + last.size
    if last.b + last.size < len(tail):
        by_text += 1  # the previous final's last word, heard differently this time
    if abs(by_text - by_time) > _ALIGN_WORDS:
        return slice(by_time, None)
    return slice(by_text, None)


_ALIGN_WORDS = 8


def _bare(word: str) -> str:
    return word.rstrip(".,?!;:…")


class _WhisperSession(_STTSession):
    """The STT session, with finals that carry a :class:`WhisperResult`."""

    stt: WhisperSTT

    def _emit(self, kind: int, text: str | None, span: Utterance | None) -> None:
        if kind != _FINISH or not isinstance(text, _Heard) or span is None or not text.strip():
            super()._emit(kind, text, span)
            return
        stt = self.stt
        self.last_interim = ""
        origin = max(0.0, span.start - stt.pre_roll)
        words = tuple(WhisperWord(w, round(origin + a, 3), round(origin + b, 3), p) for w, a, b, p in text.words)
        result = WhisperResult(span.start, span.end, words=words, avg_logprob=text.avg_logprob,
                               no_speech_prob=text.no_speech_prob, heard=text.heard)
        frame = TranscriptionFrame(" ".join(text.split()), user_id=stt.user_id, timestamp=iso8601(self.port.time()),
                                   language=stt.language, result=result, finalized=True)
        self.port.push_down(frame)
        if self.port.events is not None:
            self.port.events.emit("on_transcription", frame)


class WhisperSTT(STTService):
    """Offline speech recognition with Whisper (tiny.en or base), int8 on the CPU: see the module docs.

    Args:
        model_path: the model folder (default: ``RXVOICE_WHISPER_MODEL``, else
            the user cache that ``rxvoice model install`` fills: the ``size``
            asked for, or the best installed).
        size: which model to look for in the cache, ``tiny.en`` or ``base``
            (default: base when installed, else tiny.en); with ``model_path``,
            the model its files are checked against (default: whichever they are).
        context: seconds of the session's previous speech transcribed before
            each segment (0: each segment alone; default 10 s with tiny.en, 5 s with base).
        punctuation: keep Whisper's punctuation on the words (default: none).
        beam_size: the decoder's beam (1: greedy, cheaper and a fifth to a half more errors on
            the development calls).
        window_margin: seconds of Whisper's padding the encoder reads after the audio (None: the
            full 30 s window, as Whisper does; default 5 s, at least ``min_window`` in all).
        min_window: the least the encoder reads, in seconds (default 10 s).
        dropped_tail: when more than this many seconds of speech-like audio follow a final's last
            word, Whisper stopped early: that tail is transcribed again and its words of probability
            0.3 or more are added (default 0.5 s; None: never).
        compute_type: CTranslate2's type (``int8``; ``float32`` is slower, no better here).
        verify: check the model files' sha256 at construction (once per process).
        **kwargs: As for :class:`~rxvoice.services.stt.STTService`; ``offload``
            defaults to :func:`whisper_offload`, ``interim_interval`` to 4 s,
            ``ttfs_p99_latency`` to 0.8 s.

    Raises:
        ConfigurationError: faster-whisper is not installed (``pip install 'rxvoice[stt]'``), or a bad argument.
        ModelNotFoundError: no model where it was looked for (the message names ``rxvoice model install``).
        ModelError: the model's files are not the pinned ones (corrupt).
    """

    name = "WhisperSTT"

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        *,
        size: str | None = None,
        context: float | None = None,
        punctuation: bool = False,
        beam_size: int = 5,
        window_margin: float | None = 5.0,
        min_window: float = 10.0,
        dropped_tail: float | None = 0.5,
        compute_type: str = "int8",
        verify: bool = True,
        **kwargs: Any,
    ) -> None:
        if not whisper_available():
            raise ConfigurationError("WhisperSTT needs the faster-whisper package: pip install 'rxvoice[stt]'")
        kwargs.setdefault("offload", whisper_offload)
        kwargs.setdefault("interim_interval", 4.0)
        kwargs.setdefault("ttfs_p99_latency", 0.8)
        super().__init__(**kwargs)
        if size is not None and size not in WHISPER_SIZES:
            raise ConfigurationError(f"size must be one of {', '.join(WHISPER_SIZES)}, got {size!r}")
        if self.language is not None and self.language.lower().replace("_", "-").split("-")[0] != "en":
            raise ConfigurationError(f"WhisperSTT hears English only (the words' rules are English), "
                                     f"not {self.language!r}")
        if context is not None and (isinstance(context, bool) or not isinstance(context, int | float)
                                    or not 0 <= context <= 20):
            raise ConfigurationError(f"context must be 0..20 seconds, got {context!r}")
        if isinstance(beam_size, bool) or not isinstance(beam_size, int) or not 1 <= beam_size <= 10:
            raise ConfigurationError(f"beam_size must be 1..10, got {beam_size!r}")
        if window_margin is not None and (isinstance(window_margin, bool) or not isinstance(window_margin, int | float)
                                          or not 0 <= window_margin <= 30):
            raise ConfigurationError(f"window_margin must be 0..30 seconds or None, got {window_margin!r}")
        if isinstance(min_window, bool) or not isinstance(min_window, int | float) or not 1 <= min_window <= 30:
            raise ConfigurationError(f"min_window must be 1..30 seconds, got {min_window!r}")
        if dropped_tail is not None and (isinstance(dropped_tail, bool) or not isinstance(dropped_tail, int | float)
                                         or not 0.1 <= dropped_tail <= 30):
            raise ConfigurationError(f"dropped_tail must be 0.1..30 seconds or None, got {dropped_tail!r}")
        if compute_type not in ("int8", "int8_float32", "float32"):
            raise ConfigurationError(f"compute_type must be int8, int8_float32 or float32, got {compute_type!r}")
        folder = check_whisper_model(find_whisper_model(model_path, size=size), verify=verify, size=size)
        spec = whisper_model_spec(folder)
        self.model_folder = str(folder)
        self.size = size or (spec.size if spec is not None else None)
        """The model's size (``tiny.en``, ``base``), None for a folder of other files (``verify=False``)."""
        self.label = spec.label if spec is not None and size in (None, spec.size) else f"Whisper {size or '?'}"
        """How the output names the model ("Whisper tiny.en")."""
        self.context = float(context if context is not None else _CONTEXT.get(self.size or "", 10.0))
        self.punctuation = bool(punctuation)
        self.beam_size = beam_size
        self.window = None if window_margin is None else (float(window_margin), float(min_window))
        self.compute_type = compute_type
        self.dropped_tail = None if dropped_tail is None else float(dropped_tail)

    def __repr__(self) -> str:
        return f"WhisperSTT({self.model_folder!r})"

    def new_recognizer(self) -> Recognizer:
        return _WhisperRecognizer(self)

    def open(self, port: Port) -> _WhisperSession:
        port.events = self.events.session(port.time)  # this session's clock and async handlers, not the stage's
        return _WhisperSession(self, port)


_CONTEXT = {"tiny.en": 10.0, "base": 5.0}  # tuned on half the development calls (see the benchmarks)
