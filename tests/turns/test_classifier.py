"""ClassifierStop: the inner strategy's end is asked about; complete, short and long pauses, failures, time-outs.

Marble tests in virtual time through the user aggregator (100 ms a dash).
The inner strategy is a 0.6 s speech timeout: the user speaks from 0 to 0.3 s
(VAD stop at 0.5 s, words at 0.3 s), so the inner end comes at 1.1 s. The
classifier answers after ``latency`` seconds (a scheduler offload).
"""

from __future__ import annotations

from typing import Any

import pytest

from rxvoice import LLMContext
from rxvoice import frames as F
from rxvoice.aggregators import Pair
from rxvoice.errors import ConfigurationError
from rxvoice.pipeline import SchedulerOffload
from rxvoice.testing import FrameMarbles, Recording
from rxvoice.turns import SpeechTimeoutStop, TurnsConfig
from rxvoice.turns.classifier import (
    ClassifierStop,
    ClassifyRequest,
    CompletionClassifier,
    TurnClassified,
    TurnCompletion,
    parse_completion,
)

L: dict[str, F.Frame] = {
    "v": F.VADUserStartedSpeakingFrame(0.2),
    "s": F.VADUserStoppedSpeakingFrame(0.2),
    "a": F.TranscriptionFrame("I'd like to check my balance", "u1", finalized=True),
    "b": F.TranscriptionFrame("and my savings too.", "u1", finalized=True),
    "A": F.LLMContextAssistantTurnFrame("How can I help?", "t"),
    "E": F.EndFrame(),
}
SAYS = "v--a-s" + "-" * 150 + "E"


class Scripted:
    """Answers from a list, one per question; records what it was asked."""

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.asked: list[ClassifyRequest] = []

    def classify(self, request: ClassifyRequest) -> Any:
        self.asked.append(request)
        answer = self.answers.pop(0) if self.answers else "complete"
        if isinstance(answer, BaseException):
            raise answer
        return answer


def run(down: str, classifier: Any, *, latency: float = 0.2, up: str = "", **kw: Any) -> tuple[Pair, Recording]:
    stop = ClassifierStop(SpeechTimeoutStop(user_speech_timeout=0.6), classifier, **kw)
    pair = Pair(LLMContext(), turns=TurnsConfig(stop=[stop], stop_timeout=30.0))
    bench = FrameMarbles(L)
    pair.user().offload = SchedulerOffload(bench.scheduler, latency)
    rec = bench.run(pair.user(), down=down, up=up, watch=[pair.user()])
    return pair, rec


def stops(rec: Recording) -> list[int]:
    return [t for t, _ in rec.events_named("on_user_turn_stopped")]


def verdicts(rec: Recording) -> list[tuple[int, str, bool]]:
    out = []
    for t, p in rec.events_named("on_user_turn_classified"):
        assert isinstance(p, TurnClassified)
        out.append((t, p.outcome, p.ended))
    return out


def test_complete_ends_the_turn_when_the_classifier_answers() -> None:
    classifier = Scripted("complete")
    _pair, rec = run(SAYS, classifier, up="A")
    assert stops(rec) == [1300]  # the inner end at 1.1 s, the answer 0.2 s later
    assert verdicts(rec) == [(1300, "complete", True)]
    [asked] = classifier.asked
    assert asked.words == "I'd like to check my balance"
    assert asked.conversation == ({"role": "assistant", "content": "How can I help?"},)
    [(_, stopped)] = rec.events_named("on_user_turn_stopped")
    assert stopped.reason.kind == "silence" and "classifier: complete" in stopped.reason.text


def test_a_short_pause_keeps_the_turn_open_and_the_user_going_on_is_asked_again_whole() -> None:
    classifier = Scripted("short_pause", "complete")
    # The user goes on at 2.0 s ("and my savings too."), stops at 2.5 s: the inner end at 3.1 s, the answer at 3.3 s.
    down = "v--a-s--------------v--b-s" + "-" * 150 + "E"
    pair, rec = run(down, classifier)
    assert verdicts(rec) == [(1300, "short_pause", False), (3300, "complete", True)]
    assert stops(rec) == [3300]
    assert [r.words for r in classifier.asked] == ["I'd like to check my balance",
                                                  "I'd like to check my balance and my savings too."]
    assert [m["content"] for m in pair.context().messages] == ["I'd like to check my balance and my savings too."]


def test_a_short_pause_ends_the_turn_after_its_bound_in_silence() -> None:
    _pair, rec = run(SAYS, Scripted("short"), short_timeout=5.0)
    assert verdicts(rec) == [(1300, "short_pause", False), (6300, "pause_over", True)]
    assert stops(rec) == [6300]


