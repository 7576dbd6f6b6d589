"""The turn-taking detector: VAD plus Smart Turn right after the input (jargo's ``turntaking.Detector``).

Put it first, before speech-to-text, and let the user aggregator adopt what
it decides::

    detector = TurnTakingDetector(SmartTurnAnalyzer())
    pair = Pair(context, turns=TurnsConfig(strategies=ExternalStrategies()))
    pipeline(detector, stt, pair.user(), llm, tts, output, pair.assistant())

Every frame goes on untouched. The detector runs a VAD on the audio (its own
:class:`~rxvoice.audio.vad_processor.VADProcessor` logic, so the
``VADUserStarted/StoppedSpeakingFrame`` and heartbeats go out as that
operator sends them; or, with ``use_upstream_vad=True``, the VAD frames of a
VAD operator placed before it) and feeds every chunk to a Smart Turn stream.
When speech starts and no turn is open it announces the turn
(``UserStartedSpeakingFrame``, and an ``InterruptionFrame`` when
interruptions are on); at every VAD stop it asks the model, off the session,
whether the user finished; a complete verdict (or Smart Turn's 3 s silence
fallback) ends the turn with a ``UserStoppedSpeakingFrame``. All of these go
both ways. The aggregator's ``ExternalStop`` then still waits for the
transcript before it answers: the detector sits before the STT and never sees
the words.

The model runs through ``offload`` (default: a worker thread of its own; a
:class:`~rxvoice.audio.turn.SmartTurnBatcher` to batch many sessions, a
:class:`~rxvoice.turns.SchedulerOffload` in virtual-time tests), and its
answer re-enters the session through its gate, so the stream never blocks.
"""

from __future__ import annotations

import concurrent.futures
import logging
from typing import Any, cast

import numpy as np
from reactivex import abc

from ...errors import ConfigurationError
from ...events import EventRegistry
from ...frames import (
    DOWN,
    UP,
    CancelFrame,
    Direction,
    EndFrame,
    Frame,
    InputAudioRawFrame,
    InterruptionFrame,
    MetricsFrame,
    SpeechControlParamsFrame,
    StartFrame,
    TurnMetricsData,
    UserStartedSpeakingFrame,
    UserStoppedSpeakingFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from ...pipeline.processor import EventfulProcessor, Port
from ...turns.analyzer import AnalyzerSession, EndOfTurnAnalyzer
from ...turns.offload import Offload
from ..vad_processor import VADProcessor, _VADSession
from .smart_turn import SmartTurnAnalyzer

__all__ = ["TURN_DETECTOR_EVENTS", "TurnTakingDetector"]

log = logging.getLogger("rxvoice.audio.turn")

TURN_DETECTOR_EVENTS = ("on_user_turn_started", "on_user_turn_stopped", "on_end_of_turn_verdict", "on_error")
"""The detector's events: a turn started, a turn ended (payload: ``"model"`` or ``"silence"``), each verdict
(a :class:`~rxvoice.frames.TurnMetricsData`), and errors."""

_POOL: concurrent.futures.ThreadPoolExecutor | None = None


def _default_offload(job: Any) -> concurrent.futures.Future[Any]:
    global _POOL
    if _POOL is None:
        _POOL = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="rxvoice-turn-detector")
    return _POOL.submit(job)


