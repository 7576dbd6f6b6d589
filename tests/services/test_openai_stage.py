"""OpenAILLM against a real loopback HTTP server speaking the chat-completions streaming protocol."""

from __future__ import annotations

import asyncio
import base64
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import pytest

from rxvoice import LLMContext, pipeline
from rxvoice import frames as F
from rxvoice.aggregators import Pair
from rxvoice.errors import ConfigurationError, InvalidToolCallError, ServiceError
from rxvoice.pipeline import DOWN, UP
from rxvoice.services import (
    ErrorReply,
    Function,
    JSONReply,
    LoopbackChatServer,
    RecordedRequest,
    StreamReply,
    chunk,
    text_chunks,
    tool_call_chunks,
)
from rxvoice.services.loopback import Reply
from rxvoice.services.openai import OpenAILLM
from rxvoice.summarization import SummaryConfig
from rxvoice.testing import FrameMarbles

from ._harness import Harness, SteppedClock

SYSTEM = {"role": "system", "content": "Be brief."}


def run(main: Callable[[], Awaitable[None]]) -> None:
    """Run one test's coroutine on a fresh loop, bounded so a hang fails fast."""

    async def bounded() -> None:
        async with asyncio.timeout(5):
            await main()

    asyncio.run(bounded())


def ask(text: str) -> F.Frame:
    """What makes the user aggregator write a user message and run the model."""
    return F.LLMMessagesAppendFrame([{"role": "user", "content": text}], run_llm=True)


def context_frame(*messages: Mapping[str, Any], tools: Any = None) -> F.LLMContextFrame:
    return F.LLMContextFrame(LLMContext([SYSTEM, *messages], tools=tools))


def errors(h: Harness) -> list[BaseException | str]:
    return [f.error for f in h.up(F.ErrorFrame)]


async def with_pair(
    replies: list[Reply], llm_kwargs: Mapping[str, Any], turns: int = 1, tools: Any = None
) -> tuple[Harness, Pair, LoopbackChatServer, OpenAILLM]:
    """Start a server and a pair around the stage; ask once; wait for ``turns`` bot turns with text."""
    server = await LoopbackChatServer(replies).start()
    pair = Pair(LLMContext([SYSTEM], tools=tools))
    llm = OpenAILLM("loop-model", base_url=server.base_url, api_key="sk-test", **llm_kwargs)
    spoken: list[Any] = []
    h = Harness(pipeline(pair.user(), llm, pair.assistant()))

    def stopped(_agg: object, turn: Any) -> None:
        if turn.content:
            spoken.append(turn)
            h.notify()

    pair.assistant().events.on("on_assistant_turn_stopped", stopped)
    h.send(ask("What's the weather in Paris?"))
    await h.until(lambda _h: len(spoken) >= turns)
    return h, pair, server, llm


async def finish(h: Harness, server: LoopbackChatServer, llm: OpenAILLM) -> None:
    h.close()
    await llm.aclose()
    await server.close()


def test_a_streamed_answer_becomes_response_frames_and_one_assistant_message() -> None:
    """A streamed answer: start, a text frame per delta, end; the pair's context gains the user and the reply."""

    async def main() -> None:
        h, pair, server, llm = await with_pair(
            [StreamReply(text_chunks("It is sunny in Paris."))], {"params": {"temperature": 0.2}}
        )
        llm_frames = [n for n in h.down_types() if n.startswith("LLM") and "Context" not in n]
        assert llm_frames == ["LLMFullResponseStartFrame"] + ["LLMTextFrame"] * 5 + ["LLMFullResponseEndFrame"]
        assert "".join(f.text for f in h.down(F.LLMTextFrame)) == "It is sunny in Paris."
        assert pair.context().messages == [
            SYSTEM,
            {"role": "user", "content": "What's the weather in Paris?"},
            {"role": "assistant", "content": "It is sunny in Paris."},
        ]
        (request,) = server.requests
        assert request.path == "/v1/chat/completions"
        assert request.headers["authorization"] == "Bearer sk-test"
        assert request.body == {
            "model": "loop-model", "stream": True, "temperature": 0.2,
            "messages": [SYSTEM, {"role": "user", "content": "What's the weather in Paris?"}],
        }
        assert errors(h) == []
        await finish(h, server, llm)

    run(main)


