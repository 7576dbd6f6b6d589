"""Stop strategies as pure functions, driven alone in virtual time (StrategyBench)."""

from __future__ import annotations

from typing import Any

import pytest

from rxvoice import frames as F
from rxvoice.errors import ConfigurationError
from rxvoice.turns import (
    AnalyzerSession,
    Deferred,
    ExternalCompletionStop,
    ExternalStop,
    SpeechTimeoutStop,
    TurnAnalyzerStop,
)
from rxvoice.turns.strategy import Finalize

from .helpers import FakeAnalyzer, StrategyBench

VS = F.VADUserStartedSpeakingFrame(0.2)
VE = F.VADUserStoppedSpeakingFrame(0.2)
VE0 = F.VADUserStoppedSpeakingFrame(0.0)


def T(text: str = "hello", finalized: bool = False) -> F.TranscriptionFrame:
    return F.TranscriptionFrame(text, finalized=finalized)


def meta(p99: float) -> F.STTMetadataFrame:
    return F.STTMetadataFrame("stt", ttfs_p99_latency=p99)


# -- SpeechTimeoutStop ---------------------------------------------------------------------


def test_speech_timeout_fires_after_the_timeout() -> None:
    """S, T, E: nothing until user_speech_timeout after the VAD stop, then inference and finalize (pipecat §8.49)."""
    b = StrategyBench(SpeechTimeoutStop(user_speech_timeout=0.1))
    b.at(0.0, VS).at(0.05, T()).at(0.1, VE).at(0.19)
    assert b.fired == []
    b.at(1.0)
    assert b.fired == [(0.2, "inference"), (0.2, "finalize")]


def test_speech_timeout_waits_for_the_words_then_fires_at_once() -> None:
    """S, I, E, past the timeout: no words, no answer; the transcript then fires it at once (pipecat §8.50)."""
    for finalized in (True, False):
        b = StrategyBench(SpeechTimeoutStop(user_speech_timeout=0.1))
        b.at(0.0, VS).at(0.05, F.InterimTranscriptionFrame("hel")).at(0.1, VE).at(0.5)
        assert b.fired == []
        b.at(0.6, T(finalized=finalized))
        assert b.stops() == [0.6]


def test_speech_timeout_waits_out_the_stt_latency_for_an_unfinalized_transcript() -> None:
    """p99 0.4: a finalized transcript ends the turn at the timeout, an unfinalized one at the p99 (pipecat §8.52)."""
    b = StrategyBench(SpeechTimeoutStop(user_speech_timeout=0.1))
    b.at(0.0, meta(0.4)).at(1.0, VS).at(1.2, VE0).at(1.25, T(finalized=True)).at(3.0)
    assert b.stops() == [1.3]
    b = StrategyBench(SpeechTimeoutStop(user_speech_timeout=0.1))
    b.at(0.0, meta(0.4)).at(1.0, VS).at(1.2, VE0).at(1.25, T()).at(3.0)
    assert b.stops() == [1.6]


def test_speech_timeout_fallback_counts_from_a_transcript_without_vad() -> None:
    """A transcript with no VAD around it: the silence counts from it, the STT latency is ignored (pipecat §8.53)."""
    b = StrategyBench(SpeechTimeoutStop(user_speech_timeout=0.1))
    b.at(0.0, meta(0.4)).at(1.0, T()).at(1.05, T("more")).at(3.0)
    assert b.stops() == [1.15]


def test_speech_timeout_a_late_transcript_does_not_trigger_the_next_turn() -> None:
    """Stale-text guard: a late transcript between two turns adds no trigger (pipecat §8.55)."""
    b = StrategyBench(SpeechTimeoutStop(user_speech_timeout=0.1))
    b.at(0.0, VS).at(0.05, T()).at(0.1, VE).at(0.3)
    b.turn_stopped()
    b.at(0.4, T("late"))
    b.turn_started()
    b.at(0.5, VS).at(0.55, T("again")).at(0.6, VE).at(2.0)
    assert b.stops() == [0.2, 0.7]


