"""The VAD operator: microphone audio in, voice-activity frames out.

Place it right after the input: every frame goes on untouched, and after
each audio frame it adds what the VAD decided: ``VADUserStartedSpeakingFrame``
and ``VADUserStoppedSpeakingFrame`` (both ways, so stages before it hear them
too) and a ``UserSpeakingFrame`` heartbeat at most every
``speech_activity_period`` seconds. When audio stops arriving mid-speech (a
microphone muted mid-utterance), speech is taken to have stopped after
``audio_idle_timeout`` seconds. A watch that fires late (the server was busy,
and the audio that arrived meanwhile is still unread) looks again
:data:`LATE_SLACK` seconds later instead: only a silent microphone ends the
speech, never a stalled server.

With a :class:`VADBatcher`, the Silero calls of every session sharing it are
made together, one model call per scheduler tick: the verdict then comes out
a tick after the audio (at the same scheduler time), and a core keeps up with
several times more concurrent streams. A server gives it a thread of its own
(``VADBatcher(thread=True)``): the model calls then leave the event loop
(onnxruntime releases the GIL while it runs), batches grow with the load
(the chunks that arrive during a call form the next one) and each verdict
comes back on its session's scheduler, in order.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from collections.abc import Callable
from typing import Any

from reactivex import abc

from ..errors import ConfigurationError, RxVoiceError
from ..events import EventRegistry
from ..frames import (
    DOWN,
    UP,
    CancelFrame,
    Direction,
    EndFrame,
    Frame,
    InputAudioRawFrame,
    SpeechControlParamsFrame,
    StartFrame,
    VADParamsUpdateFrame,
)
from ..pipeline.deadline import Deadlines
from ..pipeline.processor import EventfulProcessor, Port
from .convert import AudioConverter
from .vad.analyzer import VADAnalyzer
from .vad.controller import VADControllerState, VADDecision, VADSettings, vad_audio_idle, vad_step
from .vad.params import VADParams, VADState
from .vad.silero import SileroVADAnalyzer, analyze_batch

__all__ = ["VADBatcher", "VADProcessor"]

SPEAKING = VADState.SPEAKING

LATE_SLACK = 0.25
"""Seconds past its deadline after which the audio-idle watch takes itself to have fired late (a stalled
server, not a silent microphone) and looks again this long later instead of ending the speech."""
LATE_CHECKS = 8
"""How many times in a row a late watch looks again before it decides anyway."""

log = logging.getLogger("rxvoice.audio.vad")

AnalyzerSource = VADAnalyzer | Callable[[], VADAnalyzer]


class VADProcessor(EventfulProcessor):
    """Voice activity detection as a stage (jargo's ``vadproc.Processor``).

    Args:
        analyzer: A VAD analyzer (used by one session at a time), or a factory
            making one per session. Default: a Silero analyzer per session,
            sharing one model.
        audio_idle_timeout: Seconds without any audio, while the user speaks,
            after which speech is taken to have stopped; ``0`` turns it off.
        speech_activity_period: At most one user-speaking heartbeat per this many seconds.
        batcher: Batch the model calls of every session sharing this batcher
            (Silero analyzers only).
        scheduler: The scheduler to run on (default: the one given at subscribe time).

    The analyzer runs at the audio's rate when it supports it (Silero: 8 or
    16 kHz) and at 16 kHz otherwise, the audio resampled (libsoxr HQ) and
    multi-channel audio averaged to mono first. Audio it cannot use is
    reported (``on_error`` event, ``ErrorFrame`` upstream) and skipped; the
    frame itself still goes on.

    Events (``handler(processor, payload)``): ``on_error`` (a typed error).
    """

    name = "VAD"

    def __init__(
        self,
        analyzer: AnalyzerSource | None = None,
        *,
        audio_idle_timeout: float = 1.0,
        speech_activity_period: float = 0.2,
        batcher: VADBatcher | None = None,
        scheduler: abc.SchedulerBase | None = None,
    ) -> None:
        self._source: AnalyzerSource = analyzer if analyzer is not None else SileroVADAnalyzer
        if not isinstance(self._source, VADAnalyzer) and not callable(self._source):
            raise ConfigurationError(f"VADProcessor needs a VAD analyzer or a factory, got {analyzer!r}")
        VADSettings(audio_idle_timeout=audio_idle_timeout, speech_activity_period=speech_activity_period)
        self.audio_idle_timeout = audio_idle_timeout
        self.speech_activity_period = speech_activity_period
        if batcher is not None and not isinstance(batcher, VADBatcher):
            raise ConfigurationError(f"batcher must be a VADBatcher, got {batcher!r}")
        self.batcher = batcher
        self.scheduler = scheduler
        self.events = EventRegistry(self, ("on_error",))

    def __repr__(self) -> str:
        return f"<{self.name}>"


    def new_analyzer(self) -> VADAnalyzer:
        """The analyzer for a new session."""
        if isinstance(self._source, VADAnalyzer):
            self._source.reset()
            return self._source
        analyzer = self._source()
        if not isinstance(analyzer, VADAnalyzer):
            raise ConfigurationError(f"the analyzer factory returned {analyzer!r}, not a VADAnalyzer")
        return analyzer

    def open(self, port: Port) -> _VADSession:
        return _VADSession(self, port)


def _settings(analyzer: VADAnalyzer, owner: VADProcessor) -> VADSettings:
    params = analyzer.params
    return VADSettings(
        start_secs=params.start_secs,
        stop_secs=params.stop_secs,
        speech_activity_period=owner.speech_activity_period,
        audio_idle_timeout=owner.audio_idle_timeout,
    )


class _VADSession:
    """One stream's VAD: the analyzer, the controller state, the audio-idle watch."""

    def __init__(self, owner: VADProcessor, port: Port) -> None:
        self.owner = owner
        self.port = port
        self.analyzer = owner.new_analyzer()
        self.settings = _settings(self.analyzer, owner)
        self.state = VADControllerState()
        self.converter = AudioConverter(self.analyzer)
        self.idle: Deadlines[str] = Deadlines(port, self._audio_idle)  # one lazy timer, moved by every chunk
        self.idle_due = 0.0
        self.late_checks = 0
        self.closed = False

    # -- frames --------------------------------------------------------------------------

    def on_frame(self, frame: Frame, direction: Direction) -> None:
        self.port.push(frame, direction)
        if direction is not DOWN:
            return
        t = type(frame)
        if t is InputAudioRawFrame:
            self.audio(frame)  # type: ignore[arg-type]
        elif t is StartFrame:
            try:
                self.use_rate(frame.audio_in_sample_rate)  # type: ignore[attr-defined]
            except RxVoiceError as exc:  # a StartFrame with a rate that is no rate: reported, the audio decides
                self.port.report_error(exc, frame)
            self.announce()
        elif t is VADParamsUpdateFrame:
            self.update_params(frame.params)  # type: ignore[attr-defined]
        elif t is EndFrame or t is CancelFrame:
            self.stop()
        elif isinstance(frame, InputAudioRawFrame):  # a transport's subclass (user id, ...)
            self.audio(frame)

    def on_input_end(self, direction: Direction) -> None:
        if direction is DOWN:
            self.stop()

    def close(self) -> None:
        self.closed = True
        self.stop()

    def announce(self) -> None:
        params = SpeechControlParamsFrame(vad_params=self.analyzer.params)
        self.port.push(params, DOWN)
        self.port.push(params, UP)

    def update_params(self, params: Any) -> None:
        if not isinstance(params, VADParams):
            self.port.report_error(ConfigurationError(f"VADParamsUpdateFrame needs VADParams, got {params!r}"))
            return
        self.analyzer.set_params(params)
        self.settings = _settings(self.analyzer, self.owner)
        self.announce()

    def audio(self, frame: InputAudioRawFrame) -> None:
        try:
            chunk = self.converter.convert(frame)
        except RxVoiceError as exc:
            self.port.report_error(exc, frame)
            return
        batcher = self.owner.batcher
        if batcher is not None and isinstance(self.analyzer, SileroVADAnalyzer):
            batcher.submit(self, chunk)
            return
        try:
            state = self.analyzer.analyze_audio(chunk)
        except RxVoiceError as exc:
            self.port.report_error(exc, frame)
            return
        if state is SPEAKING or self.state.speaking:
            self.verdict(state)

    def use_rate(self, rate: int) -> None:
        """Run the analyzer at ``rate`` when it supports it, else at 16 kHz (the audio is then resampled).

        Raises:
            InvalidAudioError: not a sample rate.
        """
        self.converter.use_rate(rate)

    def verdict(self, analyzer_state: VADState) -> None:
        """Turn the analyzer's state after a chunk into frames.

        Only called when the user speaks or the analyzer says SPEAKING: while
        not speaking, any other state leaves everything as it is (no frame,
        no idle watch), so the hot path skips the call.
        """
        if self.closed:
            return
        now = self.port.time()
        self.state, decision = vad_step(self.state, analyzer_state, now, self.settings)
        self.apply(decision, now)

    def apply(self, decision: VADDecision, now: float) -> None:
        for frame in decision.frames:
            self.port.push(frame, DOWN)
            self.port.push(frame, UP)
        if decision.disarm_idle:
            self.idle.disarm("audio")
        if decision.arm_idle:
            self.arm_idle(now)

    # -- audio idle ------------------------------------------------------------------------

    def arm_idle(self, now: float) -> None:
        """Move the idle deadline (a float; the pending check re-sleeps for the rest: cheap per chunk)."""
        timeout = self.settings.audio_idle_timeout
        if timeout > 0:
            self.idle.arm("audio", timeout, now)
            self.idle_due = now + timeout
            self.late_checks = 0

    def _audio_idle(self, _key: str, now: float) -> None:
        if self.closed:
            return
        if now - self.idle_due > LATE_SLACK and self.late_checks < LATE_CHECKS:
            # The watch fired late: the server itself was behind, and audio that arrived meanwhile may
            # still be waiting to be read. Look again once that backlog is in (it moves the deadline).
            self.late_checks += 1
            self.idle.arm("audio", LATE_SLACK, now)
            self.idle_due = now + LATE_SLACK
            return
        self.state, decision = vad_audio_idle(self.state, now, self.settings)
        self.apply(decision, now)

    def stop(self) -> None:
        self.idle.cancel_all()


