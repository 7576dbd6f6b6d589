"""The shared conversation: immutable snapshots, atomic writes, validation."""

from __future__ import annotations

import copy
import json
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rxvoice import LLMContext
from rxvoice.context import (
    IN_PROGRESS,
    ContextSnapshot,
    LLMSpecificMessage,
    Messages,
    ToolsSchema,
    tool_change_message,
)
from rxvoice.context.sequence import BLOCK
from rxvoice.context.tokens import estimate_message_tokens
from rxvoice.errors import InvalidMessageError, InvalidToolCallError

WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}


def test_messages_compare_equal_to_plain_data() -> None:
    """Snapshot messages read like the list of dicts they were made from."""
    ctx = LLMContext([{"role": "system", "content": "Be brief."}])
    ctx.add_user_message("hi")
    assert ctx.messages == [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]
    assert ctx.messages[-1]["content"] == "hi"
    assert json.loads(json.dumps(ctx.to_openai()))["messages"][1] == {"role": "user", "content": "hi"}


def test_snapshots_cannot_be_mutated() -> None:
    """Nothing outside can change a snapshot it was handed."""
    ctx = LLMContext([{"role": "user", "content": "hi"}])
    msg = ctx.messages[0]
    with pytest.raises(TypeError, match="immutable"):
        msg["content"] = "changed"
    with pytest.raises(TypeError):
        msg.update(content="x")
    ctx.add_assistant_tool_call("c1", "get_weather", {"city": "Paris"})
    with pytest.raises(TypeError):
        ctx.messages[1]["tool_calls"].append({})
    plain = copy.deepcopy(ctx.messages[0])
    plain["content"] = "mine"
    assert ctx.messages[0]["content"] == "hi"


def test_every_write_publishes_one_snapshot() -> None:
    """Subscribers see the current snapshot, then one per write, with increasing versions."""
    ctx = LLMContext()
    seen: list[ContextSnapshot] = []
    ctx.subscribe(seen.append)
    ctx.add_user_message("a")
    ctx.add_messages([{"role": "assistant", "content": "b"}, {"role": "user", "content": "c"}])
    ctx.set_tool_choice("auto")
    assert [len(s.messages) for s in seen] == [0, 1, 3, 3]
    assert [s.version for s in seen] == [0, 1, 2, 3]


def test_old_snapshots_keep_their_view() -> None:
    """Appending shares storage, but a snapshot never sees messages written after it."""
    ctx = LLMContext([{"role": "user", "content": "a"}])
    first = ctx.snapshot
    ctx.add_user_message("b")
    second = ctx.snapshot
    ctx.set_messages([{"role": "user", "content": "x"}])
    ctx.add_user_message("y")
    assert first.messages == [{"role": "user", "content": "a"}]
    assert [m["content"] for m in second.messages] == ["a", "b"]
    assert [m["content"] for m in ctx.messages] == ["x", "y"]


def test_concurrent_writes_lose_nothing() -> None:
    """Writes from many threads are atomic: every message lands, each exactly once."""
    ctx = LLMContext()

    def writer(n: int) -> None:
        for i in range(200):
            ctx.add_user_message(f"{n}-{i}")

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    contents = [m["content"] for m in ctx.messages]
    assert len(contents) == 1600 and len(set(contents)) == 1600
    assert ctx.snapshot.version == 1600


@pytest.mark.parametrize(
    "bad",
    [
        {"role": "robot", "content": "x"},
        {"content": "no role"},
        "just a string",
        {"role": "user"},
        {"role": "user", "content": 42},
        {"role": "tool", "content": "x"},
        {"role": "user", "content": "x", "tool_calls": [{"id": "1"}]},
        {"role": "assistant", "tool_calls": [{"id": "1", "function": {}}]},
        {"role": "assistant", "tool_calls": []},
    ],
)
def test_bad_messages_are_refused(bad: object) -> None:
    """An unknown role or a malformed message is a typed error, and nothing is written."""
    ctx = LLMContext()
    with pytest.raises(InvalidMessageError):
        ctx.add_message(bad)  # type: ignore[arg-type]
    assert len(ctx.messages) == 0


