"""Start strategies: when does the user's turn begin?"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, NamedTuple

from ..errors import ConfigurationError
from ..frames import (
    BotStartedSpeakingFrame,
    BotStoppedSpeakingFrame,
    Frame,
    InterimTranscriptionFrame,
    ProposedUserStartedSpeakingFrame,
    TranscriptionFrame,
    UserStartedSpeakingFrame,
    VADUserStartedSpeakingFrame,
)
from .strategy import HALT, NOTHING, RESET_AGGREGATION, Effects, Start, StartStrategy

__all__ = ["ExternalStart", "MinWordsStart", "TranscriptionStart", "VADStart"]

_STARTED: Effects = (Start(), HALT)


@dataclass(frozen=True)
class VADStart(StartStrategy[None]):
    """A VAD user-started frame opens the turn (and interrupts the bot)."""

    enable_interruptions: bool = True
    enable_user_speaking_frames: bool = True
    handles: ClassVar[frozenset[type[Frame]]] = frozenset({VADUserStartedSpeakingFrame})

    def initial(self) -> None:
        return None

    def on_frame(self, state: None, frame: Frame, now: float) -> tuple[None, Effects]:
        return None, _STARTED


def _is_words(frame: Frame) -> bool:
    text = getattr(frame, "text", "")
    return isinstance(text, str) and not text.isspace() and text != ""


@dataclass(frozen=True)
class TranscriptionStart(StartStrategy[None]):
    """A transcript (interim too, unless ``use_interim=False``) opens the turn.

    Whitespace-only transcripts open nothing. Needed when speech reaches the
    STT but not the VAD (soft speech) and in text-only sessions.
    """

    use_interim: bool = True
    enable_interruptions: bool = True
    enable_user_speaking_frames: bool = True
    handles: ClassVar[frozenset[type[Frame]]] = frozenset({TranscriptionFrame, InterimTranscriptionFrame})

    def initial(self) -> None:
        return None

    def on_frame(self, state: None, frame: Frame, now: float) -> tuple[None, Effects]:
        if type(frame) is InterimTranscriptionFrame and not self.use_interim:
            return None, NOTHING
        if not _is_words(frame):
            return None, NOTHING
        return None, _STARTED


class MinWordsState(NamedTuple):
    """Whether the bot is speaking (a turn then needs ``min_words``)."""

    bot_speaking: bool = False


@dataclass(frozen=True)
class MinWordsStart(StartStrategy[MinWordsState]):
    """While the bot speaks, a turn needs ``min_words`` words in one transcript.

    Fewer words are dropped from the aggregation (a backchannel such as "uh
    huh" does not interrupt), and the transcript that finally opens the turn
    is kept in it. When the bot is quiet, one word is enough.
    """

    min_words: int = 3
    use_interim: bool = True
    enable_interruptions: bool = True
    enable_user_speaking_frames: bool = True
    handles: ClassVar[frozenset[type[Frame]]] = frozenset(
        {TranscriptionFrame, InterimTranscriptionFrame, BotStartedSpeakingFrame, BotStoppedSpeakingFrame}
    )

    def __post_init__(self) -> None:
        if isinstance(self.min_words, bool) or not isinstance(self.min_words, int) or self.min_words < 1:
            raise ConfigurationError(f"MinWordsStart needs min_words >= 1, got {self.min_words!r}")

    def initial(self) -> MinWordsState:
        return MinWordsState()

    def on_frame(self, state: MinWordsState, frame: Frame, now: float) -> tuple[MinWordsState, Effects]:
        t = type(frame)
        if t is BotStartedSpeakingFrame:
            return MinWordsState(True), NOTHING
        if t is BotStoppedSpeakingFrame:
            return MinWordsState(False), NOTHING
        if t is InterimTranscriptionFrame and not self.use_interim:
            return state, NOTHING
        text = getattr(frame, "text", "")
        if not isinstance(text, str) or not text.strip():
            return state, NOTHING
        needed = self.min_words if state.bot_speaking else 1
        if len(text.split()) >= needed:
            return state, _STARTED
        return state, (RESET_AGGREGATION,)

    def on_turn_started(self, state: MinWordsState, now: float) -> tuple[MinWordsState, Effects]:
        return MinWordsState(False), NOTHING


@dataclass(frozen=True)
class ExternalStart(StartStrategy[None]):
    """Turn starts decided elsewhere.

    A proposed start (from a service) is resolved into a turn here. A
    user-started frame already announced by a :class:`UserTurnProcessor` is
    adopted without announcing or interrupting again.
    """

    enable_interruptions: bool = True
    enable_user_speaking_frames: bool = True
    resolves_proposals: ClassVar[bool] = True
    handles: ClassVar[frozenset[type[Frame]]] = frozenset(
        {ProposedUserStartedSpeakingFrame, UserStartedSpeakingFrame}
    )

    def initial(self) -> None:
        return None

    def on_frame(self, state: None, frame: Frame, now: float) -> tuple[None, Effects]:
        if type(frame) is UserStartedSpeakingFrame:
            return None, (Start(interruptions=False, speaking_frames=False), HALT)
        return None, _STARTED