def test_a_tool_call_round_trip_writes_the_result_and_runs_the_model_again() -> None:
    """Streamed tool-call fragments are assembled, the async handler runs, its result is written, the model re-runs."""
    got: list[Mapping[str, Any]] = []

    async def weather(arguments: Mapping[str, Any]) -> dict[str, Any]:
        got.append(arguments)
        await asyncio.sleep(0)
        return {"sky": "clear", "temp_c": 18}

    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]

    async def main() -> None:
        h, pair, server, llm = await with_pair(
            [
                StreamReply(tool_call_chunks([("call_1", "get_weather", '{"city": "Paris", "when": "now"}')])),
                StreamReply(text_chunks("Clear and 18 degrees.")),
            ],
            {"functions": {"get_weather": weather}},
            tools=tools,
        )
        assert got == [{"city": "Paris", "when": "now"}]
        call = {"id": "call_1", "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris", "when": "now"}'}}
        result = {"role": "tool", "tool_call_id": "call_1", "content": '{"sky": "clear", "temp_c": 18}'}
        assert pair.context().messages == [
            SYSTEM,
            {"role": "user", "content": "What's the weather in Paris?"},
            {"role": "assistant", "tool_calls": [call]},
            result,
            {"role": "assistant", "content": "Clear and 18 degrees."},
        ]
        first, second = server.requests
        assert first.body["tools"] == tools and "tool_choice" not in first.body
        assert second.body["messages"][-2:] == [{"role": "assistant", "tool_calls": [call]}, result]
        # The announcement and the result also went upstream (for mute and idle logic).
        assert [f.name for f in h.up(F.FunctionCallsStartedFrame, F.FunctionCallResultFrame)] == [
            "FunctionCallsStartedFrame", "FunctionCallResultFrame",
        ]
        assert errors(h) == []
        await finish(h, server, llm)

    run(main)


def test_an_error_status_is_a_typed_error_and_the_session_goes_on() -> None:
    """HTTP 500 → ServiceError(status=500, retryable) upstream, no response frames; the next context is answered."""

    async def main() -> None:
        async with LoopbackChatServer([
            ErrorReply(500, "the engine is overloaded"),
            ErrorReply(400, "messages must not be empty"),
            StreamReply(text_chunks("Back again.")),
        ]) as server:
            llm = OpenAILLM("m", base_url=server.base_url)
            seen_errors: list[BaseException] = []
            llm.events.on("on_error", lambda _s, e: seen_errors.append(e))
            h = Harness(llm)
            h.send(context_frame({"role": "user", "content": "hi"}))
            await h.until(lambda h: len(errors(h)) == 1)
            (error,) = errors(h)
            assert isinstance(error, ServiceError)
            assert (error.status, error.retryable) == (500, True)
            assert "the engine is overloaded" in str(error)
            assert h.down() == []
            h.send(context_frame({"role": "user", "content": "hi"}))
            await h.until(lambda h: len(errors(h)) == 2)
            bad = errors(h)[1]
            assert isinstance(bad, ServiceError) and (bad.status, bad.retryable) == (400, False)
            h.send(context_frame({"role": "user", "content": "hi"}))
            await h.until(lambda h: h.count(F.LLMFullResponseEndFrame) == 1)
            assert h.down_types() == ["LLMFullResponseStartFrame", "LLMTextFrame", "LLMTextFrame",
                                      "LLMFullResponseEndFrame"]
            assert seen_errors == errors(h)
            assert all(f.processor == "OpenAILLM" for f in h.up(F.ErrorFrame))
            h.close()
            await llm.aclose()

    run(main)


def test_an_error_mid_stream_closes_the_response_and_the_session_goes_on() -> None:
    """An error event after some text: ServiceError upstream, the response is ended; the next context works."""

    async def main() -> None:
        overloaded = {"error": {"message": "Overloaded", "type": "server_error", "code": None}}
        async with LoopbackChatServer([
            StreamReply([*text_chunks("Let me", finish=False), overloaded], done=False),
            StreamReply([*text_chunks("Half", finish=False), {"error": {"message": "bad", "type": "invalid"}}],
                        done=False, event_names=True),
            StreamReply(text_chunks("Fine now.")),
        ]) as server:
            llm = OpenAILLM("m", base_url=server.base_url)
            h = Harness(llm)
            h.send(context_frame({"role": "user", "content": "hi"}))
            await h.until(lambda h: h.count(F.LLMFullResponseEndFrame) == 1)
            assert h.down_types() == ["LLMFullResponseStartFrame", "LLMTextFrame", "LLMTextFrame",
                                      "LLMFullResponseEndFrame"]
            (error,) = errors(h)
            assert isinstance(error, ServiceError) and error.retryable and "Overloaded" in str(error)
            h.send(context_frame({"role": "user", "content": "hi"}))
            await h.until(lambda h: h.count(F.LLMFullResponseEndFrame) == 2)
            second = errors(h)[1]
            assert isinstance(second, ServiceError) and not second.retryable and "bad" in str(second)
            h.send(context_frame({"role": "user", "content": "hi"}))
            await h.until(lambda h: h.count(F.LLMFullResponseEndFrame) == 3)
            assert "".join(f.text for f in h.down(F.LLMTextFrame)) == "Let meHalfFine now."
            h.close()
            await llm.aclose()

    run(main)


