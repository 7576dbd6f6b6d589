"""The testing kit's scripted model: every token in order on any clock, tool calls that outlive an interruption."""

from __future__ import annotations

import asyncio
import heapq
import json
from typing import Any

from reactivex.internal.priorityqueue import PriorityQueue
from reactivex.testing import TestScheduler

from rxvoice import LLMContext, pipeline
from rxvoice import frames as F
from rxvoice.aggregators import Pair
from rxvoice.pipeline import arun
from rxvoice.testing import FrameMarbles, Reply, ScriptedLLM, ToolCall, run_virtual

REPLY = "It opens at nine and closes at six."


def ask(context: LLMContext) -> F.LLMContextFrame:
    return F.LLMContextFrame(context)


# -- equal deadlines keep their order (run_virtual) ------------------------------------------------------


def test_under_run_virtual_a_streamed_reply_keeps_its_last_token() -> None:
    """The response end is due at the same instant as the last token: it must still come after it."""

    async def main() -> list[F.Frame]:
        context = LLMContext([{"role": "user", "content": "When do you open?"}])
        llm = ScriptedLLM([REPLY], token_delay=0.1, first_token_delay=0.3)
        return [f async for f in arun(llm, [ask(context), F.EndFrame()])]

    out = run_virtual(main())
    kinds = [f.name for f in out]
    assert "".join(f.text for f in out if isinstance(f, F.LLMTextFrame)) == REPLY
    assert kinds.index("LLMFullResponseEndFrame") == max(i for i, k in enumerate(kinds) if k == "LLMTextFrame") + 1


def test_under_run_virtual_the_whole_reply_is_written() -> None:
    """Through the assistant aggregator: the conversation holds every token, for every token delay."""
    for delay in (0.01, 0.05, 0.1, 0.25):

        async def main(delay: float = delay) -> list[dict[str, Any]]:
            pair = Pair(LLMContext())
            voice = pipeline(pair.user(), ScriptedLLM([REPLY], token_delay=delay), pair.assistant())
            frames = [F.TranscriptionFrame("when do you open", finalized=True), F.EndFrame()]
            async for _ in arun(voice, frames):
                pass
            return [dict(m) for m in pair.context().messages]

        assert run_virtual(main())[-1] == {"role": "assistant", "content": REPLY}, delay


def test_the_virtual_loop_runs_callbacks_due_at_the_same_instant_in_the_order_they_were_scheduled() -> None:
    async def main() -> list[int]:
        loop = asyncio.get_running_loop()
        order: list[int] = []
        now = loop.time()
        for i in range(64):
            loop.call_at(now + 1.0, order.append, i)
        loop.call_at(now + 0.5, order.append, -1)
        await asyncio.sleep(2.0)
        return order

    assert run_virtual(main()) == [-1, *range(64)]


# -- a tool call that outlives an interruption ----------------------------------------------------------------


def test_a_tool_call_that_is_not_cancelled_by_an_interruption_still_delivers_its_result() -> None:
    """``cancel_on_interruption=False``: the interruption cuts the reply, the call runs on and its result comes."""
    call = ToolCall("book_table", {"people": 2}, result={"booked": True}, delay=2.0, cancel_on_interruption=False)
    llm = ScriptedLLM([Reply("Booking it now.", tool_calls=[call])], token_delay=0.05)
    context = LLMContext([{"role": "user", "content": "book a table for two"}])
    rec = FrameMarbles().run(llm, [(0.0, ask(context)), (1.0, F.InterruptionFrame())], until=5)
    results = rec.of_type(F.FunctionCallResultFrame)
    assert [(t, f.result) for t, f in results] == [(2100, {"booked": True})], "the call started at 0.1 s, 2 s long"
    assert rec.of_type(F.FunctionCallCancelFrame) == []
    assert [f.result for f in rec.up_frames() if isinstance(f, F.FunctionCallResultFrame)] == [{"booked": True}]


def test_a_tool_call_cancelled_by_an_interruption_delivers_nothing_but_its_cancel() -> None:
    call = ToolCall("book_table", {"people": 2}, result={"booked": True}, delay=2.0)
    llm = ScriptedLLM([Reply("Booking it now.", tool_calls=[call])], token_delay=0.05)
    context = LLMContext([{"role": "user", "content": "book a table for two"}])
    rec = FrameMarbles().run(llm, [(0.0, ask(context)), (1.0, F.InterruptionFrame())], until=5)
    assert rec.of_type(F.FunctionCallResultFrame) == []
    assert [t for t, _ in rec.of_type(F.FunctionCallCancelFrame)] == [1000]


def test_an_interruption_before_the_call_was_made_leaves_no_call_behind() -> None:
    """Cut off while the reply still streams: the call the reply would have made is never made, whatever its flag."""
    call = ToolCall("book_table", result="ok", delay=1.0, cancel_on_interruption=False)
    llm = ScriptedLLM([Reply("Let me book that table for you right now.", tool_calls=[call])], token_delay=0.1)
    context = LLMContext([{"role": "user", "content": "book"}])
    rec = FrameMarbles().run(llm, [(0.0, ask(context)), (0.25, F.InterruptionFrame())], until=5)
    assert rec.of_type(F.FunctionCallInProgressFrame) == [] and rec.of_type(F.FunctionCallResultFrame) == []


def test_the_result_of_a_call_that_outlived_an_interruption_is_written_and_answered() -> None:
    """Through the pair: the result lands in the conversation and the model runs on it."""
    call = ToolCall("book_table", {"people": 2}, result={"booked": True}, delay=2.0, cancel_on_interruption=False)
    pair = Pair(LLMContext())
    llm = ScriptedLLM([Reply("Booking it now.", tool_calls=[call]), "All set."], token_delay=0.05)
    FrameMarbles().run(pipeline(pair.user(), llm, pair.assistant()), [
        (0.0, F.TranscriptionFrame("book a table for two", finalized=True)),
        (2.0, F.InterruptionFrame())], until=10)
    messages = [dict(m) for m in pair.context().messages]
    finals = [json.loads(m["content"]) for m in messages if m["role"] == "developer"]
    assert [(f["status"], f["result"]) for f in finals] == [("finished", '{"booked": true}')]
    assert messages[-1] == {"role": "assistant", "content": "All set."}


class _AnyOrderQueue(PriorityQueue[Any]):
    """A scheduler queue that runs items due at the same instant last-scheduled first (nothing promises FIFO)."""

    def enqueue(self, item: Any) -> None:
        self.count -= 1
        heapq.heappush(self.items, (item, self.count))


def test_on_a_scheduler_that_runs_equal_deadlines_in_any_order_the_stream_keeps_its_order() -> None:
    """The scripted model keeps its own timeline: tokens, end and tool frames in script order on any scheduler."""
    scheduler = TestScheduler()
    scheduler._queue = _AnyOrderQueue()
    call = ToolCall("lookup", result="ok")
    llm = ScriptedLLM([Reply(REPLY, tool_calls=[call])], token_delay=0.1)
    context = LLMContext([{"role": "user", "content": "When do you open?"}])
    rec = FrameMarbles(scheduler=scheduler).run(llm, [(0.0, ask(context))], until=5)
    kinds = rec.down_types()
    assert "".join(f.text for f in rec.down_frames() if isinstance(f, F.LLMTextFrame)) == REPLY
    assert kinds[kinds.index("LLMFullResponseEndFrame") - 1] == "LLMTextFrame"
    assert kinds[-4:] == ["LLMFullResponseEndFrame", "FunctionCallsStartedFrame", "FunctionCallInProgressFrame",
                          "FunctionCallResultFrame"]
