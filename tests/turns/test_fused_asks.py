"""FusedTurnStop(ask_audio="when-needed"): the audio model asked only when its verdict can move the answer.

A server carrying many sessions asks Smart Turn at a fraction of the pauses this way; the answers stay those of
asking at every pause, up to the verdict's own latency when it is needed.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rxvoice import frames as F
from rxvoice.errors import ConfigurationError
from rxvoice.turns import FusedTurnStop
from rxvoice.turns.ending import WordsEnd

from .helpers import FakeAnalyzer, StrategyBench

VS = F.VADUserStartedSpeakingFrame(0.2)
VE = F.VADUserStoppedSpeakingFrame(0.2)
LATENCY = 0.05


class FixedWords:
    """A words' signal that says the same for every text."""

    def __init__(self, probability: float, weight: float = 1.0) -> None:
        self.verdict = WordsEnd(probability, weight, "fixed")

    def judge(self, text: str, confidence: float | None = None) -> WordsEnd:
        return self.verdict


def run(strategy: FusedTurnStop, *finals: tuple[float, str], latency: float = LATENCY) -> StrategyBench:
    """Speech 0–1.0 s, VAD stop at 1.2, the finals at their times (before or after it)."""
    b = StrategyBench(strategy, latency=latency)
    b.turn_started()
    b.at(0.0, VS)
    events = sorted([(1.2, VE), *((t, F.TranscriptionFrame(text, finalized=True)) for t, text in finals)],
                    key=lambda e: e[0])
    for t, frame in events:
        b.at(t, frame)
    b.at(8.0)
    return b


def stop(analyzer: FakeAnalyzer, words: float, ask: str, **kw: object) -> FusedTurnStop:
    return FusedTurnStop(analyzer, words_end=FixedWords(words), ask_audio=ask, **kw)  # type: ignore[arg-type]


def test_words_that_answer_whatever_the_audio_says_are_answered_without_asking() -> None:
    lazy, eager = FakeAnalyzer(default=(True, 0.9)), FakeAnalyzer(default=(True, 0.9))
    b = run(stop(lazy, 0.99, "when-needed"), (1.3, "is there parking nearby"))
    e = run(stop(eager, 0.99, "at-pause"), (1.3, "is there parking nearby"))
    assert lazy.analyses == 0 and eager.analyses == 1
    assert b.stops() == e.stops() == [pytest.approx(1.3, abs=1.5e-3)]
    assert b.reasons[0].probability is None  # no verdict was asked for, and the reason says so


def test_a_verdict_that_can_move_the_answer_is_asked_once_the_words_are_in() -> None:
    analyzer = FakeAnalyzer(default=(False, 0.05))
    s = stop(analyzer, 0.3, "when-needed")
    evidence = s.evidence("i would like to", None)
    low, high = (s.needed_silence(evidence._replace(audio=p)) for p in (0.0, 1.0))
    assert low - high > 0.01  # the audio moves this pause's wait
    b = run(s, (1.3, "i would like to"))
    assert analyzer.analyses == 1
    assert [c for c in analyzer.calls() if c[0] == "analyze"] == [("analyze", None)]
    need = s.needed_silence(s.evidence("i would like to", 0.05))
    assert b.stops() == [pytest.approx(max(1.3 + LATENCY, 1.0 + need), abs=1.5e-3)]
    assert b.reasons[0].probability == pytest.approx(0.05)


def test_one_pause_is_never_asked_about_twice() -> None:
    analyzer = FakeAnalyzer(default=(False, 0.05))
    run(stop(analyzer, 0.3, "when-needed"), (1.3, "i would like"), (1.5, "to"))
    assert analyzer.analyses == 1


def test_a_verdict_that_never_comes_is_waited_for_a_bounded_time_then_words_and_silence_decide() -> None:
    analyzer = FakeAnalyzer(default=(False, 0.05))
    s = stop(analyzer, 0.3, "when-needed")
    b = run(s, (1.3, "i would like to"), latency=60.0)
    need = s.needed_silence(s.evidence("i would like to", None))
    assert analyzer.analyses == 1
    assert b.stops() == [pytest.approx(max(1.3 + 0.5, 1.0 + need), abs=1.5e-3)]


def test_a_new_pause_may_be_asked_about_again() -> None:
    analyzer = FakeAnalyzer(default=(False, 0.05))
    b = StrategyBench(stop(analyzer, 0.3, "when-needed"), latency=LATENCY)
    b.turn_started()
    b.at(0.0, VS).at(1.2, VE).at(1.3, F.TranscriptionFrame("i would", finalized=True))
    b.at(1.5, VS).at(2.2, VE).at(2.3, F.TranscriptionFrame("like to", finalized=True)).at(8.0)
    assert analyzer.analyses == 2


@pytest.mark.parametrize("ask", ["", "always", None, 1])
def test_an_unknown_ask_audio_is_refused_at_construction(ask: object) -> None:
    with pytest.raises(ConfigurationError, match="ask_audio"):
        FusedTurnStop(ask_audio=ask)  # type: ignore[arg-type]


@settings(max_examples=60, deadline=None)
@given(words=st.floats(0.0, 1.0), audio=st.floats(0.0, 1.0), delay=st.sampled_from([0.1, 0.3, 0.6]))
def test_the_answer_is_that_of_asking_at_every_pause_within_the_verdicts_latency(
    words: float, audio: float, delay: float,
) -> None:
    ends = {}
    for ask in ("at-pause", "when-needed"):
        b = run(stop(FakeAnalyzer(default=(audio > 0.5, audio)), words, ask), (1.0 + delay, "book a table for"))
        ends[ask] = b.stops()
    assert len(ends["at-pause"]) == len(ends["when-needed"]) == 1
    assert abs(ends["when-needed"][0] - ends["at-pause"][0]) <= LATENCY + 2e-3