def test_a_broken_connection_is_a_retryable_error() -> None:
    """The server drops the connection mid-answer: a retryable ServiceError, and the response is ended."""

    async def main() -> None:
        async with LoopbackChatServer([StreamReply(text_chunks("Cut", finish=False), abort=True)]) as server:
            llm = OpenAILLM("m", base_url=server.base_url)
            h = Harness(llm)
            h.send(context_frame({"role": "user", "content": "hi"}))
            await h.until(lambda h: len(errors(h)) == 1)
            (error,) = errors(h)
            assert isinstance(error, ServiceError) and error.retryable and error.status is None
            assert h.down_types() == ["LLMFullResponseStartFrame", "LLMTextFrame", "LLMFullResponseEndFrame"]
            h.close()
            await llm.aclose()

    run(main)


def test_an_interruption_cancels_a_slow_stream_and_the_server_sees_the_connection_close() -> None:
    """A slow answer is cut off by an interruption: the connection closes at once and nothing more is emitted."""

    async def main() -> None:
        async with LoopbackChatServer([
            StreamReply(text_chunks("One two", finish=False), done=False, hold=True),
            StreamReply(text_chunks("Again.")),
        ]) as server:
            llm = OpenAILLM("m", base_url=server.base_url)
            h = Harness(llm)
            h.send(context_frame({"role": "user", "content": "count"}))
            await h.until(lambda h: h.count(F.LLMTextFrame) == 2)
            h.send(F.InterruptionFrame())
            assert h.down_types()[-1] == "InterruptionFrame"  # forwarded at once
            await asyncio.wait_for(server.requests[0].disconnected.wait(), 1.0)
            assert h.down_types() == ["LLMFullResponseStartFrame", "LLMTextFrame", "LLMTextFrame",
                                      "InterruptionFrame"]
            # The session is alive: the next context is answered on a fresh connection.
            h.send(context_frame({"role": "user", "content": "again"}))
            await h.until(lambda h: h.count(F.LLMFullResponseEndFrame) == 1)
            assert h.down_types()[4:] == ["LLMFullResponseStartFrame", "LLMTextFrame", "LLMFullResponseEndFrame"]
            assert errors(h) == []
            h.close()
            await llm.aclose()

    run(main)


def test_an_interruption_through_the_pair_keeps_what_was_said_and_drops_the_rest() -> None:
    """In a pair: the interrupted reply is written as far as it streamed, and the cut stream adds nothing later."""

    async def main() -> None:
        async with LoopbackChatServer([StreamReply(text_chunks("Well, let me", finish=False), hold=True, done=False)]) \
                as server:
            pair = Pair(LLMContext([SYSTEM]))
            llm = OpenAILLM("m", base_url=server.base_url)
            stopped: list[Any] = []
            pair.assistant().events.on("on_assistant_turn_stopped", lambda _a, t: stopped.append(t))
            h = Harness(pipeline(pair.user(), llm, pair.assistant()))
            h.send(ask("Tell me a story"))
            await h.until(lambda h: h.count(F.LLMTextFrame) == 3)
            h.send(F.InterruptionFrame(), DOWN)
            await asyncio.wait_for(server.requests[0].disconnected.wait(), 1.0)
            assert [(t.content, t.interrupted) for t in stopped] == [("Well, let me", True)]
            assert pair.context().messages[-1] == {"role": "assistant", "content": "Well, let me"}
            assert h.count(F.LLMFullResponseEndFrame) == 0
            h.close()
            await llm.aclose()

    run(main)


def test_malformed_tool_arguments_are_reported_and_answered_with_an_error() -> None:
    """Arguments that are not JSON: InvalidToolCallError upstream; the call is answered with an error, model re-run."""
    calls: list[Any] = []

    async def main() -> None:
        h, pair, server, llm = await with_pair(
            [
                StreamReply(tool_call_chunks([("call_9", "get_weather", '{"city": "Par')])),
                StreamReply(text_chunks("Sorry, which city?")),
            ],
            {"functions": {"get_weather": calls.append}},
        )
        assert calls == []
        (error,) = errors(h)
        assert isinstance(error, InvalidToolCallError) and "call_9" in str(error)
        messages = pair.context().messages
        assert messages[2] == {"role": "assistant", "tool_calls": [
            {"id": "call_9", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}]}
        assert messages[3]["role"] == "tool" and messages[3]["content"].startswith("ERROR: ")
        assert "not valid JSON" in messages[3]["content"]
        assert messages[4] == {"role": "assistant", "content": "Sorry, which city?"}
        assert len(server.requests) == 2
        await finish(h, server, llm)

    run(main)