def test_speech_timeout_waits_for_the_segment_transcript_within_the_grace() -> None:
    """Words from an earlier phrase do not end the turn at once: the new phrase's transcript is awaited."""
    b = StrategyBench(Deferred(SpeechTimeoutStop(user_speech_timeout=0.1)))
    b.at(0.0, VS).at(0.05, T("first")).at(0.1, VE).at(0.3)
    assert b.inferences() == [0.2]
    b.at(1.0, VS).at(1.2, VE).at(1.5, T("second")).at(3.0)
    assert b.inferences() == [0.2, 1.5]


def test_speech_timeout_grace_bounds_the_wait_for_a_missing_transcript() -> None:
    """No transcript for the new phrase: the turn ends TRANSCRIPT_GRACE - stop_secs after the VAD stop."""
    b = StrategyBench(Deferred(SpeechTimeoutStop(user_speech_timeout=0.1)))
    b.at(0.0, VS).at(0.05, T("first")).at(0.1, VE).at(0.3)
    b.at(1.0, VS).at(1.2, VE).at(5.0)
    assert b.inferences() == [0.2, 2.0]


def test_speech_timeout_grace_follows_the_published_latency() -> None:
    """With a published p99 the wait for the missing transcript is the p99 (minus the VAD stop window)."""
    b = StrategyBench(Deferred(SpeechTimeoutStop(user_speech_timeout=0.1)))
    b.at(0.0, meta(0.5)).at(0.1, VS).at(0.15, T("first", True)).at(0.2, VE).at(0.4)
    b.at(1.0, VS).at(1.2, VE).at(5.0)
    assert b.inferences() == [0.3, 1.5]


def test_speech_timeout_without_waiting_for_a_transcript() -> None:
    """wait_for_transcript=False: the turn ends at the timeout, words or not."""
    b = StrategyBench(SpeechTimeoutStop(user_speech_timeout=0.1, wait_for_transcript=False))
    b.at(0.0, VS).at(0.1, VE).at(1.0)
    assert b.stops() == [0.2]


def test_speech_timeout_new_speech_cancels_the_pending_stop() -> None:
    """A VAD start before the timeout elapsed discards the pending end of turn."""
    b = StrategyBench(SpeechTimeoutStop(user_speech_timeout=0.5))
    b.at(0.0, VS).at(0.05, T()).at(0.1, VE).at(0.3, VS).at(1.0, T("on"))
    assert b.fired == []
    b.at(1.1, VE).at(2.0)
    assert b.stops() == [1.6]


@pytest.mark.parametrize("bad", [-0.1, float("nan"), True, "0.6"])
def test_speech_timeout_rejects_a_bad_timeout(bad: object) -> None:
    """A negative or non-numeric timeout is refused at construction."""
    with pytest.raises(ConfigurationError, match="user_speech_timeout"):
        SpeechTimeoutStop(user_speech_timeout=bad)  # type: ignore[arg-type]


# -- TurnAnalyzerStop ---------------------------------------------------------------------------


def test_turn_analyzer_releases_within_the_stt_deadline() -> None:
    """Verdict after 0.3 s, p99 0.6, stop_secs 0.2, unfinalized transcript: released 0.4 s after the VAD stop
    (under 0.55 s, not before the verdict; pipecat §8.56)."""
    b = StrategyBench(TurnAnalyzerStop(FakeAnalyzer([(True, 0.9)])), latency=0.3)
    b.at(0.0, meta(0.6)).at(0.5, VS).at(1.0, VE).at(1.1, T()).at(3.0)
    assert b.stops() == [1.4]


def test_turn_analyzer_fires_on_the_verdict_when_the_words_are_in() -> None:
    """A finalized transcript already in: the complete verdict ends the turn when it arrives."""
    b = StrategyBench(TurnAnalyzerStop(FakeAnalyzer([(True, 0.9)])), latency=0.05)
    b.at(0.0, VS).at(0.3, T(finalized=True)).at(0.5, VE).at(2.0)
    assert b.stops() == [0.55]


def test_turn_analyzer_without_waiting_for_a_transcript() -> None:
    """wait_for_transcript=False: VS, VE and no transcript are released on the verdict (pipecat §8.58)."""
    b = StrategyBench(TurnAnalyzerStop(FakeAnalyzer([(True, 0.8)]), wait_for_transcript=False), latency=0.1)
    b.at(0.0, VS).at(0.5, VE).at(2.0)
    assert b.stops() == [0.6]


