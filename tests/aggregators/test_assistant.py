"""The assistant aggregator: streamed answers, interruptions, tool calls, thoughts."""

from __future__ import annotations

from typing import Any

from rxvoice import LLMContext
from rxvoice import frames as F
from rxvoice.aggregators import AssistantThought, AssistantTurnStopped, Pair
from rxvoice.context import LLMSpecificMessage
from rxvoice.testing import FrameMarbles, Recording

RS, RE = F.LLMFullResponseStartFrame(), F.LLMFullResponseEndFrame()


def tx(text: str) -> F.LLMTextFrame:
    return F.LLMTextFrame(text)


def run(pair: Pair, down: str, legend: dict[str, Any], *, up: str = "") -> Recording:
    m = FrameMarbles({"S": RS, "E": RE, "I": F.InterruptionFrame(), "Z": F.EndFrame(), **legend})
    return m.run(pair.assistant(), down=down, up=up, watch=[pair.assistant()])


def messages(pair: Pair) -> list[dict[str, Any]]:
    return [dict(m) for m in pair.context().messages]


def test_a_response_becomes_one_assistant_message() -> None:
    """Start, tokens, end: one message; the context, a timestamp and the turn announcement follow."""
    pair = Pair()
    rec = run(pair, "S-a-b-E", {"a": tx("Hello "), "b": tx("world")})
    assert messages(pair) == [{"role": "assistant", "content": "Hello world"}]
    assert rec.down_types() == [
        "LLMFullResponseStartFrame", "LLMTextFrame", "LLMTextFrame", "LLMContextFrame",
        "LLMContextAssistantTimestampFrame", "LLMContextAssistantTurnFrame", "LLMFullResponseEndFrame",
    ]
    assert rec.up_types() == ["LLMContextAssistantTurnFrame"]
    stopped = rec.events_named("on_assistant_turn_stopped")[0][1]
    assert stopped == AssistantTurnStopped("Hello world", False, "1970-01-01T00:00:00+00:00")
    assert rec.event_names() == ["on_assistant_turn_started", "on_assistant_turn_stopped"]


def test_an_empty_response_is_reported_but_writes_nothing() -> None:
    """Start then end: a stop event with empty content, no message, no frames of its own."""
    pair = Pair()
    rec = run(pair, "S-E", {})
    assert messages(pair) == []
    assert rec.down_types() == ["LLMFullResponseStartFrame", "LLMFullResponseEndFrame"]
    assert rec.events_named("on_assistant_turn_stopped")[0][1].content == ""


def test_an_interruption_commits_what_was_said() -> None:
    """Barge-in: the partial answer is written, marked interrupted, then the next answer is whole."""
    pair = Pair()
    legend = {"a": tx("Hello "), "w": tx("wor"), "t": tx("there!")}
    rec = run(pair, "S-a-w-I-S-a-t-E", legend)
    assert [m["content"] for m in messages(pair)] == ["Hello wor", "Hello there!"]
    stops = [p for _, p in rec.events_named("on_assistant_turn_stopped")]
    assert [(s.content, s.interrupted) for s in stops] == [("Hello wor", True), ("Hello there!", False)]
    types = rec.down_types(F.LLMTextFrame, F.LLMFullResponseStartFrame, F.LLMFullResponseEndFrame)
    assert types == [
        "LLMContextFrame", "LLMContextAssistantTimestampFrame", "LLMContextAssistantTurnFrame", "InterruptionFrame",
        "LLMContextFrame", "LLMContextAssistantTimestampFrame", "LLMContextAssistantTurnFrame",
    ]


def test_end_of_session_commits_an_unfinished_response() -> None:
    """A response with no end, then EndFrame: the text is still written."""
    pair = Pair()
    rec = run(pair, "S-a-Z", {"a": tx("Hello from rxvoice!")})
    assert [m["content"] for m in messages(pair)] == ["Hello from rxvoice!"]
    assert rec.events_named("on_assistant_turn_stopped")[0][1].interrupted is False


def test_text_outside_a_turn_waits_for_the_next_turn() -> None:
    """Text with no turn open is kept and written when a turn closes."""
    pair = Pair()
    run(pair, "a-S-b-E", {"a": tx("early "), "b": tx("late")})
    assert [m["content"] for m in messages(pair)] == ["early late"]


def test_markers_are_kept_in_the_context_and_stripped_from_reports() -> None:
    """A held ● marker joins the reply in the context; the report and the announcement omit it."""
    pair = Pair()
    legend = {"m": F.LLMMarkerFrame("●", append_to_context_immediately=False), "a": tx("Sure thing.")}
    rec = run(pair, "S-m-a-E", legend)
    assert messages(pair) == [{"role": "assistant", "content": "● Sure thing."}]
    assert rec.events_named("on_assistant_turn_stopped")[0][1].content == "Sure thing."
    assert rec.of_type(F.LLMContextAssistantTurnFrame)[0][1].text == "Sure thing."