def test_an_unknown_function_is_answered_with_an_error_result() -> None:
    """A call to a function with no handler: the result says so, the model re-runs, no ErrorFrame."""

    async def main() -> None:
        h, pair, server, llm = await with_pair(
            [
                StreamReply(tool_call_chunks([("call_2", "book_table", '{"seats": 2}')], text="Booking.")),
                StreamReply(text_chunks("I can't book tables, sorry.")),
            ],
            {},
            turns=2,
        )
        messages = pair.context().messages
        assert messages[2] == {"role": "assistant", "content": "Booking."}
        assert messages[4]["content"] == "ERROR: there is no function named 'book_table'; the call was not made"
        assert messages[5] == {"role": "assistant", "content": "I can't book tables, sorry."}
        assert errors(h) == []
        await finish(h, server, llm)

    run(main)


def test_a_handler_that_raises_is_reported_and_answers_with_the_error() -> None:
    """A sync handler raising: its exception goes upstream as an ErrorFrame; the call is answered ERROR: ..."""

    def broken(_arguments: Mapping[str, Any]) -> Any:
        raise LookupError("no such city")

    async def main() -> None:
        h, pair, server, llm = await with_pair(
            [StreamReply(tool_call_chunks([("c", "get_weather", "{}")])), StreamReply(text_chunks("Hmm."))],
            {"functions": {"get_weather": broken}},
        )
        (error,) = errors(h)
        assert isinstance(error, LookupError)
        assert pair.context().messages[3]["content"] == (
            "ERROR: function 'get_weather' failed: LookupError: no such city"
        )
        await finish(h, server, llm)

    run(main)


def test_an_interruption_cancels_running_calls_that_die_with_it() -> None:
    """Interruption: calls with cancel_on_interruption get a cancel frame both ways; async calls keep running."""
    release = None

    async def main() -> None:
        nonlocal release
        release = asyncio.Event()

        async def slow(_a: Mapping[str, Any]) -> str:
            assert release is not None
            await release.wait()
            return "late"

        async with LoopbackChatServer([
            StreamReply(tool_call_chunks([("sync_1", "slow", "{}"), ("async_1", "background", "{}")])),
        ]) as server:
            llm = OpenAILLM("m", base_url=server.base_url, functions={
                "slow": slow, "background": Function(slow, cancel_on_interruption=False),
            })
            h = Harness(llm)
            h.send(context_frame({"role": "user", "content": "go"}))
            await h.until(lambda h: h.count(F.FunctionCallInProgressFrame) == 2)
            progress = h.down(F.FunctionCallInProgressFrame)
            assert [(p.tool_call_id, p.cancel_on_interruption) for p in progress] == [
                ("sync_1", True), ("async_1", False)]
            assert progress[0].group_id == progress[1].group_id is not None
            h.send(F.InterruptionFrame())
            assert [(f.tool_call_id, f.run_llm) for f in h.down(F.FunctionCallCancelFrame)] == [("sync_1", False)]
            assert [f.tool_call_id for f in h.up(F.FunctionCallCancelFrame)] == ["sync_1"]
            release.set()
            await h.until(lambda h: h.count(F.FunctionCallResultFrame) == 1)
            (result,) = h.down(F.FunctionCallResultFrame)
            assert (result.tool_call_id, result.result) == ("async_1", "late")
            h.close()
            await llm.aclose()

    run(main)


def test_a_function_that_overruns_its_timeout_is_cancelled_and_the_model_re_run() -> None:
    """A call past its timeout: FunctionCallCancelFrame(run_llm=True) both ways, reported on on_error only."""

    async def main() -> None:
        never = asyncio.Event()

        async def stuck(_a: Mapping[str, Any]) -> None:
            await never.wait()

        async with LoopbackChatServer([StreamReply(tool_call_chunks([("t1", "stuck", "{}")]))]) as server:
            llm = OpenAILLM("m", base_url=server.base_url)
            llm.register_function("stuck", stuck, timeout=0.05)
            reported: list[BaseException] = []
            llm.events.on("on_error", lambda _s, e: reported.append(e))
            h = Harness(llm)
            h.send(context_frame({"role": "user", "content": "go"}))
            await h.until(lambda h: h.count(F.FunctionCallCancelFrame) == 1)
            (cancel,) = h.down(F.FunctionCallCancelFrame)
            assert (cancel.tool_call_id, cancel.run_llm) == ("t1", True)
            assert h.count(F.FunctionCallCancelFrame, UP) == 1
            assert len(reported) == 1 and "stuck" in str(reported[0])
            assert errors(h) == []
            h.close()
            await llm.aclose()

    run(main)