class TurnTakingDetector(EventfulProcessor):
    """Decides turn ends from the audio with VAD + Smart Turn, before speech-to-text.

    Args:
        analyzer: The end-of-turn model (a :class:`SmartTurnAnalyzer` or
            :class:`SmartTurnBatcher`, or any ``EndOfTurnAnalyzer``); default:
            ``SmartTurnAnalyzer()``.
        vad: The VAD to run (its analyzer, timings and batcher); default:
            ``VADProcessor()`` (Silero, a fresh analyzer per session).
        use_upstream_vad: Run no VAD here; use the VAD frames of a VAD
            operator placed before the detector.
        enable_interruptions: Send an ``InterruptionFrame`` with each turn start.
        offload: Where verdicts are computed (see the module docstring).
        scheduler: The scheduler to run on (default: the one given at subscribe time).

    Events (``handler(detector, payload)``): see :data:`TURN_DETECTOR_EVENTS`.
    """

    name = "TurnTakingDetector"

    def __init__(
        self,
        analyzer: EndOfTurnAnalyzer | None = None,
        *,
        vad: VADProcessor | None = None,
        use_upstream_vad: bool = False,
        enable_interruptions: bool = True,
        offload: Offload | None = None,
        scheduler: abc.SchedulerBase | None = None,
    ) -> None:
        if analyzer is not None and not callable(getattr(analyzer, "open_stream", None)):
            raise ConfigurationError(f"TurnTakingDetector needs an end-of-turn analyzer, got {analyzer!r}")
        if vad is not None and not isinstance(vad, VADProcessor):
            raise ConfigurationError(f"vad must be a VADProcessor, got {vad!r}")
        if vad is not None and use_upstream_vad:
            raise ConfigurationError("give vad= or use_upstream_vad=True, not both")
        if offload is not None and not callable(offload):
            raise ConfigurationError(f"offload must be callable, got {offload!r}")
        self.analyzer: EndOfTurnAnalyzer = analyzer if analyzer is not None else SmartTurnAnalyzer()
        self.vad = None if use_upstream_vad else (vad if vad is not None else VADProcessor())
        self.enable_interruptions = enable_interruptions
        self.offload = offload
        self.scheduler = scheduler
        self.events = EventRegistry(self, TURN_DETECTOR_EVENTS)

    def __repr__(self) -> str:
        return f"<{self.name}>"


    def open(self, port: Port) -> _DetectorSession:
        return _DetectorSession(self, port)


class _Tap:
    """The port the embedded VAD session talks through: frames go on, VAD decisions are also seen here."""

    def __init__(self, port: Port, session: _DetectorSession) -> None:
        self._port = port
        self._session = session

    def push(self, frame: Frame, direction: Direction = DOWN) -> None:
        self._port.push(frame, direction)
        if direction is DOWN:
            t = type(frame)
            if t is VADUserStartedSpeakingFrame or t is VADUserStoppedSpeakingFrame:
                self._session.on_vad(frame)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._port, name)


