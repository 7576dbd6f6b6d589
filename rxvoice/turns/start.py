"""Start strategies: when does the user's turn begin?"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar, NamedTuple

from .._seconds import check_seconds
from ..errors import ConfigurationError
from ..frames import (
    BotSpeakingFrame,
    BotStartedSpeakingFrame,
    BotStoppedSpeakingFrame,
    Frame,
    InterimTranscriptionFrame,
    ProposedUserStartedSpeakingFrame,
    TranscriptionFrame,
    UserSpeakingFrame,
    UserStartedSpeakingFrame,
    VADUserStartedSpeakingFrame,
)
from ..text.blank import is_blank, visible_words
from .strategy import HALT, NOTHING, RESET_AGGREGATION, Arm, Effects, Start, StartStrategy

__all__ = ["ExternalStart", "MinWordsStart", "TranscriptionStart", "VADStart", "WakePhraseStart", "WakeState"]

_STARTED: Effects = (Start(), HALT)
_ADOPTED: Effects = (Start(interruptions=False, speaking_frames=False), HALT)
"""A turn announced elsewhere, adopted: no second announcement, no second interruption."""


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
    return isinstance(text, str) and not is_blank(text)


@dataclass(frozen=True)
class TranscriptionStart(StartStrategy[None]):
    """A transcript (interim too, unless ``use_interim=False``) opens the turn.

    Blank transcripts (whitespace or invisible characters only) open nothing. Needed when speech reaches the
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
        if not isinstance(text, str) or is_blank(text):
            return state, NOTHING
        needed = self.min_words if state.bot_speaking else 1
        if len(visible_words(text)) >= needed:
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
            return None, _ADOPTED
        return None, _STARTED


class WakeState(NamedTuple):
    """Whether the wake phrase was heard (and what was heard while waiting for it)."""

    awake: bool = False
    heard: str = ""


_NOT_WORD = re.compile(r"[^\w\s]", re.UNICODE)
_HEARD_CAP = 250


@dataclass(frozen=True)
class WakePhraseStart(StartStrategy[WakeState]):
    """Nothing opens a turn until the user says a wake phrase ("hey assistant"). Put it first.

    Asleep, it halts the start chain for transcripts, VAD starts and
    proposals, so no later start strategy can open a turn; each final
    transcript is checked (punctuation dropped, case and spacing ignored,
    accumulated over the last 250 characters) and one that does not match
    is dropped from the aggregation. The match opens the turn, keeping its
    words. Awake, it lets the chain through; after ``timeout`` seconds
    without activity (speech, transcripts, the bot speaking) it falls asleep
    again, or, with ``single_activation``, ``timeout`` seconds after the
    phrase whatever happens.
    """

    phrases: Sequence[str] = field(default=())
    timeout: float = 10.0
    single_activation: bool = False
    enable_interruptions: bool = True
    enable_user_speaking_frames: bool = True
    handles: ClassVar[frozenset[type[Frame]]] = frozenset({
        TranscriptionFrame, InterimTranscriptionFrame, VADUserStartedSpeakingFrame, ProposedUserStartedSpeakingFrame,
        UserStartedSpeakingFrame, UserSpeakingFrame, BotSpeakingFrame,
    })

    def __post_init__(self) -> None:
        phrases = [self.phrases] if isinstance(self.phrases, str) else list(self.phrases)
        words = [_NOT_WORD.sub(" ", p).split() if isinstance(p, str) else [] for p in phrases]
        if not phrases or not all(words):
            raise ConfigurationError(f"WakePhraseStart needs one or more non-empty phrases, got {self.phrases!r}")
        check_seconds(self.timeout, "WakePhraseStart.timeout", positive=True)
        object.__setattr__(self, "phrases", tuple(phrases))
        pattern = "|".join(r"\b" + r"\s*".join(re.escape(w) for w in ws) + r"\b" for ws in words)
        object.__setattr__(self, "_pattern", re.compile(pattern, re.IGNORECASE | re.UNICODE))

    def initial(self) -> WakeState:
        return WakeState()

    def on_frame(self, state: WakeState, frame: Frame, now: float) -> tuple[WakeState, Effects]:
        t = type(frame)
        if state.awake:
            if self.single_activation or t is UserStartedSpeakingFrame or t is ProposedUserStartedSpeakingFrame:
                return state, NOTHING
            return state, (Arm("wake", self.timeout),)
        if t is not TranscriptionFrame:
            return state, (HALT,)
        text = getattr(frame, "text", "")
        if not isinstance(text, str) or is_blank(text):
            return state, (HALT,)
        heard = f"{state.heard} {_NOT_WORD.sub('', text)}".strip()[-_HEARD_CAP:]
        if self._pattern.search(heard):  # type: ignore[attr-defined]
            return WakeState(True, ""), (Arm("wake", self.timeout), Start(), HALT)
        return WakeState(False, heard), (RESET_AGGREGATION, HALT)

    def on_timer(self, state: WakeState, key: str, now: float) -> tuple[WakeState, Effects]:
        return (WakeState(), NOTHING) if key == "wake" else (state, NOTHING)

    def on_turn_started(self, state: WakeState, now: float) -> tuple[WakeState, Effects]:
        if state.awake and not self.single_activation:
            return state, (Arm("wake", self.timeout),)
        return state, NOTHING
