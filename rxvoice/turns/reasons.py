"""Why a user turn ended, as the stop strategy that decided it says: one small frozen value.

The strategy that ends a turn knows why (it has the model's verdict, the
words' verdict and the silence it waited for at hand), so it says so: its
``Finalize`` effect carries a :class:`TurnEndReason`, which the turn machine
hands on in :class:`~rxvoice.turns.reports.UserTurnStopped` (``reason``).
Programs that show turn ends (``rxvoice turns``, ``rxvoice serve``'s live
page, your own logs) print it; none of them re-derives it. The machine adds
its own two: the stop watchdog and the end of the session.

``kind`` is a short, stable word for grouping and JSON (``rxvoice turns``
calls it ``cause``); ``text`` is for people, e.g. ``Smart Turn: complete
(p=0.87)``, ``0.8 s of silence`` or ``words incomplete: ends with 'to';
waited 2 s of silence``; the figures behind it are fields of their own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "REASON_KINDS",
    "TurnEndReason",
    "end_of_session_reason",
    "fallback_reason",
    "model_reason",
    "no_vad_reason",
    "silence_reason",
    "watchdog_reason",
]

REASON_KINDS = {
    "model": "the end-of-turn model said complete (Smart Turn); with FusedTurnStop: answered as soon as the "
             "words were in, the model agreeing",
    "fallback": "the end-of-turn model's own silence fallback (Smart Turn: 3 s)",
    "silence": "a speech timeout: this much silence after the speech",
    "words": "answered as soon as the words were in, the words carrying it (FusedTurnStop)",
    "unsure": "the calibrated wait: the odds crossed the threshold after some silence (FusedTurnStop)",
    "unfinished": "unfinished words: the calibrated wait ran its longer course (FusedTurnStop)",
    "sequence": "a number or spelled sequence being read: its rhythm's wait ran out (FusedTurnStop)",
    "no-vad": "words with no VAD speech around them (typed input): the quiet after them",
    "external": "a stop decided elsewhere (a turn detector, a service), the words in",
    "watchdog": "the stop watchdog: no activity for its timeout",
    "end": "the session (or recording) ended with the turn open",
}
"""Every ``kind`` the rxvoice strategies and the turn machine report, with what it means."""

WAITED_FOR_WORDS = ", then waited for the words"


@dataclass(frozen=True, slots=True)
class TurnEndReason:
    """Why a user turn ended.

    Attributes:
        kind: a key of :data:`REASON_KINDS` (custom strategies may add their own).
        text: the reason in words, for people.
        probability: the end-of-turn model's probability behind the decision, if it weighed in.
        silence: the seconds of silence after the speech that the deciding rule asked for.
        words: what the words said (``complete``, ``incomplete``, ``unsure``), when they were judged.
        waited_for_words: the rule was met before the words of the last speech were in,
            so the turn ended when they arrived.
    """

    kind: str
    text: str
    probability: float | None = None
    silence: float | None = None
    words: str | None = None
    waited_for_words: bool = False

    def __str__(self) -> str:
        return self.text

    def as_dict(self) -> dict[str, Any]:
        """The reason as JSON-ready values."""
        return {"kind": self.kind, "text": self.text, "probability": self.probability, "silence": self.silence,
                "words": self.words, "waited_for_words": self.waited_for_words}


def _waited(waited: bool) -> str:
    return WAITED_FOR_WORDS if waited else ""


def model_label(analyzer: object) -> str:
    """How a reason names an end-of-turn model: its ``label`` (Smart Turn's is "Smart Turn")."""
    label = getattr(analyzer, "label", None)
    return label if isinstance(label, str) and label else "the end-of-turn model"


def model_reason(model: str, probability: float | None, *, waited: bool = False) -> TurnEndReason:
    """The model said complete: ``Smart Turn: complete (p=0.87)``."""
    p = "" if probability is None else f" (p={probability:.2f})"
    return TurnEndReason("model", f"{model}: complete{p}{_waited(waited)}", probability=probability,
                         waited_for_words=waited)


def fallback_reason(model: str, seconds: float | None) -> TurnEndReason:
    """The model's stream ended the turn on its own, after a long silence."""
    quiet = "a long silence" if seconds is None else f"{seconds:g} s of silence"
    return TurnEndReason("fallback", f"{quiet} ({model}'s fallback)", silence=seconds)


def silence_reason(seconds: float, *, waited: bool = False) -> TurnEndReason:
    """A speech timeout: ``0.8 s of silence``."""
    return TurnEndReason("silence", f"{seconds:.1f} s of silence{_waited(waited)}", silence=seconds,
                         waited_for_words=waited)


def no_vad_reason(seconds: float) -> TurnEndReason:
    """Words with no VAD speech around them: the quiet after the last of them."""
    return TurnEndReason("no-vad", f"{seconds:g} s after the words (no VAD pause to judge)", silence=seconds)


def watchdog_reason(seconds: float) -> TurnEndReason:
    """The stop watchdog closed a turn nothing else ended."""
    return TurnEndReason("watchdog", f"the stop watchdog ({seconds:g} s without activity)", silence=seconds)


def end_of_session_reason() -> TurnEndReason:
    """The session ended with the turn still open."""
    return TurnEndReason("end", "the session ended with the turn open")
