"""Tool-change messages: a set-tools frame announces what was added and removed, exactly once per pair."""

from __future__ import annotations

from typing import Any

from rxvoice import LLMContext, pipeline
from rxvoice import frames as F
from rxvoice.aggregators import Pair
from rxvoice.context import ToolsSchema
from rxvoice.testing import FrameMarbles

ADDED = "The following function(s) have just been added and may now be called:"
REMOVED = "The following function(s) have just been removed and should not be called:"


def tool(name: str) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": name, "parameters": {}}}


def tools(*names: str) -> list[dict[str, Any]]:
    return [tool(n) for n in names]


def set_tools(pair: Pair, new: Any, stage: Any = None) -> None:
    """Send one LLMSetToolsFrame through the pair (user half first), or through ``stage``."""
    stage = stage or pipeline(pair.user(), pair.assistant())
    FrameMarbles().run(stage, down="t", legend={"t": F.LLMSetToolsFrame(new)})


def announcements(pair: Pair) -> list[str]:
    return [m["content"] for m in pair.context().messages if m["role"] == "developer"]


def paired(*names: str, flag: bool = True) -> Pair:
    return Pair(LLMContext(tools=tools(*names) if names else None), tool_change_messages=flag)


def test_additions_are_announced_sorted_in_backticks() -> None:
    """{a} -> {a, c, b}: one developer message naming `b` then `c`, no removal part."""
    pair = paired("a")
    set_tools(pair, tools("a", "c", "b"))
    [text] = announcements(pair)
    assert text == f"{ADDED} `b`, `c`. Any previously available functions remain available."
    assert REMOVED not in text
    assert pair.context().snapshot.tool_names == {"a", "b", "c"}


def test_removals_are_announced() -> None:
    """{a, b, c} -> {a}: the removal sentence, with its promise to say when they come back."""
    pair = paired("a", "b", "c")
    set_tools(pair, tools("a"))
    [text] = announcements(pair)
    assert text == (
        f"{REMOVED} `b`, `c`. Any previously available functions remain available. The removed function(s) "
        "may become available again later, in which case you will be informed."
    )


def test_added_part_comes_before_the_removed_part() -> None:
    """{a, b} -> {b, c}: one message, added then removed, joined with a space."""
    pair = paired("a", "b")
    set_tools(pair, tools("b", "c"))
    [text] = announcements(pair)
    assert text.index(ADDED) == 0 and text.index(REMOVED) > text.index("`c`")
    assert "available. The following function(s) have just been removed" in text


def test_nothing_is_said_when_nothing_changed() -> None:
    """The same names (even with new descriptions) write nothing."""
    pair = paired("a", "b")
    set_tools(pair, [tool("b"), {**tool("a"), "function": {"name": "a", "description": "new"}}])
    assert announcements(pair) == []


def test_provider_specific_tools_are_left_out_of_the_diff() -> None:
    """A change to provider-format tools only is not announced (but is applied)."""
    pair = paired("a")
    set_tools(pair, [tool("a"), {"type": "web_search_preview"}])
    assert announcements(pair) == []
    tools_now = pair.context().tools
    assert isinstance(tools_now, ToolsSchema) and tools_now.custom["openai"]


def test_from_no_tools_everything_is_added_and_to_none_everything_removed() -> None:
    """No tools -> {x, y} announces both as added; {x, y} -> None announces both as removed."""
    pair = paired()
    set_tools(pair, tools("y", "x"))
    set_tools(pair, None)
    first, second = announcements(pair)
    assert first.startswith(f"{ADDED} `x`, `y`.")
    assert second.startswith(f"{REMOVED} `x`, `y`.")
    assert pair.context().tools is None


def test_an_empty_toolset_removes_everything() -> None:
    """[] is no tools: everything advertised is announced as removed."""
    pair = paired("a")
    set_tools(pair, [])
    assert announcements(pair)[0].startswith(f"{REMOVED} `a`.")


def test_a_plain_function_list_is_accepted_and_normalized() -> None:
    """Bare function dicts ({"name": ...}) are normalized to standard tools before the diff."""
    pair = paired("a")
    set_tools(pair, [{"name": "a"}, {"name": "b", "parameters": {"type": "object"}}])
    assert announcements(pair)[0].startswith(f"{ADDED} `b`.")
    assert pair.context().tools is not None
    assert pair.context().tools.standard[1]["function"]["name"] == "b"


def test_announced_once_across_the_pair() -> None:
    """Both halves see the frame; the user half announces, the assistant half finds nothing left to say."""
    pair = paired("a")
    rec = FrameMarbles().run(pipeline(pair.user(), pair.assistant()), down="t",
                             legend={"t": F.LLMSetToolsFrame(tools("a", "b"))})
    assert len(announcements(pair)) == 1
    assert rec.down_types() == []  # the assistant half consumes it


def test_announced_by_the_assistant_half_when_it_handles_it_first() -> None:
    """The frame reaches the assistant half first: it announces; the user half then writes nothing."""
    pair = paired("a")
    frame = F.LLMSetToolsFrame(tools("a", "b"))
    FrameMarbles().run(pair.assistant(), down="t", legend={"t": frame})
    assert len(announcements(pair)) == 1
    FrameMarbles().run(pair.user(), down="t", legend={"t": frame})
    assert len(announcements(pair)) == 1


def test_no_announcement_without_the_option() -> None:
    """Without tool_change_messages the tools change silently."""
    pair = paired("a", flag=False)
    set_tools(pair, tools("a", "b"))
    assert announcements(pair) == []
    assert pair.context().snapshot.tool_names == {"a", "b"}


def test_each_change_is_announced_in_turn() -> None:
    """Successive changes each get their own message, diffed against what was advertised just before."""
    pair = paired("a")
    set_tools(pair, tools("a", "b"))
    set_tools(pair, tools("b"))
    set_tools(pair, tools("b"))
    added, removed = announcements(pair)
    assert "`b`" in added and added.startswith(ADDED)
    assert "`a`" in removed and removed.startswith(REMOVED)