def test_turn_analyzer_verdict_before_the_transcript_waits_for_it() -> None:
    """Complete verdict first, transcript later (within the grace): the turn ends on the transcript."""
    b = StrategyBench(TurnAnalyzerStop(FakeAnalyzer([(True, 0.9)])), latency=0.05)
    b.at(0.0, VS).at(0.5, VE).at(0.7)
    assert b.fired == []
    b.at(0.9, T())
    assert b.stops() == [0.9]


def test_turn_analyzer_incomplete_keeps_the_turn_open_until_the_next_pause() -> None:
    """Incomplete: no stop; the next pause is judged again and its complete verdict ends the turn."""
    analyzer = FakeAnalyzer([(False, 0.2), (True, 0.8)])
    b = StrategyBench(TurnAnalyzerStop(analyzer), latency=0.05)
    b.at(0.0, VS).at(0.2, T("I want")).at(0.5, VE).at(1.5)
    assert b.fired == []
    b.at(2.0, VS).at(2.3, T("a pizza")).at(2.5, VE).at(4.0)  # the words as the speech ends (2.5 - 0.2)
    assert b.stops() == [2.55]
    assert analyzer.analyses == 2


def test_turn_analyzer_silence_fallback_ends_an_incomplete_turn() -> None:
    """After an incomplete verdict, the stream's silence fallback (append_audio -> True) ends the turn."""
    analyzer = FakeAnalyzer([(False, 0.2)], silence_chunks=5)
    b = StrategyBench(TurnAnalyzerStop(analyzer), latency=0.01)
    chunk = F.InputAudioRawFrame(b"\x01\x00" * 160)
    b.at(0.0, VS).at(0.1, chunk).at(0.2, T("I want")).at(0.3, VE)
    for i in range(6):
        b.at(0.4 + 0.1 * i, chunk)
    assert b.stops() == [0.8]


def test_turn_analyzer_reports_each_prediction() -> None:
    """Each verdict is pushed as a MetricsFrame(TurnMetricsData) with the time it took (seed §4.2)."""
    b = StrategyBench(TurnAnalyzerStop(FakeAnalyzer([(False, 0.17)])), latency=0.04)
    b.at(0.0, VS).at(0.5, VE).at(1.0)
    [metrics] = b.pushed
    assert isinstance(metrics, F.MetricsFrame)
    [data] = metrics.data
    assert (data.is_complete, data.probability) == (False, 0.17)
    assert data.e2e_processing_time_ms == pytest.approx(40.0)


def test_turn_analyzer_failure_is_an_incomplete_verdict() -> None:
    """An analyzer that raises: logged, taken as incomplete, no metrics, the next pause is judged normally."""
    analyzer = FakeAnalyzer([RuntimeError("model crashed"), (True, 0.9)])
    b = StrategyBench(TurnAnalyzerStop(analyzer), latency=0.01)
    b.at(0.0, VS).at(0.2, T("hi")).at(0.5, VE).at(1.0)
    assert b.fired == [] and b.pushed == []
    b.at(1.5, VS).at(1.7, T("again")).at(1.8, VE).at(2.5)
    assert b.stops() == [1.81]


def test_turn_analyzer_ignores_a_verdict_overtaken_by_new_speech() -> None:
    """A slow verdict for an earlier pause is stale once the user spoke again; the latest pause decides."""
    analyzer = FakeAnalyzer([(True, 0.9), (False, 0.3)])
    b = StrategyBench(TurnAnalyzerStop(analyzer), latency=0.5)
    b.at(0.0, VS).at(0.2, T("one")).at(0.3, VE).at(0.4, VS).at(0.6, T("two")).at(0.7, VE).at(3.0)
    assert b.fired == []
    assert analyzer.analyses == 2


def test_turn_analyzer_asks_one_verdict_at_a_time() -> None:
    """A pause while a verdict is in flight is judged after it: never two analyses of one stream at once."""
    analyzer = FakeAnalyzer([(False, 0.3), (True, 0.9)])
    b = StrategyBench(TurnAnalyzerStop(analyzer), latency=0.5)
    b.at(0.0, VS).at(0.3, VE).at(0.4, VS).at(0.5, T("two", True)).at(0.7, VE)
    assert analyzer.analyses == 1
    b.at(3.0)
    assert analyzer.analyses == 2 and b.stops() == [1.3]


