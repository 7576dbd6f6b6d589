"""Turn analysis of a recording: the real VAD operator and turn strategies on one timeline.

The recording is played as 20 ms ``InputAudioRawFrame``\\ s, each stamped when
its last sample has arrived (as a live transport delivers it), through::

    VADProcessor → STT → pair.user() [→ ScriptedLLM → pair.assistant()]

The STT is the transcript replayed ``stt_delay`` seconds after each segment
ends (:func:`rxvoice.testing.replay_transcript`). Without a transcript one is
made from a first pass of the same VAD over the same chunks (so its segments
are exactly the operator's): each stretch of speech, from the VAD start minus
``start_secs`` to the VAD stop minus ``stop_secs``, with pauses shorter than
``stt_delay`` joined (a streaming STT finalizes at its own endpoint, not
inside a short pause), becomes a finalized ``"<speech N>"`` placeholder
``stt_delay`` seconds after it ends. Stop strategies wait for the words of
the speech that just ended, so they need these. Smart Turn runs the real
model; in virtual time (the default) each verdict takes ``model_latency``
virtual seconds, so a run is fast and gives the same result every time. With
``realtime=True`` it runs on an asyncio loop against the wall clock and the
model's real latency.

What happens is reported as :data:`Observation` values (in time order, to a
callback as it happens and in :attr:`Analysis.observations`). Each turn end
says which strategy decided it, why, and how long after the end of speech:
measured from the transcript segment's end when there is a transcript, else
from the VAD stop minus its ``stop_secs``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import reactivex
from reactivex import Observable, abc
from reactivex.disposable import CompositeDisposable
from reactivex.testing import TestScheduler

from .. import frames as F
from ..aggregators import Pair
from ..aggregators.reports import AssistantTurnStopped, UserTurnStopped
from ..audio.recommended import STOP_PARAMETERS, VAD_PARAMETERS, recommended_turn_setup
from ..audio.turn import SmartTurnAnalyzer
from ..audio.vad import (
    SileroVADAnalyzer,
    VADAnalyzer,
    VADParams,
    VADState,
    WebRTCVADAnalyzer,
)
from ..audio.vad.analyzer import WindowAnalysis
from ..audio.vad_processor import VADProcessor
from ..context import LLMContext
from ..errors import ConfigurationError
from ..frames import DOWN, Direction, Frame
from ..pipeline import pipeline
from ..pipeline.bridges import loop_scheduler
from ..pipeline.processor import Port, Processor
from ..pipeline.session import Session
from ..pipeline.stage import Stage
from ..testing import ScriptedLLM, Segment, Transcript, replay_transcript
from ..testing.llm import Script
from ..turns import FusedTurnStop, SchedulerOffload, SpeechTimeoutStop, TurnAnalyzerStop, TurnsConfig
from ..turns.strategy import StopStrategy
from ._common import CLIError, signed
from .wav import RATE, Recording

__all__ = [
    "STOP_CHOICES",
    "VAD_CHOICES",
    "Analysis",
    "BotReply",
    "Observation",
    "Recovered",
    "Score",
    "Setup",
    "SpeechStarted",
    "SpeechStopped",
    "Turn",
    "TurnStarted",
    "Verdict",
    "Words",
    "analyze",
    "check_transcript",
]

STOP_CHOICES = ("smart-turn", "speech-timeout", "smart-turn-only")
VAD_CHOICES = ("silero", "webrtc")
CHUNK = 320  # 20 ms at 16 kHz
_EPS = 0.0015  # times are compared at millisecond precision


@dataclass(frozen=True)
class Setup:
    """How a recording is analyzed.

    Attributes:
        vad: ``"silero"`` or ``"webrtc"``.
        stop: ``"smart-turn"`` (the recommended setup:
            :func:`~rxvoice.audio.recommended.recommended_turn_setup`, a
            :class:`~rxvoice.turns.FusedTurnStop` over Smart Turn),
            ``"smart-turn-only"`` (:class:`~rxvoice.turns.TurnAnalyzerStop`:
            the model's verdicts alone, with the same VAD) or
            ``"speech-timeout"`` (:class:`~rxvoice.turns.SpeechTimeoutStop`).
        model: the Smart Turn model file (needed for ``"smart-turn"``).
        stt_delay: the STT's latency after the end of speech.
        model_latency: virtual seconds each Smart Turn verdict takes.
        speech_timeout: ``SpeechTimeoutStop.user_speech_timeout``.
        tail: seconds of silence played after the recording, so its last turn can end.
        realtime: pace the run with the wall clock on asyncio (Smart Turn at its real speed;
            ``model_latency`` is then not used).
        overrides: ``(name, value)`` pairs: VAD parameters (``stop_secs``, ``min_volume``, ...)
            and stop-strategy parameters (``patience``, ...) to use instead of the defaults.
    """

    vad: str = "silero"
    stop: str = "smart-turn"
    model: Path | None = None
    stt_delay: float = 0.3
    model_latency: float = 0.05
    speech_timeout: float = 0.6
    tail: float = 4.0
    realtime: bool = False
    overrides: tuple[tuple[str, float], ...] = ()

    def __post_init__(self) -> None:
        for name, _ in self.overrides:
            if name not in VAD_PARAMETERS and name not in self.strategy_parameters():
                known = ", ".join(sorted(VAD_PARAMETERS | self.strategy_parameters()))
                raise CLIError(f"--stop {self.stop} has no parameter {name!r} (it has {known})")

    def strategy_parameters(self) -> frozenset[str]:
        """The stop-strategy parameters :attr:`overrides` may set."""
        if self.stop == "smart-turn":
            return STOP_PARAMETERS
        if self.stop == "smart-turn-only":
            return frozenset({"transcript_timeout"})
        return frozenset({"user_speech_timeout"})

    def _vad_overrides(self) -> dict[str, Any]:
        return {k: v for k, v in self.overrides if k in VAD_PARAMETERS}

    def _stop_overrides(self) -> dict[str, Any]:
        return {k: v for k, v in self.overrides if k not in VAD_PARAMETERS}

    @property
    def vad_params(self) -> VADParams:
        """The recommended setup's VAD for Smart Turn setups (see ``recommended_turn_setup``), else the defaults."""
        try:
            if self.stop in ("smart-turn", "smart-turn-only"):
                return recommended_turn_setup(smart_turn=False, **self._vad_overrides()).vad_params
            return VADParams(**self._vad_overrides())
        except ConfigurationError as exc:
            raise CLIError(str(exc)) from None

    def describe(self) -> dict[str, Any]:
        """The settings, for JSON."""
        return {
            "vad": self.vad,
            "vad_stop_secs": self.vad_params.stop_secs,
            "stop": self.stop,
            "smart_turn_model": str(self.model) if self.model else None,
            "model_latency": self.model_latency if self.stop == "smart-turn" and not self.realtime else None,
            "speech_timeout": self.speech_timeout if self.stop == "speech-timeout" else None,
            "stt_delay": self.stt_delay,
            "tail": self.tail,
            "realtime": self.realtime,
        }


# -- what happens ------------------------------------------------------------------------------


@dataclass(frozen=True)
class SpeechStarted:
    """The VAD heard speech (decided at ``time``; it began ``start_secs`` before)."""

    time: float
    speech_start: float


@dataclass(frozen=True)
class SpeechStopped:
    """The VAD heard silence (decided at ``time``; speech ended at ``speech_end``)."""

    time: float
    speech_end: float


@dataclass(frozen=True)
class Words:
    """A finalized transcript reached the user aggregator."""

    time: float
    text: str


@dataclass(frozen=True)
class Verdict:
    """A Smart Turn verdict."""

    time: float
    complete: bool
    probability: float


@dataclass(frozen=True)
class TurnStarted:
    """A user turn began."""

    time: float
    index: int


@dataclass(frozen=True)
class Turn:
    """A user turn that ended.

    Attributes:
        index: 1, 2, ...
        started: when it began.
        ended: when it ended (the answer could start).
        strategy: the deciding stop strategy's name (None: watchdog or recording end).
        cause: ``model`` (a complete Smart Turn verdict), ``fallback`` (Smart Turn's
            3 s of silence), ``silence`` (the speech timeout), ``no-vad`` (words
            without VAD speech), ``watchdog``, ``end`` (the recording ended first);
            with the recommended :class:`~rxvoice.turns.FusedTurnStop` also
            ``words`` (finished words, the model said incomplete), ``unsure``
            (neither decided: the bounded fallback), ``unfinished`` and
            ``sequence`` (unfinished words, or a number being read: the bounded wait).
        reason: why, in words.
        speech_end: when the speech before it ended (None: unknown).
        latency: ``ended - speech_end``.
        text: the turn's words.
        probability: the Smart Turn probability behind the decision, if any.
        premature: with a transcript, whether it cut the speaker off mid-sentence.
    """

    index: int
    started: float
    ended: float
    strategy: str | None
    cause: str
    reason: str
    speech_end: float | None
    latency: float | None
    text: str
    probability: float | None = None
    premature: bool | None = None


@dataclass(frozen=True)
class Recovered:
    """The user aggregator undid a false end of turn (its ``on_user_turn_recovered`` event)."""

    time: float


@dataclass(frozen=True)
class BotReply:
    """The scripted model's answer was written to the conversation."""

    time: float
    text: str


Observation = SpeechStarted | SpeechStopped | Words | Verdict | TurnStarted | Turn | BotReply | Recovered


@dataclass(frozen=True)
class Score:
    """Detected turn ends against a transcript's ``turn_end`` labels."""

    turn_ends: int
    found: int
    premature: int
    missed: int
    missed_at: tuple[float, ...]
    latencies: tuple[float, ...]


@dataclass
class Analysis:
    """What a run produced."""

    recording: Recording
    setup: Setup
    transcript: Transcript | None
    observations: list[Observation] = field(default_factory=list)
    windows: list[WindowAnalysis] = field(default_factory=list)
    context: LLMContext | None = None
    stt: Transcript | None = None
    """What the STT said and when: the transcript, or the placeholders made from the VAD."""

    def of(self, kind: type[Any]) -> list[Any]:
        """The observations of one kind, in order."""
        return [o for o in self.observations if isinstance(o, kind)]

    @property
    def turns(self) -> list[Turn]:
        """The user turns, in order."""
        return self.of(Turn)

    @property
    def verdicts(self) -> list[Verdict]:
        """The Smart Turn verdicts, in order."""
        return self.of(Verdict)

    @property
    def speech(self) -> list[tuple[float, float | None]]:
        """``(start, end)`` of each VAD speech segment (end None if still speaking at the end)."""
        out: list[tuple[float, float | None]] = []
        for o in self.observations:
            if isinstance(o, SpeechStarted):
                out.append((o.speech_start, None))
            elif isinstance(o, SpeechStopped) and out and out[-1][1] is None:
                out[-1] = (out[-1][0], o.speech_end)
        return out

    @property
    def score(self) -> Score | None:
        """Premature cut-offs and missed ends against the transcript's labels (None without one)."""
        if self.transcript is None:
            return None
        return score(self.transcript, self.turns)


def score(transcript: Transcript, turns: Sequence[Turn]) -> Score:
    """Count found, premature and missed turn ends.

    A labeled end (``turn_end: true``) is found when a turn ended, by a
    strategy or the watchdog, after that segment and before the next one
    starts; a turn that ends after a segment labeled ``false`` (or during a
    segment) cut the speaker off.
    """
    segments = transcript.segments
    decided = [t for t in turns if t.cause != "end"]
    found: list[float] = []
    missed: list[float] = []
    for i, seg in enumerate(segments):
        if not seg.turn_end:
            continue
        until = segments[i + 1].start if i + 1 < len(segments) else float("inf")
        hits = [t for t in decided if seg.end - _EPS <= t.ended < until]
        if hits:
            found.append(hits[0].ended - seg.end)
        else:
            missed.append(seg.end)
    premature = sum(1 for t in turns if t.premature)
    return Score(
        sum(1 for s in segments if s.turn_end), len(found), premature, len(missed), tuple(missed), tuple(found)
    )


def check_transcript(transcript: Transcript, recording: Recording, name: str) -> None:
    """Refuse a transcript that cannot be about this recording.

    Raises:
        CLIError: a segment ends after the recording (beyond 0.5 s), or the
            transcript's ``duration`` differs from the recording's by more than 0.5 s.
    """
    duration = recording.duration
    if transcript.duration is not None:
        try:
            stated = float(transcript.duration)
        except (TypeError, ValueError):
            raise CLIError(f"{name}: duration must be seconds, got {transcript.duration!r}") from None
        if abs(stated - duration) > 0.5:
            raise CLIError(
                f"{name} does not match {recording.path.name}: it says {stated:.2f} s, "
                f"the recording is {duration:.2f} s"
            )
    for i, seg in enumerate(transcript.segments, 1):
        if seg.end > duration + 0.5:
            raise CLIError(
                f"{name} does not match {recording.path.name}: segment {i} ({seg.text[:30]!r}) ends at "
                f"{seg.end:.2f} s, the recording is {duration:.2f} s"
            )


# -- plumbing -------------------------------------------------------------------------------------


class _Tap(Processor):
    """Forwards everything; hands downstream frames of some types to a callback first."""

    name = "Tap"

    def __init__(self, kinds: tuple[type[Frame], ...], fn: Callable[[Frame], None]) -> None:
        self.kinds = kinds
        self.fn = fn

    def open(self, port: Port) -> _TapSession:
        return _TapSession(self, port)


class _TapSession:
    def __init__(self, owner: _Tap, port: Port) -> None:
        self.owner = owner
        self.port = port

    def on_frame(self, frame: Frame, direction: Direction) -> None:
        if direction is DOWN and isinstance(frame, self.owner.kinds):
            self.owner.fn(frame)
        self.port.push(frame, direction)

    def on_input_end(self, direction: Direction) -> None:
        return None

    def close(self) -> None:
        return None


def _timeline(items: Sequence[tuple[float, Frame]], on_subscribe: Callable[[], None]) -> Observable[Frame]:
    """Frames emitted ``seconds`` after subscription, on the subscriber's scheduler."""

    def subscribe(observer: abc.ObserverBase[Frame], scheduler: abc.SchedulerBase | None = None) -> abc.DisposableBase:
        assert scheduler is not None, "a scheduler is always given at subscription"
        on_subscribe()
        disposables = CompositeDisposable()
        for seconds, frame in items:
            def emit(_s: abc.SchedulerBase, _st: Any = None, f: Frame = frame) -> None:
                observer.on_next(f)

            disposables.add(scheduler.schedule_relative(seconds, emit))
        return disposables

    return Observable(subscribe)


def _chunks(samples: np.ndarray[Any, Any], tail: float) -> list[bytes]:
    """The recording plus ``tail`` seconds of silence, in 20 ms chunks."""
    padded = np.concatenate((samples, np.zeros(round(tail * RATE), dtype=np.int16)))
    padded = np.concatenate((padded, np.zeros((-len(padded)) % CHUNK, dtype=np.int16)))
    return [padded[i:i + CHUNK].tobytes() for i in range(0, len(padded), CHUNK)]


def _audio(chunks: Sequence[bytes]) -> tuple[list[tuple[float, Frame]], float]:
    """StartFrame, the chunks stamped when their last sample arrives, EndFrame; and the end time."""
    out: list[tuple[float, Frame]] = [(0.0, F.StartFrame(audio_in_sample_rate=RATE))]
    for i, chunk in enumerate(chunks):
        out.append(((i + 1) * CHUNK / RATE, F.InputAudioRawFrame(chunk, RATE)))
    end = (len(chunks) + 1) * CHUNK / RATE
    out.append((end, F.EndFrame()))
    return out, end


def _vad_factory(setup: Setup) -> Callable[[], VADAnalyzer]:
    params = setup.vad_params
    if setup.vad == "webrtc":
        return lambda: WebRTCVADAnalyzer(RATE, params=params)
    return lambda: SileroVADAnalyzer(RATE, params=params)


def first_pass(
    chunks: Sequence[bytes], setup: Setup
) -> tuple[list[WindowAnalysis], list[tuple[float, float]]]:
    """Every window's confidence, and the ``(start, end)`` of each stretch of speech, as the operator will see them.

    The same analyzer on the same chunks gives the same states; a start counts
    from the VAD start minus ``start_secs``, an end from the VAD stop minus
    ``stop_secs`` (the chunk times are those of :func:`_audio`).
    """
    analyzer = _vad_factory(setup)()
    params = analyzer.params
    windows: list[WindowAnalysis] = []
    spans: list[tuple[float, float]] = []
    speaking = False
    start = 0.0
    for i, chunk in enumerate(chunks):
        windows.extend(analyzer.analyze_windows(chunk))
        state = analyzer.state
        now = (i + 1) * CHUNK / RATE
        if not speaking and state is VADState.SPEAKING:
            speaking, start = True, max(0.0, now - params.start_secs)
        elif speaking and state is VADState.QUIET:
            speaking = False
            spans.append((start, max(start, now - params.stop_secs)))
    if speaking:
        spans.append((start, len(chunks) * CHUNK / RATE))
    analyzer.close()
    return windows, spans


def placeholder_transcript(spans: Sequence[tuple[float, float]], endpoint: float) -> Transcript:
    """``<speech N>`` segments: the VAD's stretches of speech, pauses shorter than ``endpoint`` joined."""
    joined: list[list[float]] = []
    for start, end in spans:
        if joined and start - joined[-1][1] < endpoint:
            joined[-1][1] = end
        else:
            joined.append([start, end])
    segments = tuple(
        Segment(f"<speech {i}>", round(a, 6), round(b, 6), True) for i, (a, b) in enumerate(joined, 1)
    )
    return Transcript(segments)


def _stop_strategy(setup: Setup) -> StopStrategy[Any]:
    """The setup's stop strategy: for ``smart-turn``, the recommended one (``recommended_turn_setup``)."""
    try:
        if setup.stop in ("smart-turn", "smart-turn-only"):
            if setup.model is None:
                raise CLIError(f"--stop {setup.stop} needs the Smart Turn model (see `rxvoice model where`)")
            if setup.stop == "smart-turn":
                overrides: dict[str, Any] = dict(setup.overrides)
                return recommended_turn_setup(setup.model, **overrides).stop
            return TurnAnalyzerStop(SmartTurnAnalyzer(setup.model), **setup._stop_overrides())
        timeout: dict[str, Any] = {"user_speech_timeout": setup.speech_timeout, **setup._stop_overrides()}
        return SpeechTimeoutStop(**timeout)
    except ConfigurationError as exc:
        raise CLIError(str(exc)) from None


# -- the run --------------------------------------------------------------------------------------


class _Collector:
    """Turns frames and events into observations, with the decision's reason and latency."""

    def __init__(
        self, setup: Setup, stt: Transcript, labeled: bool, clock: Callable[[], float],
        on_observation: Callable[[Observation], None] | None,
        defer: Callable[[Callable[[], None]], None] | None = None,
    ) -> None:
        self.setup = setup
        self.stt = stt
        self.labeled = labeled
        self.clock = clock
        self.t0 = clock()
        self.sink = on_observation
        self.observations: list[Observation] = []
        self.turn_start: float | None = None
        self.turn_index = 0
        self.watchdog = False
        self.defer = defer if defer is not None else (lambda fn: fn())
        self.pending: list[Callable[[], None]] = []

    def restart(self) -> None:
        """Count time from now (the audio starts)."""
        self.t0 = self.clock()

    def now(self) -> float:
        return round(self.clock() - self.t0, 6)

    def add(self, o: Observation) -> None:
        if not isinstance(o, Verdict):
            self.flush()  # a turn explained before anything that happened after it
        self.observations.append(o)
        if self.sink is not None:
            self.sink(o)
        if isinstance(o, Verdict):
            self.flush()

    def flush(self) -> None:
        """Explain the turns that ended (waiting for a verdict delivered in the same instant)."""
        pending, self.pending = self.pending, []
        for explain in pending:
            explain()

    # -- inputs --------------------------------------------------------------------

    def frame(self, frame: Frame) -> None:
        t = self.now()
        if isinstance(frame, F.VADUserStartedSpeakingFrame):
            self.add(SpeechStarted(t, max(0.0, t - frame.start_secs)))
        elif isinstance(frame, F.VADUserStoppedSpeakingFrame):
            self.add(SpeechStopped(t, max(0.0, t - frame.stop_secs)))
        elif isinstance(frame, F.TranscriptionFrame):
            self.add(Words(t, frame.text))
        elif isinstance(frame, F.MetricsFrame):
            for d in frame.data:
                if isinstance(d, F.TurnMetricsData):
                    self.add(Verdict(t, d.is_complete, float(d.probability)))

    def turn_started(self, _agg: object, _strategy: object = None) -> None:
        self.turn_index += 1
        self.turn_start = self.now()
        self.watchdog = False
        self.add(TurnStarted(self.turn_start, self.turn_index))

    def stop_timeout(self, _agg: object, _payload: object = None) -> None:
        self.watchdog = True

    def recovered(self, _agg: object, _payload: object = None) -> None:
        self.add(Recovered(self.now()))

    def bot(self, _agg: object, turn: AssistantTurnStopped) -> None:
        if turn.content.strip():
            self.add(BotReply(self.now(), turn.content))

    def turn_stopped(self, _agg: object, stopped: UserTurnStopped) -> None:
        t = self.now()
        started = self.turn_start if self.turn_start is not None else t
        index, watchdog = self.turn_index, self.watchdog
        self.turn_start = None
        # Explained once this instant is over (or at the next observation): a verdict that decided the
        # turn may be delivered just after the event.
        self.pending.append(lambda: self._explain(t, started, index, watchdog, stopped))
        self.defer(self.flush)

    def _explain(self, t: float, started: float, index: int, watchdog: bool, stopped: UserTurnStopped) -> None:
        strategy = stopped.strategy.name if stopped.strategy is not None else None
        speech_end, premature = self._speech_end(t)
        verdict = self._deciding_verdict()
        if isinstance(stopped.strategy, FusedTurnStop):
            cause, reason = self._fused_reason(t, stopped.strategy, stopped.content, verdict)
        else:
            self.watchdog = watchdog
            cause, reason = self._reason(t, strategy, verdict, speech_end)
        latency = None if speech_end is None else round(t - speech_end, 6)
        with_model = strategy in ("TurnAnalyzerStop", "FusedTurnStop")
        probability = verdict.probability if verdict is not None and with_model else None
        self.add(Turn(index, started, t, strategy, cause, reason, speech_end, latency,
                      stopped.content, probability, premature))

    # -- explaining a decision --------------------------------------------------------

    def _speech_end(self, t: float) -> tuple[float | None, bool | None]:
        """When the speech before ``t`` ended, and (with a labeled transcript) whether the turn cut it off."""
        before = [s for s in self.stt.segments if s.start < t]
        if not before:
            return None, False if self.labeled else None
        seg = before[-1]
        if not self.labeled:
            return seg.end, None
        return seg.end, (t < seg.end - _EPS) or not seg.turn_end

    def _deciding_verdict(self) -> Verdict | None:
        """The last verdict since the last VAD stop."""
        verdict: Verdict | None = None
        for o in self.observations:
            if isinstance(o, SpeechStopped | SpeechStarted):
                verdict = None
            elif isinstance(o, Verdict):
                verdict = o
        return verdict

    def _words_arrived_at(self, t: float) -> bool:
        return any(isinstance(o, Words) and abs(o.time - t) < _EPS for o in self.observations)

    def _fused_reason(
        self, t: float, strategy: FusedTurnStop, text: str, verdict: Verdict | None
    ) -> tuple[str, str]:
        """``(cause, reason)`` of a :class:`FusedTurnStop` decision, by the strategy's own model."""
        waited = ", then waited for the words" if self._words_arrived_at(t) else ""
        stop = self._last(SpeechStopped)
        start = self._last(TurnStarted)
        if stop is None or (start is not None and stop.time < start.time - _EPS):
            return "no-vad", f"{strategy.transcript_timeout:g} s after the words (no VAD pause to judge)"
        fresh = any(isinstance(o, Words) and o.time >= stop.speech_end - _EPS for o in self.observations)
        evidence = strategy.evidence(text, None if verdict is None else verdict.probability,
                                     longest_pause=self._longest_pause(), fresh=fresh)
        cause, reason = strategy.explain(evidence)
        return cause, reason + waited

    def _longest_pause(self) -> float:
        """The longest pause the speaker came back from since the last turn that was not reopened."""
        longest, last_end = 0.0, None
        reopened = {round(o.time, 3) for o in self.observations if isinstance(o, Recovered)}
        for o in self.observations:
            if isinstance(o, TurnStarted) and round(o.time, 3) not in reopened:
                longest, last_end = 0.0, None
            elif isinstance(o, SpeechStopped):
                last_end = o.speech_end
            elif isinstance(o, SpeechStarted) and last_end is not None:
                longest = max(longest, o.speech_start - last_end)
        return longest

    def _last(self, kind: type[Any]) -> Any:
        for o in reversed(self.observations):
            if isinstance(o, kind):
                return o
        return None

    def _reason(
        self, t: float, strategy: str | None, verdict: Verdict | None, speech_end: float | None
    ) -> tuple[str, str]:
        """``(cause, reason in words)`` of a turn end."""
        waited = ", then waited for the words" if self._words_arrived_at(t) else ""
        if strategy is None:
            if self.watchdog:
                return "watchdog", "the stop watchdog (5 s without activity)"
            return "end", "the recording ended with the turn open"
        if strategy == "TurnAnalyzerStop":
            if verdict is not None and verdict.complete:
                at = "" if speech_end is None else f" at {signed(verdict.time - speech_end)}"
                return "model", f"Smart Turn: complete (p={verdict.probability:.2f}){at}{waited}"
            if speech_end is not None and t - speech_end >= 2.5:
                return "fallback", "3 s of silence (Smart Turn's fallback)"
            return "no-vad", "0.5 s after the words (no VAD pause to judge)"
        if strategy == "SpeechTimeoutStop":
            quiet = self.setup.vad_params.stop_secs + self.setup.speech_timeout
            return "silence", f"{quiet:.1f} s of silence{waited}"
        return "other", strategy


def analyze(
    recording: Recording,
    setup: Setup,
    *,
    transcript: Transcript | None = None,
    answer: Script | None = None,
    context: LLMContext | None = None,
    on_observation: Callable[[Observation], None] | None = None,
    windows: bool = True,
    words: Transcript | None = None,
) -> Analysis:
    """Run a recording through the VAD operator and the turn strategies (and, with ``answer``, a scripted model).

    Args:
        recording: 16 kHz mono audio (:func:`~rxvoice.cli.wav.read_wav`).
        setup: VAD, stop strategy, latencies.
        transcript: replayed as the STT, its ``turn_end`` labels scored; without
            one, placeholders are made from the VAD (see the module docs).
        answer: a :class:`~rxvoice.testing.ScriptedLLM` script: adds the model and the assistant side.
        context: the conversation (a fresh one by default).
        on_observation: called with each observation as it happens.
        windows: keep every VAD window's confidence (for a plot); ``False``
            skips that first VAD pass when a transcript is given.
        words: what a speech recognizer heard (replayed as the STT when there is no
            ``transcript``; not labels, so nothing is scored against it).
    """
    chunks = _chunks(recording.samples, setup.tail)
    confidences: list[WindowAnalysis] = []
    spans: list[tuple[float, float]] = []
    if windows or (transcript is None and words is None):
        confidences, spans = first_pass(chunks, setup)
    stt = transcript if transcript is not None else words or placeholder_transcript(spans, setup.stt_delay)
    context = context if context is not None else LLMContext()
    pair = Pair(context, turns=TurnsConfig(stop=[_stop_strategy(setup)]))
    items, end = _audio(chunks)
    subscriptions = CompositeDisposable()

    def run(scheduler: abc.SchedulerBase) -> _Collector:
        def defer(fn: Callable[[], None]) -> None:
            def action(_s: abc.SchedulerBase, _st: Any = None) -> None:
                fn()

            scheduler.schedule_relative(0.0, action)

        collector = _Collector(
            setup, stt, transcript is not None, Session(scheduler).clock, on_observation, defer
        )
        kinds = (F.VADUserStartedSpeakingFrame, F.VADUserStoppedSpeakingFrame, F.TranscriptionFrame)
        stages: list[Stage] = [
            VADProcessor(_vad_factory(setup)), _Tap(kinds, collector.frame), pair.user(),
            _Tap((F.MetricsFrame,), collector.frame),
        ]
        if answer is not None:
            stages.extend([ScriptedLLM(answer), pair.assistant()])
            pair.assistant().events.on("on_assistant_turn_stopped", collector.bot)
        user = pair.user()
        user.events.on("on_user_turn_started", collector.turn_started)
        user.events.on("on_user_turn_stopped", collector.turn_stopped)
        user.events.on("on_user_turn_stop_timeout", collector.stop_timeout)
        if "on_user_turn_recovered" in user.events.names:  # the one place recoveries are counted
            user.events.on("on_user_turn_recovered", collector.recovered)
        if not setup.realtime:
            user.offload = SchedulerOffload(scheduler, setup.model_latency)
        # The transcript is subscribed right after the audio: time 0 is the audio's start.
        down = reactivex.merge(_timeline(items, collector.restart), replay_transcript(stt, delay=setup.stt_delay))
        out_down, out_up = pipeline(*stages).duplex(down, reactivex.never())
        subscriptions.add(out_up.subscribe(lambda _f: None, lambda _e: None, scheduler=scheduler))
        subscriptions.add(out_down.subscribe(lambda _f: None, lambda _e: None, scheduler=scheduler))
        return collector

    try:
        if setup.realtime:
            collector = asyncio.run(_realtime(run, end + 0.1))
        else:
            test = TestScheduler()
            collector = run(test)
            test.advance_to(end + 0.1)
        collector.flush()
    finally:
        subscriptions.dispose()
    return Analysis(recording, setup, transcript, collector.observations, confidences, context, stt)


async def _realtime(run: Callable[[abc.SchedulerBase], _Collector], seconds: float) -> _Collector:
    """Run on this loop's scheduler for ``seconds`` of wall-clock time."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()
    collector = run(loop_scheduler(loop))

    def finish() -> None:
        if not done.done():
            done.set_result(None)

    loop.call_later(seconds, finish)
    await done
    return collector
