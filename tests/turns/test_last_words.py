"""The words-of-the-last-speech rule, end to end through the user aggregator, in virtual time.

A caller says "Oh, I'm originally from Chicago also." and, 60 ms later, "I'm in New Jersey now
though.": one stretch of speech for the VAD (its stop window is longer than the gap). The STT
finalizes each sentence 0.3 s after it ends, so the first final arrives while the second sentence
is being spoken. Every stop strategy that waits for words must answer with both sentences: the
first final is not the words of the speech that just ended.
"""

from __future__ import annotations

from typing import Any

import pytest

from rxvoice import frames as F
from rxvoice.aggregators import Pair
from rxvoice.pipeline import SchedulerOffload
from rxvoice.turns import (
    ExternalStrategies,
    FusedTurnStop,
    SpeechTimeoutStop,
    TurnAnalyzerStop,
    TurnsConfig,
)

from .helpers import FakeAnalyzer, marbles, users

FIRST = "Oh, I'm originally from Chicago also."
SECOND = "I'm in New Jersey now though."
SEG1 = (0.0, 1.5)
SEG2 = (1.56, 3.0)
STOP_SECS = 0.2


def two_segments(*, announced: bool = False) -> list[tuple[float, F.Frame]]:
    """VAD start/stop around both segments (one stretch), finals 0.3 s after each segment."""
    vad_start = SEG1[0] + 0.2
    vad_stop = SEG2[1] + STOP_SECS
    out: list[tuple[float, F.Frame]] = [
        (vad_start, F.VADUserStartedSpeakingFrame(0.2, vad_start)),
        (SEG1[1] + 0.3, F.TranscriptionFrame(FIRST, finalized=True)),
        (vad_stop, F.VADUserStoppedSpeakingFrame(STOP_SECS, vad_stop)),
        (SEG2[1] + 0.3, F.TranscriptionFrame(SECOND, finalized=True)),
    ]
    if announced:  # a turn detector upstream decided: its frames travel behind the VAD's
        out.insert(1, (vad_start, F.UserStartedSpeakingFrame()))
        out.insert(3, (vad_stop + 0.045, F.UserStoppedSpeakingFrame()))
    return sorted(out, key=lambda item: item[0])


def run(turns: TurnsConfig, down: list[tuple[float, F.Frame]], latency: float = 0.045) -> tuple[Pair, Any]:
    pair = Pair(turns=turns)
    bench = marbles()
    pair.user().offload = SchedulerOffload(bench.scheduler, latency)
    rec = bench.run(pair.user(), down=down, watch=[pair.user()], until=10.0)
    return pair, rec


STRATEGIES = {
    "speech-timeout": lambda: TurnsConfig(stop=[SpeechTimeoutStop(user_speech_timeout=0.05)]),
    "turn-analyzer": lambda: TurnsConfig(stop=[TurnAnalyzerStop(FakeAnalyzer(default=(True, 0.7)))]),
    "fused": lambda: TurnsConfig(stop=[FusedTurnStop(FakeAnalyzer(default=(True, 0.7)))]),
}


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_the_turn_holds_the_second_segments_words(name: str) -> None:
    """The verdict (45 ms after the VAD stop) comes before the second final: the turn waits for it."""
    pair, rec = run(STRATEGIES[name](), two_segments())
    assert users(pair) == [f"{FIRST} {SECOND}"]
    stops = [t for t, _ in rec.events_named("on_user_turn_stopped")]
    assert stops == [round((SEG2[1] + 0.3) * 1000)]  # answered the moment the last words arrived


def test_external_stop_adopting_an_announced_turn_holds_the_second_segments_words() -> None:
    """ExternalStop sees the VAD frames too: the first final came before the speech ended."""
    pair, rec = run(TurnsConfig(strategies=ExternalStrategies()), two_segments(announced=True))
    assert users(pair) == [f"{FIRST} {SECOND}"]
    stops = [t for t, _ in rec.events_named("on_user_turn_stopped")]
    assert stops == [round((SEG2[1] + 0.3 + 0.5) * 1000)]  # the words, then 0.5 s for more finals


def test_without_a_second_final_the_wait_is_the_stt_latency() -> None:
    """No final for the last speech: the turn waits TRANSCRIPT_GRACE (or the STT's p99) after the speech, no more."""
    down = [item for item in two_segments() if not (isinstance(item[1], F.TranscriptionFrame)
                                                   and item[1].text == SECOND)]
    pair, rec = run(TurnsConfig(stop=[TurnAnalyzerStop(FakeAnalyzer(default=(True, 0.7)))]), down)
    assert users(pair) == [FIRST]
    assert [t for t, _ in rec.events_named("on_user_turn_stopped")] == [round((SEG2[1] + 1.0) * 1000)]
    meta = [(0.0, F.STTMetadataFrame("stt", ttfs_p99_latency=0.5))]
    pair, rec = run(TurnsConfig(stop=[TurnAnalyzerStop(FakeAnalyzer(default=(True, 0.7)))]), meta + down)
    assert [t for t, _ in rec.events_named("on_user_turn_stopped")] == [round((SEG2[1] + 0.5) * 1000)]


def test_external_strategies_write_a_sentence_finalized_in_pieces_as_one_message() -> None:
    """Issue 13, defect 10: P, p, "I want to book", "a table for two." → one message, 0.5 s after the last final."""
    legend = {"x": F.TranscriptionFrame("I want to book", finalized=True),
              "y": F.TranscriptionFrame("a table for two.", finalized=True)}
    pair = Pair(turns=TurnsConfig(strategies=ExternalStrategies()))
    rec = marbles(legend).run(pair.user(), down="P-p-x-y", legend=legend, watch=[pair.user()], until=3.0)
    assert users(pair) == ["I want to book a table for two."]
    assert [t for t, _ in rec.of_type(F.LLMContextFrame)] == [600 + 500]