class VADBatcher:
    """Batches the Silero calls of many sessions: one model call per scheduler tick.

    Sessions submit their chunk; the first submission of a tick schedules a
    flush on that session's scheduler, which analyzes every pending chunk
    (window k of every session in one ``session.run``) and hands each verdict
    back to its session through its gate. The states, and so the frames, are
    exactly those of unbatched analysis.

    Share one batcher between sessions that run on one scheduler (one event
    loop): the flush analyzes every session's chunk on that scheduler's
    thread, or, with ``thread=True``, on the batcher's own thread (one, so
    the flushes, and each session's verdicts, stay in order), each verdict
    handed back to its session on the session's scheduler (which must accept
    work from another thread: an asyncio loop's ``AsyncIOThreadSafeScheduler``,
    what rxvoice's sessions run on).

    Args:
        max_batch: The most chunks analyzed in one call.
        thread: Run the model calls off the sessions' scheduler, on a thread of the batcher's.
    """

    def __init__(self, max_batch: int = 64, *, thread: bool = False) -> None:
        if isinstance(max_batch, bool) or not isinstance(max_batch, int) or max_batch < 1:
            raise ConfigurationError("max_batch must be >= 1")
        self.max_batch = max_batch
        self.thread = bool(thread)
        self._pending: list[tuple[_VADSession, Any]] = []
        self._scheduled = False
        self._lock = threading.Lock()
        self._worker: concurrent.futures.ThreadPoolExecutor | None = None
        self._closed = False
        self.calls = 0
        """Batched model calls made so far (one per group of sessions per flush)."""

    def submit(self, session: _VADSession, chunk: Any) -> None:
        """Queue a session's chunk for the next flush (scheduled on its scheduler, or the batcher's thread)."""
        with self._lock:
            self._pending.append((session, chunk))
            if self._scheduled:
                return
            self._scheduled = True
            worker = self._thread() if self.thread else None
        if worker is None:
            session.port.session.scheduler.schedule(self._flush)
            return
        try:
            worker.submit(self._flush_here)
        except RuntimeError:  # closed (the server is stopping): analyze on the session's scheduler
            session.port.session.scheduler.schedule(self._flush)

    def _thread(self) -> concurrent.futures.ThreadPoolExecutor | None:
        if self._closed:
            return None
        if self._worker is None:
            self._worker = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="rxvoice-vad")
        return self._worker

    def close(self) -> None:
        """Stop the batcher's thread (chunks queued after this are analyzed on their sessions' scheduler)."""
        with self._lock:
            self._closed = True
            worker, self._worker = self._worker, None
        if worker is not None:
            worker.shutdown(wait=False)

    def _flush_here(self) -> None:
        """On the batcher's thread: analyze what is pending, the verdicts handed back to each scheduler."""
        back: dict[int, tuple[abc.SchedulerBase, list[tuple[_VADSession, Any]]]] = {}
        try:
            self._flush(None, None, back)
        except Exception:  # never lost silently on the thread: the chunks of this flush are skipped
            log.exception("a VAD flush failed on the batcher's thread; its chunks were skipped")
        for scheduler, results in back.values():
            scheduler.schedule(_hand_back, results)

    def _flush(self, _scheduler: abc.SchedulerBase | None, _state: Any = None,
               back: dict[int, tuple[abc.SchedulerBase, list[tuple[_VADSession, Any]]]] | None = None) -> None:
        with self._lock:
            pending, self._pending = self._pending, []
            self._scheduled = False
        while pending:
            batch: list[tuple[_VADSession, Any]] = []
            rest: list[tuple[_VADSession, Any]] = []
            seen: set[int] = set()
            for item in pending:
                key = id(item[0])
                if key in seen or len(batch) >= self.max_batch:
                    rest.append(item)  # one chunk per session per call, in order
                else:
                    seen.add(key)
                    batch.append(item)
            self._run(batch, back)
            pending = rest

    def _run(self, batch: list[tuple[_VADSession, Any]],
             back: dict[int, tuple[abc.SchedulerBase, list[tuple[_VADSession, Any]]]] | None = None) -> None:
        groups: dict[tuple[int, int], list[tuple[_VADSession, Any]]] = {}
        for session, chunk in batch:
            if session.closed:
                continue
            analyzer = session.analyzer
            groups.setdefault((id(analyzer.model), analyzer.sample_rate), []).append((session, chunk))  # type: ignore[attr-defined]
        for items in groups.values():
            analyzers = [s.analyzer for s, _ in items]
            self.calls += 1
            try:
                states = analyze_batch(analyzers, [c for _, c in items])  # type: ignore[arg-type]
            except Exception as exc:  # never into the scheduler: only the bad chunk may be lost
                log.warning("a batched VAD call failed (%r); analyzing one by one", exc)
                for session, chunk in items:
                    if back is None:
                        self._deliver_one(session, chunk)
                    else:
                        _later(back, session, _analyze_one(session, chunk))
                continue
            for (session, _), state in zip(items, states, strict=True):
                if back is not None:
                    _later(back, session, state)
                elif state is SPEAKING or session.state.speaking:  # otherwise nothing to decide (see verdict)
                    session.port.session.run(_deliver, (session, state))

    @staticmethod
    def _deliver_one(session: _VADSession, chunk: Any) -> None:
        try:
            state = session.analyzer.analyze_audio(chunk)
        except Exception as exc:  # reported by the session it belongs to (on_error, ErrorFrame upstream)
            session.port.session.run(lambda e: session.port.inject_call(lambda: session.port.report_error(e)), exc)
            return
        session.port.session.run(_deliver, (session, state))


