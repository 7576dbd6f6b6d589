"""The calibrated wait: one model of "is the turn over now?", as pure functions of the evidence and the silence.

At the moment the speech stops, the evidence gives odds that the turn is over
(a logistic model, :func:`end_log_odds`): the audio model's probability, the
words' end probability times its weight (:mod:`rxvoice.turns.ending`), whether
a number or a spelled word is being read (then the words weigh nothing: a
language model cannot tell whether "four five" is the whole number; the
reading's own structure and its rhythm decide: a digit count a number is
commonly complete at, letters that spell a word; and where it stands: the
first group of a code read out after other words, more likely to go on, or
a reading that is the whole turn, an answer), and how long the turn is. Then the
silence speaks: a speaker in the middle of a turn comes back after a pause
whose length follows a log-logistic law (median :attr:`WaitModel.pause_median`;
longer while a reading is in progress, and longer still when this speaker
already came back from a long pause in this turn, the reading's own rhythm).
The longer the silence lasts, the less likely it is such a pause, so the odds
grow by ``1 / S(silence)``, the pause law's survival (:func:`turn_over_log_odds`).
The turn is answered when the odds cross the threshold, which ``patience``
raises or lowers (:func:`needed_silence` gives the moment in closed form).

Bounds keep it safe: the words alone move the odds by at most
:attr:`WaitModel.words_cap`, and no wait is longer than :attr:`WaitModel.max_wait`,
with three exceptions, each bounded again: words that say with confidence that
more is coming (their share of the odds, which an STT's low confidence scales
down, at most ``-words_hold``) wait up to :attr:`WaitModel.words_wait`, so a
speaker who stops after "i need the" for 1.5 s is not cut off (misheard words
weigh too little to get there); the audio model's confident "incomplete" with
words that do not say "finished" waits up to :attr:`WaitModel.hold_wait`; and
a reading whose speaker already came back from a long pause waits one and a
half times the pause their rhythm predicts (a code's first group, up to
:attr:`WaitModel.first_wait`).

The coefficients (:data:`DEFAULT_WAIT`) were fitted on the tune half of the
generated corpus (``benchmarks/turn_corpus.py``, ``benchmarks/fit_turn_wait.py``)
and reported on the other half; see ``docs/turn-taking.md``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from typing import NamedTuple

from ..errors import ConfigurationError
from .ending import WordsEnd, read_out, reading_start

__all__ = [
    "DEFAULT_WAIT",
    "FIRST_GROUP",
    "LATER_GROUP",
    "PATIENCE_RANGE",
    "WHOLE_TURN",
    "Evidence",
    "WaitModel",
    "end_log_odds",
    "expected_pause",
    "needed_silence",
    "reading_place",
    "turn_over",
    "turn_over_log_odds",
]

PATIENCE_RANGE = (0.1, 10.0)
"""The ``patience`` values accepted: 1 is the measured default; 2 asks for twice the odds before
answering (fewer cut-offs, more latency), 0.5 for half."""

_P_CLIP = 1e-3


class Evidence(NamedTuple):
    """What is known when the speech stops.

    Attributes:
        audio: the audio model's probability that the turn is complete (``None``: no verdict).
        words: the words' judgement (:class:`~rxvoice.turns.ending.WordsEnd`).
        reading: a number or a spelled word is being read ("four five", "k o w").
        turn_words: how many words the turn has.
        longest_pause: the longest pause this speaker came back from in this turn (s; 0: none); inside a
            reading, the longest inside it (its rhythm: not a pause before its first word).
        reading_end: inside a reading, what its own structure says about its end
            (:func:`~rxvoice.turns.ending.reading_end`: +1 a complete length, a spelled word; -1 letters
            that spell nothing; 0 no idea).
        reading_group: inside a reading, where it stands: :data:`FIRST_GROUP` (a code or name read out
            symbol by symbol, begun after other words, no pause inside it yet: "my number is" "four
            five", a speaker reading it in groups has only begun), :data:`LATER_GROUP` (a pause inside
            it came before), :data:`WHOLE_TURN` (the reading is the whole turn, no pause yet: "four
            five" as an answer); 0: not said (no reading, or a caller that does not tell).
    """

    audio: float | None
    words: WordsEnd
    reading: bool = False
    turn_words: int = 0
    longest_pause: float = 0.0
    reading_end: float = 0.0
    reading_group: int = 0


FIRST_GROUP = 1
"""``Evidence.reading_group``: the first group of a code or name read out after other words."""
LATER_GROUP = 2
"""``Evidence.reading_group``: a group after a pause inside the reading."""
WHOLE_TURN = 3
"""``Evidence.reading_group``: the reading is the whole turn so far, with no pause inside it."""


def reading_place(words: Sequence[str], pauses: Iterable[tuple[int, float]]) -> tuple[float, int]:
    """For plain ``words`` that end inside a reading, and the turn's pauses as (words before, seconds):
    the longest pause after the reading's first word (its rhythm) and where it stands (``reading_group``)."""
    start = reading_start(words)
    longest = max((p for n, p in pauses if n > start), default=0.0)
    if longest > 0:
        return longest, LATER_GROUP
    if start == 0:
        return 0.0, WHOLE_TURN
    return 0.0, FIRST_GROUP if read_out(words[start:]) else 0  # a code or name begun after other words


@dataclass(frozen=True)
class WaitModel:
    """The coefficients of the calibrated wait (log-odds; seconds).

    Attributes:
        bias: the log-odds of an end before any evidence.
        audio: weight of the audio model's log-odds.
        words: weight of the words' log-odds (times their weight).
        reading: added while a number or spelling is read (negative: more is coming).
        length: weight of ln(1 + words in the turn).
        words_cap: the most the words alone move the log-odds, either way.
        pause_median: median of a mid-turn pause (s).
        pause_shape: shape of the log-logistic pause law (larger: pauses more alike).
        reading_median: median of a pause inside a reading (s).
        rhythm: inside a reading, a pause as long as ``rhythm`` times the longest one the
            speaker came back from in this turn is as likely as a median one (readers slow
            down as they go); outside one, a pause as long as that longest one.
        threshold: the log-odds at which the turn is answered (``patience`` 1).
        max_wait: no silence is waited through longer than this (s), unless the
            speaker's own rhythm says more (then ``1.5`` times their expected pause),
            or the audio and the words agree that more is coming (then ``hold_wait``).
        hold_audio: the audio model's probability under which it says "incomplete" with confidence.
        hold_words: the words' end probability under which they do not say "finished".
        hold_wait: the bound when both say so (the audio's confident "incomplete" is not
            overridden by a short bound).
        words_hold: the words' share of the log-odds at or under ``-words_hold`` says with
            confidence that more is coming (a low STT confidence shrinks the share).
        words_wait: the bound when the words say so, outside a reading (at ``max_wait`` or less,
            0 by default, the words never extend the bound); an STT confidence ``c`` below 1 gives
            ``max_wait + c * (words_wait - max_wait)``.
        reading_end: inside a reading, weight of its structure's verdict (``Evidence.reading_end``, -1..1).
        first_group: added inside a reading's first group (:data:`FIRST_GROUP`: more is likely to come).
        alone: added inside a reading that is the whole turn (:data:`WHOLE_TURN`: an answer).
        first_wait: the bound inside a reading's first group (at ``max_wait`` or less: none), so a
            reader who pauses after the first group of a long number is not cut off.
    """

    bias: float = 0.0
    audio: float = 0.5
    words: float = 1.0
    reading: float = -1.5
    length: float = 0.0
    words_cap: float = 3.0
    pause_median: float = 0.6
    pause_shape: float = 3.0
    reading_median: float = 0.9
    rhythm: float = 1.2
    threshold: float = 1.0
    max_wait: float = 2.5
    hold_audio: float = 0.1
    hold_words: float = 0.5
    hold_wait: float = 2.5
    words_hold: float = 2.0
    words_wait: float = 0.0
    reading_end: float = 0.0
    first_group: float = 0.0
    alone: float = 0.0
    first_wait: float = 0.0

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                raise ConfigurationError(f"WaitModel.{f.name} must be a finite number, got {value!r}")
        for name in ("pause_median", "pause_shape", "reading_median", "max_wait", "hold_wait"):
            if getattr(self, name) <= 0:
                raise ConfigurationError(f"WaitModel.{name} must be > 0, got {getattr(self, name)!r}")
        if (self.words_cap < 0 or self.rhythm < 0 or self.words_wait < 0 or self.words_hold <= 0
                or self.first_wait < 0):
            raise ConfigurationError(
                "WaitModel.words_cap, rhythm, words_wait and first_wait must be >= 0, words_hold > 0")


DEFAULT_WAIT = WaitModel(
    bias=-0.556, audio=0.045, words=1.505, reading=-0.224, reading_end=0.513, length=0.545, words_cap=3.0,
    pause_median=0.74, pause_shape=3.25, reading_median=0.82, rhythm=1.35, threshold=2.35, max_wait=1.3, words_hold=1.0,
    words_wait=2.2, first_group=-1.332, alone=0.619, first_wait=2.2,
)
"""The fitted model the recommended setup uses: its logistic part and pause law fitted on the tune half,
the threshold and the bounds chosen there before the reading groups were added and kept since (see
``docs/turn-taking.md``)."""


def _logit(p: float) -> float:
    q = min(1.0 - _P_CLIP, max(_P_CLIP, p))
    return math.log(q / (1.0 - q))


def check_patience(patience: object, owner: str = "patience") -> float:
    """``patience`` as a float, or a :class:`~rxvoice.errors.ConfigurationError`."""
    low, high = PATIENCE_RANGE
    if isinstance(patience, bool) or not isinstance(patience, int | float) or not math.isfinite(patience):
        raise ConfigurationError(f"{owner} must be a number in [{low:g}, {high:g}], got {patience!r}")
    if not low <= patience <= high:
        raise ConfigurationError(f"{owner} must be in [{low:g}, {high:g}], got {patience!r}")
    return float(patience)


def words_term(model: WaitModel, words: WordsEnd) -> float:
    """The words' share of the log-odds (bounded by ``words_cap``)."""
    weight = min(1.0, max(0.0, words.weight))
    if weight == 0.0:
        return 0.0
    return max(-model.words_cap, min(model.words_cap, model.words * weight * _logit(words.probability)))


def end_log_odds(model: WaitModel, evidence: Evidence) -> float:
    """The log-odds that the turn is over, the moment the speech stops."""
    z = model.bias + model.length * math.log1p(max(0, evidence.turn_words))
    if not evidence.reading:  # inside a reading the words cannot tell the number's length: its rhythm does
        z += words_term(model, evidence.words)
    if evidence.audio is not None and math.isfinite(evidence.audio):
        z += model.audio * _logit(evidence.audio)
    if evidence.reading:
        z += model.reading
        structure = evidence.reading_end
        if isinstance(structure, int | float) and math.isfinite(structure):
            z += model.reading_end * min(1.0, max(-1.0, float(structure)))
        group = evidence.reading_group
        z += model.first_group if group == FIRST_GROUP else model.alone if group == WHOLE_TURN else 0.0
    return z


def expected_pause(model: WaitModel, evidence: Evidence) -> float:
    """The median of this speaker's next mid-turn pause (s): longer in a reading, and by its rhythm."""
    longest = max(0.0, evidence.longest_pause)
    if evidence.reading:
        return max(model.reading_median, model.rhythm * longest)
    return max(model.pause_median, longest)


def turn_over_log_odds(model: WaitModel, evidence: Evidence, silence: float) -> float:
    """The log-odds that the turn is over after ``silence`` seconds without speech."""
    s = max(0.0, silence)
    median = expected_pause(model, evidence)
    return end_log_odds(model, evidence) + math.log1p((s / median) ** model.pause_shape)


def turn_over(model: WaitModel, evidence: Evidence, silence: float) -> float:
    """The probability that the turn is over after ``silence`` seconds (see :func:`turn_over_log_odds`)."""
    z = turn_over_log_odds(model, evidence, silence)
    return 1.0 / (1.0 + math.exp(-z)) if z > -700 else 0.0


def needed_silence(model: WaitModel, evidence: Evidence, patience: float = 1.0) -> float:
    """Seconds of silence after which the turn is answered (0: at once; at most ``max_wait``)."""
    gap = model.threshold + math.log(patience) - end_log_odds(model, evidence)
    if gap <= 0.0:
        return 0.0
    pause = expected_pause(model, evidence)
    cap = model.max_wait
    if evidence.reading and evidence.longest_pause > 0:
        cap = max(cap, 1.5 * pause)
    if evidence.reading and evidence.reading_group == FIRST_GROUP:
        cap = max(cap, model.first_wait)
    words = evidence.words
    if not evidence.reading and words_term(model, words) <= -model.words_hold:
        # a low STT confidence shrinks the words' bound back towards max_wait
        cap = max(cap, model.max_wait + min(1.0, max(0.0, words.weight)) * (model.words_wait - model.max_wait))
    if (evidence.audio is not None and evidence.audio < model.hold_audio and words.weight > 0
            and words.probability < model.hold_words):
        cap = max(cap, model.hold_wait)
    if gap > 50.0:
        return cap
    seconds = pause * math.expm1(gap) ** (1.0 / model.pause_shape)
    return min(cap, float(seconds))
