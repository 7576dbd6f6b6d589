"""The start and stop chains of a turn, configured once: which strategy sees which frame.

A :class:`TurnController` is configuration shared by every session: the
strategies in the order they are consulted, the stop watchdog's timeout,
and for each frame type the strategies that see it (routes built once, so
a frame no strategy handles costs a lookup). The turn machine
(:mod:`rxvoice.turns.machine`) runs it; a service's recommendation may
replace it for one session (:mod:`rxvoice.turns.recommend`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..frames import (
    Frame,
    InterimTranscriptionFrame,
    ProposedUserStartedSpeakingFrame,
    ProposedUserStoppedSpeakingFrame,
    TranscriptionFrame,
    UserStartedSpeakingFrame,
    UserStoppedSpeakingFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from .strategy import StartStrategy, StopStrategy, Strategy

__all__ = ["ACTIVITY", "SPEAKING_OFF", "SPEAKING_ON", "TurnController"]

SPEAKING_ON: frozenset[type[Frame]] = frozenset(
    {VADUserStartedSpeakingFrame, UserStartedSpeakingFrame, ProposedUserStartedSpeakingFrame}
)
"""Frames that say the user started speaking."""
SPEAKING_OFF: frozenset[type[Frame]] = frozenset(
    {VADUserStoppedSpeakingFrame, UserStoppedSpeakingFrame, ProposedUserStoppedSpeakingFrame}
)
"""Frames that say the user stopped speaking."""
ACTIVITY: frozenset[type[Frame]] = SPEAKING_ON | SPEAKING_OFF | {TranscriptionFrame, InterimTranscriptionFrame}
"""Frames that count as the user's activity for the stop watchdog."""


class TurnController:
    """The start and stop chains and the watchdog's timeout: configuration shared by every session.

    Args:
        start: Start strategies, in the order they are consulted.
        stop: Stop strategies, in the order they are consulted.
        stop_timeout: Seconds without activity after which an open turn is
            closed although no stop strategy decided (never while the user
            is speaking).
    """

    def __init__(
        self, start: Sequence[StartStrategy[Any]], stop: Sequence[StopStrategy[Any]], stop_timeout: float
    ) -> None:
        self.start: tuple[StartStrategy[Any], ...] = tuple(start)
        self.stop: tuple[StopStrategy[Any], ...] = tuple(stop)
        self.strategies: tuple[Strategy[Any], ...] = (*self.start, *self.stop)
        self.stop_timeout = stop_timeout
        self.recommendation: Any = None
        """The service recommendation this controller was built from (``None``: the application's own)."""
        n = len(self.start)
        self.n_start = n
        types: set[type[Frame]] = set(ACTIVITY)
        for s in self.strategies:
            types |= s.handles
        self.handled_types: frozenset[type[Frame]] = frozenset(types)
        # For each frame type: the start strategies, then the stop strategies, that see it.
        self.routes: dict[type[Frame], tuple[tuple[int, ...], tuple[int, ...]]] = {
            t: (
                tuple(i for i, s in enumerate(self.start) if t in s.handles),
                tuple(n + i for i, s in enumerate(self.stop) if t in s.handles),
            )
            for t in types
        }
        self.adopted: frozenset[type[Frame]] = frozenset(t for t, (a, b) in self.routes.items() if a or b)
        """The frame types some strategy sees (an announced turn no strategy takes is only the user's voice)."""
        self.resolves_proposed_starts = any(s.resolves_proposals for s in self.start)
        """Whether a start strategy turns proposed starts into turns (so they are not passed on)."""
        self.resolves_proposed_stops = any(s.resolves_proposals for s in self.stop)
        """Whether a stop strategy turns proposed stops into turn ends."""
        self.told: dict[str, tuple[tuple[int, Strategy[Any]], ...]] = {
            hook: tuple((i, s) for i, s in enumerate(self.strategies) if _overrides(s, hook))
            for hook in ("on_turn_started", "on_turn_stopped", "on_turn_resumed")
        }
        """For each turn hook, the strategies that answer it (the others keep :class:`Strategy`'s "nothing")."""

    def initial(self) -> list[Any]:
        """Each strategy's state for a new session."""
        return [s.initial() for s in self.strategies]


def _overrides(strategy: Strategy[Any], hook: str) -> bool:
    """Whether ``strategy`` answers ``hook`` with more than the base class's unchanged state and no effects."""
    own = getattr(strategy, "__dict__", ())
    return getattr(type(strategy), hook, None) is not getattr(Strategy, hook) or hook in own