def _deliver(item: tuple[_VADSession, VADState]) -> None:
    session, state = item
    session.port.inject_call(lambda: session.verdict(state))


def _report(item: tuple[_VADSession, Exception]) -> None:
    session, error = item
    session.port.inject_call(lambda: session.port.report_error(error))


def _analyze_one(session: _VADSession, chunk: Any) -> VADState | Exception:
    try:
        return session.analyzer.analyze_audio(chunk)
    except Exception as exc:  # reported by its session, on its scheduler
        return exc


def _later(back: dict[int, tuple[abc.SchedulerBase, list[tuple[_VADSession, Any]]]], session: _VADSession,
           result: Any) -> None:
    """Keep a verdict computed on the batcher's thread for its session's scheduler."""
    scheduler = session.port.session.scheduler
    back.setdefault(id(scheduler), (scheduler, []))[1].append((session, result))


def _hand_back(_scheduler: abc.SchedulerBase, results: list[tuple[_VADSession, Any]] | None = None) -> None:
    """On the sessions' scheduler: each verdict (or error) of a flush made on the batcher's thread, in order."""
    for session, result in results or ():
        if session.closed:
            continue
        if isinstance(result, Exception):
            session.port.session.run(_report, (session, result))
        elif result is SPEAKING or session.state.speaking:  # otherwise nothing to decide (see verdict)
            session.port.session.run(_deliver, (session, result))

