"""The user aggregator: turns become user messages, in order, with nothing lost."""

from __future__ import annotations

from typing import Any

import pytest

from rxvoice import LLMContext
from rxvoice import frames as F
from rxvoice.aggregators import Pair, UserTurnMessageAdded, UserTurnStopped
from rxvoice.testing import FrameMarbles, Recording
from rxvoice.turns import (
    AlwaysUserMute,
    Deferred,
    ExternalCompletionStop,
    MinWordsStart,
    SpeechTimeoutStop,
    TranscriptionStart,
    TurnsConfig,
    VADStart,
)

L: dict[str, F.Frame] = {
    "v": F.VADUserStartedSpeakingFrame(0.2),
    "s": F.VADUserStoppedSpeakingFrame(0.2),
    "i": F.InterimTranscriptionFrame("hel"),
    "h": F.TranscriptionFrame("hello there", "u1", finalized=True),
    "H": F.TranscriptionFrame("Hello", "u1"),
    "W": F.TranscriptionFrame("world.", "u1"),
    "c": F.UserTurnInferenceCompletedFrame(),
    "B": F.BotStartedSpeakingFrame(),
    "b": F.BotStoppedSpeakingFrame(),
    "E": F.EndFrame(),
    "X": F.CancelFrame(),
}


def run(pair: Pair, down: str, *, legend: dict[str, F.Frame] | None = None, until: float | None = None) -> Recording:
    """Run the user half of ``pair`` on a marble string."""
    m = FrameMarbles({**L, **(legend or {})})
    return m.run(pair.user(), down=down, watch=[pair.user()], until=until)


def contents(pair: Pair) -> list[tuple[str, Any]]:
    return [(m["role"], m.get("content")) for m in pair.context().messages]


def test_a_final_transcript_ends_the_turn_after_the_speech_timeout() -> None:
    """An interim opens the turn; the final one is answered 0.6 s after it (no VAD: silence counts from it)."""
    pair = Pair()
    rec = run(pair, "i-h")
    assert contents(pair) == [("user", "hello there")]
    ctx = rec.of_type(F.LLMContextFrame)
    assert [t for t, _ in ctx] == [200 + 600]
    assert rec.down_types() == [
        "UserStartedSpeakingFrame", "InterruptionFrame", "LLMContextFrame", "UserStoppedSpeakingFrame",
    ]
    assert rec.up_types() == ["UserStartedSpeakingFrame", "InterruptionFrame", "UserStoppedSpeakingFrame"]


def test_transcripts_never_leave_the_aggregator() -> None:
    """Final and interim transcriptions are consumed: they become the message."""
    rec = run(Pair(), "v-i-h-s")
    assert not rec.of_type((F.TranscriptionFrame, F.InterimTranscriptionFrame))


def test_default_cascaded_turn_sequence() -> None:
    """VAD start interrupts; VAD stop plus the speech timeout answers with the transcript in."""
    pair = Pair()
    rec = run(pair, "v-h-s")
    assert rec.down_types() == [
        "VADUserStartedSpeakingFrame", "UserStartedSpeakingFrame", "InterruptionFrame",
        "VADUserStoppedSpeakingFrame", "LLMContextFrame", "UserStoppedSpeakingFrame",
    ]
    assert rec.of_type(F.LLMContextFrame)[0][0] == 400 + 600
    assert rec.event_names() == [
        "on_user_turn_started", "on_user_turn_message_added", "on_user_turn_inference_triggered",
        "on_user_turn_stopped",
    ]
    stopped = rec.events_named("on_user_turn_stopped")[0][1]
    assert isinstance(stopped, UserTurnStopped)
    assert stopped.content == "hello there" and stopped.user_id == "u1"
    assert isinstance(stopped.strategy, SpeechTimeoutStop)
    assert stopped.timestamp == "1970-01-01T00:00:00+00:00"


def test_words_are_joined_with_spaces() -> None:
    """STT words that carry no spacing are joined with one space."""
    pair = Pair()
    run(pair, "v-H-W-s")
    assert contents(pair) == [("user", "Hello world.")]


@pytest.mark.parametrize(
    ("parts", "expected"),
    [
        ([("Hello", False), ("world", False)], "Hello world"),
        ([("Hello ", True), ("world", True), ("again", False)], "Hello world again"),
        ([("你好", True), ("世界", True), ("Hi", False)], "你好世界 Hi"),
        ([("Hello ", False), (" world", True)], "Hello  world"),
    ],
)
def test_part_joining(parts: list[tuple[str, bool]], expected: str) -> None:
    """Self-spaced parts are joined as they are; others with one space (CJK stays unspaced)."""
    pair = Pair()
    legend = {str(i): F.TranscriptionFrame(t, includes_inter_frame_spaces=s) for i, (t, s) in enumerate(parts)}
    run(pair, "v-" + "-".join(legend) + "-s", legend=legend)
    assert contents(pair) == [("user", expected)]


