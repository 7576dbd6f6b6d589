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

With ``setup.first_token_delay`` set, a scripted model answers each turn
(:func:`rxvoice.cli.answers.scripted_answer`, or ``answer``) that many
seconds after it is asked, and a paced synthesizer speaks the answer
(``ScriptedLLM → PacedTextTTS → pair.assistant()``), so the bot's first
audio after each turn is observed; with ``setup.speculate`` the user
aggregator asks early (``TurnsConfig(speculate=True)``) and each speculative
request is observed too.

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
from typing import Any

import numpy as np
import reactivex
from reactivex import Observable, abc
from reactivex.disposable import CompositeDisposable
from reactivex.testing import TestScheduler

from .. import frames as F
from ..aggregators import Pair
from ..aggregators.reports import AssistantTurnStopped, UserTurnStopped
from ..audio.vad import (
    SileroVADAnalyzer,
    VADAnalyzer,
    VADState,
    WebRTCVADAnalyzer,
)
from ..audio.vad.analyzer import WindowAnalysis
from ..audio.vad_processor import VADProcessor
from ..context import LLMContext
from ..frames import DOWN, Direction, Frame
from ..pipeline import SchedulerOffload, pipeline
from ..pipeline.bridges import loop_scheduler
from ..pipeline.processor import Port, Processor
from ..pipeline.session import Session
from ..pipeline.stage import Stage
from ..services.tts import PacedTextTTS
from ..testing import ScriptedLLM, Segment, Transcript, replay_transcript
from ..testing.llm import Script
from ..turns import RECOVERY_WINDOW, TranscriptionStart, TurnsConfig, VADStart
from ..turns.backchannel import BackchannelStart
from ..turns.speculation import SpeculationReport
from .observations import (
    BotAudio,
    BotReply,
    Observation,
    Recovered,
    Speculated,
    SpeechStarted,
    SpeechStopped,
    Turn,
    TurnStarted,
    Verdict,
    Words,
)
from .score import Score, score
from .setups import Setup, stop_strategy
from .wav import RATE, Recording

__all__ = ["CHUNK", "Analysis", "analyze", "first_pass", "placeholder_transcript"]

CHUNK = 320  # 20 ms at 16 kHz
_EPS = 0.0015  # times are compared at millisecond precision


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
    model: ScriptedLLM | None = None
    """The scripted model, when the run had one (its runs, speculative runs and tool calls)."""

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
        self.reopens: int | None = None
        """The turn a recovery is reopening (set by the recovered event, taken by the next start)."""
        self.reopening: int | None = None
        """The turn the open turn reopened."""
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
        elif isinstance(frame, F.BotStartedSpeakingFrame):
            self.add(BotAudio(t))

    def speculated(self, _agg: object, report: SpeculationReport) -> None:
        self.add(Speculated(self.now(), report.outcome, report.tokens))

    def turn_started(self, _agg: object, _strategy: object = None) -> None:
        self.turn_index += 1
        self.turn_start = self.now()
        self.reopening = self.reopens
        self.reopens = None
        self.add(TurnStarted(self.turn_start, self.turn_index))

    def recovered(self, _agg: object, payload: object = None) -> None:
        # Raised as the turn that continues the last one starts (before its started event).
        after = getattr(payload, "after", None)
        self.reopens = self.turn_index
        self.add(Recovered(self.now(), None if after is None else round(float(after), 6), self.turn_index))

    def bot(self, _agg: object, turn: AssistantTurnStopped) -> None:
        if turn.content.strip():
            self.add(BotReply(self.now(), turn.content))

    def turn_stopped(self, _agg: object, stopped: UserTurnStopped) -> None:
        t = self.now()
        started = self.turn_start if self.turn_start is not None else t
        index, reopened = self.turn_index, self.reopening
        self.turn_start = None
        self.reopening = None
        # Observed once this instant is over (or at the next observation): the verdict that decided the
        # turn may be delivered just after the event, and it reads better before the turn it ended.
        self.pending.append(lambda: self._explain(t, started, index, stopped, reopened))
        self.defer(self.flush)

    def _explain(self, t: float, started: float, index: int, stopped: UserTurnStopped,
                 reopened: int | None = None) -> None:
        """The turn as an observation, with the reason its stop strategy (or the watchdog) gave."""
        strategy = stopped.strategy.name if stopped.strategy is not None else None
        speech_end, premature = self._speech_end(t)
        reason = stopped.reason
        if reason is None:  # a strategy that says nothing about why
            cause, text, probability = "other", strategy or "(no reason given)", None
        else:
            cause, text, probability = reason.kind, reason.text, reason.probability
        latency = None if speech_end is None else round(t - speech_end, 6)
        self.add(Turn(index, started, t, strategy, cause, text, speech_end, latency,
                      stopped.content, probability, premature, reopened))

    def _speech_end(self, t: float) -> tuple[float | None, bool | None]:
        """When the speech before ``t`` ended, and (with a labeled transcript) whether the turn cut it off."""
        before = [s for s in self.stt.segments if s.start < t]
        if not before:
            return None, False if self.labeled else None
        seg = before[-1]
        if not self.labeled:
            return seg.end, None
        return seg.end, (t < seg.end - _EPS) or not seg.turn_end


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
    start = (BackchannelStart(), VADStart(), TranscriptionStart()) if setup.backchannels else None
    speaks = setup.first_token_delay is not None
    window = RECOVERY_WINDOW
    if not speaks and setup.bot_audio_at is not None:  # the bot's first audio would close the window there
        window = min(window, max(0.0, setup.bot_audio_at))
    pair = Pair(context, turns=TurnsConfig(start=start, stop=[stop_strategy(setup)], speculate=setup.speculate,
                                           recovery_window=window))
    if speaks and answer is None:
        from .answers import scripted_answer

        answer = scripted_answer
    model: list[ScriptedLLM] = []
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
            llm = ScriptedLLM(answer, first_token_delay=setup.first_token_delay or 0.0)
            model.append(llm)
            stages.append(llm)
            if speaks:  # the bot's voice: its first audio after each turn is what the caller waits for
                stages.extend([PacedTextTTS(words_per_minute=170), _Tap((F.BotStartedSpeakingFrame,), collector.frame)])
            stages.append(pair.assistant())
            pair.assistant().events.on("on_assistant_turn_stopped", collector.bot)
        user = pair.user()
        if setup.speculate:
            user.events.on("on_user_turn_speculation", collector.speculated)
        user.events.on("on_user_turn_started", collector.turn_started)
        user.events.on("on_user_turn_stopped", collector.turn_stopped)
        if "on_user_turn_recovered" in user.events.names:  # the one place recoveries are counted
            user.events.on("on_user_turn_recovered", collector.recovered)
        if not setup.realtime:
            user.offload = SchedulerOffload(scheduler, setup.model_latency)
        # The transcript is subscribed right after the audio: time 0 is the audio's start.
        down = reactivex.merge(_timeline(items, collector.restart),
                               replay_transcript(stt, delay=setup.stt_delay, interim_lag=setup.interim_lag))
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
    return Analysis(recording, setup, transcript, collector.observations, confidences, context, stt,
                    model[0] if model else None)


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