def test_a_long_pause_waits_its_longer_bound() -> None:
    _pair, rec = run("v--a-s" + "-" * 200 + "E", Scripted(TurnCompletion.LONG_PAUSE), long_timeout=10.0)
    assert verdicts(rec) == [(1300, "long_pause", False), (11300, "pause_over", True)]
    assert stops(rec) == [11300]


def test_a_slow_classifier_fails_open_after_its_bound() -> None:
    _pair, rec = run(SAYS, Scripted("short"), latency=3.0, fail_open_after=1.0)
    assert verdicts(rec) == [(2100, "timed_out", True)]
    assert stops(rec) == [2100]  # the inner end stands; the late "short" changes nothing
    assert len(rec.events_named("on_user_turn_classified")) == 1


def test_a_classifier_that_raises_lets_the_inner_end_stand() -> None:
    _pair, rec = run(SAYS, Scripted(RuntimeError("model down")))
    assert verdicts(rec) == [(1300, "failed", True)]
    assert stops(rec) == [1300]
    [(_, report)] = rec.events_named("on_user_turn_classified")
    assert "RuntimeError" in report.detail


@pytest.mark.parametrize("junk", ["maybe", "", None, 3, "lunch"])
def test_a_junk_answer_lets_the_inner_end_stand(junk: Any) -> None:
    _pair, rec = run(SAYS, Scripted(junk))
    assert verdicts(rec) == [(1300, "failed", True)]
    assert stops(rec) == [1300]


def test_speech_while_the_classifier_thinks_drops_the_question() -> None:
    """The user goes on at 1.2 s, before the answer (1.3 s): the answer is ignored, the turn goes on."""
    classifier = Scripted("complete", "complete")
    down = "v--a-s------v--b-s" + "-" * 150 + "E"
    _pair, rec = run(down, classifier)
    assert stops(rec) == [2500]  # the second inner end at 2.3 s, answered at 2.5 s
    assert [o for _, o, _ in verdicts(rec)] == ["complete"]


def test_the_end_is_likely_while_the_classifier_thinks() -> None:
    """With speculation on, the held end lets the model be asked early."""
    from rxvoice import pipeline
    from rxvoice.testing import ScriptedLLM

    stop = ClassifierStop(SpeechTimeoutStop(user_speech_timeout=0.6), Scripted("complete"))
    pair = Pair(LLMContext(), turns=TurnsConfig(stop=[stop], speculate=True))
    bench = FrameMarbles(L)
    pair.user().offload = SchedulerOffload(bench.scheduler, 0.2)
    llm = ScriptedLLM(["Sure."], first_token_delay=0.5)
    rec = bench.run(pipeline(pair.user(), llm, pair.assistant()), down=SAYS, watch=[pair.user()])
    outcomes = [(t, p.outcome) for t, p in rec.events_named("on_user_turn_speculation")]
    assert outcomes[0] == (500, "asked") and (1300, "released") in outcomes


@pytest.mark.parametrize("bad", [
    {"fail_open_after": 0}, {"fail_open_after": 11}, {"short_timeout": 0}, {"short_timeout": 61},
    {"long_timeout": 1.0, "short_timeout": 5.0}, {"long_timeout": 121}, {"history": -1}, {"history": 1.5},
    {"fail_open_after": float("nan")},
])
def test_parameters_out_of_range_fail_at_construction(bad: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        ClassifierStop(SpeechTimeoutStop(), CompletionClassifier(), **bad)


def test_it_wraps_a_stop_strategy_and_needs_a_classifier() -> None:
    with pytest.raises(ConfigurationError):
        ClassifierStop(None, CompletionClassifier())  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        ClassifierStop(SpeechTimeoutStop(), object())  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        ClassifierStop(ClassifierStop(SpeechTimeoutStop()), CompletionClassifier())


@pytest.mark.parametrize(("answer", "verdict"), [
    ("complete", TurnCompletion.COMPLETE), ("Complete.", TurnCompletion.COMPLETE), ("A", TurnCompletion.COMPLETE),
    ("short pause", TurnCompletion.SHORT_PAUSE), ("short", TurnCompletion.SHORT_PAUSE),
    ("LONG_PAUSE", TurnCompletion.LONG_PAUSE), ("○", TurnCompletion.LONG_PAUSE), ("maybe", None), (None, None),
])
def test_parse_completion(answer: Any, verdict: TurnCompletion | None) -> None:
    assert parse_completion(answer) is verdict


@pytest.mark.parametrize(("words", "verdict"), [
    ("I'd like to check my balance.", TurnCompletion.COMPLETE),
    ("a table for", TurnCompletion.SHORT_PAUSE),
    ("my number is four five", TurnCompletion.SHORT_PAUSE),
    ("hold on, let me check", TurnCompletion.LONG_PAUSE),
])
def test_the_rule_based_classifier_reads_the_completion_signal(words: str, verdict: TurnCompletion) -> None:
    assert CompletionClassifier().classify(ClassifyRequest(words)) is verdict
