"""FusedTurnStop: one calibrated model of the audio, the words and the silence, as pure steps in virtual time."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rxvoice import frames as F
from rxvoice.errors import ConfigurationError
from rxvoice.turns import FusedTurnStop
from rxvoice.turns.ending import WordsEnd
from rxvoice.turns.wait import DEFAULT_WAIT, FIRST_GROUP, LATER_GROUP, WHOLE_TURN, Evidence, WaitModel

from .helpers import FakeAnalyzer, StrategyBench


def near(seconds: float) -> object:
    """Decision times are kept to the millisecond (rounded up)."""
    return pytest.approx(seconds, abs=1.5e-3)


VS = F.VADUserStartedSpeakingFrame(0.2)
VE = F.VADUserStoppedSpeakingFrame(0.2)


def T(text: str, **kw: object) -> F.TranscriptionFrame:
    return F.TranscriptionFrame(text, finalized=True, **kw)  # type: ignore[arg-type]


class FixedWords:
    """A words' signal that says the same for every text (the tests choose what the words say)."""

    def __init__(self, probability: float, weight: float = 1.0) -> None:
        self.verdict = WordsEnd(probability, weight, "fixed")
        self.seen: list[tuple[str, float | None]] = []

    def judge(self, text: str, confidence: float | None = None) -> WordsEnd:
        self.seen.append((text, confidence))
        return self.verdict._replace(weight=self.verdict.weight * (1.0 if confidence is None else confidence))


def pause(strategy: FusedTurnStop, words: str, *, latency: float = 0.05, delay: float = 0.3) -> list[float]:
    """Speech 0–1.0 s, VAD stop at 1.2, the final ``delay`` after the speech: when the turn ends."""
    b = StrategyBench(strategy, latency=latency)
    b.turn_started()
    b.at(0.0, VS)
    if delay < 0.2:
        b.at(1.0 + delay, T(words)).at(1.2, VE)
    else:
        b.at(1.2, VE).at(1.0 + delay, T(words))
    b.at(8.0)
    return b.stops()


COMPLETE = FakeAnalyzer(default=(True, 0.95))
INCOMPLETE = FakeAnalyzer(default=(False, 0.03))
ONLY_WORDS = replace(DEFAULT_WAIT, audio=0.0, length=0.0, bias=0.0, words=1.0, threshold=1.0, max_wait=2.5)


def test_the_answer_comes_when_the_calibrated_odds_cross_the_threshold() -> None:
    s = FusedTurnStop(COMPLETE)
    for words in ("is there parking nearby", "i would like to", "my number is four five"):
        evidence = s.evidence(words, 0.95)
        need = s.needed_silence(evidence)
        assert pause(s, words) == [near(max(1.3, 1.0 + need))]


def test_finished_words_are_answered_when_they_arrive_unfinished_ones_wait() -> None:
    s = FusedTurnStop(None, words_end=FixedWords(0.95), wait_model=ONLY_WORDS)
    assert pause(s, "anything") == [near(1.3)]
    s = FusedTurnStop(None, words_end=FixedWords(0.05), wait_model=ONLY_WORDS)
    (stop,) = pause(s, "anything")
    assert 1.0 + 0.8 < stop <= 1.0 + ONLY_WORDS.max_wait + 1e-6


def test_the_audio_models_confident_incomplete_is_not_overridden_by_a_short_fallback() -> None:
    model = replace(ONLY_WORDS, audio=1.0)
    early = pause(FusedTurnStop(COMPLETE, words_end=FixedWords(0.5, 0.0), wait_model=model), "x")
    late = pause(FusedTurnStop(INCOMPLETE, words_end=FixedWords(0.5, 0.0), wait_model=model), "x")
    assert early == [near(1.3)] and late[0] - 1.0 >= 1.5


def test_more_patience_waits_longer_never_shorter() -> None:
    ends = [pause(FusedTurnStop(INCOMPLETE, patience=p), "the fourteenth of march")[0] for p in (0.25, 1, 4, 10)]
    assert ends == sorted(ends) and ends[0] < ends[-1]


@pytest.mark.parametrize("patience", [0.0, 0.05, 11.0, -1.0, float("nan"), float("inf"), "1", True, None])
def test_patience_out_of_range_is_refused_at_construction(patience: object) -> None:
    with pytest.raises(ConfigurationError, match="patience"):
        FusedTurnStop(patience=patience)  # type: ignore[arg-type]


