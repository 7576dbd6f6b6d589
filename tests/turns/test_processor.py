"""UserTurnProcessor: turn detection as a stage of its own, adopted by an aggregator with external strategies."""

from __future__ import annotations

from typing import Any

from rxvoice import frames as F
from rxvoice import pipeline
from rxvoice.aggregators import Pair, UserTurnProcessor, UserTurnStopped
from rxvoice.pipeline import inline_offload
from rxvoice.testing import Recording, ScriptedLLM
from rxvoice.turns import (
    AlwaysUserMute,
    ExternalStrategies,
    SpeechTimeoutStop,
    TurnAnalyzerStop,
    TurnsConfig,
)

from .helpers import FakeAnalyzer, event_times, marbles, times, users

US, UE, INT, CTX = "UserStartedSpeakingFrame", "UserStoppedSpeakingFrame", "InterruptionFrame", "LLMContextFrame"
VS, VE = "VADUserStartedSpeakingFrame", "VADUserStoppedSpeakingFrame"
PROPOSED = ("ProposedUserStartedSpeakingFrame", "ProposedUserStoppedSpeakingFrame")


def external_pair() -> Pair:
    return Pair(turns=TurnsConfig(strategies=ExternalStrategies()))


def both(processor: UserTurnProcessor, pair: Pair, down: Any, up: Any = "", **kw: Any) -> Recording:
    """Run processor -> user aggregator, watching both."""
    return marbles(kw.pop("legend", None)).run(
        pipeline(processor, pair.user()), down=down, up=up, watch=[processor, pair.user()], **kw
    )


def alone(processor: UserTurnProcessor, down: Any, **kw: Any) -> Recording:
    return marbles(kw.pop("legend", None)).run(processor, down=down, watch=[processor], **kw)


def test_processor_and_external_aggregator_announce_once() -> None:
    """Proposal pair through processor(external) + aggregator(external): 1 US, 1 UE, 1 INT, 0 proposals
    (pipecat §4.7 / §8.35)."""
    pair = external_pair()
    rec = both(UserTurnProcessor(TurnsConfig(strategies=ExternalStrategies())), pair, "P-h-p")
    types = rec.down_types()
    assert (types.count(US), types.count(UE), types.count(INT)) == (1, 1, 1)
    assert not set(PROPOSED) & set(types)
    assert users(pair) == ["hello there"]


def test_processor_forwards_each_frame_before_its_decisions() -> None:
    """Alone: the VAD start goes on first, then US and INT; the transcript and VAD stop go on, then UE."""
    processor = UserTurnProcessor()
    rec = alone(processor, "v-h-s")
    assert rec.down_types() == [VS, US, INT, "TranscriptionFrame", VE, UE]
    assert times(rec, F.UserStoppedSpeakingFrame) == [400 + 600]
    assert rec.up_types() == [US, INT, UE]


def test_processor_events_have_the_aggregator_names() -> None:
    """Started (the strategy), inference triggered, stopped (a UserTurnStopped with no words)."""
    processor = UserTurnProcessor()
    rec = alone(processor, "v-h-s")
    assert rec.event_names() == ["on_user_turn_started", "on_user_turn_inference_triggered", "on_user_turn_stopped"]
    stopped = rec.events_named("on_user_turn_stopped")[0][1]
    assert isinstance(stopped, UserTurnStopped) and isinstance(stopped.strategy, SpeechTimeoutStop)
    assert stopped.content == ""


def test_default_processor_with_an_external_aggregator() -> None:
    """VAD + speech timeout decided by the processor; the aggregator adopts it: one US, one INT, one UE."""
    pair = external_pair()
    rec = both(UserTurnProcessor(), pair, "v-h-s")
    assert rec.down_types() == [VS, US, INT, VE, UE, CTX]
    assert users(pair) == ["hello there"]
    assert len(rec.events_named("on_user_turn_stopped")) == 2  # one from each stage


def test_the_transcript_that_ends_the_turn_is_in_the_message() -> None:
    """A transcript alone ends the processor's turn (fallback); the aggregator's message has it."""
    pair = external_pair()
    rec = both(UserTurnProcessor(), pair, "H-W")
    assert users(pair) == ["Hello world."]
    assert rec.down_types().count(UE) == 1


def test_a_transcript_after_the_vad_stop_is_not_overtaken() -> None:
    """VS, VE, then the transcript 0.3 s later: the processor waits for it; the aggregator writes it."""
    pair = external_pair()
    rec = both(UserTurnProcessor(), pair, "v-s---h")
    assert users(pair) == ["hello there"]
    assert times(rec, F.UserStoppedSpeakingFrame) == [200 + 600]


def test_processor_swallows_only_the_proposals_it_resolves() -> None:
    """Default strategies resolve no proposal: they pass; external ones are swallowed."""
    rec = alone(UserTurnProcessor(), "P-p")
    assert rec.down_types() == list(PROPOSED)
    rec = alone(UserTurnProcessor(TurnsConfig(strategies=ExternalStrategies())), "P-h-p")
    assert not set(PROPOSED) & set(rec.down_types())


def test_processor_late_tail_opens_no_turn() -> None:
    """A transcript just after an answered turn opens no turn in the processor; the aggregator keeps it for the
    next turn (its start 1.9 s after the end is past the recovery window: a turn of its own)."""
    pair = external_pair()
    legend = {"t": F.TranscriptionFrame("and tomorrow"), "z": F.TranscriptionFrame("ok")}
    rec = both(UserTurnProcessor(), pair, "v-h-s-------t------------v-z-s", legend=legend)
    assert rec.down_types().count(US) == 2
    assert users(pair) == ["hello there", "and tomorrow ok"]


