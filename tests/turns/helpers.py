"""Shared pieces of the turn-taking tests: a frame legend, runners and scripted fakes."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rxvoice import frames as F
from rxvoice.aggregators import Pair
from rxvoice.testing import FrameMarbles, Recording

L: dict[str, F.Frame] = {
    "v": F.VADUserStartedSpeakingFrame(0.2),
    "s": F.VADUserStoppedSpeakingFrame(0.2),
    "i": F.InterimTranscriptionFrame("hel"),
    "h": F.TranscriptionFrame("hello there", "u1", finalized=True),
    "t": F.TranscriptionFrame("hello there", "u1"),
    "H": F.TranscriptionFrame("Hello", "u1"),
    "W": F.TranscriptionFrame("world.", "u1"),
    "c": F.UserTurnInferenceCompletedFrame(),
    "B": F.BotStartedSpeakingFrame(),
    "b": F.BotStoppedSpeakingFrame(),
    "I": F.InterruptionFrame(),
    "P": F.ProposedUserStartedSpeakingFrame(),
    "p": F.ProposedUserStoppedSpeakingFrame(),
    "U": F.UserStartedSpeakingFrame(),
    "u": F.UserStoppedSpeakingFrame(),
    "S": F.StartFrame(),
    "E": F.EndFrame(),
    "X": F.CancelFrame(),
}


def marbles(legend: Mapping[str, F.Frame] | None = None) -> FrameMarbles:
    """A bench with the shared legend."""
    return FrameMarbles({**L, **(legend or {})})


def run(
    pair: Pair,
    down: str | Sequence[tuple[float, Any]] = "",
    *,
    up: str | Sequence[tuple[float, Any]] = "",
    legend: Mapping[str, F.Frame] | None = None,
    until: float | None = None,
    m: FrameMarbles | None = None,
) -> Recording:
    """Run the user half of ``pair`` on marbles, recording its events."""
    bench = m or marbles(legend)
    return bench.run(pair.user(), down=down, up=up, legend=legend, watch=[pair.user()], until=until)


def contents(pair: Pair) -> list[tuple[str, Any]]:
    """``(role, content)`` of every message in the pair's conversation."""
    return [(m["role"], m.get("content")) for m in pair.context().messages]


def users(pair: Pair) -> list[str]:
    """The user messages, in order."""
    return [m["content"] for m in pair.context().messages if m["role"] == "user"]


def times(rec: Recording, kind: type[F.Frame] | tuple[type[F.Frame], ...], direction: str = "down") -> list[int]:
    """When (ms) each frame of ``kind`` went ``direction``."""
    return [t for t, _ in rec.of_type(kind, direction)]


def event_times(rec: Recording, name: str) -> list[int]:
    """When (ms) each ``name`` event was raised."""
    return [t for t, _ in rec.events_named(name)]


# -- a scripted end-of-turn analyzer ------------------------------------------------------


@dataclass
class FakeStream:
    """An end-of-turn stream answering from its analyzer's script and recording every call."""

    owner: FakeAnalyzer
    sample_rate: int
    calls: list[tuple[str, Any]] = field(default_factory=list)
    speech: bool = False
    silence_chunks: int = 0

    def append_audio(self, pcm: bytes, is_speech: bool) -> bool:
        self.calls.append(("append", is_speech))
        if is_speech:
            self.speech, self.silence_chunks = True, 0
            return False
        if self.speech:
            self.silence_chunks += 1
            if self.owner.silence_chunks and self.silence_chunks >= self.owner.silence_chunks:
                self.speech, self.silence_chunks = False, 0
                return True
        return False

    def analyze(self) -> tuple[bool, float | None]:
        self.calls.append(("analyze", None))
        self.owner.analyses += 1
        verdict = self.owner.script.pop(0) if self.owner.script else self.owner.default
        if isinstance(verdict, BaseException):
            raise verdict
        return verdict

    def clear(self) -> None:
        self.calls.append(("clear", None))
        self.speech, self.silence_chunks = False, 0

    def update_vad_start_secs(self, secs: float) -> None:
        self.calls.append(("vad_start_secs", secs))

    def close(self) -> None:
        self.calls.append(("close", None))


@dataclass
class FakeAnalyzer:
    """An :class:`~rxvoice.turns.EndOfTurnAnalyzer` whose verdicts come from a script.

    ``script`` holds ``(is_complete, probability)`` pairs (or exceptions to
    raise), one per analysis; ``default`` answers once it runs out.
    ``silence_chunks`` > 0 makes ``append_audio`` report the silence
    fallback after that many silent chunks following speech.
    """

    script: list[Any] = field(default_factory=list)
    default: tuple[bool, float | None] = (True, 0.9)
    silence_chunks: int = 0
    params: Any = "turn-params"
    streams: list[FakeStream] = field(default_factory=list)
    analyses: int = 0

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other: object) -> bool:
        return self is other

    def open_stream(self, sample_rate: int) -> FakeStream:
        stream = FakeStream(self, sample_rate)
        self.streams.append(stream)
        return stream

    def calls(self, kind: str | None = None) -> list[tuple[str, Any]]:
        """Every call to the (last) stream, or only those of ``kind``."""
        calls = self.streams[-1].calls if self.streams else []
        return [c for c in calls if kind is None or c[0] == kind]


# -- a scripted VAD analyzer -----------------------------------------------------------------


class VADState(enum.Enum):
    QUIET = 1
    STARTING = 2
    SPEAKING = 3
    STOPPING = 4


