"""Summarization's pure parts: settings, token estimate, thresholds, the cut, the transcript, applying."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rxvoice.context import IN_PROGRESS, LLMSpecificMessage
from rxvoice.errors import ConfigurationError, SummarizationError
from rxvoice.summarization import (
    DEFAULT_SUMMARIZATION_PROMPT,
    AutoSummarizationConfig,
    SummaryConfig,
    SummaryRequest,
    SummarySelection,
    apply_summary,
    check_cut,
    estimate_context_tokens,
    estimate_message_tokens,
    estimate_text_tokens,
    format_transcript,
    messages_to_summarize,
    should_summarize,
    unsummarized_message_count,
)
from rxvoice.testing import ScriptedLLM

SYSTEM = {"role": "system", "content": "Be brief."}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def call(call_id: str, name: str = "lookup", args: str = "{}") -> dict[str, Any]:
    return {"role": "assistant", "tool_calls": [{"id": call_id, "type": "function",
                                                  "function": {"name": name, "arguments": args}}]}


def result(call_id: str, content: str = "done") -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def async_payload(call_id: str, status: str, result: str | None = None) -> str:
    payload: dict[str, Any] = {"type": "async_tool", "status": status, "tool_call_id": call_id, "description": "d"}
    if result is not None:
        payload["result"] = result
    return json.dumps(payload)


# ------------------------------------------------------------------------------------- settings


def test_summary_config_defaults() -> None:
    """Defaults per the references: target 6000, keep 4, the summary template, 120 s, the default prompt."""
    cfg = SummaryConfig()
    assert (cfg.target_context_tokens, cfg.min_messages_after_summary) == (6000, 4)
    assert cfg.summary_message_template == "Conversation summary: {summary}"
    assert cfg.summarization_timeout == 120.0
    assert cfg.llm is None
    assert cfg.prompt == DEFAULT_SUMMARIZATION_PROMPT
    assert SummaryConfig(summarization_prompt="Only facts.").prompt == "Only facts."


def test_auto_config_defaults_and_clamp() -> None:
    """8000 tokens / 20 messages by default; a target above the token limit is lowered to 80% of it."""
    cfg = AutoSummarizationConfig()
    assert (cfg.max_context_tokens, cfg.max_unsummarized_messages) == (8000, 20)
    assert cfg.summary_config == SummaryConfig()
    assert AutoSummarizationConfig(max_context_tokens=1000).summary_config.target_context_tokens == 800
    assert AutoSummarizationConfig(max_context_tokens=None).summary_config.target_context_tokens == 6000


@pytest.mark.parametrize(
    "make",
    [
        lambda: AutoSummarizationConfig(max_context_tokens=None, max_unsummarized_messages=None),
        lambda: AutoSummarizationConfig(max_context_tokens=0),
        lambda: AutoSummarizationConfig(max_unsummarized_messages=0),
        lambda: AutoSummarizationConfig(max_context_tokens=True),
        lambda: AutoSummarizationConfig(summary_config="short"),
        lambda: SummaryConfig(target_context_tokens=0),
        lambda: SummaryConfig(min_messages_after_summary=-1),
        lambda: SummaryConfig(summarization_timeout=0),
        lambda: SummaryConfig(summarization_timeout=math.nan),
        lambda: SummaryConfig(summary_message_template="no placeholder"),
        lambda: SummaryConfig(summarization_prompt=3),
        lambda: SummaryConfig(llm="gpt"),
    ],
)
def test_bad_settings_are_refused(make: Any) -> None:
    """Impossible settings raise ConfigurationError (a ValueError) at construction."""
    with pytest.raises(ConfigurationError):
        make()


def test_a_dedicated_model_may_be_a_function_or_a_stage() -> None:
    """llm accepts a callable or a model stage."""
    assert SummaryConfig(llm=lambda request: "summary").llm is not None
    assert isinstance(SummaryConfig(llm=ScriptedLLM([])).llm, ScriptedLLM)


# --------------------------------------------------------------------------------- token estimate


def test_text_token_estimate() -> None:
    """Four characters a token: the reference's examples."""
    assert estimate_text_tokens("Hello world") == 2
    assert estimate_text_tokens("This is a test message") == 5
    assert estimate_text_tokens("") == 0