@pytest.mark.parametrize("kwargs", [
    {"transcript_timeout": True}, {"transcript_timeout": -0.1}, {"transcript_timeout": float("inf")},
    {"language": ""}, {"analyzer": object()}, {"words_end": object()}, {"wait_model": "fast"},
])
def test_out_of_range_parameters_are_refused_at_construction(kwargs: dict[str, object]) -> None:
    with pytest.raises(ConfigurationError):
        FusedTurnStop(**kwargs)  # type: ignore[arg-type]


def test_misheard_words_weigh_less_and_never_hold_a_turn_open_alone() -> None:
    words = FixedWords(0.001)
    s = FusedTurnStop(COMPLETE, words_end=words, wait_model=ONLY_WORDS)
    b = StrategyBench(s, latency=0.05)
    b.turn_started()
    b.at(0.0, VS).at(1.2, VE).at(1.3, T("i want the", result={"confidence": 0.2})).at(8.0)
    assert words.seen[-1] == ("i want the", 0.2)
    sure = s.needed_silence(s.evidence("i want the", 0.95))
    unsure = s.needed_silence(s.evidence("i want the", 0.95, confidence=0.2))
    assert unsure < sure <= ONLY_WORDS.max_wait
    assert b.stops() == [near(1.0 + unsure)]


def test_words_in_another_language_weigh_nothing() -> None:
    words = FixedWords(0.001)
    s = FusedTurnStop(COMPLETE, words_end=words, wait_model=replace(ONLY_WORDS, audio=1.0))
    b = StrategyBench(s, latency=0.05)
    b.turn_started()
    b.at(0.0, VS).at(1.2, VE).at(1.3, T("ich möchte einen", language="de")).at(8.0)
    assert b.stops() == [near(1.3)]  # the audio's "complete" decides alone


def test_new_speech_cancels_a_pending_answer_and_the_turn_is_judged_whole() -> None:
    words = FixedWords(0.05)
    b = StrategyBench(FusedTurnStop(COMPLETE, words_end=words, wait_model=ONLY_WORDS), latency=0.05)
    b.turn_started()
    b.at(0.0, VS).at(1.2, VE).at(1.3, T("I'd like a table for")).at(2.0, VS).at(2.5)
    assert b.stops() == []
    b.at(3.0, VE).at(3.1, T("two, please.")).at(8.0)
    assert words.seen[-1][0] == "I'd like a table for two, please."
    assert len(b.stops()) == 1


def test_the_verdict_on_the_way_is_waited_for_then_the_words_decide_alone() -> None:
    s = FusedTurnStop(COMPLETE, words_end=FixedWords(0.5, 0.0), wait_model=replace(ONLY_WORDS, audio=1.0))
    assert pause(s, "x", latency=0.3) == [near(1.5)]  # the verdict (1.2 + 0.3) answers
    slow = pause(s, "x", latency=5.0)  # never in time: after 0.5 s the words and the silence decide
    assert slow and slow[0] >= 1.7


def test_no_words_for_the_last_speech_waits_the_stt_grace_then_the_words_weigh_nothing() -> None:
    words = FixedWords(0.01)
    b = StrategyBench(FusedTurnStop(COMPLETE, words_end=words, wait_model=replace(ONLY_WORDS, audio=1.0)),
                      latency=0.05)
    b.turn_started()
    b.at(0.0, VS).at(0.5, T("Thanks.")).at(1.2, VE).at(8.0)  # the final came before the speech ended
    assert b.stops() == [near(2.0)]  # TRANSCRIPT_GRACE after the speech end; then audio decides


def test_text_without_vad_ends_after_the_transcript_timeout_or_later_when_unfinished() -> None:
    b = StrategyBench(FusedTurnStop(None, transcript_timeout=0.5, words_end=FixedWords(0.95)))
    b.turn_started()
    b.at(0.0, T("hello")).at(3.0)
    assert b.stops() == [0.5]
    b = StrategyBench(FusedTurnStop(None, transcript_timeout=0.5, words_end=FixedWords(0.01)))
    b.turn_started()
    b.at(0.0, T("I want to")).at(5.0)
    assert len(b.stops()) == 1 and b.stops()[0] > 0.5