def test_an_immediate_marker_is_written_and_reruns_the_model() -> None:
    """An incomplete-turn marker is written as its own message and the model is asked again (upstream)."""
    pair = Pair()
    rec = run(pair, "m", {"m": F.LLMMarkerFrame("◐")})
    assert messages(pair) == [{"role": "assistant", "content": "◐"}]
    assert rec.up_types() == ["LLMContextFrame"]


def test_spoken_text_records_the_written_form() -> None:
    """A spoken word's raw text ('23') is recorded, not what was spoken ('twenty-three')."""
    pair = Pair()
    legend = {
        "s": F.TTSStartedFrame(),
        "a": F.TTSTextFrame("Room"),
        "b": F.TTSTextFrame("twenty-three", raw_text="23"),
        "p": F.LLMAssistantPushAggregationFrame(),
    }
    run(pair, "s-a-b-p", legend)
    assert messages(pair) == [{"role": "assistant", "content": "Room 23"}]


def test_words_not_bound_for_the_context_are_ignored() -> None:
    """append_to_context=False keeps text out of the conversation."""
    pair = Pair()
    run(pair, "S-a-E", {"a": F.LLMTextFrame("secret", append_to_context=False)})
    assert messages(pair) == []


def test_speech_with_no_response_around_it_gets_a_turn() -> None:
    """A TTS utterance with no model answer opens a turn; push-aggregation closes it."""
    pair = Pair()
    legend = {"s": F.TTSStartedFrame(), "a": F.TTSTextFrame("One"), "b": F.TTSTextFrame("moment"),
              "c": F.TTSTextFrame("please."), "p": F.LLMAssistantPushAggregationFrame()}
    rec = run(pair, "s-a-b-c---p", legend)
    assert messages(pair) == [{"role": "assistant", "content": "One moment please."}]
    assert rec.of_type(F.LLMContextFrame)[0][0] == 1000


def test_thoughts_are_reported_and_kept_only_when_asked() -> None:
    """A thought raises on_assistant_thought, is never part of the answer, and is stored provider-specifically."""
    pair = Pair()
    legend = {
        "t": F.LLMThoughtStartFrame(append_to_context=True, llm="anthropic"),
        "x": F.LLMThoughtTextFrame("Let me work "),
        "y": F.LLMThoughtTextFrame("this out."),
        "e": F.LLMThoughtEndFrame(signature="sig"),
        "a": tx("Done."),
    }
    rec = run(pair, "S-t-x-y-e-a-E", legend)
    thought = rec.events_named("on_assistant_thought")[0][1]
    assert isinstance(thought, AssistantThought) and thought.content == "Let me work this out."
    msgs = list(pair.context().messages)
    assert isinstance(msgs[0], LLMSpecificMessage) and msgs[0].message["text"] == "Let me work this out."
    assert msgs[1] == {"role": "assistant", "content": "Done."}
    assert not rec.of_type(F.LLMThoughtTextFrame)


# -- tool calls -------------------------------------------------------------------------


def call(i: str = "c1", *, sync: bool = True, group: str | None = "g1") -> F.FunctionCallInProgressFrame:
    return F.FunctionCallInProgressFrame(
        "get_weather", i, {"city": "Paris"}, cancel_on_interruption=sync, group_id=group
    )


def started(*ids: str) -> F.FunctionCallsStartedFrame:
    return F.FunctionCallsStartedFrame(tuple(F.FunctionCallFromLLM("get_weather", i, {"city": "Paris"}) for i in ids))


def result(i: str = "c1", value: Any = "sunny", **kw: Any) -> F.FunctionCallResultFrame:
    return F.FunctionCallResultFrame("get_weather", i, {"city": "Paris"}, value, **kw)


def test_a_tool_call_is_answered_at_once_then_settled_in_place() -> None:
    """The call and an IN_PROGRESS placeholder are written immediately; the result replaces it and re-runs the model."""
    pair = Pair()
    rec = run(pair, "S-f-p-E--r-S-a-E", {"f": started("c1"), "p": call(), "r": result(), "a": tx("It is sunny.")})
    msgs = messages(pair)
    assert msgs[0]["tool_calls"][0]["id"] == "c1"
    assert msgs[1] == {"role": "tool", "tool_call_id": "c1", "content": "sunny"}
    assert msgs[2] == {"role": "assistant", "content": "It is sunny."}
    assert rec.up_types(F.LLMContextAssistantTurnFrame) == ["LLMContextFrame"]
    assert not pair.assistant().has_function_calls_in_progress()


def test_placeholder_keeps_the_context_valid_before_the_result() -> None:
    """Right after the call starts, every tool call already has an answer."""
    pair = Pair()
    run(pair, "f-p", {"f": started("c1"), "p": call()})
    assert [m["role"] for m in messages(pair)] == ["assistant", "tool"]
    assert messages(pair)[1]["content"] == "IN_PROGRESS"
    assert pair.assistant().has_function_calls_in_progress()


