"""Properties of the whole pair over random interleavings (hypothesis)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rxvoice import LLMContext, pipeline
from rxvoice import frames as F
from rxvoice.aggregators import Pair
from rxvoice.context import LLMSpecificMessage
from rxvoice.testing import FrameMarbles, Reply, ScriptedLLM, ToolCall
from rxvoice.turns import AlwaysUserMute, FunctionCallUserMute

ACTIONS = st.sampled_from([
    "vad_start", "vad_stop", "interim", "final", "final", "interrupt", "bot_start", "bot_stop", "wait",
])


def _replies() -> Any:
    tool = st.builds(
        ToolCall,
        name=st.just("lookup"),
        result=st.sampled_from(["ok", None, {"v": 1}]),
        delay=st.sampled_from([0.0, 0.3, 1.5]),
        cancel_on_interruption=st.booleans(),
    )
    return st.builds(
        Reply,
        text=st.sampled_from(["", "Sure.", "Let me see about that."]),
        tool_calls=st.lists(tool, max_size=2),
        token_delay=st.sampled_from([0.0, 0.05]),
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    actions=st.lists(st.tuples(ACTIONS, st.sampled_from([0.05, 0.2, 0.7, 1.5])), min_size=1, max_size=40),
    replies=st.lists(_replies(), max_size=12),
    muted=st.booleans(),
)
def test_nothing_said_is_lost_and_the_context_stays_well_formed(
    actions: list[tuple[str, float]], replies: list[Reply], muted: bool
) -> None:
    """Any interleaving: every final transcript lands in exactly one user message (unless dropped while
    muted), every tool call has exactly one result right after it, and the model runs at most once per
    user turn."""
    pair = Pair(LLMContext(), mute=[AlwaysUserMute(), FunctionCallUserMute()] if muted else [])
    llm = ScriptedLLM(list(replies), token_delay=0.05)
    timeline: list[tuple[float, F.Frame]] = []
    up: list[tuple[float, F.Frame]] = []
    t = 0.0
    words: list[str] = []
    for i, (action, gap) in enumerate(actions):
        t += gap
        if action == "vad_start":
            timeline.append((t, F.VADUserStartedSpeakingFrame(0.2, t)))
        elif action == "vad_stop":
            timeline.append((t, F.VADUserStoppedSpeakingFrame(0.2, t)))
        elif action == "interim":
            timeline.append((t, F.InterimTranscriptionFrame(f"guess{i}")))
        elif action == "final":
            word = f"w{i}"
            words.append(word)
            timeline.append((t, F.TranscriptionFrame(word, finalized=True)))
        elif action == "interrupt":
            timeline.append((t, F.InterruptionFrame()))
        elif action == "bot_start":
            up.append((t, F.BotStartedSpeakingFrame()))
        elif action == "bot_stop":
            up.append((t, F.BotStoppedSpeakingFrame()))
    timeline.append((t + 10.0, F.EndFrame()))
    rec = FrameMarbles().run(
        pipeline(pair.user(), llm, pair.assistant()), down=timeline, up=up, watch=[pair.user()], until=t + 20.0
    )
    messages = [m for m in pair.context().messages if not isinstance(m, LLMSpecificMessage)]

    # 1. Nothing lost, nothing duplicated (muting may drop, never duplicate).
    said = " ".join(m["content"] for m in messages if m["role"] == "user").split()
    for word in words:
        assert said.count(word) <= 1, f"{word} written twice"
        if not muted:
            assert said.count(word) == 1, f"{word} lost"

    # 2. Every tool call is answered exactly once, right after it.
    for i, m in enumerate(messages):
        calls = m.get("tool_calls") if m["role"] == "assistant" else None
        if calls:
            call_id = calls[0]["id"]
            assert i + 1 < len(messages), "a tool call with no result"
            nxt = messages[i + 1]
            assert nxt["role"] == "tool" and nxt["tool_call_id"] == call_id
            assert sum(1 for x in messages if x.get("tool_call_id") == call_id and x["role"] == "tool") == 1

    # 3. At most one model run per user turn (runs sent downstream by the user side).
    turns = len(rec.events_named("on_user_turn_stopped"))
    downstream_runs = sum(1 for r in llm.runs if r.direction.name == "DOWNSTREAM")
    recoveries = sum(1 for m in messages if m["role"] == "developer")
    assert downstream_runs <= turns + recoveries
