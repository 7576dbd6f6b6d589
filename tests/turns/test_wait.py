"""The calibrated wait as pure functions: odds from the evidence, the silence's share, patience, the bounds."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rxvoice.errors import ConfigurationError
from rxvoice.turns.ending import WordsEnd
from rxvoice.turns.wait import (
    DEFAULT_WAIT,
    FIRST_GROUP,
    LATER_GROUP,
    PATIENCE_RANGE,
    WHOLE_TURN,
    Evidence,
    check_patience,
    end_log_odds,
    expected_pause,
    needed_silence,
    turn_over,
    turn_over_log_odds,
)

SURE_END = WordsEnd(0.95, 1.0, "w")
SURE_MORE = WordsEnd(0.02, 1.0, "w")
UNSURE = WordsEnd(0.5, 0.0, "w")


def test_the_silence_only_ever_raises_the_odds_and_the_answer_is_where_they_cross() -> None:
    e = Evidence(0.5, WordsEnd(0.6, 1.0, "w"), turn_words=6)
    odds = [turn_over_log_odds(DEFAULT_WAIT, e, s / 10) for s in range(30)]
    assert odds == sorted(odds) and odds[0] == pytest.approx(end_log_odds(DEFAULT_WAIT, e))
    need = needed_silence(DEFAULT_WAIT, e)
    assert 0 < need < DEFAULT_WAIT.max_wait
    assert turn_over_log_odds(DEFAULT_WAIT, e, need) == pytest.approx(DEFAULT_WAIT.threshold, abs=1e-6)
    assert 0.0 < turn_over(DEFAULT_WAIT, e, 0.0) < turn_over(DEFAULT_WAIT, e, 2.0) < 1.0


def test_confident_evidence_answers_at_once_and_unfinished_words_wait() -> None:
    assert needed_silence(DEFAULT_WAIT, Evidence(0.95, SURE_END, turn_words=8)) == 0.0
    assert needed_silence(DEFAULT_WAIT, Evidence(0.95, SURE_MORE, turn_words=8)) > 0.5


def test_patience_moves_along_the_curve() -> None:
    e = Evidence(0.5, WordsEnd(0.7, 1.0, "w"), turn_words=6)
    waits = [needed_silence(DEFAULT_WAIT, e, p) for p in (0.1, 0.5, 1.0, 2.0, 10.0)]
    assert waits == sorted(waits) and waits[0] < waits[-1]


@pytest.mark.parametrize("bad", [0.0, PATIENCE_RANGE[1] + 0.1, -1, math.nan, math.inf, "1", None, True])
def test_patience_out_of_range_is_an_error(bad: object) -> None:
    with pytest.raises(ConfigurationError, match="patience"):
        check_patience(bad)
    assert check_patience(1) == 1.0


def test_words_never_hold_a_turn_open_alone() -> None:
    """However sure the words are that more is coming, they move the odds by at most words_cap, and the
    wait stays within words_wait (within max_wait when they weigh little: misheard words); only the
    audio's confident "incomplete" goes further, to hold_wait."""
    model = replace(DEFAULT_WAIT, words=50.0)
    alone = Evidence(None, WordsEnd(1e-9, 1.0, "w"), turn_words=4)
    assert end_log_odds(model, alone) >= model.bias + model.length * math.log1p(4) - model.words_cap - 1e-9
    assert model.max_wait < needed_silence(model, alone) <= model.words_wait
    misheard = Evidence(None, WordsEnd(1e-9, 0.2, "w"), turn_words=4)
    assert needed_silence(model, misheard) <= model.max_wait + 0.2 * (model.words_wait - model.max_wait) + 1e-9
    assert needed_silence(model, misheard) < needed_silence(model, alone)
    off = replace(model, words_wait=0.0)
    assert needed_silence(off, alone) <= off.max_wait
    loud = Evidence(0.99, WordsEnd(1e-9, 1.0, "w"), turn_words=4)
    assert needed_silence(model, loud) <= model.words_wait
    agreed = Evidence(0.01, WordsEnd(1e-9, 1.0, "w"), turn_words=4)
    assert model.max_wait < needed_silence(model, agreed) <= model.hold_wait


def test_inside_a_reading_the_words_weigh_nothing() -> None:
    """A language model cannot tell whether "four five" is the whole number: the reading's rhythm decides."""
    ends = Evidence(0.5, WordsEnd(0.95, 1.0, "w"), reading=True, turn_words=5)
    goes_on = ends._replace(words=WordsEnd(0.02, 1.0, "w"))
    assert end_log_odds(DEFAULT_WAIT, ends) == end_log_odds(DEFAULT_WAIT, goes_on)
    assert needed_silence(DEFAULT_WAIT, ends) == needed_silence(DEFAULT_WAIT, goes_on) > 0.6 + 0.2