def test_a_verdict_for_a_pause_that_speech_overtook_is_ignored() -> None:
    b = StrategyBench(FusedTurnStop(COMPLETE), latency=0.3)
    b.turn_started()
    b.at(0.0, VS).at(1.1, T("the fourteenth of march")).at(1.2, VE).at(1.3, VS).at(1.6).at(2.0)
    assert b.stops() == []


def test_the_reason_names_what_decided() -> None:
    s = FusedTurnStop(COMPLETE)
    cause, reason = s.explain(Evidence(0.95, WordsEnd(0.99, 1.0, "w"), turn_words=5))
    assert cause == "model" and "answered when the words were in" in reason
    cause, _ = s.explain(Evidence(0.05, WordsEnd(0.01, 1.0, "w"), turn_words=5))
    assert cause == "unfinished"
    cause, _ = s.explain(Evidence(0.05, WordsEnd(0.4, 1.0, "w"), reading=True, turn_words=5))
    assert cause == "sequence"


def test_a_wait_model_with_bad_numbers_is_refused() -> None:
    with pytest.raises(ConfigurationError):
        WaitModel(pause_median=0.0)
    with pytest.raises(ConfigurationError):
        WaitModel(threshold=float("nan"))
    with pytest.raises(ConfigurationError, match="words_wait"):
        WaitModel(words_wait=-1.0)
    with pytest.raises(ConfigurationError, match="words_hold"):
        WaitModel(words_hold=0.0)


_WORDS = ["I want to", "a table for", "two, please.", "um", "Thanks.", "the fourteenth of march", "four five",
          "что-то", "<noise>", "yes"]


@settings(max_examples=120, deadline=None)
@given(
    st.lists(st.tuples(st.floats(0.05, 1.5), st.sampled_from(_WORDS), st.floats(0.0, 0.6)), min_size=1, max_size=5),
    st.sampled_from([(True, 0.9), (False, 0.1), (False, None)]),
    st.sampled_from([0.25, 1.0, 4.0]),
)
def test_every_pause_with_words_is_answered_within_the_longest_bound(
    segments: list[tuple[float, str, float]], verdict: tuple[bool, float | None], patience: float,
) -> None:
    """Any speech, words and verdicts: never an answer while speaking, never one without words, and each
    pause is answered at most the longest bound (``max_wait``, or ``words_wait`` when the words say more is
    coming; plus the STT grace) after the speech ended."""
    s = FusedTurnStop(FakeAnalyzer(default=verdict), patience=patience)
    b = StrategyBench(s, latency=0.05)
    b.turn_started()
    t = 0.0
    for length, words, delay in segments:
        start, end = t, t + length
        before = len(b.stops())
        b.at(start, VS)
        for when, frame in sorted([(end + 0.2, VE), (end + delay, T(words))], key=lambda x: x[0]):
            b.at(when, frame)
        t = end + 3.5  # a gap longer than every bound: each pause is answered before the next speech
        b.at(t - 0.01)
        stops = b.stops()[before:]
        assert len(stops) == 1, (segments, verdict, stops)
        bound = max(DEFAULT_WAIT.max_wait, DEFAULT_WAIT.words_wait)
        assert max(end + 0.2, end + delay) - 1e-6 <= stops[0] <= end + bound + 0.5 + 1e-6
        b.turn_stopped()
        t += 1.5  # past the reopening window: the next turn is a new one
        b.at(t - 0.01)
        b.turn_started()


# -- in the aggregator: marble timelines -------------------------------------------------------------


def _timeline(events: list[tuple[float, str]]) -> str:
    cells = ["-"] * (round(max(t for t, _ in events) * 10) + 1)
    for t, symbol in events:
        cells[round(t * 10)] = symbol
    return "".join(cells)


def test_the_evidence_reads_the_readings_structure() -> None:
    """A spelled name that makes a word, or a number at a common complete length, reads as over; the
    spelling needs a vocabulary (the trigram's), the digits do not."""
    from rxvoice.turns.ending import RulesWordsEnd, TrigramWordsEnd

    trigram = FusedTurnStop(None, words_end=TrigramWordsEnd())
    rules = FusedTurnStop(None, words_end=RulesWordsEnd())
    assert trigram.evidence("my surname is m a r s h", 0.5).reading_end == 1.0
    assert trigram.evidence("my surname is b r e n", 0.5).reading_end == -1.0
    assert rules.evidence("my surname is m a r s h", 0.5).reading_end == 0.0
    assert rules.evidence("call me on five five five one two three four", 0.5).reading_end == 1.0
    assert trigram.evidence("i need the", 0.5).reading_end == 0.0  # not a reading