def test_streamed_reasoning_becomes_thought_frames() -> None:
    """reasoning_content deltas → LLMThoughtStart/Text/End before the answer's text."""

    async def main() -> None:
        reasoning = [chunk({"reasoning": "Short"}), chunk({"reasoning": " answer."})]  # OpenRouter's spelling
        async with LoopbackChatServer([
            StreamReply(text_chunks("Yes.", thought="The user wants a yes.")),
            StreamReply(reasoning, done=False),
        ]) as server:
            llm = OpenAILLM("m", base_url=server.base_url)
            h = Harness(llm)
            h.send(context_frame({"role": "user", "content": "ok?"}))
            await h.until(lambda h: h.count(F.LLMFullResponseEndFrame) == 1)
            assert h.down_types() == [
                "LLMFullResponseStartFrame", "LLMThoughtStartFrame", "LLMThoughtTextFrame", "LLMThoughtTextFrame",
                "LLMThoughtTextFrame", "LLMThoughtTextFrame", "LLMThoughtTextFrame", "LLMThoughtEndFrame",
                "LLMTextFrame", "LLMFullResponseEndFrame",
            ]
            assert "".join(f.text for f in h.down(F.LLMThoughtTextFrame)) == "The user wants a yes."
            h.send(context_frame({"role": "user", "content": "ok?"}))
            await h.until(lambda h: h.count(F.LLMFullResponseEndFrame) == 2)
            # A thought the stream never closed is closed before the response ends.
            assert h.down_types()[-2:] == ["LLMThoughtEndFrame", "LLMFullResponseEndFrame"]
            h.close()
            await llm.aclose()

    run(main)


def test_a_new_context_supersedes_the_answer_in_flight() -> None:
    """A context arriving mid-answer (from upstream too) ends the old response, closes its connection, answers anew."""

    async def main() -> None:
        async with LoopbackChatServer([
            StreamReply(text_chunks("First", finish=False), done=False, hold=True),
            StreamReply(text_chunks("Second.")),
        ]) as server:
            llm = OpenAILLM("m", base_url=server.base_url)
            h = Harness(llm)
            h.send(context_frame({"role": "user", "content": "a"}))
            await h.until(lambda h: h.count(F.LLMTextFrame) == 1)
            h.send(context_frame({"role": "user", "content": "b"}), UP)
            await asyncio.wait_for(server.requests[0].disconnected.wait(), 1.0)
            await h.until(lambda h: h.count(F.LLMFullResponseEndFrame) == 2)
            assert h.down_types() == [
                "LLMFullResponseStartFrame", "LLMTextFrame", "LLMFullResponseEndFrame",
                "LLMFullResponseStartFrame", "LLMTextFrame", "LLMFullResponseEndFrame",
            ]
            assert h.up() == []  # the context was consumed, not passed on
            h.close()
            await llm.aclose()

    run(main)


def test_frames_sent_after_the_context_leave_after_the_answer() -> None:
    """Data and control frames arriving mid-answer are held and released after the response end (system ones pass)."""

    async def main() -> None:
        gate = asyncio.Event()

        async def paced() -> Any:
            for c in text_chunks("Hello there.", finish=False):
                yield c
            await gate.wait()
            yield chunk({}, "stop")

        async with LoopbackChatServer([StreamReply(paced())]) as server:
            llm = OpenAILLM("m", base_url=server.base_url)
            h = Harness(llm)
            h.send(context_frame({"role": "user", "content": "hi"}))
            await h.until(lambda h: h.count(F.LLMTextFrame) == 2)
            h.send(F.TTSSpeakFrame("queued"))
            h.send(F.BotStartedSpeakingFrame())
            h.send(F.EndFrame())
            assert h.down_types()[-1] == "BotStartedSpeakingFrame"
            gate.set()
            await h.until(lambda h: h.count(F.EndFrame) == 1)
            assert h.down_types()[-5:] == [
                "LLMTextFrame", "BotStartedSpeakingFrame", "LLMFullResponseEndFrame", "TTSSpeakFrame", "EndFrame",
            ]
            h.close()
            await llm.aclose()

    run(main)


