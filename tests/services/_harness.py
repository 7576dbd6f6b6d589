"""A live harness for model stages: inputs on the running loop, outputs recorded with their direction."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from reactivex import abc, typing
from reactivex.disposable import Disposable
from reactivex.scheduler.eventloop import AsyncIOThreadSafeScheduler
from reactivex.subject import Subject

from rxvoice.frames import Frame
from rxvoice.pipeline import DOWN, UP, Direction, Session, Stage, loop_scheduler
from rxvoice.pipeline.stage import as_stage


class SteppedClock(AsyncIOThreadSafeScheduler):
    """The loop's scheduler, except that time stands still until :meth:`advance` moves it (timers fire then)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(loop)
        self.seconds = 1000.0
        self._timers: list[list[Any]] = []

    @property
    def now(self) -> datetime:
        return datetime.fromtimestamp(self.seconds, tz=UTC)

    def schedule_relative(
        self, duetime: typing.RelativeTime, action: typing.ScheduledAction[Any], state: Any = None
    ) -> abc.DisposableBase:
        seconds = self.to_seconds(duetime)
        if seconds <= 0:
            return self.schedule(action, state)
        timer = [self.seconds + seconds, action, state, False]
        self._timers.append(timer)
        return Disposable(lambda: timer.__setitem__(3, True))

    def advance(self, seconds: float) -> None:
        """Move the clock on and fire, in order, the timers that fell due."""
        self.seconds += seconds
        while True:
            due = [t for t in self._timers if t[0] <= self.seconds and not t[3]]
            if not due:
                return
            timer = min(due, key=lambda t: t[0])
            self._timers.remove(timer)
            timer[1](self, timer[2])


class Harness:
    """Runs ``stage`` on the running loop; ``send`` frames in, ``until`` a predicate over what came out holds."""

    def __init__(self, stage: Stage, scheduler: abc.SchedulerBase | None = None) -> None:
        self.stage = stage
        self.seen: list[tuple[Direction, Frame]] = []
        self._changed = asyncio.Event()
        self._down: Subject[Frame] = Subject()
        self._up: Subject[Frame] = Subject()
        self.session = Session(scheduler or loop_scheduler(asyncio.get_running_loop()))
        down_out, up_out = as_stage(stage).duplex(self._down, self._up)
        self.completed = False
        """Whether the downstream output completed."""
        self._subs = [
            down_out.subscribe(lambda f: self._record(DOWN, f), on_completed=self._complete, scheduler=self.session),
            up_out.subscribe(lambda f: self._record(UP, f), scheduler=self.session),
        ]

    def _record(self, direction: Direction, frame: Frame) -> None:
        self.seen.append((direction, frame))
        self._changed.set()

    def _complete(self) -> None:
        self.completed = True
        self._changed.set()

    def end_input(self) -> None:
        """Complete the input downstream (a finite source that has nothing more to send)."""
        self.session.run(lambda _none: self._down.on_completed(), None)

    def notify(self, *_: object) -> None:
        """Wake ``until`` (for event handlers: state changed without a frame leaving)."""
        self._changed.set()

    def send(self, frame: Frame, direction: Direction = DOWN) -> None:
        """Hand ``frame`` to the stage through the session's gate."""
        subject = self._down if direction is DOWN else self._up
        self.session.run(subject.on_next, frame)

    async def until(self, predicate: Callable[[Harness], bool], within: float = 1.5) -> None:
        """Wait (at most ``within`` seconds: a guard, not a pause) until ``predicate(self)`` holds."""
        async with asyncio.timeout(within):
            while not predicate(self):
                self._changed.clear()
                await self._changed.wait()

    def close(self) -> None:
        """Dispose of the run (as a finished pipeline does)."""
        for s in self._subs:
            s.dispose()

    # -- views -----------------------------------------------------------------------

    def down(self, *types: type[Frame]) -> list[Any]:
        """Frames that left downstream (of ``types``, if given)."""
        return [f for d, f in self.seen if d is DOWN and (not types or isinstance(f, types))]

    def up(self, *types: type[Frame]) -> list[Any]:
        """Frames that left upstream (of ``types``, if given)."""
        return [f for d, f in self.seen if d is UP and (not types or isinstance(f, types))]

    def down_types(self) -> list[str]:
        """Names of the frames that left downstream, in order."""
        return [f.name for d, f in self.seen if d is DOWN]

    def count(self, frame_type: type[Frame], direction: Direction = DOWN) -> int:
        """How many frames of ``frame_type`` left in ``direction``."""
        return sum(1 for d, f in self.seen if d is direction and type(f) is frame_type)