def test_a_digits_reading_with_pauses_of_0_6_1_0_and_1_5_s_is_one_turn() -> None:
    """A caller reads a number in four groups; the pauses grow (0.6, 1.0, 1.5 s). The reading's own
    rhythm holds each of them, so the number is answered once, after its last group."""
    from rxvoice.aggregators import Pair
    from rxvoice.pipeline import inline_offload
    from rxvoice.turns import TurnsConfig

    from .helpers import marbles, times, users

    legend = {"a": T("my number is four five"), "b": T("six seven"), "c": T("eight nine"), "d": T("zero one")}
    # speech 0-1.0 (VAD stop 1.2, words 1.3), pause 0.6; 1.6-2.2, pause 1.0; 3.2-3.8, pause 1.5; 5.3-5.9
    down = _timeline([(0.2, "v"), (1.2, "s"), (1.3, "a"), (1.8, "v"), (2.4, "s"), (2.5, "b"), (3.4, "v"),
                      (4.0, "s"), (4.1, "c"), (5.5, "v"), (6.1, "s"), (6.2, "d")])
    pair = Pair(turns=TurnsConfig(stop=[FusedTurnStop(FakeAnalyzer(default=(True, 0.95)))]))
    pair.user().offload = inline_offload
    rec = marbles(legend).run(pair.user(), down=down, legend=legend, watch=[pair.user()], until=10.0)
    assert users(pair) == ["my number is four five six seven eight nine zero one"]
    (answer,) = times(rec, F.LLMContextFrame)
    assert answer >= 6200
    assert rec.events_named("on_user_turn_recovered") == []


def test_a_reopened_turn_keeps_its_reading_wait() -> None:
    """A count "one" [0.55 s] "two" [0.55 s] "three", with a setup eager enough to answer "one": the
    caller's "two" reopens the turn, which then reads as a number being read ("one two") and waits
    its reading's rhythm instead of ending the moment "two" is in."""
    from rxvoice.aggregators import Pair
    from rxvoice.pipeline import inline_offload
    from rxvoice.turns import TurnsConfig

    from .helpers import marbles, times, users

    eager = replace(DEFAULT_WAIT, bias=3.0, audio=0.0, words=0.0, length=0.0, reading=-8.0, threshold=1.0,
                    max_wait=1.4)
    legend = {"a": T("one"), "b": T("two"), "c": T("three")}
    # "one" 0-0.4 (stop 0.6, words 0.7: answered); "two" 0.95-1.35 (start 1.15: reopens; stop 1.55,
    # words 1.65); "three" 1.9-2.3 (start 2.1 holds the reading; stop 2.5, words 2.6)
    down = _timeline([(0.2, "v"), (0.6, "s"), (0.7, "a"), (1.2, "v"), (1.6, "s"), (1.7, "b"), (2.1, "v"),
                      (2.5, "s"), (2.6, "c")])
    pair = Pair(turns=TurnsConfig(stop=[FusedTurnStop(None, wait_model=eager)]))
    pair.user().offload = inline_offload
    rec = marbles(legend).run(pair.user(), down=down, legend=legend, watch=[pair.user()], until=8.0)
    assert len(rec.events_named("on_user_turn_recovered")) == 1  # "one" was answered, then reopened
    answers = times(rec, F.LLMContextFrame)
    assert answers[0] == 700  # "one": answered when its words came
    assert all(not 1700 <= t < 2600 for t in answers)  # "one two" waited its reading: "three" came in time
    assert answers[-1] >= 2600 and users(pair) == ["one two three"]


def test_a_reading_waits_by_the_pauses_inside_it_only() -> None:
    """The rhythm a reading waits by is counted over the pauses after its first word: a pause before the
    number began ("my number is" [1.6 s] "four five") is the sentence's, not the reading's."""
    s = FusedTurnStop(None)
    text = "my number is four five six"
    assert s.evidence(text, None, longest_pause=1.6, pauses=((3, 1.6),)).longest_pause == 0.0
    assert s.evidence(text, None, longest_pause=1.6, pauses=((3, 1.6), (5, 0.7))).longest_pause == 0.7
    assert s.evidence(text, None, longest_pause=1.6).longest_pause == 1.6  # no pauses given: the turn's
    assert s.evidence("i need the", None, longest_pause=1.6, pauses=((1, 1.6),)).longest_pause == 1.6