def test_parallel_results_land_in_their_own_placeholders_and_run_once() -> None:
    """c2 reports before c1: each result goes to its call; the model runs once, after the last."""
    pair = Pair()
    legend = {"f": started("c1", "c2"), "p": call("c1"), "q": call("c2"),
              "2": result("c2", "rainy"), "1": result("c1", "sunny")}
    rec = run(pair, "f-p-q-2-1", legend)
    msgs = messages(pair)
    assert [(m["role"], m.get("content")) for m in msgs] == [
        ("assistant", None), ("tool", "sunny"), ("assistant", None), ("tool", "rainy"),
    ]
    assert [t for t, _ in rec.of_type(F.LLMContextFrame, "up")] == [800]


def test_an_interruption_cancels_calls_in_flight() -> None:
    """An interruption marks its calls CANCELLED at once; a late cancel or result does not write again."""
    pair = Pair()
    legend = {"f": started("c1"), "p": call(), "x": F.FunctionCallCancelFrame("get_weather", "c1"), "r": result()}
    rec = run(pair, "f-p-I-x-r", legend)
    assert messages(pair)[1]["content"] == "CANCELLED"
    assert len(messages(pair)) == 2
    assert not rec.of_type(F.LLMContextFrame, "up")
    assert not pair.assistant().has_function_calls_in_progress()


def test_a_cancel_frame_settles_the_placeholder() -> None:
    """A cancel (no interruption) writes CANCELLED in place and does not run the model."""
    pair = Pair()
    rec = run(pair, "f-p-x", {"f": started("c1"), "p": call(), "x": F.FunctionCallCancelFrame("get_weather", "c1")})
    assert messages(pair)[1]["content"] == "CANCELLED"
    assert not rec.of_type(F.LLMContextFrame, "up")


def test_empty_results_complete_without_a_rerun() -> None:
    """A result of None is written as COMPLETED and does not run the model; run_llm=False neither."""
    pair = Pair()
    legend = {"f": started("c1", "c2"), "p": call("c1", group=None), "q": call("c2", group=None),
              "r": result("c1", None), "s": result("c2", "x", run_llm=False)}
    rec = run(pair, "f-p-q-r-s", legend)
    assert messages(pair)[1]["content"] == "COMPLETED"
    assert not rec.of_type(F.LLMContextFrame, "up")


def test_results_wait_while_the_bot_speaks() -> None:
    """A result arriving while the bot speaks re-runs the model once the bot has stopped."""
    pair = Pair()
    legend = {"f": started("c1"), "p": call(), "B": F.BotStartedSpeakingFrame(), "r": result(),
              "b": F.BotStoppedSpeakingFrame()}
    rec = run(pair, "f-p-B-r---b", legend)
    assert [t for t, _ in rec.of_type(F.LLMContextFrame, "up")] == [1000]


def test_results_never_rerun_while_the_user_speaks() -> None:
    """A result arriving while the user speaks is owed: the next result (or the user's turn) carries it."""
    pair = Pair()
    legend = {"f": started("c1", "c2"), "p": call("c1", group=None), "q": call("c2", group=None),
              "U": F.UserStartedSpeakingFrame(), "r": result("c1", run_llm=True), "u": F.UserStoppedSpeakingFrame(),
              "s": result("c2", "later", run_llm=False)}
    rec = run(pair, "f-p-q-U-r-u-s", legend)
    assert [t for t, _ in rec.of_type(F.LLMContextFrame, "up")] == [1200]


def test_unknown_results_are_skipped() -> None:
    """A result for a call that is not in progress changes nothing."""
    pair = Pair()
    rec = run(pair, "r", {"r": result("ghost")})
    assert messages(pair) == [] and not rec.of_type(F.LLMContextFrame, "up")


def test_async_calls_use_developer_messages() -> None:
    """A call that survives interruptions writes a started message, then a final developer message."""
    pair = Pair()
    legend = {"f": started("c1"), "p": call(sync=False), "r": result()}
    run(pair, "f-p-r", legend)
    msgs = messages(pair)
    assert [m["role"] for m in msgs] == ["assistant", "tool", "developer"]
    assert '"status": "running"' in msgs[1]["content"] and '"status": "finished"' in msgs[2]["content"]


def test_context_updated_callback_runs_after_the_write() -> None:
    """on_context_updated runs once the result is in the context."""
    pair = Pair()
    seen: list[str] = []

    def updated() -> None:
        seen.append(pair.context().messages[1]["content"])

    props = F.FunctionCallResultProperties(on_context_updated=updated)
    run(pair, "f-p-r", {"f": started("c1"), "p": call(), "r": result(properties=props)})
    assert seen == ["sunny"]


def test_assistant_context_frames_go_upstream() -> None:
    """On the assistant side, a run request re-runs the model upstream."""
    pair = Pair(LLMContext([{"role": "user", "content": "hi"}]))
    rec = run(pair, "r-u", {"r": F.LLMRunFrame(),
                            "u": F.LLMMessagesUpdateFrame([{"role": "user", "content": "x"}], run_llm=True)})
    assert rec.up_types() == ["LLMContextFrame", "LLMContextFrame"]
    assert rec.down_frames() == []
