"""FusedTurnStop: the audio model's verdict, the words and the silence, as pure functions in virtual time."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rxvoice import frames as F
from rxvoice.errors import ConfigurationError
from rxvoice.turns import FusedTurnStop
from rxvoice.turns.completion import Completion, CompletionVerdict

from .helpers import FakeAnalyzer, StrategyBench

VS = F.VADUserStartedSpeakingFrame(0.2)
VE = F.VADUserStoppedSpeakingFrame(0.2)


def T(text: str) -> F.TranscriptionFrame:
    return F.TranscriptionFrame(text, finalized=True)


def pause(strategy: FusedTurnStop, words: str, *, latency: float = 0.05, delay: float = 0.3) -> list[float]:
    """Speech 0–1.0 s, VAD stop at 1.2, the final ``delay`` after the speech: when the turn ends."""
    b = StrategyBench(strategy, latency=latency)
    b.turn_started()
    b.at(0.0, VS).at(1.0 + delay if delay < 0.2 else 1.2, None)
    if delay < 0.2:
        b.at(1.0 + delay, T(words)).at(1.2, VE)
    else:
        b.at(1.2, VE).at(1.0 + delay, T(words))
    b.at(6.0)
    return b.stops()


COMPLETE = FakeAnalyzer(default=(True, 0.9))
INCOMPLETE = FakeAnalyzer(default=(False, 0.1))


def test_model_complete_but_words_unfinished_waits_the_unfinished_timeout() -> None:
    s = FusedTurnStop(FakeAnalyzer(default=(True, 0.98)), unfinished_timeout=2.0)
    assert pause(s, "preferably in the") == [3.0]  # 2.0 s of silence after the speech (1.0)


def test_model_incomplete_but_words_finished_answers_after_a_short_silence() -> None:
    s = FusedTurnStop(FakeAnalyzer(default=(False, 0.04)), finished_timeout=0.2)
    assert pause(s, "Yes, that's right.") == [1.3]  # the words (1.3) come after the 0.2 s: answered at once
    assert pause(s, "Yes, that's right.", delay=0.1) == [1.2]  # words before the VAD stop: at 0.2 s of silence


def test_both_agree_complete_answers_when_the_words_are_in() -> None:
    s = FusedTurnStop(COMPLETE)
    assert pause(s, "What time is it?") == [1.3]
    # words in before the VAD stop, finished: answered at the stop (0.2 s of silence), not at the verdict
    assert pause(s, "What time is it?", delay=0.1) == [1.2]
    assert pause(FusedTurnStop(COMPLETE, finished_timeout=0.4), "What time is it?", delay=0.1) == [
        pytest.approx(1.25)]  # ... or at the complete verdict, 50 ms after it, when that comes first


def test_both_unsure_answers_after_the_bounded_fallback() -> None:
    s = FusedTurnStop(INCOMPLETE, unsure_timeout=0.8)
    assert pause(s, "the fourteenth of march") == [1.8]
    s = FusedTurnStop(COMPLETE, unsure_timeout=0.8)
    assert pause(s, "the fourteenth of march") == [1.3]  # the model decides what the words cannot


def test_a_number_being_read_waits_the_sequence_timeout() -> None:
    s = FusedTurnStop(COMPLETE, sequence_timeout=1.0)
    assert pause(s, "my order number is four five") == [2.0]


def test_new_speech_cancels_a_pending_answer_and_the_turn_is_judged_whole() -> None:
    b = StrategyBench(FusedTurnStop(COMPLETE, unfinished_timeout=2.0), latency=0.05)
    b.turn_started()
    b.at(0.0, VS).at(1.2, VE).at(1.3, T("I'd like a table for")).at(2.0, VS).at(2.5)
    assert b.stops() == []
    b.at(3.0, VE0 := F.VADUserStoppedSpeakingFrame(0.2)).at(3.1, T("two, please.")).at(6.0)
    del VE0
    assert b.stops() == [3.1]


def test_without_an_analyzer_words_and_silence_decide() -> None:
    s = FusedTurnStop(None, finished_timeout=0.2, unsure_timeout=0.9)
    assert pause(s, "Thanks, that's all.") == [1.3]
    assert pause(s, "the fourteenth of march") == [1.9]


def test_no_words_for_the_last_speech_waits_the_stt_grace_then_judges_it_unsure() -> None:
    b = StrategyBench(FusedTurnStop(INCOMPLETE, unsure_timeout=0.8), latency=0.05)
    b.turn_started()
    b.at(0.0, VS).at(0.5, T("Thanks.")).at(1.2, VE).at(6.0)  # the final came before the speech ended
    # grace: TRANSCRIPT_GRACE (1 s) after the speech end (1.0); then unsure → 0.8 s: already past
    assert b.stops() == [2.0]


def test_text_without_vad_ends_after_the_transcript_timeout() -> None:
    b = StrategyBench(FusedTurnStop(None, transcript_timeout=0.5, unfinished_timeout=2.0))
    b.turn_started()
    b.at(0.0, T("hello")).at(3.0)
    assert b.stops() == [0.5]
    b = StrategyBench(FusedTurnStop(None, transcript_timeout=0.5, unfinished_timeout=2.0))
    b.turn_started()
    b.at(0.0, T("I want to")).at(3.0)
    assert b.stops() == [2.0]


def test_a_verdict_for_a_pause_that_speech_overtook_is_ignored() -> None:
    b = StrategyBench(FusedTurnStop(COMPLETE), latency=0.3)
    b.turn_started()
    b.at(0.0, VS).at(1.1, T("the fourteenth of march")).at(1.2, VE).at(1.3, VS).at(1.6).at(2.0)
    assert b.stops() == []


def test_the_decision_table() -> None:
    s = FusedTurnStop(finished_timeout=0.1, unsure_timeout=0.7, sequence_timeout=0.9, unfinished_timeout=1.5)
    v = CompletionVerdict
    assert s.needed_silence(v(Completion.INCOMPLETE, "x"), True) == 1.5
    assert s.needed_silence(v(Completion.INCOMPLETE, "x", tentative=True), True) == 0.9
    assert s.needed_silence(v(Completion.COMPLETE, "x"), True) == 0.0
    assert s.needed_silence(v(Completion.COMPLETE, "x"), False) == 0.1
    assert s.needed_silence(v(Completion.UNSURE, "x"), True) == 0.0
    assert s.needed_silence(v(Completion.UNSURE, "x"), False) == 0.7


def test_another_language_with_no_rules_never_holds_a_turn() -> None:
    s = FusedTurnStop(INCOMPLETE, language="xx", unsure_timeout=0.8)
    assert pause(s, "I want to") == [1.8]  # no rules: unsure, the bounded fallback


@pytest.mark.parametrize("kwargs", [
    {"complete_threshold": 1.0}, {"complete_threshold": -0.1}, {"complete_threshold": "0.5"},
    {"finished_timeout": -0.1}, {"unsure_timeout": float("nan")}, {"unfinished_timeout": float("inf")},
    {"sequence_timeout": 31.0}, {"transcript_timeout": True}, {"finished_timeout": 1.0, "unsure_timeout": 0.5},
    {"unsure_timeout": 3.0, "unfinished_timeout": 2.0}, {"language": ""}, {"analyzer": object()},
])
def test_out_of_range_parameters_are_refused_at_construction(kwargs: dict[str, object]) -> None:
    with pytest.raises(ConfigurationError):
        FusedTurnStop(**kwargs)  # type: ignore[arg-type]


def test_fused_stop_in_the_aggregator_holds_unfinished_words() -> None:
    """The guide's diagram: "for" holds the turn although the model says complete; "please." ends it at once."""
    from rxvoice.aggregators import Pair
    from rxvoice.pipeline import inline_offload
    from rxvoice.turns import TurnsConfig

    from .helpers import marbles, times, users

    legend = {"a": F.TranscriptionFrame("I'd like a table for", finalized=True),
              "z": F.TranscriptionFrame("two, please.", finalized=True)}
    pair = Pair(turns=TurnsConfig(stop=[FusedTurnStop(FakeAnalyzer(default=(True, 0.9)))]))
    pair.user().offload = inline_offload
    rec = marbles(legend).run(pair.user(), down="v-a-s-----v-z-s", legend=legend, watch=[pair.user()], until=6.0)
    assert users(pair) == ["I'd like a table for two, please."]
    assert times(rec, F.LLMContextFrame) == [1400]


