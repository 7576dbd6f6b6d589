"""What the user aggregator's core and the turn processor's core share.

Both decide turns with the same pieces (controller, mute, idle watch); only
what they do with a decision differs (the aggregator writes the words, the
processor only announces). The common configuration and the translation of
mute and idle decisions into shell effects live here, once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

from ..frames import (
    Frame,
    InputAudioRawFrame,
    InterimTranscriptionFrame,
    InterruptionFrame,
    ProposedUserStartedSpeakingFrame,
    ProposedUserStoppedSpeakingFrame,
    TranscriptionFrame,
    UserMuteStartedFrame,
    UserMuteStoppedFrame,
    UserStartedSpeakingFrame,
    UserStoppedSpeakingFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from ..turns.config import TurnsConfig
from ..turns.controller import TurnController
from ..turns.idle import IDLE_TYPES, IdleEffect
from ..turns.mute import MuteStrategy, mute_types
from .effects import Broadcast, Callback, Raise, Timer

__all__ = ["IDLE_OWNER", "USER_INPUT", "TurnCoreBase", "UseController"]

IDLE_OWNER = -2
"""The owner index of the idle timer (strategies own 0 and up)."""

USER_INPUT: frozenset[type[Frame]] = frozenset({
    InterruptionFrame, VADUserStartedSpeakingFrame, VADUserStoppedSpeakingFrame,
    ProposedUserStartedSpeakingFrame, ProposedUserStoppedSpeakingFrame, UserStartedSpeakingFrame,
    UserStoppedSpeakingFrame, InputAudioRawFrame, InterimTranscriptionFrame, TranscriptionFrame,
})
"""What counts as the user's input: dropped (not queued) while the user is muted."""


class UseController(NamedTuple):
    """A service's recommendation replaced this session's turn controller.

    The shell cancels the previous strategies' timers, releases their
    resources, opens the new ones' and widens the frame types it hands in.
    """

    controller: TurnController


def _always(_name: str) -> bool:
    return True


class TurnCoreBase:
    """The turn-deciding configuration of a core, and its mute and idle announcements."""

    def __init__(self, turns: TurnsConfig, mute: Sequence[MuteStrategy[Any]], own: Iterable[type[Frame]]) -> None:
        start, stop = turns.chains()
        self.turns = turns
        # Which events anyone listens to: a report nobody reads is not built (set by the owner).
        self.listening: Callable[[str], bool] = _always
        self.controller = TurnController(start, stop, turns.stop_timeout)
        self.mute: tuple[MuteStrategy[Any], ...] = (*mute, *turns.mute)
        self.mute_types = mute_types(self.mute)
        handled = set(own) | self.controller.handled_types | self.mute_types | IDLE_TYPES
        if self.mute:
            handled |= USER_INPUT
        self.handled_types: frozenset[type[Frame]] = frozenset(handled)

    def handled_with(self, controller: TurnController) -> frozenset[type[Frame]]:
        """The frame types to hand in once a session runs ``controller``."""
        return self.handled_types | controller.handled_types

    def _announce_mute(self, muted: bool, out: list[Any]) -> None:
        """The user was muted or unmuted: tell the app and both neighbours."""
        name = "on_user_mute_started" if muted else "on_user_mute_stopped"
        if self.listening(name):
            out.append(Raise(name))
        out.append(Broadcast(UserMuteStartedFrame() if muted else UserMuteStoppedFrame()))

    def _idle_timer(self, effects: Iterable[IdleEffect], out: list[Any]) -> None:
        """Carry the idle watch's arm and disarm decisions to the idle timer."""
        for e in effects:
            if e.kind == "arm":
                out.append(Timer(IDLE_OWNER, "idle", e.delay))
            elif e.kind == "disarm":
                out.append(Timer(IDLE_OWNER, "idle", None))

    def _idle_fired(self, effects: Iterable[IdleEffect], out: list[Any]) -> None:
        """The user stayed quiet too long: raise the event and run the app's callback."""
        for e in effects:
            if e.kind == "fire":
                if self.listening("on_user_turn_idle"):
                    out.append(Raise("on_user_turn_idle"))
                if self.turns.on_idle is not None:
                    out.append(Callback(self.turns.on_idle))