def test_a_silent_server_times_out_on_the_scheduler() -> None:
    """Silence past ``timeout`` (scheduler time): the request cancelled, a retryable ServiceError, connection closed."""

    async def main() -> None:
        gate = asyncio.Event()

        async def stalls() -> Any:
            yield chunk({"content": "One"})
            await gate.wait()
            yield chunk({"content": " two"})
            await asyncio.Event().wait()  # then silence, the connection open

        async with LoopbackChatServer([StreamReply(stalls())]) as server:
            clock = SteppedClock(asyncio.get_running_loop())
            llm = OpenAILLM("m", base_url=server.base_url, timeout=5.0)
            h = Harness(llm, clock)
            h.send(context_frame({"role": "user", "content": "hi"}))
            await h.until(lambda h: h.count(F.LLMTextFrame) == 1)
            clock.advance(4.0)
            gate.set()
            await h.until(lambda h: h.count(F.LLMTextFrame) == 2)  # at t=4: the deadline moves to t=9
            clock.advance(4.0)
            assert errors(h) == []  # 8 s since the request, but only 4 s of silence
            clock.advance(1.1)
            (error,) = errors(h)
            assert isinstance(error, ServiceError) and error.retryable
            assert str(error) == (
                "the model server took more than 5 s for the next piece of the answer; the request was cancelled"
            )
            await asyncio.wait_for(server.requests[0].disconnected.wait(), 1.0)
            assert h.down_types() == ["LLMFullResponseStartFrame", "LLMTextFrame", "LLMTextFrame",
                                      "LLMFullResponseEndFrame"]
            h.close()
            await llm.aclose()

    run(main)


def test_disposing_the_pipeline_cancels_the_stream_and_emits_nothing_more() -> None:
    """Disposal mid-answer: the server sees the connection close, and no frame leaves the stage afterwards."""

    async def main() -> None:
        async with LoopbackChatServer([StreamReply(text_chunks("Still", finish=False), done=False, hold=True)]) \
                as server:
            llm = OpenAILLM("m", base_url=server.base_url)
            h = Harness(llm)
            h.send(context_frame({"role": "user", "content": "hi"}))
            await h.until(lambda h: h.count(F.LLMTextFrame) == 1)
            count = len(h.seen)
            h.close()
            await asyncio.wait_for(server.requests[0].disconnected.wait(), 1.0)
            await llm.aclose()
            assert len(h.seen) == count

    run(main)


def test_a_server_that_ignores_stream_true_is_still_understood() -> None:
    """A whole JSON completion instead of a stream: the same frames, tool calls included."""

    async def main() -> None:
        completion = {"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": "Checking.",
            "tool_calls": [{"id": "j1", "type": "function", "function": {"name": "f", "arguments": "{\"a\": 1}"}}],
        }}], "usage": {"total_tokens": 12}}

        async def json_reply(request: RecordedRequest) -> Reply:
            return JSONReply(completion)

        async with LoopbackChatServer(json_reply) as server:
            llm = OpenAILLM("m", base_url=server.base_url, functions={"f": lambda a: a["a"] + 1})
            usage: list[Any] = []
            llm.events.on("on_usage", lambda _s, u: usage.append(u))
            h = Harness(llm)
            h.send(context_frame({"role": "user", "content": "hi"}))
            await h.until(lambda h: h.count(F.FunctionCallResultFrame) == 1)
            assert h.down_types() == [
                "LLMFullResponseStartFrame", "LLMTextFrame", "LLMFullResponseEndFrame", "FunctionCallsStartedFrame",
                "FunctionCallInProgressFrame", "FunctionCallResultFrame",
            ]
            assert h.down(F.FunctionCallResultFrame)[0].result == 2
            assert usage == [{"total_tokens": 12}]
            h.close()
            await llm.aclose()

    run(main)


def test_developer_messages_can_be_sent_under_another_role() -> None:
    """developer_role="system" rewrites developer messages for servers that lack the role."""

    async def main() -> None:
        async with LoopbackChatServer([StreamReply(text_chunks("Ok."))]) as server:
            llm = OpenAILLM("m", base_url=server.base_url, developer_role="system")
            h = Harness(llm)
            h.send(context_frame({"role": "developer", "content": "note"}, {"role": "user", "content": "hi"}))
            await h.until(lambda h: h.count(F.LLMFullResponseEndFrame) == 1)
            assert server.requests[0].body["messages"][1] == {"role": "system", "content": "note"}
            h.close()
            await llm.aclose()

    run(main)


def test_without_an_event_loop_the_stage_reports_a_configuration_error() -> None:
    """Run in virtual time with no asyncio loop: a ConfigurationError upstream naming the fix; frames still pass."""
    llm = OpenAILLM("m", base_url="http://127.0.0.1:9/v1")
    m = FrameMarbles()
    rec = m.run(llm, down="c-s|", legend={"c": context_frame({"role": "user", "content": "hi"}),
                                          "s": F.TTSSpeakFrame("hello")})
    (error,) = [f.error for _, f in rec.up if isinstance(f, F.ErrorFrame)]
    assert isinstance(error, ConfigurationError) and "arun" in str(error)
    assert [f.name for _, f in rec.down if isinstance(f, F.Frame)] == ["TTSSpeakFrame"]