def test_message_token_estimate() -> None:
    """10 a message, its text, tool calls, 10 more for a tool result, 500 an image; provider messages nothing."""
    assert estimate_message_tokens(user("Hello world")) == 12
    args = '{"city": "Paris"}'
    assert estimate_message_tokens(call("c1", "weather", args)) == 10 + len("weather" + args) // 4
    assert estimate_message_tokens(result("c1", "sunny")) == 10 + 1 + 10
    parts = {"role": "user", "content": [{"type": "text", "text": "look at this"}, {"type": "image_url"}]}
    assert estimate_message_tokens(parts) == 10 + 3 + 500
    assert estimate_message_tokens(LLMSpecificMessage("anthropic", {"type": "thought"})) == 0
    assert estimate_context_tokens([SYSTEM, user("Hello world")]) == 12 + 12


def test_unsummarized_count_leaves_out_the_preamble_and_the_summary() -> None:
    """The leading system message and the summary right after it are not counted."""
    summary = user("Conversation summary: x")
    assert unsummarized_message_count([SYSTEM, user("a"), user("b")]) == 2
    assert unsummarized_message_count([SYSTEM, summary, user("a")], summary) == 1
    assert unsummarized_message_count([summary, user("a")], summary) == 1
    assert unsummarized_message_count([]) == 0


def test_thresholds() -> None:
    """Either threshold triggers; a disabled one never does."""
    many = [SYSTEM] + [user(f"m{i}") for i in range(6)]
    assert should_summarize(many, AutoSummarizationConfig(max_unsummarized_messages=5))
    assert not should_summarize(many[:4], AutoSummarizationConfig(max_unsummarized_messages=5))
    long = [SYSTEM] + [user("x" * 55) for _ in range(10)]
    assert should_summarize(long, AutoSummarizationConfig(max_context_tokens=100, max_unsummarized_messages=None))
    assert not should_summarize(long, AutoSummarizationConfig(max_context_tokens=None, max_unsummarized_messages=50))
    few = [SYSTEM, user("hi"), assistant("hello"), user("bye")]
    assert not should_summarize(few, AutoSummarizationConfig(max_context_tokens=10000, max_unsummarized_messages=20))


# ------------------------------------------------------------------------------------------ the cut


def test_the_cut_keeps_the_system_message_and_the_recent_tail() -> None:
    """System first is never summarized; the last `keep` messages stay."""
    msgs = [SYSTEM] + [user(str(i)) for i in range(8)]
    assert messages_to_summarize(msgs, 4) == SummarySelection(1, 5)
    assert messages_to_summarize(msgs, 4).last_index == 4
    assert messages_to_summarize(msgs[1:], 4) == SummarySelection(0, 4)


@pytest.mark.parametrize(
    ("messages", "keep", "expected"),
    [
        ([SYSTEM, user("a")], 4, (0, 0)),  # fewer messages than kept
        ([SYSTEM, user("a"), user("b")], 2, (1, 1)),  # only the system message before the tail
        ([user("a"), user("b"), user("c")], 0, (0, 3)),  # keep nothing
        # the call's result falls in the kept tail: stop before the call
        ([SYSTEM, user("a"), call("c1"), result("c1"), user("b"), user("c")], 3, (1, 2)),
        # a call whose result is in the range goes together with it
        ([SYSTEM, user("a"), call("c1"), result("c1"), user("b"), user("c")], 2, (1, 4)),
        # still running: IN_PROGRESS stops the cut
        ([SYSTEM, user("a"), call("c1"), result("c1", IN_PROGRESS), user("b"), user("c")], 1, (1, 2)),
        # an async call still running stops it; its final developer message resolves it
        ([SYSTEM, user("a"), call("c1"), result("c1", async_payload("c1", "running")), user("b")], 1, (1, 2)),
        ([SYSTEM, user("a"), call("c1"), result("c1", async_payload("c1", "running")),
          {"role": "developer", "content": async_payload("c1", "finished", "42")}, user("b")], 1, (1, 5)),
        # a cancelled call is settled
        ([SYSTEM, call("c1"), result("c1", "CANCELLED"), user("b")], 1, (1, 3)),
        # a call with no result at all stops the cut
        ([SYSTEM, user("a"), call("c1"), user("b"), user("c")], 1, (1, 2)),
        # stopping before c2 strands c1's result in the tail: the cut moves again, before c1
        ([SYSTEM, user("a"), call("c1"), call("c2"), result("c1"), user("b")], 0, (1, 2)),
    ],
)
def test_the_cut_never_splits_a_tool_call(messages: list[Any], keep: int, expected: tuple[int, int]) -> None:
    """A table of cuts around tool calls: a call and its result are summarized together or kept together."""
    assert tuple(messages_to_summarize(messages, keep)) == expected