def test_turn_analyzer_transcript_without_vad_uses_the_transcript_timeout() -> None:
    """No VAD around the transcript: the turn ends transcript_timeout after it (seed §4.2)."""
    b = StrategyBench(TurnAnalyzerStop(FakeAnalyzer(), transcript_timeout=0.5))
    b.at(1.0, T()).at(1.3, T("more")).at(3.0)
    assert b.stops() == [1.8]


def test_turn_analyzer_clears_on_turn_stop_not_on_turn_start() -> None:
    """The analyzer is cleared once per turn stop and never on turn start (pipecat §8.59), also through Deferred."""
    for make in (lambda a: TurnAnalyzerStop(a), lambda a: Deferred(TurnAnalyzerStop(a))):
        analyzer = FakeAnalyzer()
        b = StrategyBench(make(analyzer))
        b.turn_started()
        assert analyzer.calls("clear") == []
        b.turn_stopped()
        assert len(analyzer.calls("clear")) == 1


def test_turn_analyzer_feeds_audio_with_the_vad_view_and_start_secs() -> None:
    """Audio goes to the stream with is_speech from the VAD; the VAD's start_secs is passed on."""
    analyzer = FakeAnalyzer()
    b = StrategyBench(TurnAnalyzerStop(analyzer))
    chunk = F.InputAudioRawFrame(b"\x01\x00" * 160)
    b.at(0.0, chunk).at(0.1, F.VADUserStartedSpeakingFrame(0.3)).at(0.2, chunk)
    assert analyzer.calls() == [("append", False), ("vad_start_secs", 0.3), ("append", True)]


def test_turn_analyzer_announces_its_params_at_start() -> None:
    """At the StartFrame the analyzer's params go out in a SpeechControlParamsFrame."""
    b = StrategyBench(TurnAnalyzerStop(FakeAnalyzer(params="smart-turn")))
    b.at(0.0, F.StartFrame())
    assert b.pushed == [F.SpeechControlParamsFrame(turn_params="smart-turn")]


def test_turn_analyzer_needs_an_analyzer() -> None:
    """Without an end-of-turn analyzer (open_stream) the strategy refuses to be built."""
    with pytest.raises(ConfigurationError, match="open_stream"):
        TurnAnalyzerStop(object())  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="transcript_timeout"):
        TurnAnalyzerStop(FakeAnalyzer(), transcript_timeout=-1)


def test_analyzer_session_holds_calls_while_a_verdict_runs() -> None:
    """Between begin and end nothing touches the stream; held calls replay in order afterwards."""
    analyzer = FakeAnalyzer(silence_chunks=1)
    session = AnalyzerSession(analyzer, 16000)
    session.append(b"\x01\x00", 16000, True)
    session.begin()
    assert session.append(b"\x00\x00", 16000, False) is False
    session.clear()
    assert analyzer.calls() == [("append", True)]
    assert session.end() is True
    assert analyzer.calls() == [("append", True), ("append", False), ("clear", None)]


def test_analyzer_session_opens_a_new_stream_on_a_rate_change() -> None:
    """Audio at another sample rate gets a stream of its own (the old one is closed)."""
    analyzer = FakeAnalyzer()
    session = AnalyzerSession(analyzer, 16000)
    session.append(b"\x01\x00", 8000, True)
    assert [s.sample_rate for s in analyzer.streams] == [16000, 8000]
    assert analyzer.streams[0].calls == [("close", None)]


# -- ExternalStop, ExternalCompletionStop, Deferred ----------------------------------------------


def test_external_stop_ticks_only_inside_a_turn() -> None:
    """timeout 0.05, no waiting: nothing outside a turn; a proposed stop in a turn fires once (pipecat §8.61)."""
    b = StrategyBench(ExternalStop(timeout=0.05, wait_for_transcript=False))
    b.at(0.0, F.ProposedUserStoppedSpeakingFrame()).at(1.0)
    assert b.fired == []
    b.turn_started()
    b.at(1.1, F.ProposedUserStoppedSpeakingFrame()).at(2.0)
    assert b.stops() == [1.1]
    b.turn_stopped()
    b.at(2.1, F.ProposedUserStoppedSpeakingFrame()).at(3.0)
    assert b.stops() == [1.1]