def test_frames_entering_from_another_thread_still_stream_and_interrupt() -> None:
    """Inputs handed in on a worker thread: the request still runs on the loop, and an interruption still cancels it."""

    async def main() -> None:
        async with LoopbackChatServer([
            StreamReply(text_chunks("Threads", finish=False), done=False, hold=True),
        ]) as server:
            llm = OpenAILLM("m", base_url=server.base_url)
            h = Harness(llm)
            await asyncio.to_thread(h.send, context_frame({"role": "user", "content": "hi"}))
            await h.until(lambda h: h.count(F.LLMTextFrame) == 1)
            await asyncio.to_thread(h.send, F.InterruptionFrame())
            await asyncio.wait_for(server.requests[0].disconnected.wait(), 1.0)
            assert h.down_types() == ["LLMFullResponseStartFrame", "LLMTextFrame", "InterruptionFrame"]
            h.close()
            await llm.aclose()

    run(main)


def test_a_summary_request_from_the_pair_is_answered_and_applied() -> None:
    """LLMSummarizeContextFrame → the summarizer asks upstream → the stage summarizes over HTTP → the pair applies."""

    async def main() -> None:
        history = [
            {"role": "user", "content": "I want a table for two."},
            {"role": "assistant", "content": "For when?"},
            {"role": "user", "content": "Friday at eight."},
            {"role": "assistant", "content": "Booked."},
            {"role": "user", "content": "Thanks!"},
        ]
        async with LoopbackChatServer([StreamReply(text_chunks(" Table for two, Friday 8pm, booked. "))]) as server:
            pair = Pair(LLMContext([SYSTEM, *history]))
            llm = OpenAILLM("m", base_url=server.base_url, params={"temperature": 0})
            applied: list[Any] = []
            h = Harness(pipeline(pair.user(), llm, pair.assistant()))

            def summarized(_summarizer: object, event: Any) -> None:
                applied.append(event)
                h.notify()

            pair.assistant().summarizer().events.on("on_summary_applied", summarized)
            h.send(F.LLMSummarizeContextFrame(SummaryConfig(min_messages_after_summary=2, target_context_tokens=99)))
            await h.until(lambda _h: len(applied) == 1)
            assert pair.context().messages == [
                SYSTEM,
                {"role": "user", "content": "Conversation summary: Table for two, Friday 8pm, booked."},
                history[3], history[4],
            ]
            (request,) = server.requests
            body = request.body
            assert (body["max_tokens"], body["temperature"], body["stream"]) == (99, 0, True)
            assert body["messages"][0]["role"] == "system"
            assert body["messages"][1]["content"] == (
                "Conversation history:\nUSER: I want a table for two.\n\nASSISTANT: For when?\n\nUSER: Friday at eight."
            )
            h.close()
            await llm.aclose()

    run(main)


def test_summary_requests_that_cannot_be_answered_get_an_error_result() -> None:
    """Nothing to summarize, or an HTTP error: a result with last_summarized_index -1 and the reason (never silence)."""

    async def main() -> None:
        async with LoopbackChatServer([ErrorReply(503, "busy")]) as server:
            llm = OpenAILLM("m", base_url=server.base_url)
            h = Harness(llm)
            ctx = LLMContext([SYSTEM, {"role": "user", "content": "a"}, {"role": "user", "content": "b"}])
            h.send(F.LLMContextSummaryRequestFrame("r1", ctx, 5, 100, "Summarize.", 10.0), UP)
            h.send(F.LLMContextSummaryRequestFrame("r2", ctx, 1, 100, "Summarize.", 10.0), UP)
            await h.until(lambda h: h.count(F.LLMContextSummaryResultFrame) == 2)
            first, second = h.down(F.LLMContextSummaryResultFrame)
            assert (first.request_id, first.last_summarized_index, first.error) == (
                "r1", -1, "there is nothing to summarize yet")
            assert (second.request_id, second.last_summarized_index) == ("r2", -1)
            assert "HTTP 503" in (second.error or "")
            (error,) = errors(h)
            assert isinstance(error, ServiceError) and error.status == 503
            h.close()
            await llm.aclose()

    run(main)


def test_an_answer_without_any_event_is_an_error() -> None:
    """HTTP 200 with no server-sent event in the body (a proxy page, nothing): a ServiceError, the response ended."""

    async def main() -> None:
        async with LoopbackChatServer([StreamReply([], done=False)]) as server:
            llm = OpenAILLM("m", base_url=server.base_url)
            h = Harness(llm)
            h.send(context_frame({"role": "user", "content": "hi"}))
            await h.until(lambda h: len(errors(h)) == 1)
            assert "held no server-sent events" in str(errors(h)[0])
            assert h.down_types() == ["LLMFullResponseStartFrame", "LLMFullResponseEndFrame"]
            h.close()
            await llm.aclose()

    run(main)