@dataclass(frozen=True)
class VADParams:
    start_secs: float = 0.2
    stop_secs: float = 0.2


@dataclass
class FakeVAD:
    """A VAD analyzer: a chunk whose first byte is non-zero is speech (no confirmation delay)."""

    params: VADParams = field(default_factory=VADParams)
    chunks: int = 0
    resets: int = 0

    def analyze_audio(self, audio: bytes) -> VADState:
        self.chunks += 1
        return VADState.SPEAKING if audio[:1] not in (b"", b"\x00") else VADState.QUIET

    def reset(self) -> None:
        self.resets += 1


LOUD = F.InputAudioRawFrame(b"\x10\x10" * 320)
QUIET = F.InputAudioRawFrame(b"\x00\x00" * 320)


def audio(pattern: str, start: float = 0.0, step: float = 0.02) -> list[tuple[float, F.Frame]]:
    """Audio chunks every ``step`` seconds: ``#`` loud, ``.`` quiet, `` `` nothing (a gap)."""
    out: list[tuple[float, F.Frame]] = []
    for i, ch in enumerate(pattern):
        if ch == "#":
            out.append((start + i * step, LOUD))
        elif ch == ".":
            out.append((start + i * step, QUIET))
    return out


def merge(*timelines: Iterable[tuple[float, Any]]) -> list[tuple[float, Any]]:
    """Several ``(seconds, frame)`` timelines as one, in time order (stable)."""
    items = [item for tl in timelines for item in tl]
    return sorted(items, key=lambda x: x[0])


# -- a bench for one strategy, alone, in virtual time -----------------------------------------


class StrategyBench:
    """Drives one strategy as the controller would: its timers, resource calls and results, in virtual time.

    ``fired`` records ``(seconds, "inference" | "finalize" | "start" | "reset")`` for
    every trigger the strategy produced; ``pushed`` the frames it pushed.
    ``latency`` delays :class:`Analyze` results by that many seconds.
    """

    def __init__(self, strategy: Any, latency: float = 0.0) -> None:
        from rxvoice.turns import strategy as S

        self.S = S
        self.strategy = strategy
        self.state = strategy.initial()
        self.resource = strategy.open_resource(16000)
        self.timers: dict[str, float] = {}
        self.results: list[tuple[float, str, Any]] = []
        self.now = 0.0
        self.latency = latency
        self.fired: list[tuple[float, str]] = []
        self.pushed: list[F.Frame] = []
        self.reasons: list[Any] = []
        """The reason each finalize carried (``TurnEndReason``), in order."""

    def at(self, seconds: float, frame: F.Frame | None = None) -> StrategyBench:
        """Advance to ``seconds`` (firing due timers and results), then feed ``frame``."""
        self.advance(seconds)
        if frame is not None:
            self.state, effects = self.strategy.on_frame(self.state, frame, self.now)
            self.apply(effects)
        return self

    def advance(self, seconds: float) -> None:
        while True:
            due = [(t, k) for k, t in self.timers.items() if t <= seconds + 1e-9]
            due += [(t, f"result:{i}") for i, (t, _, _) in enumerate(self.results) if t <= seconds + 1e-9]
            if not due:
                break
            t, key = min(due)
            self.now = t
            if key.startswith("result:"):
                i = int(key.split(":")[1])
                _, rkey, value = self.results.pop(i)
                self.state, effects = self.strategy.on_result(self.state, rkey, value, self.now)
            else:
                del self.timers[key]
                self.state, effects = self.strategy.on_timer(self.state, key, self.now)
            self.apply(effects)
        self.now = seconds

    def turn_started(self) -> None:
        self.state, effects = self.strategy.on_turn_started(self.state, self.now)
        self.apply(effects)

    def turn_stopped(self) -> None:
        self.state, effects = self.strategy.on_turn_stopped(self.state, self.now)
        self.apply(effects)

    def apply(self, effects: Iterable[Any]) -> None:
        S = self.S
        for e in effects:
            if isinstance(e, S.Arm):
                self.timers[e.key] = self.now + e.delay
            elif isinstance(e, S.Disarm):
                self.timers.pop(e.key, None)
            elif isinstance(e, S.Inference):
                self.fired.append((round(self.now, 6), "inference"))
            elif isinstance(e, S.Finalize):
                self.fired.append((round(self.now, 6), "finalize"))
                self.reasons.append(e.reason)
            elif isinstance(e, S.Start):
                self.fired.append((round(self.now, 6), "start"))
            elif isinstance(e, S.ResetAggregation):
                self.fired.append((round(self.now, 6), "reset"))
            elif isinstance(e, S.Push):
                self.pushed.append(e.frame)
            elif isinstance(e, S.Touch):
                try:
                    value = e.fn(self.resource)
                except Exception as exc:
                    value = exc
                if e.key is not None:
                    self.state, more = self.strategy.on_result(self.state, e.key, value, self.now)
                    self.apply(more)
            elif isinstance(e, S.Analyze):
                try:
                    value = e.fn(self.resource)
                except Exception as exc:
                    value = exc
                self.results.append((self.now + self.latency, e.key, value))

    def stops(self) -> list[float]:
        """When the strategy ended the turn (finalize)."""
        return [t for t, kind in self.fired if kind == "finalize"]

    def inferences(self) -> list[float]:
        """When the strategy asked for an answer."""
        return [t for t, kind in self.fired if kind == "inference"]
