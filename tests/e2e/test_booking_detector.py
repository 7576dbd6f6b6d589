"""The booking call with the turn-taking detector before the STT and the pair adopting its decisions."""

from __future__ import annotations

from rxvoice.aggregators import Pair
from rxvoice.audio.turn import SmartTurnAnalyzer, TurnTakingDetector
from rxvoice.context import LLMContext
from rxvoice.turns import ExternalStrategies, TurnsConfig
from tests.support import smart_turn_model_path

from .booking import Call, run_call
from .test_booking import TURNS


def detector_call(delay: float, *, interims: bool = False) -> tuple[Call, TurnTakingDetector]:
    detector = TurnTakingDetector(SmartTurnAnalyzer(smart_turn_model_path()))
    pair = Pair(LLMContext(), turns=TurnsConfig(strategies=ExternalStrategies()))
    call = run_call([detector], pair, delay=delay, latency=0.04, interims=interims, offloaded=[detector])
    return call, detector


def test_detector_turns_are_adopted_three_answers_with_every_word() -> None:
    """Transcripts 0.1 s after speech: the detector ends three turns and each answer holds the whole turn."""
    call, _ = detector_call(0.1)
    assert call.questions == TURNS
    stops = [t / 1000 for t, _ in call.rec.events_named("on_user_turn_stopped")]
    assert len(stops) == 3
    # The detector's own VAD stops 0.2 s after speech; the answer follows the verdict (40 ms) at once.
    for answer, end in zip(call.answers, call.transcript.turn_ends, strict=True):
        assert 0.25 < answer - end <= 0.35


def test_detector_with_a_streaming_stt_waits_for_the_final_words() -> None:
    """Interim guesses then finals 0.3 s after speech: the aggregator waits for the finals of the last phrase."""
    call, _ = detector_call(0.3, interims=True)
    assert call.questions == TURNS
    for answer, end in zip(call.answers, call.transcript.turn_ends, strict=True):
        assert answer >= end + 0.3 - 1e-6


def test_detector_answers_hold_every_word_whenever_the_transcript_arrives() -> None:
    """Finals 0.3 s or 0.8 s after speech (after the detector's stop): each answer waits for the turn's last words."""
    for delay in (0.3, 0.8):
        call, _ = detector_call(delay)
        assert call.questions == TURNS, delay
        for answer, end in zip(call.answers, call.transcript.turn_ends, strict=True):
            assert answer >= end + delay - 1e-6
