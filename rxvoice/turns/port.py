"""The narrow ways out of the turn machine: the port its decisions call, the words it asks of a stage.

Every effect of a decision is a call on a :class:`TurnPort` (send a frame,
arm or disarm a named timer, run a strategy's resource call, raise an
event) or on :class:`Words` (the words of the turn, when a stage keeps
them). A stage carries the calls out (:class:`rxvoice.pipeline.shell.TurnShell`);
a test records them (:class:`RecordingPort`).

A timer is named by its owner and a key. A strategy owns its timers by its
place in the chains (an ``int``: start strategies first, then stop
strategies, from 0); the machine's own timers have named owners:
:data:`WATCHDOG`, :data:`IDLE_OWNER`, and :func:`mute_owner` for mute
strategy ``i``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, Protocol, TypeAlias

from ..frames import Direction, Frame, InterimTranscriptionFrame, TranscriptionFrame
from .controller import TurnController

__all__ = [
    "IDLE_OWNER",
    "MUTE_OWNER",
    "WATCHDOG",
    "Owner",
    "PassWords",
    "RecordingPort",
    "TimerOwner",
    "TurnPort",
    "Words",
    "mute_owner",
]


class Owner(NamedTuple):
    """A timer owner of the machine's own: the watchdog, the idle watch, mute strategy ``place``."""

    kind: str
    place: int = 0


WATCHDOG = Owner("watchdog")
"""The owner of the stop watchdog's timer."""

IDLE_OWNER = Owner("idle")
"""The owner of the idle timer."""

MUTE_OWNER = Owner("mute")
"""The owner of the first mute strategy's timers (:func:`mute_owner` names the others)."""

def mute_owner(index: int) -> Owner:
    """The owner of mute strategy ``index``'s timers."""
    return Owner("mute", index)


TimerOwner: TypeAlias = int | Owner
"""Who armed a timer: a strategy's place in the chains, or one of the machine's named owners."""


class TurnPort(Protocol):
    """The narrow way out of the machine: every effect of a decision is one of these calls."""

    def emit(self, frame: Frame, direction: Direction) -> None:
        """Send ``frame`` to the neighbour in ``direction``."""

    def arm(self, owner: TimerOwner, key: str, delay: float) -> None:
        """Fire timer ``(owner, key)`` after ``delay`` seconds (re-arming moves it)."""

    def disarm(self, owner: TimerOwner, key: str) -> None:
        """Cancel timer ``(owner, key)`` (harmless when it is not armed)."""

    def disarm_all(self) -> None:
        """Cancel every timer of the session (it is ending)."""

    def call(self, owner: int, key: str | None, fn: Callable[[Any], Any], offload: bool) -> None:
        """Run ``fn(resource of owner)``: inline, or off the session; the result comes back to ``key``.

        An inline call's result may come back at once: the machine holds it
        until the decision under way is done.
        """

    def listens(self, name: str) -> bool:
        """Whether anyone listens to event ``name`` (a report nobody reads is not built)."""

    def event(self, name: str, payload: Any = None) -> None:
        """Raise event ``name``."""

    def callback(self, fn: Callable[[Any], Any]) -> None:
        """Call an application callback with the stage (``on_idle``)."""

    def use(self, controller: TurnController) -> None:
        """A service's recommendation replaced the strategies: cancel their timers, swap their resources."""


class Words(Protocol):
    """What the machine asks of whoever keeps the turn's words (the user aggregator)."""

    def transcript(self, frame: TranscriptionFrame, direction: Direction, late: bool, now: float) -> None:
        """A final transcript arrived (``late``: it belongs to the turn already answered)."""

    def interim(self, frame: InterimTranscriptionFrame, direction: Direction) -> None:
        """An interim transcript arrived.

        Words that do nothing with interims may say so once with an attribute ``takes_interims = False``:
        the machine then does not call this (three or so interims a turn, each a call that did nothing).
        """

    def pending(self) -> bool:
        """Whether words are gathered that no message holds yet."""

    def reset(self) -> None:
        """Drop the words gathered outside a turn (they did not make one)."""

    def started(self, now: float) -> None:
        """A turn started."""

    def commit(self, now: float) -> None:
        """Write what was said so far as one message and ask for the answer."""

    def content(self) -> tuple[str, str, float | None]:
        """The turn's words so far, the speaker's id, when its words began (``None``: not known)."""

    def finished(self, now: float, turn: Any) -> tuple[bool, bool]:
        """The turn is over (its report is out); the words start over (``turn``: the ``TurnState``).

        Returns whether it had words, and whether a reply was asked for (words, or the empty-turn prompt).
        """

    def ended(self, now: float) -> None:
        """The session ends: nothing said may stay unwritten."""

    def resume(self, now: float) -> str | None:
        """The last turn ended too soon and reopens: its words take the continuation in.

        Returns the words it ended with (``None``: nothing to reopen; the new
        turn is an ordinary one).
        """

    def speculate(self, now: float, words_in: bool = True) -> None:
        """The turn's end is likely: ask the model early with the words so far (speculation is on).

        ``words_in``: the last speech's final words are in (else only an interim can stand for them).
        """

    def withdraw(self, now: float) -> None:
        """The user went on: drop an answer asked for early (speculation is on)."""


