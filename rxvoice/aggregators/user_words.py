"""The user's words: what each turn writes to the conversation.

The turn machine (:mod:`rxvoice.turns.machine`) decides when a turn starts,
when to answer and when it is over; this core keeps only the words. A final
transcript is gathered into the turn (or, a late tail of the turn already
answered, held for the next one); an inference writes what was gathered as
one user message and asks the model to answer; a turn with no words at all
may have the model ask the user to repeat (the empty-turn policy); a turn
the machine reopens (a false end recovered) takes its continuation into the
message it already wrote. Nothing here touches a stream: writes, frames and
events are calls on the shell.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from ..context import LLMContext
from ..frames import DOWN, Direction, Frame, InterimTranscriptionFrame, TranscriptionFrame
from ..text.parts import Part, concatenate
from ..turns.config import EmptyUserTurnConfig
from ..turns.machine import TurnState
from ..turns.reports import EVENT_USER_TURN_MESSAGE_ADDED, iso8601
from .reports import UserTurnMessageAdded

__all__ = ["UserWords", "WordsPort"]


class WordsPort(Protocol):
    """What the words core asks of its shell."""

    def write(self, op: Any) -> bool:
        """Change the conversation (``op(context)``); ``False`` if it refused."""

    def emit_context(self, direction: Direction = DOWN) -> None:
        """Send the conversation as it stands now."""

    def messages(self) -> Sequence[Any]:
        """The conversation's messages as they stand now."""

    def emit(self, frame: Frame, direction: Direction) -> None:
        """Send a frame."""

    def listens(self, name: str) -> bool:
        """Whether anyone listens to ``name``."""

    def event(self, name: str, payload: Any = None) -> None:
        """Raise ``name``."""


class UserWords:
    """The words of one session's user turns (implements :class:`rxvoice.turns.Words`)."""

    __slots__ = ("empty_turn", "held", "last", "message", "parts", "port", "recoveries", "rejoin", "started_at",
                 "user_id", "whole")

    def __init__(self, port: WordsPort, empty_turn: EmptyUserTurnConfig | None) -> None:
        self.port = port
        self.empty_turn = empty_turn
        self.parts: list[Part] = []
        self.held: list[Part] = []
        self.started_at: float | None = None
        self.whole = ""
        self.user_id = ""
        self.recoveries = 0
        self.message: str | None = None
        """The text of the last user message this turn wrote."""
        self.last: tuple[str, str, float | None] | None = None
        """The last answered turn: its last message, its words, when it began (what a recovery reopens)."""
        self.rejoin: str | None = None
        """The message a reopened turn's next words join (``None``: write a new one)."""

    # -- gathering -------------------------------------------------------------------------------

    def transcript(self, frame: TranscriptionFrame, direction: Direction, late: bool, now: float) -> None:
        text = frame.text
        if not text.strip():
            return
        part = Part(text, frame.includes_inter_frame_spaces)
        if late:  # a late tail of the answered turn: it joins the next turn's message
            self.held.append(part)
        else:
            if self.started_at is None:
                self.started_at = now
            self.parts.append(part)
        self.user_id = frame.user_id or self.user_id

    def interim(self, frame: InterimTranscriptionFrame, direction: Direction) -> None:
        return None  # a guess the final transcript will repeat

    def pending(self) -> bool:
        return bool(self.parts or self.held)

    def reset(self) -> None:
        self.parts.clear()

    # -- writing ---------------------------------------------------------------------------------

    def started(self, now: float) -> None:
        self.started_at = now
        self.whole = ""
        self.message = None
        self.last = None

    def commit(self, now: float) -> None:
        """Write what was gathered (a held late tail first) as one user message and ask for the answer."""
        if self.held:
            parts = [*self.held, *self.parts]
            self.held.clear()
        elif self.parts:
            parts = self.parts
        else:
            return
        text = concatenate(parts)
        self.parts = []
        if not text:
            return
        port = self.port
        old, self.rejoin = self.rejoin, None
        message = text
        if old is None:
            written = port.write(lambda c: c.add_user_message(text))
        else:
            joined = concatenate([Part(old), Part(text)])
            merged = False

            def join(c: LLMContext) -> None:
                nonlocal merged
                merged = c.reopen_user_message(old, joined)
                if not merged:  # cannot be reopened in place: the continuation is a message of its own
                    c.add_user_message(text)

            written = port.write(join)
            if written and merged:
                message = joined
        if not written:
            return
        port.emit_context(DOWN)
        self.message = message
        if port.listens(EVENT_USER_TURN_MESSAGE_ADDED):
            started = now if self.started_at is None else self.started_at
            port.event(EVENT_USER_TURN_MESSAGE_ADDED, UserTurnMessageAdded(text, iso8601(started), self.user_id))
        self.whole = f"{self.whole} {text}" if self.whole else text

    def content(self) -> tuple[str, str, float | None]:
        return self.whole, self.user_id, self.started_at

    def finished(self, now: float, turn: TurnState) -> tuple[bool, bool]:
        self._ask_again()
        had_words = bool(self.whole)
        if had_words:
            self.recoveries = 0
            answered = True
        else:
            answered = self._empty_turn(turn)
        self.last = (self.message, self.whole, self.started_at) if had_words and self.message is not None else None
        self.message = None
        self.started_at = None
        self.whole = ""
        return had_words, answered

    def resume(self, now: float) -> str | None:
        """The machine reopens the last turn: its words and start come back, its message takes what follows.

        Only while its message is still the conversation's last: once a reply
        is written (a text pipeline shows it at once; a spoken one writes only
        what was heard), the user has had an answer.
        """
        if self.last is None or not _answer_unwritten(self.port.messages(), self.last[0]):
            return None  # the answer is in the conversation (shown as text, or spoken): a new turn
        self.rejoin, self.whole, self.started_at = self.last
        self.message = self.rejoin
        self.last = None
        return self.whole

    def _empty_turn(self, turn: TurnState) -> bool:
        """A turn with no words: if it cut the bot off for nothing, have the model ask again (``True``: asked)."""
        cfg = self.empty_turn
        if cfg is None:
            return False
        prompt = cfg.interrupted_prompt if turn.interrupted_bot else cfg.idle_prompt
        if not prompt or self.recoveries >= cfg.max_consecutive_recoveries or turn.muted or turn.idle.calls > 0:
            return False
        if not self.port.write(lambda c: c.add_developer_message(prompt)):
            return False
        self.port.emit_context(DOWN)
        self.recoveries += 1
        return True

    def _ask_again(self) -> None:
        """A reopened turn closes with nothing more said: the unheard reply goes, the answer it lost is asked again."""
        if self.rejoin is None:
            return
        old, self.rejoin = self.rejoin, None
        if self.port.write(lambda c: c.reopen_user_message(old, old)):
            self.port.emit_context(DOWN)
        self.message = old

    def ended(self, now: float) -> None:
        self._ask_again()  # the session ends on a reopened turn: it is answered, nothing of the cut reply stays
        self.whole = ""
        self.started_at = None
        self.message = self.last = self.rejoin = None


_NOTES = frozenset({"developer", "system"})
"""Messages an app writes beside the turn (a developer note): not an answer to it."""


def _answer_unwritten(messages: Sequence[Any], message: str) -> bool:
    """Whether ``message`` is still the last user message and nothing answered it yet.

    An assistant or tool message after it is an answer; an app's notes
    (developer, system) and provider-specific messages (a thought) are not.
    """
    for m in reversed(messages):
        if not isinstance(m, dict) or m.get("role") in _NOTES:
            continue
        return bool(m.get("role") == "user" and m.get("content") == message)
    return False
