"""The one driver behind every operator of this package: a pure state machine per subscription.

Each operator here is a small state machine with two calls (``push(item)`` returns what that
item completed, ``flush()`` what is still held when the source completes) and this driver,
which creates one machine per subscription and carries its output to the observer. The frame
stages of :mod:`rxvoice.aggregators` run the very same machines in their handlers, so a rule
lives in one place whichever way it is used.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

from reactivex import Observable, abc
from reactivex.disposable import CompositeDisposable, Disposable

from ._curry import curry_flip

__all__ = ["Chunker", "chunked_"]

_T = TypeVar("_T")
_U = TypeVar("_U")
_In = TypeVar("_In", contravariant=True)
_Out = TypeVar("_Out", covariant=True)


class Chunker(Protocol[_In, _Out]):
    """A per-subscription state machine: items in, completed chunks out."""

    def push(self, item: _In) -> Sequence[_Out]:
        """Take one item; return what it completed, in order (often nothing)."""
        ...

    def flush(self) -> Sequence[_Out]:
        """The source completed: return what is still held, and start over."""
        ...


# A machine may also have ``close()``: called once when its subscription is disposed.


@curry_flip
def chunked_(source: Observable[_T], factory: Callable[[], Chunker[_T, _U]]) -> Observable[_U]:
    """Run a fresh ``factory()`` machine per subscription over ``source``.

    A machine that raises sends the error to ``on_error`` (as ``reactivex.operators.map``
    does with its mapper); the source's own error passes through, dropping what is held.
    A machine with a ``close()`` method has it called when the subscription is disposed.

    Examples:
        >>> import reactivex
        >>> from rxvoice.operators import BufferUntil
        >>> out = []
        >>> _ = reactivex.of(1, 2, 0, 3).pipe(chunked_(lambda: BufferUntil(lambda x: x == 0))).subscribe(out.append)
        >>> out
        [[1, 2, 0], [3]]
    """

    def subscribe(observer: abc.ObserverBase[_U], scheduler_: abc.SchedulerBase | None = None) -> abc.DisposableBase:
        machine = factory()  # per subscription: two subscribers never share what is held

        def on_next(item: _T) -> None:
            try:
                done = machine.push(item)
            except Exception as error:
                observer.on_error(error)
                return
            for chunk in done:
                observer.on_next(chunk)

        def on_completed() -> None:
            try:
                rest = machine.flush()
            except Exception as error:
                observer.on_error(error)
                return
            for chunk in rest:
                observer.on_next(chunk)
            observer.on_completed()

        subscription = source.subscribe(on_next, observer.on_error, on_completed, scheduler=scheduler_)
        close = getattr(machine, "close", None)
        if callable(close):
            return CompositeDisposable(subscription, Disposable(close))
        return subscription

    return Observable(subscribe)