def test_external_stop_with_words_in_hand_fires_at_once() -> None:
    """A proposed stop with a final transcript already in ends the turn immediately."""
    b = StrategyBench(ExternalStop())
    b.turn_started()
    b.at(0.0, F.ProposedUserStartedSpeakingFrame()).at(0.2, T("hi", True)).at(0.4, F.ProposedUserStoppedSpeakingFrame())
    assert b.stops() == [0.4]


def test_external_stop_before_its_transcript_ends_the_turn_timeout_after_it() -> None:
    """A stop that came before its transcript waits for it, then ``settle`` (0.5 s) more for further finals."""
    b = StrategyBench(ExternalStop(timeout=0.5))
    b.turn_started()
    b.at(0.0, F.ProposedUserStartedSpeakingFrame()).at(0.4, F.ProposedUserStoppedSpeakingFrame()).at(0.6, T("hi"))
    b.at(3.0)
    assert b.stops() == [1.1]


def test_external_stop_every_final_after_the_stop_restarts_the_wait() -> None:
    """Finals 0.3 s apart after the stop: one turn, ``timeout`` after the last of them (issue 13, defect 10)."""
    b = StrategyBench(ExternalStop())
    b.turn_started()
    b.at(0.0, F.ProposedUserStartedSpeakingFrame()).at(0.4, F.ProposedUserStoppedSpeakingFrame())
    b.at(0.6, T("I want to book")).at(0.9, T("a table for two.")).at(3.0)
    assert b.stops() == [1.4]


def test_external_stop_with_the_words_in_hand_ends_at_once() -> None:
    """A stop that comes after the words of the latest speech ends the turn at the stop."""
    b = StrategyBench(ExternalStop())
    b.turn_started()
    b.at(0.0, F.ProposedUserStartedSpeakingFrame()).at(0.3, T("hi")).at(0.4, F.ProposedUserStoppedSpeakingFrame())
    b.at(3.0)
    assert b.stops() == [0.4]


def test_external_stop_with_vad_frames_waits_for_words_after_the_speech_ended() -> None:
    """A final that came before the VAD's end of speech is not the last speech's words."""
    b = StrategyBench(ExternalStop())
    b.turn_started()
    b.at(0.0, F.UserStartedSpeakingFrame()).at(0.0, VS).at(1.0, T("I'm from Chicago."))
    b.at(1.5, VE).at(1.5, F.UserStoppedSpeakingFrame()).at(1.6, T("I'm in New Jersey now."))
    b.at(3.0)
    assert b.stops() == [2.1]


def test_external_stop_waits_for_the_latest_segment_words() -> None:
    """Words from before the latest start of speech do not count: the stop waits for the new ones."""
    b = StrategyBench(ExternalStop(timeout=1.0))
    b.turn_started()
    b.at(0.0, F.UserStartedSpeakingFrame()).at(0.2, T("book a flight to")).at(0.5, F.VADUserStartedSpeakingFrame())
    b.at(1.0, F.UserStoppedSpeakingFrame()).at(1.4, T("Boston")).at(3.0)
    assert b.stops() == [1.9]  # the words, then ``settle`` (0.5 s) for more of them


def test_external_stop_waits_for_words_at_most_the_stt_latency() -> None:
    """With no new words, the stop ends the turn after the STT's published p99 latency."""
    b = StrategyBench(ExternalStop(timeout=1.0))
    b.turn_started()
    b.at(0.0, F.STTMetadataFrame(ttfs_p99_latency=0.3)).at(0.1, F.UserStartedSpeakingFrame())
    b.at(0.2, T("hello")).at(0.3, F.VADUserStartedSpeakingFrame()).at(0.5, F.UserStoppedSpeakingFrame()).at(3.0)
    assert b.stops() == [0.8]


