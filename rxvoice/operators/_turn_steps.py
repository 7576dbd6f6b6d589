"""``turn_steps``: the turn machine over a stream of frames, each input's decisions out as one step."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from reactivex import Observable, abc
from reactivex.disposable import CompositeDisposable, Disposable

from ..errors import InvalidFrameError
from ..frames import Frame
from ..pipeline.deadline import Deadlines
from ..pipeline.session import Session, session_of
from ..turns.machine import TurnMachine
from ..turns.port import RecordingPort, TimerOwner
from ..turns.scan import TimerFired, TurnScan, turn_step

__all__ = ["turn_steps_"]


class _TimedPort(RecordingPort):
    """A recording port whose timers run on the session, and whose strategy calls run at once.

    What a stage carries out through its shell, an operator subscription
    carries out here: the calls are recorded for the step, the timers fire
    back into the machine, a model's verdict is computed inline.
    """

    def __init__(self, machine: TurnMachine, session: Session, fire: Callable[[tuple[Hashable, str], float], None],
                 resources: list[Any]) -> None:
        super().__init__(machine, resources=resources)
        self.timers: Deadlines[tuple[Hashable, str]] = Deadlines(session, fire)

    def arm(self, owner: TimerOwner, key: str, delay: float) -> None:
        super().arm(owner, key, delay)
        self.timers.arm((owner, key), delay, self.now)

    def disarm(self, owner: TimerOwner, key: str) -> None:
        super().disarm(owner, key)
        self.timers.disarm((owner, key))

    def disarm_all(self) -> None:
        super().disarm_all()
        self.timers.cancel_all()

    def call(self, owner: int, key: str | None, fn: Callable[[Any], Any], offload: bool) -> None:
        super().call(owner, key, fn, False)  # off the session in a stage; at once here (the result waits its turn)


def turn_steps_(machine: TurnMachine, scheduler: abc.SchedulerBase | None) -> Callable[[Observable[Frame]],
                                                                                       Observable[TurnScan]]:
    def operator(source: Observable[Frame]) -> Observable[TurnScan]:
        def subscribe(
            observer: abc.ObserverBase[TurnScan], scheduler_: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            session, _ = session_of(scheduler or scheduler_)
            strategies = machine.controller.strategies
            resources = [s.open_resource(16000) for s in strategies]
            step = turn_step(machine)
            done = [False]

            def fire(key: tuple[Hashable, str], now: float) -> None:
                feed(TimerFired(key[0], key[1], now))  # type: ignore[arg-type]

            port = _TimedPort(machine, session, fire, resources)
            state = machine.open(port)
            port.state = state
            acc = [TurnScan(state, port)]

            def feed(item: Any) -> None:
                if done[0]:
                    return
                try:
                    acc[0] = step(acc[0], item)
                except Exception as exc:
                    finish()
                    observer.on_error(exc)
                    return
                observer.on_next(acc[0])

            def on_next(frame: Any) -> None:
                if not isinstance(frame, Frame):
                    session.run(fail, InvalidFrameError(f"turn_steps takes frames, got {frame!r:.80}"))
                    return
                session.run(lambda f: feed((f, session.time())), frame)

            def fail(error: Exception) -> None:
                if not done[0]:
                    finish()
                    observer.on_error(error)

            def complete(_: Any) -> None:
                if done[0]:
                    return
                now = session.time()
                port.now = now
                machine.end(state, now)  # the input completed: nothing said is lost, an open turn stops
                last = TurnScan(state, port, tuple(port.take()), state.open)
                finish()
                if last.calls:
                    observer.on_next(last)
                observer.on_completed()

            def finish() -> None:
                done[0] = True
                port.timers.close()
                for strategy, resource in zip(strategies, resources, strict=True):
                    if resource is not None:
                        strategy.close_resource(resource)
                resources[:] = [None] * len(resources)

            subscription = source.subscribe(
                on_next, lambda e: session.run(fail, e), lambda: session.run(complete, None), scheduler=scheduler_,
            )
            return CompositeDisposable(subscription, Disposable(lambda: session.run(lambda _: finish(), None)))

        return Observable(subscribe)

    return operator
