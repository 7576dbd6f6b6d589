"""Each stop strategy says why it ended the turn (a TurnEndReason), and UserTurnStopped carries it.

The reason is the deciding strategy's own: the model's probability, the
words' verdict and the silence its rule asked for, with a text for people.
The machine adds the watchdog's and the session end's.
"""

from __future__ import annotations

import pytest

from rxvoice import frames as F
from rxvoice.aggregators import Pair
from rxvoice.turns import (
    REASON_KINDS,
    ExternalCompletionStop,
    ExternalStop,
    FusedTurnStop,
    SpeechTimeoutStop,
    TurnAnalyzerStop,
    TurnEndReason,
    TurnsConfig,
    VADStart,
)
from rxvoice.turns.ending import WordsEnd
from rxvoice.turns.reports import UserTurnStopped
from rxvoice.turns.strategy import Finalize, stopped

from .helpers import FakeAnalyzer, StrategyBench, run

VS = F.VADUserStartedSpeakingFrame(0.2)
VE = F.VADUserStoppedSpeakingFrame(0.2)


def T(text: str) -> F.TranscriptionFrame:
    return F.TranscriptionFrame(text, finalized=True)


def one_pause(strategy: object, words: str, *, words_at: float = 1.3, latency: float = 0.05,
              until: float = 8.0) -> TurnEndReason:
    """Speech 0–1.0 s (VAD stop at 1.2), the final at ``words_at``: the one reason the strategy gave."""
    b = StrategyBench(strategy, latency=latency)
    b.turn_started()
    if words_at < 1.2:
        b.at(0.0, VS).at(words_at, T(words)).at(1.2, VE)
    else:
        b.at(0.0, VS).at(1.2, VE).at(words_at, T(words))
    b.at(until)
    assert len(b.reasons) == 1, b.fired
    reason = b.reasons[0]
    assert isinstance(reason, TurnEndReason) and reason.kind in REASON_KINDS
    return reason


def test_old_constructors_still_work() -> None:
    """The new fields have defaults: UserTurnStopped(strategy, content, timestamp) and Finalize() as before."""
    assert UserTurnStopped(None, "hi", "t").reason is None
    assert Finalize().reason is None and Finalize(False).speaking_frames is False
    reason = TurnEndReason("silence", "0.8 s of silence", silence=0.8)
    assert stopped(reason=reason)[1] == Finalize() and stopped(reason=reason)[1].reason is reason  # a report only
    assert str(reason) == "0.8 s of silence" and reason.as_dict()["silence"] == 0.8


def test_speech_timeout_says_how_much_silence() -> None:
    """The VAD's stop_secs plus the timeout; words that came after it are named as what it waited for."""
    r = one_pause(SpeechTimeoutStop(0.6), "hello there", words_at=1.1)
    assert (r.kind, r.text, r.silence, r.waited_for_words) == ("silence", "0.8 s of silence", pytest.approx(0.8), False)
    r = one_pause(SpeechTimeoutStop(0.6), "hello there", words_at=2.5)
    assert r.text == "0.8 s of silence, then waited for the words" and r.waited_for_words


def test_speech_timeout_without_a_vad() -> None:
    b = StrategyBench(SpeechTimeoutStop(0.6))
    b.turn_started()
    b.at(0.0, T("typed words")).at(2.0)
    assert [(r.kind, r.text) for r in b.reasons] == [("no-vad", "0.6 s after the words (no VAD pause to judge)")]


def test_the_model_strategy_names_the_model_and_its_probability() -> None:
    analyzer = FakeAnalyzer(default=(True, 0.87))
    r = one_pause(TurnAnalyzerStop(analyzer), "What time is it?", words_at=1.1)
    assert (r.kind, r.text, r.probability) == ("model", "the end-of-turn model: complete (p=0.87)", 0.87)
    analyzer.label = "Smart Turn"  # type: ignore[attr-defined]
    r = one_pause(TurnAnalyzerStop(analyzer), "What time is it?", words_at=1.6)
    assert r.text == "Smart Turn: complete (p=0.87), then waited for the words"


def test_the_model_strategy_fallback_and_words_without_vad() -> None:
    analyzer = FakeAnalyzer(default=(False, 0.1), silence_chunks=3)
    b = StrategyBench(TurnAnalyzerStop(analyzer))
    b.turn_started()
    b.at(0.0, VS).at(0.1, T("hm")).at(0.2, F.InputAudioRawFrame(b"\x00\x00" * 320)).at(0.3, VE)
    for i in range(4):
        b.at(0.4 + i * 0.02, F.InputAudioRawFrame(b"\x00\x00" * 320))
    b.at(1.0)
    assert [(r.kind, r.probability) for r in b.reasons] == [("fallback", None)]
    assert b.reasons[0].text.endswith("(the end-of-turn model's fallback)")
    b = StrategyBench(TurnAnalyzerStop(FakeAnalyzer(), transcript_timeout=0.5))
    b.turn_started()
    b.at(0.0, T("typed")).at(2.0)
    assert [(r.kind, r.silence) for r in b.reasons] == [("no-vad", 0.5)]