def test_a_reopened_turn_does_not_take_the_pause_before_a_reading_for_its_rhythm() -> None:
    """ "i do not have a car" is answered; "twenty five" begins 1.0 s after the speech, before the bot spoke,
    and reopens the turn. The reopened turn reads as a number being read, but the 1.0 s pause came before
    the number began: the reading waits its own rhythm (none yet), not one stretched by that pause."""
    from rxvoice.aggregators import Pair
    from rxvoice.pipeline import inline_offload
    from rxvoice.turns import TurnsConfig

    from .helpers import marbles, times, users

    stop = FusedTurnStop(None, words_end=FixedWords(0.9))
    legend = {"a": T("i do not have a car"), "b": T("twenty five")}
    # speech 0-1.0 (stop 1.2, words 1.3: answered); speech 2.0-2.6 (start 2.2: reopens; stop 2.8, words 2.9)
    down = _timeline([(0.2, "v"), (1.2, "s"), (1.3, "a"), (2.2, "v"), (2.8, "s"), (2.9, "b")])
    pair = Pair(turns=TurnsConfig(stop=[stop]))
    pair.user().offload = inline_offload
    rec = marbles(legend).run(pair.user(), down=down, legend=legend, watch=[pair.user()], until=8.0)
    assert len(rec.events_named("on_user_turn_recovered")) == 1
    assert users(pair) == ["i do not have a car twenty five"]
    text = "i do not have a car twenty five"
    own = stop.needed_silence(stop.evidence(text, None, longest_pause=1.0, pauses=((6, 1.0),)))
    stretched = stop.needed_silence(stop.evidence(text, None, longest_pause=1.0))
    assert own < stretched - 0.3
    assert times(rec, F.LLMContextFrame) == [1300, pytest.approx(round((2.6 + own) * 1000), abs=2)]


@pytest.mark.parametrize(("text", "pauses", "group"), [
    ("my number is four five", (), FIRST_GROUP),          # a code read out after other words: its first group
    ("the last name is b r e", (), FIRST_GROUP),
    ("my number is four five six", ((5, 0.8),), LATER_GROUP),  # a pause inside it came before
    ("four five", (), WHOLE_TURN),                        # the reading is the whole turn: an answer
    ("around six thirty", (), 0),                         # a time, not read out symbol by symbol
    ("i need the", (), 0),                                # no reading
])
def test_the_evidence_says_where_a_reading_stands(text: str, pauses: tuple[tuple[int, float], ...],
                                                  group: int) -> None:
    assert FusedTurnStop(None).evidence(text, None, pauses=pauses).reading_group == group


def test_a_pause_inside_the_stts_next_final_is_placed_before_its_words() -> None:
    """The caller goes on before the final of the speech before the pause came (a pause the STT's final spans,
    or a slow STT): the pause is placed where the turn's words stood then, before that final's words, so a
    reading that final begins is still at its first group (it may wait longer, never shorter)."""
    s = FusedTurnStop(None)
    b = StrategyBench(s)
    b.turn_started()
    b.at(0.0, VS).at(1.2, VE)                  # speech 0-1.0
    b.at(1.8, VS)                              # back after 0.6 s, the first final not in yet
    b.at(2.0, T("my number is four five"))
    b.at(2.4, VE).at(3.2, T("six seven"))      # speech 1.6-2.2, its final 1.0 s later
    assert b.state.pauses == ((0, pytest.approx(0.6)),)
    evidence = s.evidence(b.state.text, None, pauses=b.state.pauses)
    assert (evidence.reading_group, evidence.longest_pause) == (FIRST_GROUP, 0.0)
    known = StrategyBench(s)
    known.turn_started()
    known.at(0.0, VS).at(1.2, VE).at(1.3, T("my number is four five")).at(1.8, VS)  # the words were in
    assert known.state.pauses == ((5, pytest.approx(0.6)),)
    known.at(2.4, VE).at(2.5, T("six seven"))
    evidence = s.evidence(known.state.text, None, pauses=known.state.pauses)
    assert (evidence.reading_group, evidence.longest_pause) == (LATER_GROUP, pytest.approx(0.6))
