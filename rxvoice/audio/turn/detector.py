"""The turn-taking detector: VAD plus Smart Turn right after the input, as one stage.

Put it first, before speech-to-text, and let the user aggregator adopt what
it decides::

    detector = TurnTakingDetector(SmartTurnAnalyzer())
    pair = Pair(context, turns=TurnsConfig(strategies=ExternalStrategies()))
    pipeline(detector, stt, pair.user(), llm, tts, output, pair.assistant())

It is the turn machine (:mod:`rxvoice.turns.machine`) with two strategies,
:class:`~rxvoice.turns.VADStart` and :class:`~rxvoice.turns.TurnAnalyzerStop`
(which, before the STT, has no words to wait for), fed by a VAD. Every frame
goes on untouched. The detector runs a VAD on the audio (the
:class:`~rxvoice.audio.vad_processor.VADProcessor`'s own session, so its
frames and heartbeats go out as that operator sends them; or, with
``use_upstream_vad=True``, the VAD frames of a VAD operator placed before
it) and the machine does the rest: when speech starts and no turn is open it
announces the turn (``UserStartedSpeakingFrame``, and an ``InterruptionFrame``
when interruptions are on); at every VAD stop the model is asked, off the
session, whether the user finished; a complete verdict (or Smart Turn's 3 s
silence fallback) ends the turn with a ``UserStoppedSpeakingFrame``. All of
these go both ways. The aggregator's ``ExternalStop`` then still waits for
the transcript before it answers.

The model runs through ``offload`` (default: rxvoice's shared worker pool;
a :class:`~rxvoice.audio.turn.SmartTurnBatcher` to batch many sessions, a
:class:`~rxvoice.pipeline.SchedulerOffload` in virtual-time tests), and its
answer re-enters the session through its gate, so the stream never blocks.
"""

from __future__ import annotations

from typing import Any

from reactivex import abc