def test_turn_end_gated_on_an_external_verdict() -> None:
    """With VAD start and an external completion judge, a final transcript alone does not answer."""
    pair = Pair(turns=TurnsConfig(start=[VADStart()], stop=[ExternalCompletionStop()], stop_timeout=30))
    rec = run(pair, "v-h-----s--c")
    ctx = rec.of_type(F.LLMContextFrame)
    assert [t for t, _ in ctx] == [1100]
    assert contents(pair) == [("user", "hello there")]


def test_a_late_transcript_is_not_answered_on_its_own() -> None:
    """A transcript arriving just after an answered turn joins the next turn: no second answer."""
    pair = Pair(turns=TurnsConfig(start=[VADStart(), TranscriptionStart()], stop=[ExternalCompletionStop()]))
    legend = {"t": F.TranscriptionFrame("and tomorrow")}
    rec = run(pair, "v-h-s-c--t--------------v-H-s-c", legend=legend)
    ctx = rec.of_type(F.LLMContextFrame)
    assert len(ctx) == 2
    assert contents(pair) == [("user", "hello there"), ("user", "and tomorrow Hello")]
    assert len(rec.events_named("on_user_turn_started")) == 2


def test_a_late_transcript_is_kept_until_the_session_ends() -> None:
    """Held words are written when the session ends: nothing the user said is lost."""
    pair = Pair(turns=TurnsConfig(start=[VADStart(), TranscriptionStart()], stop=[ExternalCompletionStop()]))
    legend = {"t": F.TranscriptionFrame("and tomorrow")}
    run(pair, "v-h-s-c--t----E", legend=legend)
    assert contents(pair) == [("user", "hello there"), ("user", "and tomorrow")]


def test_min_words_keeps_the_speech_that_opens_the_turn() -> None:
    """While the bot speaks, 'wait' is dropped; 'cancel the order' opens the turn and is the message."""
    pair = Pair(turns=TurnsConfig(start=[MinWordsStart(min_words=3)], stop=[SpeechTimeoutStop()]))
    legend = {"w": F.TranscriptionFrame("wait"), "o": F.TranscriptionFrame("cancel the order")}
    rec = run(pair, "B-w-----o", legend=legend)
    assert contents(pair) == [("user", "cancel the order")]
    assert len(rec.events_named("on_user_turn_started")) == 1


def test_early_inference_writes_before_the_judge_finalizes() -> None:
    """A deferred detector answers with what was said; the judge later ends the turn, reporting all of it."""
    pair = Pair(turns=TurnsConfig(start=[VADStart()], stop=[Deferred(SpeechTimeoutStop()), ExternalCompletionStop()]))
    legend = {"a": F.TranscriptionFrame("I'm thinking"), "z": F.TranscriptionFrame("about pizza")}
    rec = run(pair, "v-a-s---------v-z-s---------c", legend=legend)
    assert contents(pair) == [("user", "I'm thinking"), ("user", "about pizza")]
    assert len(rec.events_named("on_user_turn_inference_triggered")) == 2
    stopped = rec.events_named("on_user_turn_stopped")
    assert len(stopped) == 1 and stopped[0][1].content == "I'm thinking about pizza"
    assert [p.content for _, p in rec.events_named("on_user_turn_message_added")] == ["I'm thinking", "about pizza"]


def test_session_end_commits_and_reports_the_turn() -> None:
    """An EndFrame mid-turn writes what was said (before the end goes on) and reports the turn with no strategy."""
    pair = Pair(turns=TurnsConfig(start=[VADStart()], stop=[ExternalCompletionStop()]))
    rec = run(pair, "v-h-E")
    assert contents(pair) == [("user", "hello there")]
    assert rec.down_types()[-2:] == ["LLMContextFrame", "EndFrame"]  # written, asked about, then the end
    added = rec.events_named("on_user_turn_message_added")
    assert isinstance(added[0][1], UserTurnMessageAdded) and added[0][1].content == "hello there"
    stopped = rec.events_named("on_user_turn_stopped")
    assert len(stopped) == 1 and stopped[0][1].strategy is None


def test_cancel_commits_before_forwarding() -> None:
    """A CancelFrame writes what was said, then goes on."""
    pair = Pair(turns=TurnsConfig(start=[VADStart()], stop=[ExternalCompletionStop()]))
    rec = run(pair, "v-h-X")
    assert contents(pair) == [("user", "hello there")]
    assert rec.down_types()[-2:] == ["LLMContextFrame", "CancelFrame"]


def test_input_completion_commits_like_end() -> None:
    """When the input stream completes mid-turn, the words are still written."""
    pair = Pair(turns=TurnsConfig(start=[VADStart()], stop=[ExternalCompletionStop()]))
    run(pair, "v-h-|")
    assert contents(pair) == [("user", "hello there")]


def test_end_with_nothing_pending_reports_nothing() -> None:
    """An EndFrame with nothing said raises no turn-stopped event."""
    rec = run(Pair(), "E")
    assert rec.event_names() == []


def test_whitespace_transcripts_open_nothing() -> None:
    """A whitespace-only transcript neither opens a turn nor becomes a message."""
    pair = Pair()
    rec = run(pair, "t----------", legend={"t": F.TranscriptionFrame("   ")})
    assert rec.down_frames() == [] and contents(pair) == []