def test_the_cut_refuses_a_negative_keep() -> None:
    """keep < 0 is a programming error."""
    with pytest.raises(ValueError):
        messages_to_summarize([user("a")], -1)


# A conversation generator for the property test: plain turns, tool calls answered (or not) later.
@st.composite
def conversations(draw: st.DrawFn) -> list[Any]:
    messages: list[Any] = [SYSTEM] if draw(st.booleans()) else []
    open_calls: list[str] = []
    n = draw(st.integers(0, 30))
    for i in range(n):
        kind = draw(st.sampled_from(["user", "assistant", "call", "result", "developer", "thought"]))
        if kind == "user":
            messages.append(user(f"u{i}"))
        elif kind == "assistant":
            messages.append(assistant(f"a{i}"))
        elif kind == "call":
            call_id = f"c{i}"
            messages.append(call(call_id))
            open_calls.append(call_id)
            if draw(st.booleans()):  # the placeholder is written right after the call
                status = draw(st.sampled_from([IN_PROGRESS, "async", "result"]))
                content = (IN_PROGRESS if status == IN_PROGRESS
                           else async_payload(call_id, "running") if status == "async" else "ok")
                messages.append(result(call_id, content))
                if status == "result":
                    open_calls.remove(call_id)
        elif kind == "result" and open_calls:
            call_id = open_calls.pop(draw(st.integers(0, len(open_calls) - 1)))
            messages.append(result(call_id, "late"))
        elif kind == "developer" and open_calls:
            call_id = open_calls.pop(0)
            messages.append({"role": "developer", "content": async_payload(call_id, "finished", "r")})
        elif kind == "thought":
            messages.append(LLMSpecificMessage("anthropic", {"type": "thought", "text": "t"}))
    return messages


def _call_index(messages: list[Any]) -> dict[str, int]:
    where: dict[str, int] = {}
    for i, m in enumerate(messages):
        if isinstance(m, dict) and m.get("tool_calls"):
            for c in m["tool_calls"]:
                where[c["id"]] = i
    return where


@settings(max_examples=400, deadline=None)
@given(conversations(), st.integers(0, 8))
def test_the_kept_tail_never_answers_a_call_that_was_summarized_away(messages: list[Any], keep: int) -> None:
    """Property: whatever the conversation, no kept tool result's call is summarized, and the cut is sound."""
    sel = messages_to_summarize(messages, keep)
    calls = _call_index(messages)
    if sel.empty:
        return
    assert sel.start == (1 if messages and messages[0] == SYSTEM else 0)
    assert len(messages) - sel.end >= keep
    for m in messages[sel.end:]:
        if isinstance(m, dict) and m.get("role") == "tool":
            assert not (sel.start <= calls.get(m["tool_call_id"], -1) < sel.end)
    assert check_cut(messages, sel.last_index, keep) is None
    applied = apply_summary(messages, "s", sel.last_index, keep=keep)
    kept = applied.messages[2 if sel.start else 1:]
    first = kept[0] if kept else None
    assert not (isinstance(first, dict) and first.get("role") == "tool"
                and sel.start <= calls.get(first["tool_call_id"], -1) < sel.end)


# ------------------------------------------------------------------------------------ transcript


def test_transcript_format() -> None:
    """ROLE: text entries, tool calls and results tagged, blank lines between, provider messages left out."""
    msgs = [
        user("What's the weather?"),
        call("c1", "weather", '{"city":"Paris"}'),
        result("c1", "sunny"),
        LLMSpecificMessage("anthropic", {"type": "thought", "text": "hmm"}),
        {"role": "assistant", "content": [{"type": "text", "text": "It is"}, {"type": "text", "text": "sunny."}]},
    ]
    assert format_transcript(msgs) == (
        "USER: What's the weather?\n\nTOOL_CALL: weather({\"city\":\"Paris\"})\n\n"
        "TOOL_RESULT[c1]: sunny\n\nASSISTANT: It is sunny."
    )


def test_a_request_reads_as_chat_messages() -> None:
    """A dedicated model's request: the prompt as system, the history as the user's turn."""
    req = SummaryRequest("r1", (user("hi"),), "USER: hi", "Summarize.", 500, 1, 4, 10.0)
    assert req.as_messages() == [
        {"role": "system", "content": "Summarize."},
        {"role": "user", "content": "Conversation history:\nUSER: hi"},
    ]


# --------------------------------------------------------------------------------------- applying


