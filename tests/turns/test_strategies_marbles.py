"""Every start and stop strategy through the user aggregator, as marble tests in virtual time."""

from __future__ import annotations

from typing import Any

from rxvoice import frames as F
from rxvoice.aggregators import Pair, UserTurnStopped
from rxvoice.pipeline import SchedulerOffload, inline_offload
from rxvoice.turns import (
    Deferred,
    ExternalCompletionStop,
    ExternalStart,
    ExternalStrategies,
    MinWordsStart,
    SpeechTimeoutStop,
    TranscriptionStart,
    TurnAnalyzerStop,
    TurnsConfig,
    VADStart,
)

from .helpers import FakeAnalyzer, contents, event_times, marbles, run, times, users

US, UE, INT, CTX = "UserStartedSpeakingFrame", "UserStoppedSpeakingFrame", "InterruptionFrame", "LLMContextFrame"
VS, VE = "VADUserStartedSpeakingFrame", "VADUserStoppedSpeakingFrame"


def _turn_events(rec: object) -> list[str]:
    return [n for n in rec.event_names() if n.startswith("on_user_turn")]  # type: ignore[attr-defined]


# -- start strategies ---------------------------------------------------------------------------


def test_vad_start_announces_and_interrupts() -> None:
    """VS opens the turn: US then INT, both ways, and on_user_turn_started carries VADStart."""
    pair = Pair()
    rec = run(pair, "v")
    assert rec.down_types() == [VS, US, INT]
    assert rec.up_types() == [US, INT]
    [(_, strategy)] = rec.events_named("on_user_turn_started")
    assert isinstance(strategy, VADStart)


def test_vad_start_without_interruptions() -> None:
    """VADStart(enable_interruptions=False) announces the turn but interrupts nothing."""
    pair = Pair(turns=TurnsConfig(start=[VADStart(enable_interruptions=False)]))
    assert run(pair, "v").down_types() == [VS, US]


def test_vad_start_without_speaking_frames() -> None:
    """VADStart(enable_user_speaking_frames=False) interrupts without announcing."""
    pair = Pair(turns=TurnsConfig(start=[VADStart(enable_user_speaking_frames=False)]))
    rec = run(pair, "v-h-s")
    assert rec.down_types() == [VS, INT, VE, CTX, UE]


def test_transcription_start_opens_on_an_interim() -> None:
    """Interims open the turn (and interrupt); none is forwarded (pipecat §8.8)."""
    pair = Pair()
    rec = run(pair, "i-i", legend={"i": F.InterimTranscriptionFrame("Hel")})
    assert rec.down_types() == [US, INT, UE]
    assert times(rec, F.UserStoppedSpeakingFrame) == [200 + 5000]  # no words ever came: the watchdog closed it
    assert contents(pair) == []


def test_transcription_start_a_bare_transcript_is_a_whole_turn() -> None:
    """A bare T with no VAD: US, INT, CTX, UE, ended user_speech_timeout after it (pipecat §8.10)."""
    pair = Pair()
    rec = run(pair, "H")
    assert rec.down_types() == [US, INT, CTX, UE]
    assert times(rec, F.LLMContextFrame) == [600]
    assert users(pair) == ["Hello"]


def test_transcription_start_finals_only() -> None:
    """TranscriptionStart(use_interim=False): an interim opens nothing, the final does."""
    pair = Pair(turns=TurnsConfig(start=[TranscriptionStart(use_interim=False)]))
    rec = run(pair, "i---h")
    assert event_times(rec, "on_user_turn_started") == [400]


def test_min_words_backchannel_neither_interrupts_nor_stays() -> None:
    """MinWords(3) while the bot speaks: "uh huh" interrupts nothing and is dropped; 3 words open (pipecat §8.43)."""
    pair = Pair(turns=TurnsConfig(start=[MinWordsStart(min_words=3)], stop=[SpeechTimeoutStop()]))
    legend = {"x": F.TranscriptionFrame("uh huh"), "o": F.TranscriptionFrame("wait stop please")}
    rec = run(pair, "B-x--------o", legend=legend)
    assert times(rec, F.InterruptionFrame) == [1100]
    assert users(pair) == ["wait stop please"]
    assert len(rec.events_named("on_user_turn_started")) == 1


