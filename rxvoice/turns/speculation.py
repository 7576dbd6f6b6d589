"""Speculative replies: ask the model while the turn's end is likely, hold the answer, release or drop it.

A stop strategy that sees a turn end coming before it decides (the audio
model said complete while the words are still on their way, or the words
are in and only its patience is left) raises
:class:`~rxvoice.turns.strategy.Likely`. With ``TurnsConfig(speculate=...)``
the user aggregator then sends the model the conversation with the words so
far as an ``LLMSpeculativeContextFrame``; a model stage that speculates
answers it into a hold: nothing is spoken, nothing is written, **no tool
call starts** (an answer asking for one is dropped, and the turn's end asks
again). When the turn ends with the same words (:attr:`Speculation.match`)
on the same conversation, its ``LLMContextFrame`` releases the held answer
at once; when the words changed, the conversation changed or the user went
on, an ``EagerEndOfTurnCancelFrame`` drops it: no assistant message, only an
``on_user_turn_speculation`` event.

The trade-off: every request dropped is tokens paid for nothing (at most
:attr:`Speculation.max_per_turn` a turn, one in flight at a time); every one
released is the model's first-token delay taken off the answer.

:class:`Speculator` is one session's bookkeeping (mutable, seen by nobody
else): what is in flight, what this turn asked, what became of each
request. It decides; the words core (:mod:`rxvoice.aggregators.user_words`)
sends the frames.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from .._seconds import optional_seconds
from ..errors import ConfigurationError

__all__ = [
    "MATCH_POLICIES",
    "Speculation",
    "SpeculationReport",
    "SpeculationStats",
    "Speculator",
    "normalized_words",
]

MATCH_POLICIES = ("exact", "normalized")
"""How the words a speculation was asked with must match the turn's final words to release its answer."""

_APOSTROPHES = re.compile("['\u2019\u02bc]")
_NOT_WORD = re.compile(r"[^\w\s]", re.UNICODE)


def normalized_words(text: str) -> str:
    """``text`` as Pipecat's ``NormalizedMatch`` compares it: NFKC, case-folded, apostrophes deleted,
    every other mark a space, spaces collapsed."""
    t = unicodedata.normalize("NFKC", text).casefold()
    t = _APOSTROPHES.sub("", t)
    return " ".join(_NOT_WORD.sub(" ", t).split())


@dataclass(frozen=True)
class Speculation:
    """Speculative replies (``TurnsConfig(speculate=Speculation())``; off unless given).

    Args:
        max_per_turn: Speculative requests one user turn may make (a new one
            replaces the one in flight when the words changed).
        match: ``"normalized"`` (the default, as Pipecat's: case,
            punctuation and apostrophes do not count, so an answer asked on
            an interim ``"book a table"`` is released for the final
            ``"Book a table."``; the conversation gets the final words) or
            ``"exact"``.
        max_age: Seconds a held answer waits for its turn to end; older, it is
            dropped (``None``: as long as the turn lasts).
    """

    max_per_turn: int = 2
    match: Literal["exact", "normalized"] = "normalized"
    max_age: float | None = 5.0

    def __post_init__(self) -> None:
        n = self.max_per_turn
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 10:
            raise ConfigurationError(f"Speculation.max_per_turn must be a whole number in 1..10, got {n!r}")
        if self.match not in MATCH_POLICIES:
            raise ConfigurationError(f"Speculation.match must be one of {MATCH_POLICIES}, got {self.match!r}")
        optional_seconds(self.max_age, "Speculation.max_age", positive=True, high=60.0)

    def same(self, asked: str, final: str) -> bool:
        """Whether words ``asked`` and ``final`` are the same under :attr:`match`."""
        if self.match == "exact":
            return asked == final
        return normalized_words(asked) == normalized_words(final)


class SpeculationReport(NamedTuple):
    """The payload of ``on_user_turn_speculation``: one step in a speculative request's life.

    ``outcome``: ``asked`` (sent to the model), then one of ``released``
    (the turn ended with these words: the answer went out at once),
    ``dropped``, ``refused`` (the answer asked for a tool: no tool started,
    the turn's end asks again) or ``failed``; ``reason`` says why;
    ``tokens``: the pieces of an answer streamed for nothing.
    """

    speculation_id: int
    outcome: str
    words: str
    reason: str = ""
    tokens: int = 0