def test_applying_a_summary() -> None:
    """[system] + [summary as a user message] + the kept tail, with the counts reported."""
    msgs = [SYSTEM] + [user(str(i)) for i in range(8)]
    applied = apply_summary(msgs, "  They counted to three.  ", 4, keep=4)
    assert applied.messages == [SYSTEM, user("Conversation summary: They counted to three."), *msgs[5:]]
    assert applied.summary_message == user("Conversation summary: They counted to three.")
    counts = applied[2:]
    assert counts == (9, 6, 4, 5)


def test_applying_uses_the_template_verbatim() -> None:
    """A custom template is used as written, braces and all; only {summary} is replaced."""
    msgs = [user(str(i)) for i in range(6)]
    applied = apply_summary(msgs, "S", 1, keep=4, template="<context_summary>\n{summary}\n</context_summary> {x}")
    assert applied.messages[0] == user("<context_summary>\nS\n</context_summary> {x}")
    assert applied[2:] == (6, 5, 2, 4)


@pytest.mark.parametrize(
    ("summary", "index", "keep", "reason"),
    [
        ("", 2, 1, "empty"),
        ("   ", 2, 1, "empty"),
        ("s", -1, 1, "outside"),
        ("s", 9, 1, "outside"),
        ("s", 0, 1, "system message"),
        ("s", 5, 3, "at least 3"),
        ("s", 2, 1, "tool call"),
    ],
)
def test_a_bad_result_is_refused(summary: str, index: int, keep: int, reason: str) -> None:
    """An empty summary, an index out of range or at the system message, too few kept, a split call: refused."""
    msgs = [SYSTEM, user("a"), call("c1"), result("c1"), user("b"), user("c"), user("d")]
    with pytest.raises(SummarizationError, match=reason):
        apply_summary(msgs, summary, index, keep=keep)


# -- the token estimate is kept as the conversation grows -----------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["append", "fork", "replace", "reset"]), st.integers(0, 50),
                          st.text(max_size=40)), max_size=30))
def test_a_snapshots_token_estimate_is_always_the_sum_of_its_messages(ops: list[tuple[str, int, str]]) -> None:
    """Appends (sharing storage or forked from an older snapshot), replacements and rewrites: Messages.tokens
    equals the estimate recounted from scratch, for every snapshot ever handed out."""
    from rxvoice.context import Messages

    views = [Messages([SYSTEM])]
    for op, k, text in ops:
        base = views[k % len(views)]
        if op == "append":
            views.append(base.appended(user(text), assistant(text * 3)))
        elif op == "fork":
            views.append(views[0].appended(user(text)))
        elif op == "replace" and len(base):
            views.append(base.replaced(k % len(base), {"role": "tool", "tool_call_id": "c", "content": text * 9}))
        else:
            views.append(Messages([user(text)] * (k % 4)))
    for view in views:
        assert view.tokens == sum(estimate_message_tokens(m) for m in view) == estimate_context_tokens(view)


def test_the_automatic_trigger_does_not_recount_the_conversation(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a token threshold configured and not reached, a turn estimates only what it wrote: 10,000 messages
    in, three turns cost a handful of message estimates, not 30,000 (the check used to be linear per turn)."""
    import rxvoice.context.sequence
    import rxvoice.summarization
    from rxvoice import LLMContext, pipeline
    from rxvoice import frames as F
    from rxvoice.aggregators import Pair
    from rxvoice.testing import FrameMarbles

    history = [SYSTEM] + [user(f"m{i}") if i % 2 == 0 else assistant(f"a{i}") for i in range(10_000)]
    pair = Pair(LLMContext(history), summarization=AutoSummarizationConfig(
        max_context_tokens=10**9, max_unsummarized_messages=None))
    counted = [0]
    real = estimate_message_tokens

    def counting(message: Any) -> int:
        counted[0] += 1
        return real(message)

    for module in (rxvoice.context.sequence, rxvoice.summarization):
        monkeypatch.setattr(module, "estimate_message_tokens", counting)
    down = [(1.0 + 2 * t, F.TranscriptionFrame(f"turn {t}", finalized=True)) for t in range(3)]
    FrameMarbles().run(pipeline(pair.user(), ScriptedLLM(["Yes."] * 3), pair.assistant()), down=down)
    assert len(pair.context().messages) == 10_001 + 6
    assert 0 < counted[0] <= 12, counted[0]
    assert estimate_context_tokens(pair.context().messages) == sum(real(m) for m in pair.context().messages)