def test_processor_empty_turn_is_adopted_once() -> None:
    """VS/VE with no words: the processor's stop is adopted after ExternalStop's timeout; one UE in all."""
    pair = external_pair()
    rec = both(UserTurnProcessor(TurnsConfig(stop_timeout=0.5)), pair, "v-s")
    assert rec.down_types().count(UE) == 1
    assert len(event_times(rec, "on_user_turn_stopped")) == 2


def test_processor_mutes() -> None:
    """Muted input is dropped by the processor (never reaching the aggregator); changes are announced."""
    pair = external_pair()
    rec = both(UserTurnProcessor(mute=[AlwaysUserMute()]), pair, "B-v-x-s-b", legend={"x": F.TranscriptionFrame("no")})
    assert users(pair) == []
    assert "TranscriptionFrame" not in rec.down_types()
    assert rec.down_types().count("UserMuteStartedFrame") == 1


def test_processor_watchdog_and_idle() -> None:
    """The processor's watchdog fires its stop-timeout event; its idle watch fires and calls on_idle."""
    calls: list[Any] = []
    processor = UserTurnProcessor(TurnsConfig(stop=[SpeechTimeoutStop()], stop_timeout=1.0, idle_timeout=2.0,
                                              on_idle=lambda p: p.push(F.TTSSpeakFrame("Still there?"))))
    processor.events.on("on_user_turn_idle", lambda p: calls.append(p))
    rec = alone(processor, "v-s", until=10)
    assert event_times(rec, "on_user_turn_stop_timeout") == [1200]
    assert event_times(rec, "on_user_turn_idle") == [1200 + 2000]
    assert calls == [processor]
    assert times(rec, F.TTSSpeakFrame) == [3200]


def test_processor_runs_a_turn_analyzer() -> None:
    """A turn analyzer in the processor: its metrics go straight downstream, the verdict ends the turn."""
    processor = UserTurnProcessor(TurnsConfig(stop=[TurnAnalyzerStop(FakeAnalyzer([(True, 0.9)]))]))
    processor.offload = inline_offload
    rec = alone(processor, "S-v-h-s")
    assert rec.down_types() == [
        "StartFrame", "SpeechControlParamsFrame", VS, US, INT, "TranscriptionFrame", VE, "MetricsFrame", UE,
    ]


def test_processor_reports_an_open_turn_at_session_end() -> None:
    """An EndFrame mid-turn: forwarded, then the turn is reported stopped with no strategy."""
    rec = alone(UserTurnProcessor(), "v-h-E")
    assert rec.down_types()[-1] == "EndFrame"
    [(_, stopped)] = rec.events_named("on_user_turn_stopped")
    assert stopped.strategy is None


def test_processor_with_the_model() -> None:
    """processor -> aggregator -> model: one run per turn, on the whole turn's words."""
    pair = external_pair()
    llm = ScriptedLLM(["Sure."])
    marbles().run(pipeline(UserTurnProcessor(), pair.user(), llm, pair.assistant()), down="v-H-W-s")
    assert len(llm.runs) == 1
    assert llm.runs[0].snapshot.messages[-1]["content"] == "Hello world."


# -- service recommendations ------------------------------------------------------------------------


def test_a_service_recommendation_replaces_the_defaults() -> None:
    """An STT recommending external strategies: proposals are resolved from then on (seed §2.2)."""
    pair = Pair()
    meta = F.STTMetadataFrame("flux", user_turn_strategies=ExternalStrategies())
    rec = marbles({"m": meta}).run(pair.user(), down="m-P-h-p", watch=[pair.user()])
    assert rec.down_types() == ["STTMetadataFrame", US, INT, CTX, UE]
    assert users(pair) == ["hello there"]


def test_a_recommendation_does_not_override_pinned_strategies() -> None:
    """Strategies the application chose win: the proposals pass through untouched (pipecat §8.34)."""
    pair = Pair(turns=TurnsConfig(stop=[SpeechTimeoutStop()]))
    meta = F.STTMetadataFrame("flux", user_turn_strategies=ExternalStrategies())
    rec = marbles({"m": meta}).run(pair.user(), down="m-P-h-p", watch=[pair.user()])
    assert rec.down_types()[:2] == ["STTMetadataFrame", PROPOSED[0]]


def test_a_recommendation_mid_turn_keeps_the_turn() -> None:
    """A recommendation arriving during a turn: the turn stays open and ends by the new strategies' rules."""
    pair = Pair()
    meta = F.LLMServiceMetadataFrame("llm", user_turn_strategies=ExternalStrategies())
    rec = marbles({"m": meta}).run(pair.user(), down="v-h-m-s-p", watch=[pair.user()])
    assert rec.down_types().count(US) == 1 and rec.down_types().count(UE) == 1
    assert users(pair) == ["hello there"]


def test_the_processor_applies_recommendations_too() -> None:
    """The processor swaps its controller for a recommended one as well."""
    meta = F.STTMetadataFrame("flux", user_turn_strategies=ExternalStrategies())
    rec = alone(UserTurnProcessor(), "m-P-h-p", legend={"m": meta})
    assert not set(PROPOSED) & set(rec.down_types())
    assert rec.down_types().count(UE) == 1


def test_an_adopted_empty_turn_that_cut_the_bot_off_is_recovered() -> None:
    """The processor interrupted the speaking bot for nothing: the aggregator runs the recovery prompt once."""
    pair = external_pair()
    rec = both(UserTurnProcessor(TurnsConfig(stop_timeout=0.5)), pair, "v-s", up="B")
    assert [m["role"] for m in pair.context().messages] == ["developer"]
    assert rec.down_types().count(CTX) == 1