def test_watchdog_closes_a_turn_no_strategy_ends() -> None:
    """Only an external judge that never speaks: the 5 s watchdog closes the turn and answers."""
    pair = Pair(turns=TurnsConfig(start=[VADStart()], stop=[ExternalCompletionStop()]))
    rec = run(pair, "v-h-s")
    assert rec.down_types() == [
        "VADUserStartedSpeakingFrame", "UserStartedSpeakingFrame", "InterruptionFrame",
        "VADUserStoppedSpeakingFrame", "UserStoppedSpeakingFrame", "LLMContextFrame",
    ]
    assert rec.of_type(F.UserStoppedSpeakingFrame)[0][0] == 400 + 5000
    assert rec.event_names() == [
        "on_user_turn_started", "on_user_turn_stop_timeout", "on_user_turn_message_added", "on_user_turn_stopped",
    ]
    assert rec.events_named("on_user_turn_stopped")[0][1].strategy is None


def test_watchdog_never_fires_while_the_user_speaks() -> None:
    """A long utterance (VAD still speaking) is not cut off by the watchdog."""
    pair = Pair(turns=TurnsConfig(start=[VADStart()], stop=[ExternalCompletionStop()], stop_timeout=1.0))
    rec = run(pair, "v-h" + "-" * 40 + "s")
    stops = rec.of_type(F.UserStoppedSpeakingFrame)
    assert stops and stops[0][0] == 4300 + 1000


def test_user_input_is_dropped_while_muted() -> None:
    """AlwaysUserMute: what is said while the bot speaks is dropped; what follows is kept."""
    pair = Pair(mute=[AlwaysUserMute()])
    legend = {"x": F.TranscriptionFrame("ignored"), "y": F.TranscriptionFrame("kept")}
    rec = run(pair, "B-x-b-y", legend=legend)
    assert contents(pair) == [("user", "kept")]
    assert rec.down_types().count("UserMuteStartedFrame") == 1
    assert rec.down_types().count("UserMuteStoppedFrame") == 1
    assert rec.event_names()[:2] == ["on_user_mute_started", "on_user_mute_stopped"]


# -- context frames -------------------------------------------------------------------


def test_run_frame_runs_the_model() -> None:
    """LLMRunFrame is consumed and the conversation goes downstream as it stands."""
    rec = run(Pair(), "r", legend={"r": F.LLMRunFrame()})
    assert rec.down_types() == ["LLMContextFrame"]


def test_messages_append_keeps_roles_and_runs_only_when_asked() -> None:
    """Appended messages keep their roles; run_llm pushes a context frame."""
    pair = Pair()
    legend = {
        "a": F.LLMMessagesAppendFrame([{"role": "system", "content": "Be kind."}]),
        "r": F.LLMMessagesAppendFrame([{"role": "user", "content": "Hi there!"}], run_llm=True),
    }
    rec = run(pair, "a-r", legend=legend)
    assert contents(pair) == [("system", "Be kind."), ("user", "Hi there!")]
    assert rec.down_types() == ["LLMContextFrame"]


def test_messages_update_and_transform() -> None:
    """Update replaces the messages; transform rewrites them; neither travels on."""
    pair = Pair(LLMContext([{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]))

    def keep_users(ms: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [m for m in ms if m["role"] == "user"]

    rec = run(pair, "t", legend={"t": F.LLMMessagesTransformFrame(keep_users)})
    assert contents(pair) == [("user", "a")] and rec.down_frames() == []
    rec = run(pair, "u", legend={"u": F.LLMMessagesUpdateFrame([{"role": "user", "content": "z"}], run_llm=True)})
    assert contents(pair) == [("user", "z")] and rec.down_types() == ["LLMContextFrame"]


def test_set_tools_is_applied_and_forwarded_tool_choice_consumed() -> None:
    """Set-tools travels on (a realtime model needs it); set-tool-choice does not."""
    pair = Pair()
    tools = [{"type": "function", "function": {"name": "f"}}]
    rec = run(pair, "t-c", legend={"t": F.LLMSetToolsFrame(tools), "c": F.LLMSetToolChoiceFrame("required")})
    assert rec.down_types() == ["LLMSetToolsFrame"]
    assert pair.context().snapshot.tool_names == frozenset({"f"})
    assert pair.context().tool_choice == "required"


def test_invalid_messages_are_reported_not_written() -> None:
    """An append with an unknown role writes nothing and raises on_error; the session goes on."""
    pair = Pair()
    errors: list[Exception] = []
    pair.user().events.on("on_error", lambda _a, e: errors.append(e))
    legend = {
        "a": F.LLMMessagesAppendFrame([{"role": "wizard", "content": "x"}], run_llm=True),
        "r": F.LLMRunFrame(),
    }
    rec = run(pair, "a-r", legend=legend)
    assert contents(pair) == []
    assert len(errors) == 1 and "wizard" in str(errors[0])
    assert rec.down_types() == ["LLMContextFrame"]
    assert rec.up_types() == ["ErrorFrame"]