_WORDS = ["I want to", "a table for", "two, please.", "um", "Thanks.", "the fourteenth of march", "four five",
          "что-то", "<noise>", "yes"]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.floats(0.05, 1.5), st.sampled_from(_WORDS), st.floats(0.0, 0.6)), min_size=1, max_size=5),
    st.sampled_from([(True, 0.9), (False, 0.1), (False, None)]),
)
def test_every_pause_with_words_is_answered_within_the_longest_bound(
    segments: list[tuple[float, str, float]], verdict: tuple[bool, float | None],
) -> None:
    """Any speech, words and verdicts: never an answer while speaking, never one without words, and the
    last pause is answered at most ``unfinished_timeout`` (or the STT grace) after the speech ended."""
    s = FusedTurnStop(FakeAnalyzer(default=verdict))
    b = StrategyBench(s, latency=0.05)
    b.turn_started()
    t = 0.0
    for length, words, delay in segments:
        start, end = t, t + length
        before = len(b.stops())
        b.at(start, VS)
        for when, frame in sorted([(end + 0.2, VE), (end + delay, T(words))], key=lambda x: x[0]):
            b.at(when, frame)
        t = end + 2.5  # a gap longer than every bound: each pause is answered before the next speech
        b.at(t - 0.01)
        stops = b.stops()[before:]
        assert len(stops) == 1, (segments, verdict, stops)
        # not while speaking (the VAD stop is at end + 0.2), not before the words, bounded
        assert max(end + 0.2, end + delay) - 1e-6 <= stops[0] <= end + s.unfinished_timeout + 0.05 + 1e-6
        b.turn_stopped()
        b.turn_started()
