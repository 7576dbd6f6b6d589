"""A small notifier: one side says "go", a gate somewhere else lets the conversation through.

:class:`~rxvoice.aggregators.GatedContext` waits on something the pipeline cannot
express as a frame order (a classifier deciding whether to answer, a lookup that
has to finish first). That something signals through a :class:`Notifier`, from any
thread, without blocking and without knowing who listens.

A signal raised while nobody listens is remembered, once: three ``notify()`` calls
before anyone subscribes release one waiter, not three (as jargo's
``EventNotifier`` does). A signal raised while someone listens goes to every
listener at once and is not remembered.
"""

from __future__ import annotations

import logging
import threading

from reactivex import Observable, abc
from reactivex.disposable import Disposable

__all__ = ["Notifier"]

log = logging.getLogger("rxvoice.notify")


class Notifier:
    """Signals without payload: ``notify()`` on one side, :attr:`signals` on the other.

    ``notify()`` never blocks and may be called from any thread. :attr:`signals` is
    an observable that emits ``None`` for each signal; a subscriber that arrives
    while a signal is remembered receives it at once (and it is forgotten).

    Examples:
        >>> n = Notifier()
        >>> n.notify(); n.notify()        # nobody listens: remembered once
        >>> got = []
        >>> _ = n.signals.subscribe(lambda _: got.append("go"))
        >>> got
        ['go']
    """

    __slots__ = ("_lock", "_observers", "_pending")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._observers: list[abc.ObserverBase[None]] = []
        self._pending = False

    @property
    def pending(self) -> bool:
        """Whether a signal is remembered for the next listener."""
        return self._pending

    def notify(self) -> None:
        """Signal every listener now; with none, remember one signal for the next."""
        with self._lock:
            observers = list(self._observers)
            if not observers:
                self._pending = True
                return
        for observer in observers:
            try:
                observer.on_next(None)
            except Exception:
                log.exception("a notifier listener raised; contained")

    def clear(self) -> None:
        """Forget a remembered signal."""
        with self._lock:
            self._pending = False

    @property
    def signals(self) -> Observable[None]:
        """One ``None`` per signal, starting with the remembered one, if any."""

        def subscribe(
            observer: abc.ObserverBase[None], _scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            with self._lock:
                self._observers.append(observer)
                fire = self._pending
                self._pending = False
            if fire:
                observer.on_next(None)

            def remove() -> None:
                with self._lock:
                    if observer in self._observers:
                        self._observers.remove(observer)

            return Disposable(remove)

        return Observable(subscribe)

    def __repr__(self) -> str:
        return f"<Notifier pending={self._pending} listeners={len(self._observers)}>"