def test_min_words_one_word_is_enough_while_the_bot_is_quiet() -> None:
    """MinWords(3) with the bot quiet: a one-word answer opens the turn."""
    pair = Pair(turns=TurnsConfig(start=[MinWordsStart(min_words=3)]))
    run(pair, "B-b-y", legend={"y": F.TranscriptionFrame("yes")})
    assert users(pair) == ["yes"]


def test_external_start_resolves_a_proposal() -> None:
    """ExternalStrategies: Proposed, T, ProposedStopped give US, INT, CTX, UE and no proposal (pipecat §8.28)."""
    pair = Pair(turns=TurnsConfig(strategies=ExternalStrategies()))
    rec = run(pair, "P-h-p")
    assert rec.down_types() == [US, INT, CTX, UE]
    assert users(pair) == ["hello there"]


def test_external_start_adopts_an_announced_turn() -> None:
    """US, T, UE announced upstream: forwarded once, no INT, the message written; nothing goes up (pipecat §8.29)."""
    pair = Pair(turns=TurnsConfig(strategies=ExternalStrategies()))
    rec = run(pair, "U-h-u")
    assert rec.down_types() == [US, UE, CTX]
    assert rec.up_types() == []
    assert users(pair) == ["hello there"]


def test_external_start_ignores_vad() -> None:
    """With external strategies a VAD start opens no turn (pipecat §8.46)."""
    rec = run(Pair(turns=TurnsConfig(strategies=ExternalStrategies())), "v-s")
    assert rec.down_types() == [VS, VE] and _turn_events(rec) == []


def test_external_start_proposals_without_interruptions() -> None:
    """ExternalStrategies(enable_interruptions=False): a proposal announces the turn, interrupts nothing."""
    pair = Pair(turns=TurnsConfig(strategies=ExternalStrategies(enable_interruptions=False)))
    assert run(pair, "P").down_types() == [US]


def test_proposals_pass_through_when_no_strategy_resolves_them() -> None:
    """Pinned VAD start + speech timeout: proposals go on untouched; one US, one UE (pipecat §8.32)."""
    pair = Pair(turns=TurnsConfig(start=[VADStart()], stop=[SpeechTimeoutStop()]))
    rec = run(pair, "(Pv)-h-(ps)")
    types = rec.down_types()
    assert types.count(US) == 1 and types.count(UE) == 1
    assert "ProposedUserStartedSpeakingFrame" in types and "ProposedUserStoppedSpeakingFrame" in types


# -- stop strategies ------------------------------------------------------------------------------


def test_speech_timeout_default_turn() -> None:
    """v-h-s: the answer 0.6 s after the VAD stop, the events in their order (seed §2.10.1)."""
    pair = Pair()
    rec = run(pair, "v-h-s")
    assert rec.down_types() == [VS, US, INT, VE, CTX, UE]
    assert times(rec, F.LLMContextFrame) == [1000]
    assert _turn_events(rec) == [
        "on_user_turn_started", "on_user_turn_message_added", "on_user_turn_inference_triggered",
        "on_user_turn_stopped",
    ]


def test_speech_timeout_waits_for_a_transcript_after_the_vad_stop() -> None:
    """The transcript lands 0.4 s after the VAD stop: still answered at the timeout, with it."""
    pair = Pair()
    rec = run(pair, "v-s---h")
    assert times(rec, F.LLMContextFrame) == [800]
    assert users(pair) == ["hello there"]


def test_speech_timeout_answers_a_late_transcript_at_once() -> None:
    """The transcript lands after the timeout but within the grace: answered the moment it arrives."""
    pair = Pair()
    rec = run(pair, "v-s------h")
    assert times(rec, F.LLMContextFrame) == [900]


