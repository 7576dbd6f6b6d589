"""Subjects whose subscribers cannot hurt each other, or whoever publishes.

reactivex's subjects call their observers in a plain loop: an observer that
raises stops the loop (the observers after it miss the value) and the
exception lands in the publisher. For the conversation's snapshots that
publisher is an aggregator in the middle of a turn, so one faulty transcript
view would stop the model from ever being asked. These subclasses call each
observer on its own: a failure is logged and the others still get the value.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TypeVar

from reactivex.subject import BehaviorSubject, Subject

__all__ = ["ContainedBehaviorSubject", "ContainedSubject"]

log = logging.getLogger("rxvoice.subscribers")

_T = TypeVar("_T")

_CONTAINED: tuple[type[BaseException], ...] = (Exception, asyncio.CancelledError)
"""What a subscriber may raise without reaching the publisher (a ``CancelledError`` included: it is not the
publisher's task being cancelled). ``KeyboardInterrupt`` and ``SystemExit`` go through."""


class ContainedSubject(Subject[_T]):
    """A ``Subject`` whose observers are called one by one, each failure contained."""

    def __init__(self, what: str) -> None:
        super().__init__()
        self.what = what

    def _on_next_core(self, value: _T) -> None:
        with self.lock:
            observers = self.observers.copy()
        for observer in observers:
            try:
                observer.on_next(value)
            except _CONTAINED:
                log.exception("a subscriber of %s raised; contained (the others still got it)", self.what)


class ContainedBehaviorSubject(BehaviorSubject[_T]):
    """A ``BehaviorSubject`` whose observers are called one by one, each failure contained."""

    def __init__(self, value: _T, what: str) -> None:
        super().__init__(value)
        self.what = what

    def put(self, value: _T) -> None:
        """``on_next``, with nobody subscribed only the value stored (no observer layers to go through)."""
        with self.lock:
            if not self.observers and not self.is_stopped and not self.is_disposed:
                self.value = value
                return
        self.on_next(value)

    def _on_next_core(self, value: _T) -> None:
        with self.lock:
            observers = self.observers.copy()
            self.value = value
        for observer in observers:
            try:
                observer.on_next(value)
            except _CONTAINED:
                log.exception("a subscriber of %s raised; contained (the others still got it)", self.what)