def test_a_batch_with_one_bad_message_writes_nothing() -> None:
    """add_messages is all or nothing."""
    ctx = LLMContext()
    with pytest.raises(InvalidMessageError):
        ctx.add_messages([{"role": "user", "content": "ok"}, {"role": "alien", "content": "x"}])
    assert len(ctx.messages) == 0


def test_tool_call_and_result_shapes() -> None:
    """A tool call is one assistant message; its result is rewritten in place."""
    ctx = LLMContext()
    ctx.add_assistant_tool_call("c1", "get_weather", {"city": "Zürich"})
    ctx.add_tool_result("c1", IN_PROGRESS)
    assert ctx.messages[0]["tool_calls"][0] == {
        "id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Zürich"}'}
    }
    assert ctx.update_tool_result("c1", "sunny") is True
    assert ctx.messages[1] == {"role": "tool", "tool_call_id": "c1", "content": "sunny"}
    assert ctx.update_tool_result("nope", "x") is False
    with pytest.raises(InvalidToolCallError, match="JSON"):
        ctx.add_assistant_tool_call("c2", "f", {"x": object()})


def test_transform_gets_a_copy_and_failures_change_nothing() -> None:
    """A transform sees plain data; one that raises leaves the conversation as it was."""
    ctx = LLMContext([{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}])
    ctx.transform_messages(lambda ms: [m for m in ms if m["role"] == "user"])
    assert ctx.messages == [{"role": "user", "content": "a"}]

    def broken(_ms: list[dict[str, object]]) -> list[dict[str, object]]:
        raise RuntimeError("boom")

    with pytest.raises(InvalidMessageError, match="boom"):
        ctx.transform_messages(broken)
    assert ctx.messages == [{"role": "user", "content": "a"}]


def test_tools_are_normalized_and_validated() -> None:
    """Plain lists become a ToolsSchema; duplicates and nameless tools are refused."""
    ctx = LLMContext(tools=[WEATHER, {"name": "book", "description": "Book"}])
    assert ctx.snapshot.tool_names == frozenset({"get_weather", "book"})
    assert ctx.to_openai()["tools"][1]["function"]["name"] == "book"
    ctx.set_tools(None)
    assert ctx.tools is None
    with pytest.raises(InvalidToolCallError, match="unique"):
        ctx.set_tools([WEATHER, WEATHER])
    with pytest.raises(InvalidToolCallError, match="name"):
        ctx.set_tools([{"type": "function", "function": {"description": "x"}}])
    with pytest.raises(InvalidToolCallError, match="tool_choice"):
        ctx.set_tool_choice("sometimes")
    schema = ToolsSchema(custom={"gemini": ({"google_search": {}},)})
    ctx.set_tools(schema)
    assert ctx.snapshot.tool_names == frozenset()


def test_tool_change_announcement_text() -> None:
    """Added names come first, sorted, in backticks; nothing is said for no change."""
    text = tool_change_message(frozenset({"a", "x"}), frozenset({"a", "c", "b"}))
    assert text is not None
    assert text.startswith("The following function(s) have just been added and may now be called: `b`, `c`.")
    assert "just been removed and should not be called: `x`." in text
    assert tool_change_message(frozenset({"a"}), frozenset({"a"})) is None


def test_announce_tool_change_writes_once() -> None:
    """The diff and the write are one step: a second identical change says nothing."""
    ctx = LLMContext(tools=[WEATHER])
    new = [WEATHER, {"name": "book"}]
    assert ctx.announce_tool_change(new) is not None
    assert ctx.announce_tool_change(new) is None
    assert [m["role"] for m in ctx.messages] == ["developer"]
    assert ctx.snapshot.tool_names == frozenset({"get_weather", "book"})


def test_llm_specific_messages_stay_with_their_provider() -> None:
    """A provider's own message is sent only to that provider."""
    ctx = LLMContext([{"role": "user", "content": "hi"}])
    ctx.add_message(LLMSpecificMessage("anthropic", {"type": "thought", "text": "hmm"}))
    assert len(ctx.messages) == 2
    assert ctx.snapshot.messages_for("openai") == [{"role": "user", "content": "hi"}]
    assert ctx.snapshot.messages_for("anthropic")[1] == {"type": "thought", "text": "hmm"}


# -- the persistent messages (every snapshot keeps its own, whatever grew from it) -------------------

