"""The user's words: what each turn writes to the conversation.

The turn machine (:mod:`rxvoice.turns.machine`) decides when a turn starts,
when to answer and when it is over; this core keeps only the words. A final
transcript is gathered into the turn (or, a late tail of the turn already
answered, held for the next one); an inference writes what was gathered as
one user message and asks the model to answer; a turn with no words at all
may have the model ask the user to repeat (the empty-turn policy); a turn
the machine reopens (a false end recovered) takes its continuation into the
message it already wrote. With speculation on
(:mod:`rxvoice.turns.speculation`), a likely end asks the model early with
the words so far (the finals, and an interim guess after them) on a copy of
the conversation; the turn's end releases that answer or withdraws it.
Nothing here touches a stream: writes, frames and events are calls on the
shell.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from ..context import ContextSnapshot, LLMContext
from ..context.messages import text_message, user_message
from ..frames import (
    DOWN,
    Direction,
    EagerEndOfTurnCancelFrame,
    Frame,
    InterimTranscriptionFrame,
    LLMSpeculationEndedFrame,
    LLMSpeculativeContextFrame,
    TranscriptionFrame,
)
from ..text.blank import is_blank
from ..text.parts import concatenate
from ..turns.config import EmptyUserTurnConfig
from ..turns.machine import TurnState
from ..turns.reports import EVENT_USER_TURN_MESSAGE_ADDED, EVENT_USER_TURN_SPECULATION, iso8601
from ..turns.speculation import Speculation, SpeculationReport, Speculator
from .reports import UserTurnMessageAdded

__all__ = ["UserWords", "WordsPort"]


class WordsPort(Protocol):
    """What the words core asks of its shell."""

    def write(self, op: Any) -> bool:
        """Change the conversation (``op(context)``); ``False`` if it refused."""

    def emit_context(self, direction: Direction = DOWN, *, speculation_id: int | None = None) -> None:
        """Send the conversation as it stands now (``speculation_id``: the held answer that stands for it)."""

    def snapshot(self) -> ContextSnapshot:
        """The conversation as it stands now."""

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

    __slots__ = ("empty_turn", "guess", "held", "last", "message", "parts", "port", "recoveries", "rejoin",
                 "speculator", "started_at", "takes_interims", "user_id", "whole")

    def __init__(
        self, port: WordsPort, empty_turn: EmptyUserTurnConfig | None, speculation: Speculation | None = None
    ) -> None:
        self.port = port
        self.empty_turn = empty_turn
        self.speculator = Speculator(speculation) if speculation is not None else None
        """One session's speculation (``None``: off)."""
        self.takes_interims = self.speculator is not None
        """Interims are only a speculation's guess (:meth:`interim`): without one the machine need not tell them."""
        self.guess = ""
        """The latest interim transcript after the last final (words so far for a speculation only)."""
        self.parts: list[tuple[str, bool]] = []
        """The finals of the turn so far, as ``(text, includes_inter_frame_spaces)`` pairs for :func:`concatenate`
        (one is built for every final: a pair costs a fraction of a :class:`~rxvoice.text.parts.Part`)."""
        self.held: list[tuple[str, bool]] = []
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
        part = (text, frame.includes_inter_frame_spaces)
        if late:  # a late tail of the answered turn: it joins the next turn's message
            self.held.append(part)
        else:
            if self.started_at is None:
                self.started_at = now
            self.parts.append(part)
        self.user_id = frame.user_id or self.user_id
        self.guess = ""
        if self.speculator is not None and self.speculator.current is not None:
            self._recheck(now)

    def interim(self, frame: InterimTranscriptionFrame, direction: Direction) -> None:
        # A guess the final transcript will repeat: never written, only asked with early (speculation).
        if self.speculator is not None:
            self.guess = "" if is_blank(frame.text) else frame.text

    def pending(self) -> bool:
        return bool(self.parts or self.held)

    def reset(self) -> None:
        self.parts.clear()
        self.guess = ""

    # -- writing ---------------------------------------------------------------------------------

    def started(self, now: float) -> None:
        self.started_at = now
        self.whole = ""
        self.message = None
        self.last = None
        if self.speculator is not None:
            self.speculator.turn_started()

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
        self.guess = ""
        if not text:
            return
        port = self.port
        old, self.rejoin = self.rejoin, None
        message = text
        release = None
        if self.speculator is not None:
            release, withdrawn = self.speculator.commit(text, port.snapshot().version, now)
            if withdrawn is not None:
                self._cancel(withdrawn, "the turn ended with other words")
        if old is None:
            written = port.write(lambda c: c.add_user_message(text))
        else:
            joined = concatenate([(old, False), (text, False)])
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
            if release is not None:
                self._cancel(release, "the words could not be written")
            return
        if release is None:
            port.emit_context(DOWN)
        else:
            port.emit_context(DOWN, speculation_id=release)
        self.message = message
        if port.listens(EVENT_USER_TURN_MESSAGE_ADDED):
            started = now if self.started_at is None else self.started_at
            port.event(EVENT_USER_TURN_MESSAGE_ADDED, UserTurnMessageAdded(text, iso8601(started), self.user_id))
        self.whole = f"{self.whole} {text}" if self.whole else text

    def content(self) -> tuple[str, str, float | None]:
        return self.whole, self.user_id, self.started_at

    def finished(self, now: float, turn: TurnState) -> tuple[bool, bool]:
        self.withdraw(now, "the turn ended without these words")
        self.guess = ""
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

    # -- speculation ---------------------------------------------------------------------------

    def words_so_far(self) -> str:
        """What a message written now would say, with the latest interim guess after it."""
        parts = [*self.held, *self.parts]
        if self.guess:
            parts.append((self.guess, False))
        return concatenate(parts)

    def speculate(self, now: float, words_in: bool = True) -> None:
        """The turn's end is likely: ask the model, on a copy of the conversation, with the words so far.

        Not for a reopened turn (its words rejoin a message already written),
        nor before the last speech's words are in unless an interim guess
        stands for them.
        """
        spec = self.speculator
        if spec is None or self.rejoin is not None or (not words_in and not self.guess):
            return
        words = self.words_so_far()
        if not words:
            return
        base = self.port.snapshot()
        asked, withdrawn = spec.ask(words, base.version, now)
        if withdrawn is not None:
            self._cancel(withdrawn, "the words changed")
        if asked is None:
            return
        try:
            message = text_message(user_message(words), words)
        except Exception:  # words the conversation would refuse: the turn's end reports them
            spec.withdraw()
            return
        snapshot = ContextSnapshot(base.messages.appended(message), base.tools, base.tool_choice, base.version)
        self.port.emit(LLMSpeculativeContextFrame(snapshot, asked), DOWN)
        port = self.port
        if port.listens(EVENT_USER_TURN_SPECULATION):
            port.event(EVENT_USER_TURN_SPECULATION, SpeculationReport(asked, "asked", words))

    def withdraw(self, now: float, reason: str = "the user went on") -> None:
        """Drop the answer asked for early (the user went on, or the turn ended without its words)."""
        if self.speculator is None:
            return
        withdrawn = self.speculator.withdraw()
        if withdrawn is not None:
            self._cancel(withdrawn, reason)

    def _recheck(self, now: float) -> None:
        """New words came: an answer asked for other words is dropped at once (it frees the slot)."""
        assert self.speculator is not None
        stale = self.speculator.stale(self.words_so_far(), now)
        if stale is not None:
            self._cancel(stale, "the words changed")

    def _cancel(self, speculation_id: int, reason: str) -> None:
        self.port.emit(EagerEndOfTurnCancelFrame(speculation_id, reason), DOWN)

    def speculation_ended(self, frame: LLMSpeculationEndedFrame) -> None:
        """The model reports what became of a speculative request: count it, tell the app."""
        if self.speculator is None:
            return
        report = self.speculator.ended(frame.speculation_id, frame.outcome, frame.reason, frame.tokens)
        port = self.port
        if port.listens(EVENT_USER_TURN_SPECULATION):
            port.event(EVENT_USER_TURN_SPECULATION, report)

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
        self.withdraw(now, "the session ended")
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