@dataclass
class SpeculationStats:
    """What one session's speculation did: requests asked and what became of them, and tokens paid for nothing."""

    asked: int = 0
    released: int = 0
    dropped: int = 0
    refused: int = 0
    failed: int = 0
    wasted_tokens: int = 0

    @property
    def wasted(self) -> int:
        """Requests whose answer nobody heard."""
        return self.dropped + self.refused + self.failed


class _Asked(NamedTuple):
    speculation_id: int
    words: str
    version: int
    at: float


@dataclass
class Speculator:
    """One session's speculation: decides when to ask, what to release, what to drop (no I/O)."""

    config: Speculation
    stats: SpeculationStats = field(default_factory=SpeculationStats)
    current: _Asked | None = None
    """The request in flight (asked, neither released nor withdrawn)."""
    asked_this_turn: int = 0
    refused_this_turn: bool = False
    released: int | None = None
    """The request released at the turn's end, until the model reports on it."""
    words_by_id: dict[int, str] = field(default_factory=dict)
    _next: int = 0

    def ask(self, words: str, version: int, now: float) -> tuple[int | None, int | None]:
        """A turn end is likely with ``words`` on conversation ``version``: ``(ask id, withdraw id)``.

        Nothing new is asked when the same words are in flight, when this
        turn's requests are used up, or after an answer that asked for a
        tool (it would again); a request for other words is withdrawn first.
        """
        if not words.strip() or self.refused_this_turn:
            return None, None
        current = self.current
        if current is not None and current.version == version and self.config.same(current.words, words):
            return None, None
        if self.asked_this_turn >= self.config.max_per_turn:
            return None, None
        withdrawn = current.speculation_id if current is not None else None
        self._next += 1
        sid = self._next
        self.current = _Asked(sid, words, version, now)
        self.asked_this_turn += 1
        self.stats.asked += 1
        self.words_by_id[sid] = words
        return sid, withdrawn

    def stale(self, words: str, now: float) -> int | None:
        """The words so far are now ``words``: the request in flight, if they no longer match it (withdraw it)."""
        current = self.current
        if current is None:
            return None
        age = self.config.max_age
        if self.config.same(current.words, words) and (age is None or now - current.at <= age):
            return None
        self.current = None
        return current.speculation_id

    def withdraw(self) -> int | None:
        """The user went on, or the turn ended without words: the request in flight, to withdraw."""
        current, self.current = self.current, None
        return current.speculation_id if current is not None else None

    def commit(self, words: str, version: int, now: float) -> tuple[int | None, int | None]:
        """The turn ends with ``words`` on conversation ``version`` (before the write): ``(release, withdraw)``."""
        current, self.current = self.current, None
        if current is None:
            return None, None
        age = self.config.max_age
        fresh = age is None or now - current.at <= age
        if current.version == version and fresh and self.config.same(current.words, words):
            self.released = current.speculation_id
            return current.speculation_id, None
        return None, current.speculation_id

    def turn_started(self) -> None:
        """A new turn: its requests start over."""
        self.asked_this_turn = 0
        self.refused_this_turn = False

    def ended(self, speculation_id: int, outcome: str, reason: str, tokens: int) -> SpeculationReport:
        """The model reports what became of ``speculation_id``; the counts follow."""
        s = self.stats
        if outcome == "released":
            s.released += 1
        elif outcome == "refused":
            s.refused += 1
            self.refused_this_turn = True
        elif outcome == "failed":
            s.failed += 1
        else:
            s.dropped += 1
        if outcome != "released":
            s.wasted_tokens += tokens
        if self.current is not None and self.current.speculation_id == speculation_id:
            self.current = None  # the model let it go: another may be asked
        if self.released == speculation_id:
            self.released = None
        words = self.words_by_id.pop(speculation_id, "")
        return SpeculationReport(speculation_id, outcome, words, reason, tokens)