from ...errors import ConfigurationError
from ...events import NO_PAYLOAD, EventRegistry
from ...frames import (
    DOWN,
    CancelFrame,
    Direction,
    EndFrame,
    Frame,
    InputAudioRawFrame,
    MetricsFrame,
    StartFrame,
    TurnMetricsData,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from ...pipeline.offload import Offload
from ...pipeline.processor import EventfulProcessor, FrameHandler, Port
from ...pipeline.shell import TurnShell
from ...turns import TurnAnalyzerStop, TurnsConfig, VADStart
from ...turns.machine import TurnMachine
from ...turns.reports import EVENT_USER_TURN_STARTED, EVENT_USER_TURN_STOPPED
from ..vad_processor import VADProcessor
from .smart_turn import SmartTurnAnalyzer

__all__ = ["TURN_DETECTOR_EVENTS", "TurnTakingDetector"]

TURN_DETECTOR_EVENTS = (EVENT_USER_TURN_STARTED, EVENT_USER_TURN_STOPPED, "on_end_of_turn_verdict", "on_error")
"""The detector's events: a turn started, a turn ended (payload: ``"model"``, ``"silence"`` or ``"timeout"``),
each verdict (a :class:`~rxvoice.frames.TurnMetricsData`), and errors."""

_VAD_FRAMES = (VADUserStartedSpeakingFrame, VADUserStoppedSpeakingFrame)


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
        stop_timeout: With no VAD activity for this long (the audio stopped
            coming), an open turn is closed (reason ``"timeout"``).

    Events (``handler(detector, payload)``): see :data:`TURN_DETECTOR_EVENTS`.
    """

    name = "TurnTakingDetector"

    def __init__(
        self,
        analyzer: Any = None,
        *,
        vad: VADProcessor | None = None,
        use_upstream_vad: bool = False,
        enable_interruptions: bool = True,
        offload: Offload | None = None,
        scheduler: abc.SchedulerBase | None = None,
        stop_timeout: float = 5.0,
    ) -> None:
        if analyzer is not None and not callable(getattr(analyzer, "open_stream", None)):
            raise ConfigurationError(f"TurnTakingDetector needs an end-of-turn analyzer, got {analyzer!r}")
        if vad is not None and not isinstance(vad, VADProcessor):
            raise ConfigurationError(f"vad must be a VADProcessor, got {vad!r}")
        if vad is not None and use_upstream_vad:
            raise ConfigurationError("give vad= or use_upstream_vad=True, not both")
        if offload is not None and not callable(offload):
            raise ConfigurationError(f"offload must be callable, got {offload!r}")
        self.analyzer = analyzer if analyzer is not None else SmartTurnAnalyzer()
        self.vad = None if use_upstream_vad else (vad if vad is not None else VADProcessor())
        self.enable_interruptions = enable_interruptions
        self.offload = offload
        self.scheduler = scheduler
        self.events = EventRegistry(self, TURN_DETECTOR_EVENTS)
        self.machine = TurnMachine(TurnsConfig(
            start=[VADStart(enable_interruptions=enable_interruptions)],
            stop=[TurnAnalyzerStop(self.analyzer, wait_for_transcript=False)],
            stop_timeout=stop_timeout, empty_turn=None,
        ))

    def __repr__(self) -> str:
        return f"<{self.name}>"

    def open(self, port: Port) -> _DetectorSession:
        return _DetectorSession(self, port)


class _VADPort(Port):
    """The embedded VAD's own port onto the detector's link: its start and stop go to the machine first.

    The machine passes them on (downstream) before the turn decisions they
    cause; everything else the VAD sends goes out as it is.
    """

    def __init__(self, port: Port, detector: _DetectorSession) -> None:
        super().__init__(port.link, port.session)
        self.events = port.events
        self._detector = detector

    def push(self, frame: Frame, direction: Direction = DOWN) -> None:
        if direction is DOWN and type(frame) in _VAD_FRAMES:
            self._detector.on_vad(frame)
        else:
            super().push(frame, direction)


class _DetectorSession(TurnShell):
    """One stream's detector: its VAD, the turn machine, and the detector's own events."""

    def __init__(self, detector: TurnTakingDetector, port: Port) -> None:
        super().__init__(detector, port, detector.events, detector.machine, offload=detector.offload)
        self.detector = detector
        self.vad_port: _VADPort | None = None
        self.vad: FrameHandler | None = None
        if detector.vad is not None:
            self.vad_port = _VADPort(port, self)
            self.vad = detector.vad.open(self.vad_port)
        self._complete_verdict = False
        self.listens = self._listens

    # -- frames ------------------------------------------------------------------------------

    def on_frame(self, frame: Frame, direction: Direction) -> None:
        t = type(frame)
        vad = self.vad
        if direction is not DOWN:
            self.emit(frame, direction)
        elif vad is not None:
            vad.on_frame(frame, direction)  # passes the frame on, then its VAD decisions (to on_vad)
        elif t in _VAD_FRAMES:
            self.on_vad(frame)
            return
        else:
            self.emit(frame, direction)
        if direction is not DOWN:
            return
        if isinstance(frame, InputAudioRawFrame):
            self.now = now = self.clock()
            self.machine.sees(self.turn, frame, now)
        elif t is StartFrame:
            self.start_session(frame, direction, passed=True)
        elif t is EndFrame or t is CancelFrame:
            self.end_session(frame, direction, passed=True)

    def on_vad(self, frame: Frame) -> None:
        """A VAD start or stop: the machine passes it on and decides."""
        if type(frame) is VADUserStartedSpeakingFrame:
            self._complete_verdict = False  # a verdict from before this speech decides nothing now
        self.feed(frame, DOWN)

    def on_input_end(self, direction: Direction) -> None:
        # The detector reports what its VAD decides: at the input's end the VAD closes the speech in
        # progress, and the turn goes on as its stop strategy decides (the session's end is its end frame).
        if self.vad is not None:
            self.vad.on_input_end(direction)

    # -- what the machine does, in the detector's words -----------------------------------------

    def emit(self, frame: Frame, direction: Direction) -> None:
        if type(frame) is MetricsFrame:
            for data in frame.data:
                if isinstance(data, TurnMetricsData):
                    self._complete_verdict = data.is_complete
                    self.events.emit("on_end_of_turn_verdict", data)
        super().emit(frame, direction)

    def event(self, name: str, payload: Any = NO_PAYLOAD) -> None:
        if name == EVENT_USER_TURN_STARTED:
            super().event(name)
        elif name == EVENT_USER_TURN_STOPPED:
            strategy = getattr(payload, "strategy", None)
            reason = "timeout" if strategy is None else "model" if self._complete_verdict else "silence"
            super().event(name, reason)
        self._complete_verdict = False

    def _listens(self, name: str) -> bool:
        return name in (EVENT_USER_TURN_STARTED, EVENT_USER_TURN_STOPPED) and self.events.listened(name)

    def close(self) -> None:
        super().close()
        if self.vad is not None:
            self.vad.close()
        if self.vad_port is not None:
            self.vad_port.close()
