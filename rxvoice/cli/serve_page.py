"""What the page of ``rxvoice serve`` is told: one connection's frames and events, as JSON messages.

Inspectors pass every frame on and tell a :class:`PageWatch` about some kinds of them; the watch
explains each turn end (its reason, its latency from the end of speech) to the page.
"""

from __future__ import annotations

import contextlib
from typing import Any

from ..aggregators.reports import AssistantTurnStopped, UserTurnStopped
from ..audio.vad import SileroVADAnalyzer, VADParams
from ..context import ContextSnapshot
from ..frames import (
    DOWN,
    BotStartedSpeakingFrame,
    BotStoppedSpeakingFrame,
    Direction,
    Frame,
    InputAudioRawFrame,
    InterimTranscriptionFrame,
    InterruptionFrame,
    MetricsFrame,
    TranscriptionFrame,
    TTSTextFrame,
    TurnMetricsData,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from ..inference import InferenceFallback
from ..pipeline import Port, Processor
from ..services.stt import (
    Utterance,
)
from .serve_options import ServeOptions

__all__ = ["Inspector", "PageWatch", "WatchedSilero"]


class WatchedSilero(SileroVADAnalyzer):
    """Silero that remembers its highest confidence since it was last asked (for the page's VAD trace)."""

    def __init__(self, params: VADParams) -> None:
        super().__init__(16000, params=params)
        self.peak = 0.0

    def _after_inference(self, confidence: float) -> float:  # every window, batched or not
        self.peak = max(self.peak, confidence)
        return super()._after_inference(confidence)

    def take_peak(self) -> float:
        peak, self.peak = self.peak, 0.0
        return peak


class PageWatch:
    """One connection's view of its conversation: what the inspectors saw, for explaining turn ends."""

    def __init__(self, transport: Any, options: ServeOptions) -> None:
        self.transport = transport
        self.options = options
        self.analyzer: WatchedSilero | None = None
        self.speech_start = 0.0
        self.speech_end = 0.0
        self.speech_end_clock: float | None = None
        self.turns = 0
        self.reopens: int | None = None
        self.reopening: int | None = None
        self.level_sum = 0.0
        self.level_n = 0
        self.chunks = 0

    @property
    def t(self) -> float:
        return round(float(self.transport.audio_seconds), 3)

    def clock(self) -> float:
        loop = self.transport.loop
        return float(loop.time()) if loop is not None else 0.0

    def send(self, kind: str, **fields: Any) -> None:
        self.transport.send({"type": kind, "t": self.t, **fields})

    # -- frames ------------------------------------------------------------------------

    def audio(self, frame: InputAudioRawFrame) -> None:
        import numpy as np

        samples = np.frombuffer(frame.audio, dtype="<i2").astype(np.float32)
        if samples.size:  # the mean square as one dot product: a few µs a chunk, on every session's chunks
            self.level_sum += float(samples @ samples) / (samples.size * 1073741824.0)
            self.level_n += 1
        self.chunks += 1
        if self.chunks % 5 == 0:  # ten a second
            rms = (self.level_sum / self.level_n) ** 0.5 if self.level_n else 0.0
            self.level_sum, self.level_n = 0.0, 0
            vad = self.analyzer.take_peak() if self.analyzer is not None else 0.0
            self.send("audio", level=round(rms, 4), vad=round(vad, 3))

    def frame(self, frame: Frame) -> None:
        t = type(frame)
        if t is VADUserStartedSpeakingFrame:
            self.speech_start = max(0.0, self.t - frame.start_secs)  # type: ignore[attr-defined]
            self.send("vad", speaking=True, at=round(self.speech_start, 3))
        elif t is VADUserStoppedSpeakingFrame:
            stop = frame.stop_secs  # type: ignore[attr-defined]
            self.speech_end = max(self.speech_start, self.t - stop)
            self.speech_end_clock = self.clock() - stop
            self.send("vad", speaking=False, at=round(self.speech_end, 3))
        elif t is InterimTranscriptionFrame:
            self.send("interim", text=frame.text)  # type: ignore[attr-defined]
        elif t is TranscriptionFrame:
            span = frame.result  # type: ignore[attr-defined]
            if isinstance(span, Utterance):
                self.send("final", text=frame.text, start=span.start, end=span.end)  # type: ignore[attr-defined]
        elif t is MetricsFrame:
            for d in frame.data:  # type: ignore[attr-defined]
                if isinstance(d, TurnMetricsData):
                    self.send("verdict", complete=d.is_complete, probability=round(float(d.probability), 4),
                              ms=round(d.e2e_processing_time_ms, 1))
        elif t is TTSTextFrame:
            self.send("bot_word", text=frame.text)  # type: ignore[attr-defined]
        elif t is BotStartedSpeakingFrame or t is BotStoppedSpeakingFrame:
            self.send("bot", speaking=t is BotStartedSpeakingFrame)
        elif t is InterruptionFrame:
            self.send("interrupted")

    # -- events ----------------------------------------------------------------------

    def turn_started(self, _agg: object, _payload: object = None) -> None:
        self.reopening, self.reopens = self.reopens, None
        self.send("turn_start", index=self.turns + 1)

    def recovered(self, _agg: object, _payload: object = None) -> None:
        self.reopens = self.turns  # the turn that just ended falsely: the one starting now continues it

    def turn_stopped(self, _agg: object, stopped: UserTurnStopped) -> None:
        self.turns += 1
        strategy = getattr(stopped.strategy, "name", None) if stopped.strategy is not None else None
        latency = None if self.speech_end_clock is None else round(self.clock() - self.speech_end_clock, 3)
        index, t = self.turns, self.t
        # The reason is the one the deciding strategy (or the watchdog) reported: shown as it is.
        reason = stopped.reason
        reopened, self.reopening = self.reopening, None
        message = {"type": "turn_end", "t": t, "index": index, "text": stopped.content, "strategy": strategy,
                   "reason": reason.text if reason is not None else (strategy or "(no reason given)"),
                   "cause": reason.kind if reason is not None else "other",
                   "probability": None if reason is None or reason.probability is None
                   else round(reason.probability, 4),
                   "silence": None if reason is None or reason.silence is None else round(reason.silence, 3),
                   "latency": latency, "reopened": reopened is not None, "recovered_from": reopened}

        def report() -> None:  # after the step that ended the turn: its verdict has come out by then
            self.transport.send(message)

        loop = self.transport.loop
        if loop is None:
            report()
        else:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(report)

    def speculation(self, _agg: object, report: Any) -> None:
        self.send("speculation", id=report.speculation_id, outcome=report.outcome, words=report.words,
                  reason=report.reason)

    def backchannel(self, _agg: object, frame: Any) -> None:
        self.send("backchannel", text=getattr(frame, "text", ""))

    def classified(self, _agg: object, verdict: Any) -> None:
        self.send("classified", outcome=verdict.outcome, ended=verdict.ended, waited=verdict.waited)

    def fallback(self, fallback: InferenceFallback) -> None:
        """An inference backend was slow or failed: the page is told what was decided without it (any thread)."""
        self.send("fallback", question=fallback.kind, backend=fallback.backend, reason=fallback.reason,
                  waited=fallback.waited)

    def dropped(self) -> None:
        """A Smart Turn verdict was given up because the caller spoke again or the turn ended first (any thread)."""
        self.send("verdict_dropped")

    def bot_turn(self, _agg: object, turn: AssistantTurnStopped) -> None:
        self.send("bot_turn", text=turn.content, interrupted=turn.interrupted)

    def context(self, snapshot: ContextSnapshot) -> None:
        messages = [{"role": str(m.get("role", "")), "content": m.get("content")} for m in snapshot.messages]
        self.send("context", messages=[m for m in messages if isinstance(m["content"], str)])


class Inspector(Processor):
    """Passes everything; tells the page about the frames of some types going downstream."""

    name = "Inspector"

    def __init__(self, watch: PageWatch, kinds: tuple[type[Frame], ...], audio: bool = False) -> None:
        self.watch = watch
        self.kinds = kinds
        self.audio = audio

    def open(self, port: Port) -> InspectorSession:
        return InspectorSession(self, port)


class InspectorSession:
    def __init__(self, owner: Inspector, port: Port) -> None:
        self.owner = owner
        self.port = port

    def on_frame(self, frame: Frame, direction: Direction) -> None:
        self.port.push(frame, direction)
        if direction is DOWN:
            if self.owner.audio and type(frame) is InputAudioRawFrame:
                self.owner.watch.audio(frame)
            elif isinstance(frame, self.owner.kinds):
                self.owner.watch.frame(frame)

    def on_input_end(self, direction: Direction) -> None:
        return None

    def close(self) -> None:
        return None