class PassWords:
    """Words for a stage that keeps none: transcripts go on downstream; it only notes that words came."""

    __slots__ = ("_port", "had_words")

    def __init__(self, port: TurnPort) -> None:
        self._port = port
        self.had_words = False

    def transcript(self, frame: TranscriptionFrame, direction: Direction, late: bool, now: float) -> None:
        self._port.emit(frame, direction)
        if frame.text.strip():
            self.had_words = True

    def interim(self, frame: InterimTranscriptionFrame, direction: Direction) -> None:
        self._port.emit(frame, direction)

    def pending(self) -> bool:
        return False

    def reset(self) -> None:
        self.had_words = False

    def started(self, now: float) -> None:
        return None

    def commit(self, now: float) -> None:
        return None

    def content(self) -> tuple[str, str, float | None]:
        return "", "", None

    def finished(self, now: float, turn: Any) -> tuple[bool, bool]:
        had, self.had_words = self.had_words, False
        return had, had

    def ended(self, now: float) -> None:
        return None

    def resume(self, now: float) -> str | None:
        return None  # no words kept here: the stage that keeps them recovers the turn

    def speculate(self, now: float, words_in: bool = True) -> None:
        return None  # no words kept here: nothing to ask with

    def withdraw(self, now: float) -> None:
        return None


class _ResultSink(Protocol):
    def on_result(self, s: Any, owner: int, key: str, value: Any, now: float) -> None: ...


class RecordingPort:
    """A :class:`TurnPort` that records every call as a tuple: ``("emit", frame, direction)``, ...

    Inline resource calls run on ``resources`` (one per strategy, ``None``
    by default) and their results come back at once; off-session calls are
    only recorded (feed their results back yourself).
    """

    def __init__(self, machine: _ResultSink | None = None, *, listening: bool = True,
                 resources: Sequence[Any] = ()) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.listening = listening
        self.resources = list(resources)
        self.machine = machine
        self.state: Any = None
        """The ``TurnState`` the inline results go back to."""
        self.now = 0.0

    def emit(self, frame: Frame, direction: Direction) -> None:
        self.calls.append(("emit", frame, direction))

    def arm(self, owner: TimerOwner, key: str, delay: float) -> None:
        self.calls.append(("arm", owner, key, delay))

    def disarm(self, owner: TimerOwner, key: str) -> None:
        self.calls.append(("disarm", owner, key))

    def disarm_all(self) -> None:
        self.calls.append(("disarm_all",))

    def call(self, owner: int, key: str | None, fn: Callable[[Any], Any], offload: bool) -> None:
        self.calls.append(("call", owner, key, offload))
        if offload:
            return
        resource = self.resources[owner] if 0 <= owner < len(self.resources) else None
        try:
            value = fn(resource)
        except Exception as exc:
            value = exc
        if key is not None and self.machine is not None and self.state is not None:
            self.machine.on_result(self.state, owner, key, value, self.now)

    def listens(self, name: str) -> bool:
        return self.listening

    def event(self, name: str, payload: Any = None) -> None:
        self.calls.append(("event", name, payload))

    def callback(self, fn: Callable[[Any], Any]) -> None:
        self.calls.append(("callback", fn))

    def use(self, controller: TurnController) -> None:
        self.calls.append(("use", controller))

    def take(self) -> list[tuple[Any, ...]]:
        """The calls recorded since the last take."""
        calls, self.calls = self.calls, []
        return calls
