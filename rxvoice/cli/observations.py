"""What happens in an analysed recording, as plain values in time order (the model of a run's result).

The run (:mod:`rxvoice.cli.runner`) reports each as it happens; the
reports, the plot and ``rxvoice eval`` read them.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "BotReply",
    "Observation",
    "Recovered",
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
        cause: ``model`` (a complete Smart Turn verdict), ``fallback`` (Smart Turn's
            3 s of silence), ``silence`` (the speech timeout), ``no-vad`` (words
            without VAD speech), ``watchdog``, ``end`` (the recording ended first);
            with the recommended :class:`~rxvoice.turns.FusedTurnStop` also
            ``words`` (finished words, the model said incomplete), ``unsure``
            (neither decided: the bounded fallback), ``unfinished`` and
            ``sequence`` (unfinished words, or a number being read: the bounded wait).
        reason: why, in words.
        speech_end: when the speech before it ended (None: unknown).
        latency: ``ended - speech_end``.
        text: the turn's words.
        probability: the Smart Turn probability behind the decision, if any.
        premature: with a transcript, whether it cut the speaker off mid-sentence.
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


@dataclass(frozen=True)
class Recovered:
    """The user aggregator undid a false end of turn (its ``on_user_turn_recovered`` event)."""

    time: float


@dataclass(frozen=True)
class BotReply:
    """The scripted model's answer was written to the conversation."""

    time: float
    text: str


Observation = SpeechStarted | SpeechStopped | Words | Verdict | TurnStarted | Turn | BotReply | Recovered