def test_a_cancel_frame_stops_the_stream_and_every_call() -> None:
    """CancelFrame: the request is cancelled (connection closed), running calls get cancel frames, the frame passes."""

    async def main() -> None:
        never = asyncio.Event()

        async def stuck(_a: Mapping[str, Any]) -> None:
            await never.wait()

        async with LoopbackChatServer([
            StreamReply(tool_call_chunks([("k1", "stuck", "{}")])),
            StreamReply(text_chunks("Slow", finish=False), done=False, hold=True),
        ]) as server:
            llm = OpenAILLM("m", base_url=server.base_url, functions={"stuck": Function(stuck, False)})
            h = Harness(llm)
            h.send(context_frame({"role": "user", "content": "a"}))
            await h.until(lambda h: h.count(F.FunctionCallInProgressFrame) == 1)
            h.send(context_frame({"role": "user", "content": "b"}))
            await h.until(lambda h: h.count(F.LLMTextFrame) == 1)
            h.send(F.CancelFrame())
            await asyncio.wait_for(server.requests[1].disconnected.wait(), 1.0)
            assert h.down_types()[-2:] == ["FunctionCallCancelFrame", "CancelFrame"]
            assert h.count(F.FunctionCallCancelFrame, UP) == 1
            h.close()
            await llm.aclose()

    run(main)


def test_a_function_that_returns_something_not_json_answers_its_call_with_an_error() -> None:
    """A handler returning a set (not JSON): the call is still answered, with an error result the model can read,
    reported as InvalidToolCallError; nothing that is not JSON is put in a frame or the conversation."""

    async def main() -> None:
        async with LoopbackChatServer([StreamReply(tool_call_chunks([("t1", "tags", "{}")]))]) as server:
            llm = OpenAILLM("m", base_url=server.base_url)
            llm.register_function("tags", lambda _a: {"a", "b"})
            reported: list[BaseException] = []
            llm.events.on("on_error", lambda _s, e: reported.append(e))
            h = Harness(llm)
            h.send(context_frame({"role": "user", "content": "tags?"}))
            await h.until(lambda h: h.count(F.FunctionCallResultFrame) == 1)
            (result,) = h.down(F.FunctionCallResultFrame)
            assert result.tool_call_id == "t1" and result.result is None and "not JSON" in str(result.error)
            assert [type(e) for e in reported] == [InvalidToolCallError]
            h.close()
            await llm.aclose()

    run(main)


def test_an_input_that_completes_while_the_answer_streams_waits_for_it() -> None:
    """The source ends right after asking: the output completes after the answer, which is written whole."""

    async def main() -> None:
        server = await LoopbackChatServer([StreamReply(text_chunks("It is sunny in Paris."))]).start()
        pair = Pair(LLMContext([SYSTEM]))
        llm = OpenAILLM("loop-model", base_url=server.base_url, api_key="sk-test")
        h = Harness(pipeline(pair.user(), llm, pair.assistant()))
        h.send(ask("What's the weather in Paris?"))
        h.end_input()
        await h.until(lambda h: h.completed)
        assert pair.context().messages[-1] == {"role": "assistant", "content": "It is sunny in Paris."}
        assert h.down_types()[-1] == "LLMFullResponseEndFrame"
        await finish(h, server, llm)

    run(main)


def test_credentials_in_the_base_url_go_as_basic_auth_and_never_into_a_log_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """httpx logs each request's URL at INFO: the stage's URL holds no credentials, the server still gets them."""

    async def main() -> None:
        server = await LoopbackChatServer([StreamReply(text_chunks("Hi."))]).start()
        url = server.base_url.replace("http://", "http://ana:s3cret-key@")
        llm = OpenAILLM("loop-model", base_url=url)
        h = Harness(llm)
        h.send(context_frame({"role": "user", "content": "hi"}))
        await h.until(lambda h: h.count(F.LLMFullResponseEndFrame) == 1)
        (request,) = server.requests
        assert request.headers["authorization"] == "Basic " + base64.b64encode(b"ana:s3cret-key").decode()
        h.close()
        await llm.aclose()
        await server.close()
        logged = "\n".join(r.getMessage() for r in caplog.records)
        assert "HTTP Request: POST http://127.0.0.1" in logged
        assert "s3cret" not in logged and "s3cret" not in repr(llm) and "s3cret" not in llm.url

    caplog.set_level(logging.INFO)
    run(main)
