"""Frame marbles: drive stages in virtual time and assert what came out, and when.

A marble string is a timeline: each ``-`` is one ``timespan`` (0.1 s by
default), a single character is a frame looked up in a legend, ``(ab)``
puts several frames at the same instant (the group takes one timespan),
``|`` completes the stream, ``#`` fails it, and spaces are only for
alignment::

    m = FrameMarbles(legend={"v": VADUserStartedSpeakingFrame(), "t": TranscriptionFrame("hi")})
    rec = m.run(pair.user(), down="v-t---")
    assert rec.down_types() == ["VADUserStartedSpeakingFrame", "UserStartedSpeakingFrame", ...]

Everything runs on reactivex's ``TestScheduler``: a five-second timeout is
five seconds of virtual time and takes microseconds. Recorded times are
integer milliseconds after subscription, so they compare exactly.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import reactivex
from reactivex import Observable, abc
from reactivex.disposable import CompositeDisposable
from reactivex.testing import TestScheduler

from ..context import ContextSnapshot, LLMContext
from ..errors import ConfigurationError, RxVoiceError
from ..events import NO_PAYLOAD, Event
from ..frames import Frame
from ..pipeline.stage import Operator, Stage, as_stage

__all__ = [
    "COMPLETED",
    "ERROR",
    "FrameMarbles",
    "MarbleError",
    "Recording",
    "parse_marbles",
]


class _Mark:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


COMPLETED = _Mark("COMPLETED")
"""Marks the completion of a recorded stream."""

ERROR = _Mark("ERROR")
"""Marks the failure of a recorded stream."""


class MarbleError(RxVoiceError, ValueError):
    """A marble string that cannot be read (an unknown symbol, an unclosed group)."""


def parse_marbles(
    marbles: str, legend: Mapping[str, Any], timespan: float = 0.1
) -> list[tuple[float, Any]]:
    """``(seconds, item)`` pairs for a marble string; items are frames, ``COMPLETED`` or ``ERROR``."""
    out: list[tuple[float, Any]] = []
    tick = 0
    group: list[Any] | None = None
    for i, ch in enumerate(marbles):
        if ch == " ":
            continue
        if ch == "(":
            if group is not None:
                raise MarbleError(f"nested group at {i} in {marbles!r}")
            group = []
            continue
        if ch == ")":
            if group is None:
                raise MarbleError(f"')' without '(' at {i} in {marbles!r}")
            out.extend((tick * timespan, item) for item in group)
            group = None
            tick += 1
            continue
        if ch == "-":
            if group is not None:
                raise MarbleError(f"'-' inside a group at {i} in {marbles!r}")
            tick += 1
            continue
        if ch == "|":
            item: Any = COMPLETED
        elif ch == "#":
            item = ERROR
        elif ch in legend:
            item = legend[ch]
        else:
            known = "".join(sorted(legend)) or "(empty legend)"
            raise MarbleError(f"symbol {ch!r} at {i} in {marbles!r} is not in the legend: {known}")
        if group is not None:
            group.append(item)
        else:
            out.append((tick * timespan, item))
            tick += 1
    if group is not None:
        raise MarbleError(f"unclosed group in {marbles!r}")
    return out


def _ms(seconds: float) -> int:
    return round(seconds * 1000)


@dataclass
class Recording:
    """What a run produced: frames each way, events, context snapshots, all with times in ms."""

    down: list[tuple[int, Any]] = field(default_factory=list)
    up: list[tuple[int, Any]] = field(default_factory=list)
    events: list[tuple[int, str, Any]] = field(default_factory=list)
    contexts: list[tuple[int, ContextSnapshot]] = field(default_factory=list)
    errors: list[tuple[int, BaseException]] = field(default_factory=list)

    @staticmethod
    def _frames(items: Iterable[tuple[int, Any]]) -> list[Frame]:
        return [f for _, f in items if isinstance(f, Frame)]

    def down_frames(self) -> list[Frame]:
        """The frames that came out downstream, in order."""
        return self._frames(self.down)

    def up_frames(self) -> list[Frame]:
        """The frames that came out upstream, in order."""
        return self._frames(self.up)

    def down_types(self, *ignore: type[Frame]) -> list[str]:
        """Type names of the downstream frames (minus ``ignore``), for readable asserts."""
        return [type(f).__name__ for f in self.down_frames() if not isinstance(f, ignore)]

    def up_types(self, *ignore: type[Frame]) -> list[str]:
        """Type names of the upstream frames (minus ``ignore``)."""
        return [type(f).__name__ for f in self.up_frames() if not isinstance(f, ignore)]

    def of_type(self, kind: type[Frame] | tuple[type[Frame], ...], direction: str = "down") -> list[tuple[int, Frame]]:
        """``(ms, frame)`` for every frame of ``kind`` that went ``direction``."""
        items = self.down if direction == "down" else self.up
        return [(t, f) for t, f in items if isinstance(f, kind)]

    def event_names(self) -> list[str]:
        """Names of the events raised, in order."""
        return [name for _, name, _ in self.events]

    def events_named(self, name: str) -> list[tuple[int, Any]]:
        """``(ms, payload)`` for each ``name`` event."""
        return [(t, p) for t, n, p in self.events if n == name]


class FrameMarbles:
    """A virtual-time test bench for frame streams.

    Args:
        legend: Symbols to frames, shared by every marble string (a call's
            own ``legend`` adds to it).
        timespan: Seconds one ``-`` stands for.
        scheduler: The ``TestScheduler`` to run on (a fresh one by default).
    """

    def __init__(
        self,
        legend: Mapping[str, Any] | None = None,
        *,
        timespan: float = 0.1,
        scheduler: TestScheduler | None = None,
    ) -> None:
        if timespan <= 0:
            raise ConfigurationError("timespan must be > 0 seconds")
        self.legend: dict[str, Any] = dict(legend or {})
        self.timespan = timespan
        self.scheduler = scheduler or TestScheduler()

    # -- building inputs -----------------------------------------------------------

    def _legend(self, legend: Mapping[str, Any] | None) -> dict[str, Any]:
        return {**self.legend, **(legend or {})}

    def timeline(self, marbles: str, legend: Mapping[str, Any] | None = None) -> list[tuple[float, Any]]:
        """``(seconds, item)`` pairs of a marble string."""
        return parse_marbles(marbles, self._legend(legend), self.timespan)

    def cold(
        self, marbles: str, legend: Mapping[str, Any] | None = None, *, error: Exception | None = None
    ) -> Observable[Frame]:
        """Frames emitted at their marble times after each subscription."""
        return self.from_timeline(self.timeline(marbles, legend), error=error)

    def from_timeline(self, items: Sequence[tuple[float, Any]], *, error: Exception | None = None) -> Observable[Frame]:
        """Frames (or ``COMPLETED``/``ERROR``) emitted ``seconds`` after each subscription."""
        failure = error or Exception("marble error")

        def subscribe(
            observer: abc.ObserverBase[Frame], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            sched = scheduler or self.scheduler
            disposables = CompositeDisposable()
            for seconds, item in items:
                def emit(_s: abc.SchedulerBase, _st: Any = None, item: Any = item) -> None:
                    if item is COMPLETED:
                        observer.on_completed()
                    elif item is ERROR:
                        observer.on_error(failure)
                    else:
                        observer.on_next(item)

                disposables.add(sched.schedule_relative(seconds, emit))
            return disposables

        return Observable(subscribe)

    def expect(self, marbles: str, legend: Mapping[str, Any] | None = None) -> list[tuple[int, Any]]:
        """What a recording should hold, as ``(ms, item)`` pairs."""
        return [(_ms(t), item) for t, item in self.timeline(marbles, legend)]

    # -- running ----------------------------------------------------------------------

    def run(
        self,
        stage: Stage | Operator,
        down: str | Observable[Frame] | Sequence[tuple[float, Any]] = "",
        up: str | Observable[Frame] | Sequence[tuple[float, Any]] = "",
        *,
        legend: Mapping[str, Any] | None = None,
        watch: Iterable[Any] = (),
        context: LLMContext | None = None,
        until: float | None = None,
    ) -> Recording:
        """Run ``stage`` on the given inputs until ``until`` seconds (default: last input + 30 s).

        Args:
            stage: A stage or a plain operator.
            down: Frames travelling downstream into it (marbles, an observable,
                or ``(seconds, frame)`` pairs).
            up: Frames travelling upstream into it.
            legend: Extra symbols for this run.
            watch: Objects with an ``events`` registry (aggregators, a
                summarizer) whose events are recorded.
            context: A context whose snapshots are recorded.
            until: Virtual seconds after which everything is disposed.
        """
        sched = self.scheduler
        start = sched.clock
        down_obs, down_end = self._input(down, legend)
        up_obs, up_end = self._input(up, legend)
        rec = Recording()
        horizon = until if until is not None else max(down_end, up_end) + 30.0

        def now_ms() -> int:
            return _ms(sched.clock - start)

        def recorder(target: list[tuple[int, Any]]) -> abc.ObserverBase[Frame]:
            def on_error(e: Exception) -> None:
                target.append((now_ms(), ERROR))
                rec.errors.append((now_ms(), e))

            return reactivex.Observer(
                lambda f: target.append((now_ms(), f)), on_error, lambda: target.append((now_ms(), COMPLETED))
            )

        subscriptions = CompositeDisposable()
        for source in watch:
            registry = getattr(source, "events", None)
            if registry is None:
                raise TypeError(f"{source!r} has no events to watch")

            def on_event(e: Event) -> None:
                payload = None if e.payload is NO_PAYLOAD else e.payload
                rec.events.append((now_ms(), e.name, payload))

            subscriptions.add(registry.observe().subscribe(on_event))
        if context is not None:
            subscriptions.add(context.snapshots.subscribe(lambda s: rec.contexts.append((now_ms(), s))))

        out_down, out_up = as_stage(stage).duplex(down_obs, up_obs)

        def go(_s: abc.SchedulerBase, _st: Any = None) -> None:
            subscriptions.add(out_up.subscribe(recorder(rec.up), scheduler=sched))
            subscriptions.add(out_down.subscribe(recorder(rec.down), scheduler=sched))

        sched.schedule_absolute(start, go)
        def stop(_s: abc.SchedulerBase, _st: Any = None) -> None:
            subscriptions.dispose()

        sched.schedule_absolute(start + horizon, stop)
        sched.advance_to(start + horizon)
        subscriptions.dispose()
        return rec

    def _input(
        self, source: str | Observable[Frame] | Sequence[tuple[float, Any]], legend: Mapping[str, Any] | None
    ) -> tuple[Observable[Frame], float]:
        if isinstance(source, str):
            if not source.strip():
                return reactivex.never(), 0.0
            items = self.timeline(source, legend)
            return self.from_timeline(items), max((t for t, _ in items), default=0.0)
        if isinstance(source, Observable):
            return source, 0.0
        items = list(source)
        return self.from_timeline(items), max((t for t, _ in items), default=0.0)

