"""Reference scenarios (seed-behavior §4.1/§4.2, pipecat-behavior §8) not already covered elsewhere in tests/turns.

Known deliberate differences: no LLMContextUserTurnFrame is sent; a whitespace
transcript opens no turn; an empty turn runs the recovery prompt only when it
interrupted the bot; an empty turn open at session end is reported stopped.
"""

from __future__ import annotations

from rxvoice import frames as F
from rxvoice import pipeline
from rxvoice.aggregators import Pair, UserTurnMessageAdded
from rxvoice.pipeline import inline_offload
from rxvoice.testing import ScriptedLLM
from rxvoice.turns import (
    AlwaysUserMute,
    ExternalCompletionStop,
    SpeechTimeoutStop,
    TranscriptionStart,
    TurnAnalyzerStop,
    TurnsConfig,
    VADStart,
)

from .helpers import FakeAnalyzer, event_times, marbles, run, times, users


def test_user_aggregator_triggers_llm_on_final() -> None:
    """Seed TestUserAggregatorTriggersLLMOnFinal: an interim opens, the final + speech timeout give one run."""
    pair = Pair()
    rec = run(pair, "i-h")
    assert len(times(rec, F.LLMContextFrame)) == 1 and users(pair) == ["hello there"]


def test_user_aggregator_does_not_answer_a_transcript_outside_a_turn() -> None:
    """Seed TestUserAggregatorDoesNotAnswerATranscriptOutsideATurn: a late tail gives no second model run."""
    pair = Pair(turns=TurnsConfig(start=[VADStart(), TranscriptionStart()], stop=[SpeechTimeoutStop()]))
    llm = ScriptedLLM(["Sure.", "Again?"])
    legend = {"t": F.TranscriptionFrame("and tomorrow")}
    marbles(legend).run(pipeline(pair.user(), llm, pair.assistant()), down="v-h-s-------t", until=20)
    assert len(llm.runs) == 1
    assert [m["content"] for m in llm.runs[0].snapshot.messages] == ["hello there"]


def test_user_reports_the_turn_it_collected() -> None:
    """Seed TestUserReportsTheTurnItCollected: one message-added event, then the stop at session end (no
    strategy, the whole content)."""
    pair = Pair(turns=TurnsConfig(start=[VADStart()], stop=[ExternalCompletionStop()]))
    rec = run(pair, "v-h-E")
    [(_, added)] = rec.events_named("on_user_turn_message_added")
    assert isinstance(added, UserTurnMessageAdded) and added.content == "hello there"
    [(_, stopped)] = rec.events_named("on_user_turn_stopped")
    assert stopped.strategy is None and stopped.content == "hello there"


def test_turn_analyzer_stop_with_a_fake_analyzer() -> None:
    """Seed TestTurnAnalyzerStop: a fake analyzer saying complete at the VAD stop + a final transcript: stopped."""
    pair = Pair(turns=TurnsConfig(start=[VADStart()], stop=[TurnAnalyzerStop(FakeAnalyzer([(True, 1.0)]))]))
    pair.user().offload = inline_offload
    rec = run(pair, "v-h-s")
    assert [type(f).__name__ for _, f in rec.down if isinstance(f, F.UserStoppedSpeakingFrame)] == [
        "UserStoppedSpeakingFrame"
    ]
    assert event_times(rec, "on_user_turn_stopped") == [400]


def test_mute_suppresses_during_bot_speech() -> None:
    """Seed TestMuteSuppressesDuringBotSpeech: a VAD start while the bot speaks is suppressed; after, allowed."""
    pair = Pair(mute=[AlwaysUserMute()])
    rec = run(pair, "B-v-s-b-v")
    assert event_times(rec, "on_user_turn_started") == [800]


def test_idle_update_arms_while_waiting_for_the_user() -> None:
    """Seed TestIdleUpdateArmsWhileWaitingForTheUser: with idle off, an update after the bot stopped arms it."""
    rec = run(Pair(), "-x", up="b", legend={"x": F.UserIdleTimeoutUpdateFrame(0.5)}, until=5)
    assert event_times(rec, "on_user_turn_idle") == [600]


def test_vad_then_two_transcripts_make_one_message() -> None:
    """Pipecat §8.7: VS, T("Hello"), T("world."), VE: one message "Hello world."."""
    pair = Pair()
    run(pair, "v-H-W-s")
    assert users(pair) == ["Hello world."]


def test_end_with_nothing_pending_reports_nothing() -> None:
    """Pipecat §8.13: an EndFrame with nothing pending raises no stopped event."""
    rec = run(Pair(), "E")
    assert rec.event_names() == []