class _Words:
    def __init__(self, probability: float, weight: float = 1.0) -> None:
        self.verdict = WordsEnd(probability, weight, f"words end p={probability:.2f}")

    def judge(self, text: str, confidence: float | None = None) -> WordsEnd:
        return self.verdict


@pytest.mark.parametrize(
    ("model", "words", "text", "kind", "judged"),
    [
        ((True, 0.95), 0.97, "What time is it?", "model", "complete"),
        ((False, 0.04), 0.99, "Yes, that's right.", "words", "complete"),
        ((False, 0.3), 0.45, "the fourteenth of march", "unsure", "incomplete"),
        ((True, 0.98), 0.02, "preferably in the", "unfinished", "incomplete"),
        ((True, 0.9), 0.4, "my order number is four five", "sequence", "incomplete"),
    ],
)
def test_the_fused_stop_says_what_decided(model: tuple[bool, float], words: float, text: str, kind: str,
                                          judged: str) -> None:
    """The kind names what carried the answer; the text gives the audio's and the words' figures and the
    calibrated odds; the silence is the one the wait asked for."""
    s = FusedTurnStop(FakeAnalyzer(default=model), words_end=_Words(words))
    r = one_pause(s, text)
    assert (r.kind, r.words, r.probability) == (kind, judged, model[1])
    assert f"p={model[1]:.2f}" in r.text and f"words end p={words:.2f}" in r.text and "end odds" in r.text
    assert r.silence == pytest.approx(s.needed_silence(s.evidence(text, model[1])))


def test_the_fused_stop_without_words_or_a_model() -> None:
    """No words for the last speech (the STT grace ran out), and no analyzer at all: said so."""
    b = StrategyBench(FusedTurnStop(FakeAnalyzer(default=(False, 0.2))))
    b.turn_started()
    b.at(0.0, VS).at(0.5, T("earlier words")).at(0.6, F.VADUserStartedSpeakingFrame(0.2)).at(1.2, VE).at(6.0)
    assert [(r.kind, r.words) for r in b.reasons] == [("unsure", None)]
    assert "no words to judge" in b.reasons[0].text and "p=0.20" in b.reasons[0].text
    r = one_pause(FusedTurnStop(None, words_end=_Words(0.4)), "the fourteenth of march")
    assert r.text.startswith("no audio model, words end p=0.40") and r.probability is None


def test_external_stops() -> None:
    b = StrategyBench(ExternalStop())
    b.turn_started()
    b.at(0.0, F.UserStartedSpeakingFrame()).at(0.1, T("hi")).at(0.3, F.UserStoppedSpeakingFrame()).at(1.0)
    assert [(r.kind, r.text) for r in b.reasons] == [("external", "a stop decided upstream")]
    b = StrategyBench(ExternalCompletionStop())
    b.at(0.5, F.UserTurnInferenceCompletedFrame())
    assert [r.kind for r in b.reasons] == ["external"]


def test_user_turn_stopped_carries_the_reason_through_the_aggregator() -> None:
    """The event's payload holds the deciding strategy's reason; the watchdog and the session end have theirs."""
    pair = Pair(turns=TurnsConfig(stop=[SpeechTimeoutStop(0.1)]))
    rec = run(pair, "vh(s)")
    (_, event), = rec.events_named("on_user_turn_stopped")
    assert event.reason == TurnEndReason("silence", "0.3 s of silence", silence=pytest.approx(0.3))
    pair = Pair(turns=TurnsConfig(start=[VADStart()], stop=[ExternalCompletionStop()], stop_timeout=0.2))
    (_, event), = run(pair, "v-h-s").events_named("on_user_turn_stopped")
    assert (event.strategy, event.reason.kind, event.reason.text) == (
        None, "watchdog", "the stop watchdog (0.2 s without activity)")
    pair = Pair(turns=TurnsConfig(start=[VADStart()], stop=[ExternalCompletionStop()], stop_timeout=5.0))
    (_, event), = run(pair, "v-h-E").events_named("on_user_turn_stopped")
    assert (event.strategy, event.reason.kind) == (None, "end")