def test_external_stop_a_trailing_interim_is_waited_for_boundedly() -> None:
    """An interim after the last final means more is coming: the stop waits for it, at most the grace."""
    b = StrategyBench(ExternalStop(timeout=0.1))
    b.turn_started()
    b.at(0.0, F.ProposedUserStartedSpeakingFrame()).at(0.05, T("hi")).at(0.1, F.InterimTranscriptionFrame("the"))
    b.at(0.2, F.ProposedUserStoppedSpeakingFrame()).at(3.0)
    assert b.stops() == [0.3]


def test_external_stop_adopts_an_announced_stop_without_announcing_again() -> None:
    """An announced user-stopped frame with words in hand finalizes with speaking frames off."""
    b = StrategyBench(ExternalStop())
    b.turn_started()
    b.at(0.0, F.UserStartedSpeakingFrame()).at(0.1, T("hi")).at(0.2)
    _state, effects = b.strategy.on_frame(b.state, F.UserStoppedSpeakingFrame(), 0.3)
    finals = [e for e in effects if isinstance(e, Finalize)]
    assert [e.speaking_frames for e in finals] == [False] and finals[0].reason is not None
    assert finals[0].reason.kind == "external"


def test_external_stop_an_announced_empty_stop_ends_after_the_timeout() -> None:
    """An announced stop with no words ends the turn ``timeout`` later, empty, instead of hanging to the watchdog."""
    b = StrategyBench(ExternalStop(timeout=0.5))
    b.turn_started()
    b.at(0.0, F.UserStartedSpeakingFrame()).at(0.3, F.UserStoppedSpeakingFrame()).at(3.0)
    assert b.stops() == [0.8]


def test_external_completion_only_finalizes() -> None:
    """UserTurnInferenceCompletedFrame finalizes without an inference trigger (pipecat §8.62)."""
    b = StrategyBench(ExternalCompletionStop())
    b.at(0.0, F.UserTurnInferenceCompletedFrame())
    assert b.fired == [(0.0, "finalize")]


def test_deferred_keeps_inference_and_drops_finalization() -> None:
    """Deferred(strategy) triggers inference only; its name and proposal flag are the inner strategy's."""
    b = StrategyBench(Deferred(SpeechTimeoutStop(user_speech_timeout=0.1)))
    b.at(0.0, VS).at(0.05, T()).at(0.1, VE).at(1.0)
    assert b.fired == [(0.2, "inference")]
    assert Deferred(ExternalStop()).resolves_proposals
    assert Deferred(SpeechTimeoutStop()).name == "Deferred(SpeechTimeoutStop)"


def test_deferred_needs_a_strategy() -> None:
    """Deferred around something that is not a strategy is refused at construction."""
    with pytest.raises(ConfigurationError, match="Deferred"):
        Deferred("SpeechTimeoutStop")  # type: ignore[arg-type]


def test_stereo_audio_is_downmixed_for_the_analyzer() -> None:
    """Two-channel audio reaches an end-of-turn stream as mono (the channels averaged)."""
    from rxvoice.turns.analyzer import downmix_pcm16 as _downmix

    stereo = bytes(bytearray((100).to_bytes(2, "little", signed=True) + (-50).to_bytes(2, "little", signed=True)) * 3)
    mono = _downmix(stereo, 2)
    assert len(mono) == 6
    assert int.from_bytes(mono[:2], "little", signed=True) == 25


@pytest.mark.parametrize("bad", [float("inf"), 1e308, float("nan"), -0.1, True, "1"])
@pytest.mark.parametrize(("make", "name"), [
    (lambda v: SpeechTimeoutStop(user_speech_timeout=v), "user_speech_timeout"),
    (lambda v: ExternalStop(timeout=v), "timeout"),
    (lambda v: ExternalStop(settle=v), "settle"),
    (lambda v: TurnAnalyzerStop(FakeAnalyzer(), transcript_timeout=v), "transcript_timeout"),
])
def test_a_timeout_that_is_not_a_day_or_less_of_seconds_is_refused(make: Any, name: str, bad: object) -> None:
    """Infinite or 1e308 seconds would overflow the scheduler at the first VAD stop: refused at construction,
    by the one seconds check every setting uses (at most one day)."""
    with pytest.raises(ConfigurationError, match=rf"{name} must be a number of seconds >= 0 and at most 86400"):
        make(bad)
    make(86_400.0)