def test_a_readings_structure_moves_the_odds_inside_a_reading_only() -> None:
    """A number at a common complete length (or letters that spell a word) is likelier over: answered
    sooner; letters that spell nothing wait longer; outside a reading the structure counts for nothing."""
    base = Evidence(0.5, UNSURE, reading=True, turn_words=8, longest_pause=0.6)
    over, going_on = base._replace(reading_end=1.0), base._replace(reading_end=-1.0)
    odds = end_log_odds(DEFAULT_WAIT, base)
    assert end_log_odds(DEFAULT_WAIT, over) == pytest.approx(odds + DEFAULT_WAIT.reading_end)
    assert end_log_odds(DEFAULT_WAIT, going_on) == pytest.approx(odds - DEFAULT_WAIT.reading_end)
    # the base waits out the bound; letters that spell nothing wait at least as long
    assert needed_silence(DEFAULT_WAIT, over) < needed_silence(DEFAULT_WAIT, base) <= needed_silence(
        DEFAULT_WAIT, going_on)
    assert end_log_odds(DEFAULT_WAIT, base._replace(reading_end=7.0)) == end_log_odds(DEFAULT_WAIT, over)  # -1..1
    assert end_log_odds(DEFAULT_WAIT, base._replace(reading_end=math.nan)) == end_log_odds(DEFAULT_WAIT, base)
    outside = Evidence(0.5, SURE_MORE, turn_words=8)
    assert end_log_odds(DEFAULT_WAIT, outside._replace(reading_end=1.0)) == end_log_odds(DEFAULT_WAIT, outside)
    assert end_log_odds(replace(DEFAULT_WAIT, reading_end=0.0), over) == end_log_odds(DEFAULT_WAIT, base)


def test_words_that_weigh_nothing_change_nothing() -> None:
    a = Evidence(0.5, UNSURE, turn_words=3)
    b = Evidence(0.5, WordsEnd(0.001, 0.0, "w"), turn_words=3)
    assert end_log_odds(DEFAULT_WAIT, a) == end_log_odds(DEFAULT_WAIT, b)


def test_a_reading_waits_its_own_rhythm() -> None:
    """Digits read in groups: each pause the reader came back from lengthens the next expected one."""
    base = Evidence(0.5, WordsEnd(0.6, 1.0, "w"), reading=True, turn_words=6)
    after_06 = base._replace(longest_pause=0.6)
    after_10 = base._replace(longest_pause=1.0)
    after_15 = base._replace(longest_pause=1.5)
    pauses = [expected_pause(DEFAULT_WAIT, e) for e in (base, after_06, after_10, after_15)]
    assert pauses == sorted(pauses) and pauses[-1] == pytest.approx(DEFAULT_WAIT.rhythm * 1.5)
    # each next pause of a reading that grows 0.6, 1.0, 1.5 s (heard 0.2 s after it ends) is waited through
    assert needed_silence(DEFAULT_WAIT, base) > 0.6 + 0.2
    assert needed_silence(DEFAULT_WAIT, after_06) > 1.0 + 0.2
    assert needed_silence(DEFAULT_WAIT, after_10) > 1.5 + 0.2
    outside = Evidence(0.5, WordsEnd(0.6, 1.0, "w"), turn_words=6, longest_pause=1.0)
    assert expected_pause(DEFAULT_WAIT, outside) == pytest.approx(1.0)


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(st.none(), st.floats(0.0, 1.0)), st.floats(0.0, 1.0), st.floats(0.0, 1.0), st.booleans(),
    st.integers(0, 200), st.floats(0.0, 5.0), st.floats(*PATIENCE_RANGE),
)
def test_every_wait_is_bounded(audio: float | None, p: float, weight: float, reading: bool, n: int,
                               longest: float, patience: float) -> None:
    e = Evidence(audio, WordsEnd(p, weight, "w"), reading, n, longest, reading_group=n % 4)
    need = needed_silence(DEFAULT_WAIT, e, patience)
    bound = max(DEFAULT_WAIT.max_wait, DEFAULT_WAIT.words_wait, DEFAULT_WAIT.hold_wait, DEFAULT_WAIT.first_wait,
                1.5 * expected_pause(DEFAULT_WAIT, e))
    assert 0.0 <= need <= bound + 1e-9 and math.isfinite(need)


def test_where_a_reading_stands_moves_its_odds_and_a_first_group_may_wait_longer() -> None:
    """A code's first group read after other words is likely to go on (and waits up to ``first_wait``); a
    reading that is the whole turn is likely an answer; a later group and a caller that does not say, neither."""
    model = replace(DEFAULT_WAIT, first_group=-1.5, alone=0.5, first_wait=2.2, max_wait=1.3)
    base = Evidence(0.5, UNSURE, reading=True, turn_words=5)
    z = end_log_odds(model, base)
    assert end_log_odds(model, base._replace(reading_group=FIRST_GROUP)) == pytest.approx(z - 1.5)
    assert end_log_odds(model, base._replace(reading_group=WHOLE_TURN)) == pytest.approx(z + 0.5)
    assert end_log_odds(model, base._replace(reading_group=LATER_GROUP)) == pytest.approx(z)
    outside = Evidence(0.5, UNSURE, turn_words=5, reading_group=FIRST_GROUP)  # not a reading: no term
    assert end_log_odds(model, outside) == end_log_odds(model, outside._replace(reading_group=0))
    first = base._replace(reading_group=FIRST_GROUP)
    assert needed_silence(model, first) > model.max_wait  # a long pause after "my number is four five" is held
    assert needed_silence(model, first) <= model.first_wait
    assert needed_silence(replace(model, first_wait=0.0), first) == pytest.approx(model.max_wait)
    with pytest.raises(ConfigurationError):
        replace(model, first_wait=-1.0)
