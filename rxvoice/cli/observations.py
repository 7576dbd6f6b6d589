"""What happens in an analysed recording, as plain values in time order (the model of a run's result).

The run (:mod:`rxvoice.cli.runner`) reports each as it happens; the
reports, the plot and ``rxvoice eval`` read them.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "BotAudio",
    "BotReply",
    "Observation",
    "Recovered",
    "Speculated",
    "SpeechStarted",
    "SpeechStopped",
    "Turn",
    "TurnStarted",
    "Verdict",
    "Words",
]


@dataclass(frozen=True)
class SpeechStarted:
    """The VAD heard speech (decided at ``time``; it began ``start_secs`` before)."""

    time: float
    speech_start: float


@dataclass(frozen=True)
class SpeechStopped:
    """The VAD heard silence (decided at ``time``; speech ended at ``speech_end``)."""

    time: float
    speech_end: float


@dataclass(frozen=True)
class Words:
    """A finalized transcript reached the user aggregator."""

    time: float
    text: str


@dataclass(frozen=True)
class Verdict:
    """A Smart Turn verdict."""

    time: float
    complete: bool
    probability: float


@dataclass(frozen=True)
class TurnStarted:
    """A user turn began."""

    time: float
    index: int


@dataclass(frozen=True)
class Turn:
    """A user turn that ended.

    Attributes:
        index: 1, 2, ...
        started: when it began.
        ended: when it ended (the answer could start).
        strategy: the deciding stop strategy's name (None: watchdog or recording end).
        cause: the ``kind`` of the reason the deciding strategy reported
            (:data:`rxvoice.turns.REASON_KINDS`): ``model`` (a complete Smart Turn
            verdict), ``fallback`` (Smart Turn's own silence fallback), ``silence``
            (the speech timeout), ``no-vad`` (words without VAD speech), ``watchdog``,
            ``end`` (the recording ended first); with the recommended
            :class:`~rxvoice.turns.FusedTurnStop` also ``words`` (finished words, the
            model said incomplete), ``unsure`` (neither decided: the bounded fallback),
            ``unfinished`` and ``sequence`` (unfinished words, or a number being read:
            the bounded wait); ``other`` from a strategy that reports no reason.
        reason: why, in words: the text of the strategy's reason, as it gave it.
        speech_end: when the speech before it ended (None: unknown).
        latency: ``ended - speech_end``.
        text: the turn's words.
        probability: the Smart Turn probability behind the decision, if any.
        premature: with a transcript, whether it cut the speaker off mid-sentence.
        recovered_from: the turn this one reopened (its index), when the user went on
            after a false end before the bot said anything: this turn's words then
            repeat that turn's, as the conversation now holds them once.
    """

    index: int
    started: float
    ended: float
    strategy: str | None
    cause: str
    reason: str
    speech_end: float | None
    latency: float | None
    text: str
    probability: float | None = None
    premature: bool | None = None
    recovered_from: int | None = None

    @property
    def reopened(self) -> bool:
        """This turn reopened an earlier one (see :attr:`recovered_from`)."""
        return self.recovered_from is not None


@dataclass(frozen=True)
class Recovered:
    """The user aggregator undid a false end of turn (its ``on_user_turn_recovered`` event).

    ``after``: seconds between the false end and the user going on; ``turn``: the turn reopened.
    """

    time: float
    after: float | None = None
    turn: int | None = None


@dataclass(frozen=True)
class BotReply:
    """The scripted model's answer was written to the conversation."""

    time: float
    text: str


@dataclass(frozen=True)
class BotAudio:
    """The bot's voice started (the synthesizer's first audio of a reply)."""

    time: float


@dataclass(frozen=True)
class Speculated:
    """A speculative request was asked, or ended (``outcome``: ``asked``, ``released``, ``dropped``, ...)."""

    time: float
    outcome: str
    tokens: int = 0


Observation = (
    SpeechStarted | SpeechStopped | Words | Verdict | TurnStarted | Turn | BotReply | Recovered | BotAudio | Speculated
)
