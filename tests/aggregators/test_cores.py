"""The words core and the assistant core alone, with plain asserts: a recording port, a real context, no stream."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rxvoice import LLMContext
from rxvoice import frames as F
from rxvoice.aggregators.assistant_core import AssistantCore
from rxvoice.aggregators.user_words import UserWords
from rxvoice.frames import DOWN, UP, Direction
from rxvoice.turns import EmptyUserTurnConfig, TurnMachine


class Port:
    """Records what a core asks of its shell; writes go to a real context."""

    def __init__(self) -> None:
        self.context = LLMContext()
        self.calls: list[tuple[Any, ...]] = []
        self.gathered: list[tuple[str, bool]] = []

    def write(self, op: Callable[[LLMContext], Any]) -> bool:
        op(self.context)
        return True

    def emit_context(self, direction: Direction = DOWN) -> None:
        self.calls.append(("context", direction))

    def emit(self, frame: F.Frame, direction: Direction) -> None:
        self.calls.append(("emit", type(frame).__name__, direction))

    def messages(self) -> Any:
        return self.context.messages

    def listens(self, name: str) -> bool:
        return True

    def event(self, name: str, payload: Any = None) -> None:
        self.calls.append(("event", name, payload))

    def text(self) -> list[tuple[str, bool]]:
        return self.gathered

    def clear_text(self) -> None:
        self.gathered = []

    def after_write(self, fn: Callable[[], Any]) -> None:
        fn()

    def skip(self, reason: str) -> None:
        self.calls.append(("skip", reason))

    def roles(self) -> list[tuple[str, Any]]:
        return [(m["role"], m["content"]) for m in self.context.messages]


def turn_state() -> Any:
    from rxvoice.turns import RecordingPort

    machine = TurnMachine()
    return machine.open(RecordingPort(machine))


# -- UserWords -------------------------------------------------------------------------------------


def test_words_become_one_message_per_commit_and_the_model_is_asked() -> None:
    port = Port()
    words = UserWords(port, EmptyUserTurnConfig())
    words.started(1.0)
    words.transcript(F.TranscriptionFrame("I'd like", "u"), DOWN, False, 1.2)
    words.transcript(F.TranscriptionFrame("a table.", "u"), DOWN, False, 1.5)
    words.commit(2.0)
    assert port.roles() == [("user", "I'd like a table.")]
    assert ("context", DOWN) in port.calls
    assert words.content() == ("I'd like a table.", "u", 1.0)
    assert words.finished(2.0, turn_state()) == (True, True)


def test_a_late_tail_is_held_and_written_first_with_the_next_turn() -> None:
    port = Port()
    words = UserWords(port, None)
    words.transcript(F.TranscriptionFrame("for two", "u"), DOWN, True, 3.0)  # late: belongs to the answered turn
    assert port.roles() == [] and words.pending()
    words.started(4.0)
    words.transcript(F.TranscriptionFrame("please", "u"), DOWN, False, 4.2)
    words.commit(5.0)
    assert port.roles() == [("user", "for two please")]


def test_blank_words_are_not_written_and_an_empty_turn_asks_nothing_without_a_policy() -> None:
    port = Port()
    words = UserWords(port, None)
    words.started(0.0)
    words.transcript(F.TranscriptionFrame("   ", "u"), DOWN, False, 0.1)
    words.commit(1.0)
    assert port.roles() == [] and port.calls == []
    assert words.finished(1.0, turn_state()) == (False, False)


def test_a_reopened_turn_joins_its_message_and_drops_the_unheard_reply() -> None:
    port = Port()
    words = UserWords(port, None)
    words.started(0.0)
    words.transcript(F.TranscriptionFrame("a table for", "u"), DOWN, False, 0.3)
    words.commit(1.0)
    words.finished(1.0, turn_state())
    assert words.resume(1.5) == "a table for"  # the reply not written yet: the turn reopens
    words.transcript(F.TranscriptionFrame("two.", "u"), DOWN, False, 1.8)
    port.context.add_assistant_message("Sure, for")  # the interruption wrote the partial reply meanwhile
    words.commit(2.5)
    assert port.roles() == [("user", "a table for two.")]
    assert words.content()[0] == "a table for two."


def test_nothing_reopens_once_an_answer_is_in_the_conversation() -> None:
    port = Port()
    words = UserWords(port, None)
    words.started(0.0)
    words.transcript(F.TranscriptionFrame("hello", "u"), DOWN, False, 0.1)
    words.commit(0.5)
    words.finished(0.5, turn_state())
    port.context.add_assistant_message("Hi!")
    assert words.resume(1.0) is None


# -- AssistantCore -------------------------------------------------------------------------------------


def test_a_streamed_reply_is_written_once_at_its_end_and_reported() -> None:
    core, port = AssistantCore(), Port()
    s = core.initial()
    core.on_frame(s, port, F.LLMFullResponseStartFrame(), DOWN, 1.0)
    port.gathered = [("Hello", True), (" there.", True)]
    core.on_frame(s, port, F.LLMFullResponseEndFrame(), DOWN, 1.4)
    assert port.roles() == [("assistant", "Hello there.")]
    [stopped] = [c[2] for c in port.calls if c[:2] == ("event", "on_assistant_turn_stopped")]
    assert stopped.content == "Hello there." and not stopped.interrupted
    assert ("emit", "LLMContextAssistantTurnFrame", UP) in port.calls


def test_an_interruption_writes_what_was_said_and_reports_it_interrupted() -> None:
    core, port = AssistantCore(), Port()
    s = core.initial()
    core.on_frame(s, port, F.LLMFullResponseStartFrame(), DOWN, 1.0)
    port.gathered = [("Hello", True)]
    core.on_frame(s, port, F.InterruptionFrame(), DOWN, 1.2)
    assert port.roles() == [("assistant", "Hello")]
    [stopped] = [c[2] for c in port.calls if c[:2] == ("event", "on_assistant_turn_stopped")]
    assert stopped.interrupted
    assert port.gathered == []


def test_a_tool_call_gets_a_placeholder_then_its_result_and_the_model_runs_again() -> None:
    core, port = AssistantCore(), Port()
    s = core.initial()
    core.on_frame(s, port, F.FunctionCallsStartedFrame([F.FunctionCallFromLLM("f", "c1", {})]), DOWN, 0.0)
    core.on_frame(s, port, F.FunctionCallInProgressFrame("f", "c1", {}), DOWN, 0.1)
    roles = [m["role"] for m in port.context.messages]
    assert roles == ["assistant", "tool"]
    core.on_frame(s, port, F.FunctionCallResultFrame("f", "c1", {}, {"ok": True}), DOWN, 0.5)
    assert '"ok": true' in port.context.messages[-1]["content"]
    assert ("context", UP) in port.calls  # the model runs again with the result


def test_reopening_touches_only_the_end_of_a_long_conversation() -> None:
    """10,000 messages: the reopened message and what follows are rebuilt; the rest is shared, not copied."""
    ctx = LLMContext([{"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i}"} for i in range(10_000)])
    ctx.add_user_message("a table for")
    ctx.add_assistant_message("Sure, for")
    first = ctx.messages[0]
    assert ctx.reopen_user_message("a table for", "a table for two.")
    assert ctx.messages[0] is first and len(ctx.messages) == 10_001
    assert ctx.messages[-1] == {"role": "user", "content": "a table for two."}
    assert not ctx.reopen_user_message("something else", "x")  # not the last user message: nothing changes