class _DetectorSession:
    """One stream's detector: the VAD, the end-of-turn stream, the verdict in flight."""

    def __init__(self, owner: TurnTakingDetector, port: Port) -> None:
        self.owner = owner
        self.port = port
        self.offload: Offload = owner.offload or _default_offload
        self.vad = _VADSession(owner.vad, cast(Port, _Tap(port, self))) if owner.vad is not None else None
        self.stream: AnalyzerSession | None = None
        self.speaking = False
        self.in_turn = False
        self.pause = 0  # which pause a verdict belongs to; bumped when speech resumes
        self.inflight = False
        self.reask = False
        self.asked_at = 0.0
        self.closed = False
        owner.events.set_clock(port.time)

    # -- frames ----------------------------------------------------------------------

    def on_frame(self, frame: Frame, direction: Direction) -> None:
        vad = self.vad
        if vad is not None:
            vad.on_frame(frame, direction)  # forwards the frame, then its VAD decisions
        else:
            self.port.push(frame, direction)
            if direction is DOWN and type(frame) in (VADUserStartedSpeakingFrame, VADUserStoppedSpeakingFrame):
                self.on_vad(frame)
        if direction is not DOWN:
            return
        if isinstance(frame, InputAudioRawFrame):
            self.audio(frame)
        elif type(frame) is StartFrame:
            params = getattr(self.owner.analyzer, "params", None)
            control = SpeechControlParamsFrame(turn_params=params)
            self.port.push(control, DOWN)
            self.port.push(control, UP)
        elif type(frame) is EndFrame or type(frame) is CancelFrame:
            self.closed = True

    def on_input_end(self, direction: Direction) -> None:
        if self.vad is not None:
            self.vad.on_input_end(direction)

    def close(self) -> None:
        self.closed = True
        if self.vad is not None:
            self.vad.close()
        if self.stream is not None:
            self.stream.close()

    # -- audio and VAD -------------------------------------------------------------------

    def audio(self, frame: InputAudioRawFrame) -> None:
        pcm = frame.audio
        if frame.num_channels > 1:
            samples = np.frombuffer(pcm, dtype="<i2").reshape(-1, frame.num_channels)
            pcm = np.round(samples.mean(axis=1)).astype("<i2").tobytes()
        stream = self.stream
        try:
            if stream is None:
                stream = self.stream = AnalyzerSession(self.owner.analyzer, frame.sample_rate)
            ended = stream.append(pcm, frame.sample_rate, self.speaking)
        except Exception as exc:
            self.port.report_error(exc, frame)
            return
        if ended:
            self.end_turn("silence")

    def on_vad(self, frame: Frame) -> None:
        if type(frame) is VADUserStartedSpeakingFrame:
            self.speaking = True
            self.pause += 1
            if self.stream is not None:
                self.stream.update_vad_start_secs(float(getattr(frame, "start_secs", 0.0)))
            if not self.in_turn:
                self.in_turn = True
                started = UserStartedSpeakingFrame()
                self.port.push(started, DOWN)
                self.port.push(started, UP)
                if self.owner.enable_interruptions:
                    interruption = InterruptionFrame()
                    self.port.push(interruption, DOWN)
                    self.port.push(interruption, UP)
                self.owner.events.emit("on_user_turn_started")
        else:
            self.speaking = False
            if self.in_turn:
                self.ask()

    # -- verdicts ------------------------------------------------------------------------

    def ask(self) -> None:
        stream = self.stream
        if stream is None or self.closed:
            return
        if self.inflight:
            self.reask = True
            return
        self.inflight, self.reask = True, False
        self.asked_at = self.port.time()
        pause = self.pause
        stream.begin()
        try:
            future = self.offload(stream.analyze)
        except Exception as exc:
            stream.end()
            self.inflight = False
            self.port.report_error(exc)
            return
        gate = self.port.session

        def done(f: concurrent.futures.Future[Any]) -> None:
            if f.cancelled():
                value: Any = concurrent.futures.CancelledError()
            else:
                exc = f.exception()
                value = exc if exc is not None else f.result()
            gate.run(lambda v: self.port.inject_call(lambda: self.on_verdict(pause, v)), value)

        future.add_done_callback(done)

    def on_verdict(self, pause: int, value: Any) -> None:
        stream = self.stream
        self.inflight = False
        fallback = stream.end() if stream is not None else False
        if self.closed:
            return
        if isinstance(value, BaseException):
            log.warning("the end-of-turn model failed (%s); taken as incomplete", value)
            complete, probability = False, None
        else:
            complete, probability = bool(value[0]), value[1]
        if probability is not None:
            data = TurnMetricsData("TurnTakingDetector", complete, float(probability),
                                   (self.port.time() - self.asked_at) * 1000.0)
            self.port.push(MetricsFrame((data,)), DOWN)
            self.owner.events.emit("on_end_of_turn_verdict", data)
        if fallback:
            self.end_turn("silence")
            return
        if self.reask and not self.speaking and self.in_turn:
            self.ask()
            return
        if complete and pause == self.pause and not self.speaking and self.in_turn:
            self.end_turn("model")

    def end_turn(self, why: str) -> None:
        if not self.in_turn:
            return
        self.in_turn = False
        self.pause += 1  # a verdict still in flight belongs to the ended turn
        if self.stream is not None:
            self.stream.clear()
        stopped = UserStoppedSpeakingFrame()
        self.port.push(stopped, DOWN)
        self.port.push(stopped, UP)
        self.owner.events.emit("on_user_turn_stopped", why)