def _m(i: int) -> dict[str, str]:
    return {"role": "user", "content": f"message {i} " + "x" * (i % 7)}


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["append", "truncate", "replace"]), st.integers(0, 10**6),
                          st.integers(1, 2 * BLOCK + 3)), max_size=40))
def test_every_snapshot_keeps_its_messages_whatever_grew_from_it(ops: list[tuple[str, int, int]]) -> None:
    """Appends, truncations and replacements from any older snapshot (branches included) against plain lists:
    each view reads, iterates, reverses, slices and counts tokens exactly as its list does."""
    views: list[tuple[Messages, list[dict[str, str]]]] = [(Messages([_m(0)]), [_m(0)])]
    counter = 1
    for op, pick, size in ops:
        base, model = views[pick % len(views)]
        if op == "append":
            new = [_m(counter + j) for j in range(size)]
            counter += size
            views.append((base.appended(*new), model + new))
        elif op == "truncate":
            n = pick % (len(model) + 1)
            views.append((base.truncated(n), model[:n]))
        elif model:
            index = pick % len(model)
            message = _m(counter)
            counter += 1
            views.append((base.replaced(index, message), [*model[:index], message, *model[index + 1:]]))
    for view, model in views:
        assert len(view) == len(model) and list(view) == model and view == model
        assert list(reversed(view)) == model[::-1]
        assert [view[i] for i in range(-len(model), len(model))] == model + model
        assert view[1:-1:2] == model[1:-1:2]
        assert view.tokens == sum(estimate_message_tokens(m) for m in model)


def test_reopening_the_last_user_turn_costs_what_follows_it() -> None:
    """Reopening rewrites only the end: the prefix is shared with the snapshot it came from, not copied."""
    ctx = LLMContext([_m(i) for i in range(10 * BLOCK)])
    ctx.add_user_message("I'd like a table for")
    ctx.add_assistant_message("Sure, for")
    before = ctx.messages
    assert ctx.reopen_user_message("I'd like a table for", "I'd like a table for two.")
    after = ctx.messages
    assert list(after)[-1] == {"role": "user", "content": "I'd like a table for two."}
    assert after._blocks is before._blocks  # the full blocks are shared, not copied
    assert list(before)[-2:] == [{"role": "user", "content": "I'd like a table for"},
                                 {"role": "assistant", "content": "Sure, for"}]  # the old snapshot kept its own


# -- tool choice, tools and provider messages: strict JSON, typed errors ---------------------------


def test_a_tool_choice_naming_a_function_is_taken_and_a_bad_one_refused_typed() -> None:
    """A dict naming a tool is a tool choice (it raised an untyped TypeError: unhashable type: 'dict')."""
    ctx = LLMContext(tools=[WEATHER])
    choice = {"type": "function", "function": {"name": "get_weather"}}
    ctx.set_tool_choice(choice)
    assert ctx.tool_choice == choice and ctx.to_openai()["tool_choice"] == choice
    for bad in ({"type": "function"}, {"type": "function", "function": {"name": ""}},
                {"type": "function", "function": {"name": "f", "x": float("nan")}}, ["auto"], 3):
        with pytest.raises(InvalidToolCallError, match="tool_choice"):
            ctx.set_tool_choice(bad)
    assert ctx.tool_choice == choice


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), "\ud800", {1, 2}, b"bytes", object()])
def test_tools_and_provider_messages_are_strict_json(bad: object) -> None:
    """NaN, a lone surrogate, a set, bytes, an object: refused where written, so the request body always builds."""
    ctx = LLMContext()
    tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object", "default": bad}}}
    with pytest.raises(InvalidToolCallError, match="strict JSON"):
        ctx.set_tools([tool])
    with pytest.raises(InvalidToolCallError, match="strict JSON"):
        ctx.set_tools([{"type": "web_search", "extra": bad}])
    with pytest.raises(InvalidToolCallError, match="strict JSON"):
        ctx.set_tools(ToolsSchema(custom={"openai": ({"type": "web_search", "extra": bad},)}))
    with pytest.raises(InvalidMessageError, match="strict JSON"):
        LLMSpecificMessage("openai", {"role": "assistant", "content": bad})
    assert ctx.tools is None
    json.dumps(ctx.to_openai(), allow_nan=False)