def test_speech_timeout_uses_the_published_stt_latency() -> None:
    """p99 1.0 s with a 0.2 s stop window: an unfinalized transcript is answered 0.8 s after the VAD stop."""
    pair = Pair()
    rec = run(pair, "m-v-t-s", legend={"m": F.STTMetadataFrame("stt", ttfs_p99_latency=1.0)})
    assert times(rec, F.LLMContextFrame) == [600 + 800]
    assert rec.down_types()[0] == "STTMetadataFrame"


def test_speech_timeout_finalized_transcript_skips_the_stt_wait() -> None:
    """p99 1.0 s: a finalized transcript needs only the speech timeout."""
    pair = Pair()
    rec = run(pair, "m-v-h-s", legend={"m": F.STTMetadataFrame("stt", ttfs_p99_latency=1.0)})
    assert times(rec, F.LLMContextFrame) == [600 + 600]


def test_turn_analyzer_stop_in_the_aggregator() -> None:
    """Smart-Turn-like stop: the complete verdict, 50 ms after the VAD stop, answers; its metrics go downstream.

    The verdict's report goes out before the turn end it causes, so whoever watches both sees the cause first.
    """
    pair = Pair(turns=TurnsConfig(stop=[TurnAnalyzerStop(FakeAnalyzer([(True, 0.93)]))]))
    m = marbles()
    pair.user().offload = SchedulerOffload(m.scheduler, 0.05)
    rec = run(pair, "S-v-h-s", m=m)
    assert rec.down_types() == [
        "StartFrame", "SpeechControlParamsFrame", VS, US, INT, VE, "MetricsFrame", CTX, UE,
    ]
    assert times(rec, F.LLMContextFrame) == [600 + 50]
    [(_, metrics)] = rec.of_type(F.MetricsFrame)
    assert isinstance(metrics, F.MetricsFrame) and metrics.data[0].probability == 0.93
    assert rec.up_types() == ["SpeechControlParamsFrame", US, INT, UE]
    stopped = rec.events_named("on_user_turn_stopped")[0][1]
    assert isinstance(stopped.strategy, TurnAnalyzerStop)


def test_turn_analyzer_incomplete_waits_for_the_next_pause() -> None:
    """Incomplete at the first pause: no answer; the second pause's complete verdict answers all of it."""
    analyzer = FakeAnalyzer([(False, 0.2), (True, 0.8)])
    pair = Pair(turns=TurnsConfig(stop=[TurnAnalyzerStop(analyzer)]))
    pair.user().offload = inline_offload
    legend = {"a": F.TranscriptionFrame("I want"), "z": F.TranscriptionFrame("a pizza")}
    rec = run(pair, "v-a-s-----v-z-s", legend=legend)
    assert times(rec, F.LLMContextFrame) == [1400]
    assert users(pair) == ["I want a pizza"]


def test_turn_analyzer_incomplete_is_bounded_by_the_watchdog() -> None:
    """An analyzer that never says complete: the stop watchdog closes the turn stop_timeout after the pause."""
    pair = Pair(turns=TurnsConfig(stop=[TurnAnalyzerStop(FakeAnalyzer(default=(False, 0.1)))], stop_timeout=2.0))
    pair.user().offload = inline_offload
    rec = run(pair, "v-h-s")
    assert times(rec, F.UserStoppedSpeakingFrame) == [400 + 2000]
    assert _turn_events(rec)[1] == "on_user_turn_stop_timeout"


def test_turn_analyzer_reports_a_prediction_downstream() -> None:
    """Each prediction reaches downstream as MetricsFrame(TurnMetricsData(False, 0.17)) (seed §4.2)."""
    pair = Pair(turns=TurnsConfig(stop=[TurnAnalyzerStop(FakeAnalyzer([(False, 0.17)]))]))
    pair.user().offload = inline_offload
    rec = run(pair, "v-s")
    [(_, metrics)] = rec.of_type(F.MetricsFrame)
    assert isinstance(metrics, F.MetricsFrame)
    assert (metrics.data[0].is_complete, metrics.data[0].probability) == (False, 0.17)


