"""One session of a speech-to-text stage: the utterance being heard, the work queued for the recognizer.

The stage (:class:`~rxvoice.services.stt.STTService`) is configuration;
each session runs here on the one shell (:class:`~rxvoice.pipeline.shell.StageShell`):
recognition off the session through its ``submit``, the end watchdog on its
timers, failures reported by its one rule.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from collections import deque
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol, cast

import numpy as np
from reactivex import abc

from ..aggregators.reports import iso8601
from ..audio.pcm import float_to_pcm16
from ..audio.resample import StreamResampler
from ..errors import RxVoiceError, ServiceError
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
from ..pipeline.processor import Port, Processor
from ..pipeline.shell import ServiceStage, StageShell

__all__ = ["Recognizer", "Utterance"]

log = logging.getLogger("rxvoice.services.stt")

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


class _Stage(ServiceStage, Protocol):
    """What a session reads of its stage (an ``STTService``)."""

    @property
    def sample_rate(self) -> int: ...
    @property
    def user_id(self) -> str: ...
    @property
    def language(self) -> str | None: ...
    @property
    def interim_interval(self) -> float: ...
    @property
    def pre_roll(self) -> float: ...
    @property
    def ttfs_p99_latency(self) -> float: ...

    def new_recognizer(self) -> Recognizer: ...


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

    def __init__(self, stt: _Stage, port: Port) -> None:
        self.stt = stt
        self.port = port
        # events, work off the session, timers, failures: the one shell
        self.shell = StageShell(cast(Processor, stt), port, stt.events, offload=stt.offload)
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