def test_turn_analyzer_verdict_before_the_turn_opens() -> None:
    """The verdict lands before any turn; the transcript opens one and the fallback closes it in under 1 s
    (seed §4.2)."""
    pair = Pair(turns=TurnsConfig(start=[TranscriptionStart()], stop=[TurnAnalyzerStop(FakeAnalyzer())]))
    pair.user().offload = inline_offload
    rec = run(pair, "v-s-h")
    [started] = event_times(rec, "on_user_turn_started")
    [stopped] = event_times(rec, "on_user_turn_stopped")
    assert stopped - started < 1000
    assert users(pair) == ["hello there"]


def test_speech_timeout_transcript_with_no_vad_stop_still_stops() -> None:
    """Transcription start + the speech-timeout fallback close the turn well under 1 s (seed §4.2)."""
    pair = Pair(turns=TurnsConfig(start=[TranscriptionStart()], stop=[SpeechTimeoutStop(0.1)]))
    rec = run(pair, "h")
    assert event_times(rec, "on_user_turn_stopped") == [100]


def test_external_completion_gates_the_answer() -> None:
    """VAD start + external completion: a final transcript alone does not answer; VS, VE, completion does
    (seed §4.1)."""
    pair = Pair(turns=TurnsConfig(start=[VADStart()], stop=[ExternalCompletionStop()], stop_timeout=30))
    rec = run(pair, "v-h-----s--c")
    assert times(rec, F.LLMContextFrame) == [1100]
    assert "on_user_turn_inference_triggered" not in rec.event_names()


def test_deferred_analyzer_then_completion() -> None:
    """Deferred(turn analyzer) answers early but does not stop; the completion frame does (seed §4.2)."""
    stop = [Deferred(TurnAnalyzerStop(FakeAnalyzer())), ExternalCompletionStop()]
    pair = Pair(turns=TurnsConfig(start=[VADStart()], stop=stop, stop_timeout=30))
    pair.user().offload = inline_offload
    rec = run(pair, "v-h-s-----c")
    assert times(rec, F.LLMContextFrame) == [400]
    assert times(rec, F.UserStoppedSpeakingFrame) == [1000]
    [(_, stopped)] = rec.events_named("on_user_turn_stopped")
    assert isinstance(stopped, UserTurnStopped) and isinstance(stopped.strategy, ExternalCompletionStop)


def test_multi_inference_turn_writes_each_segment() -> None:
    """Two segments answered early, one completion: two messages, one stop with the whole turn (pipecat §8.25)."""
    pair = Pair(turns=TurnsConfig(start=[VADStart()], stop=[Deferred(SpeechTimeoutStop()), ExternalCompletionStop()]))
    legend = {"a": F.TranscriptionFrame("I'm thinking"), "z": F.TranscriptionFrame("about pizza")}
    rec = run(pair, "v-a-s---------v-z-s---------c", legend=legend)
    assert contents(pair) == [("user", "I'm thinking"), ("user", "about pizza")]
    assert len(rec.events_named("on_user_turn_inference_triggered")) == 2
    [(_, stopped)] = rec.events_named("on_user_turn_stopped")
    assert stopped.content == "I'm thinking about pizza"


def test_external_start_flags_reach_the_frames() -> None:
    """An ExternalStart built without interruptions resolves proposals into a turn that interrupts nothing."""
    pair = Pair(turns=TurnsConfig(start=[ExternalStart(enable_interruptions=False)], stop=[SpeechTimeoutStop()]))
    rec = run(pair, "P-h")
    assert rec.down_types()[:1] == [US] and INT not in rec.down_types()


def test_wake_phrase_gates_the_turns() -> None:
    """Before the wake phrase nothing opens a turn (and the words are dropped); the phrase opens one with it."""
    from rxvoice.turns import WakePhraseStart

    start: list[Any] = [WakePhraseStart(phrases=["hey robot"]), VADStart(), TranscriptionStart()]
    pair = Pair(turns=TurnsConfig(start=start))
    legend = {"x": F.TranscriptionFrame("what time is it"), "y": F.TranscriptionFrame("Hey robot, what time is it?")}
    rec = run(pair, "v-x-s--------v-y-s", legend=legend)
    assert event_times(rec, "on_user_turn_started") == [1500]
    assert users(pair) == ["Hey robot, what time is it?"]
