"""The Summarizer inside the assistant aggregator: when it asks, who answers, what is applied, in virtual time."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable
from typing import Any

import pytest
import reactivex
from reactivex import operators as ops

from rxvoice import LLMContext, pipeline
from rxvoice import frames as F
from rxvoice.aggregators import Pair, Summarizer, SummaryApplied
from rxvoice.errors import ConfigurationError, SummarizationError
from rxvoice.pipeline import arun
from rxvoice.summarization import AutoSummarizationConfig, SummaryConfig, SummaryRequest
from rxvoice.testing import FrameMarbles, Recording, ScriptedLLM

SYSTEM = {"role": "system", "content": "Be brief."}
RS, RE = F.LLMFullResponseStartFrame(), F.LLMFullResponseEndFrame()


class Inline(concurrent.futures.Executor):
    """Runs a dedicated model at once, on the calling thread: deterministic virtual-time tests."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[Any]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:
            future.set_exception(exc)
        return future


def conversation(n: int, *, system: bool = True) -> LLMContext:
    """A context with a system message and ``n`` alternating user/assistant messages."""
    messages: list[dict[str, Any]] = [SYSTEM] if system else []
    for i in range(n):
        messages.append({"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i}"})
    return LLMContext(messages)


def auto(**kw: Any) -> AutoSummarizationConfig:
    summary = {k: kw.pop(k) for k in list(kw) if k in SummaryConfig.__dataclass_fields__}
    kw.setdefault("max_context_tokens", None)
    return AutoSummarizationConfig(**kw, summary_config=SummaryConfig(**summary))


def run(stage: Any, pair: Pair, down: str, legend: dict[str, Any] | None = None, *,
        until: float | None = None) -> Recording:
    m = FrameMarbles({"S": RS, "E": RE, "I": F.InterruptionFrame(), "Z": F.EndFrame(), **(legend or {})})
    return m.run(stage, down=down, watch=[pair.assistant().summarizer()], context=pair.context(), until=until)


def with_llm(pair: Pair, llm: ScriptedLLM) -> Any:
    return pipeline(llm, pair.assistant())


def requests(rec: Recording) -> list[F.LLMContextSummaryRequestFrame]:
    return [p for _, p in rec.events_named("on_request_summarization")]


def applied(rec: Recording) -> list[tuple[int, SummaryApplied]]:
    return rec.events_named("on_summary_applied")


def errors(rec: Recording) -> list[tuple[int, Any]]:
    return rec.events_named("on_error")


def contents(pair: Pair) -> list[str]:
    return [m.get("content") for m in pair.context().messages]


# ----------------------------------------------------------------------------------- triggering


def test_a_response_start_past_the_message_threshold_asks_the_pipelines_model() -> None:
    """Auto: at a response start past max_unsummarized_messages, a request goes upstream and is announced."""
    pair = Pair(conversation(6), summarization=auto(max_unsummarized_messages=5))
    rec = run(pair.assistant(), pair, "S")
    [request] = requests(rec)
    assert rec.up_frames() == [request]
    assert request.request_id and request.context is pair.context()
    assert (request.min_messages_to_keep, request.target_context_tokens, request.summarization_timeout) == (
        4, 6000, 120.0,
    )
    assert "summar" in request.summarization_prompt.lower()


def test_no_request_below_the_thresholds() -> None:
    """A short conversation is left alone."""
    pair = Pair(conversation(3), summarization=AutoSummarizationConfig())
    rec = run(pair.assistant(), pair, "S-E-S")
    assert requests(rec) == [] and not rec.of_type(F.LLMContextSummaryRequestFrame, "up")


def test_the_token_threshold_alone_triggers() -> None:
    """With the message threshold off, an estimated 8k-style token limit still triggers."""
    ctx = LLMContext([SYSTEM] + [{"role": "user", "content": "x" * 55} for _ in range(10)])
    pair = Pair(ctx, summarization=AutoSummarizationConfig(max_context_tokens=100, max_unsummarized_messages=None))
    assert len(requests(run(pair.assistant(), pair, "S"))) == 1


def test_the_message_threshold_alone_triggers() -> None:
    """With the token threshold off, the message count still triggers."""
    pair = Pair(conversation(20), summarization=AutoSummarizationConfig(max_context_tokens=None))
    assert len(requests(run(pair.assistant(), pair, "S"))) == 1


def test_at_most_one_request_in_flight_until_an_interruption() -> None:
    """A second response start asks nothing while a request is in flight; after an interruption it may ask again."""
    pair = Pair(conversation(8), summarization=auto(max_unsummarized_messages=5))
    rec = run(pair.assistant(), pair, "S-S-I-S")
    assert len(requests(rec)) == 2
    assert [t for t, f in rec.up if isinstance(f, F.LLMContextSummaryRequestFrame)] == [0, 600]


def test_no_request_when_nothing_can_be_summarized() -> None:
    """Past the token threshold but with too few messages to cut: no pointless request each turn."""
    ctx = LLMContext([SYSTEM, {"role": "user", "content": "x" * 4000}])
    pair = Pair(ctx, summarization=AutoSummarizationConfig(max_context_tokens=100))
    assert requests(run(pair.assistant(), pair, "S-S")) == []


# ------------------------------------------------------------------------------------- applying


def test_the_pipelines_model_answers_and_the_summary_is_applied() -> None:
    """The model's answer comes back downstream; older messages become one user summary message."""
    pair = Pair(conversation(8), summarization=auto(max_unsummarized_messages=5))
    llm = ScriptedLLM(["Sure."], summary="They counted.", summary_delay=1.0)
    rec = run(with_llm(pair, llm), pair, "c", {"c": F.LLMContextFrame(pair.context())})
    assert len(llm.summary_requests) == 1
    assert contents(pair) == [
        "Be brief.", "Conversation summary: They counted.", "message 5", "message 6", "message 7", "Sure.",
    ]
    assert pair.context().messages[1]["role"] == "user"
    assert sum(c.startswith("Conversation summary:") for c in contents(pair)) == 1
    assert applied(rec) == [(1000, SummaryApplied(10, 6, 5, 5))]
    assert not rec.of_type(F.LLMContextSummaryResultFrame)  # consumed by the assistant


def test_the_window_restarts_after_a_summary() -> None:
    """Once applied, the summary message does not count towards the next threshold."""
    pair = Pair(conversation(6), summarization=auto(max_unsummarized_messages=5))
    llm = ScriptedLLM(["One.", "Two."], summary="S", summary_delay=0.5)
    rec = run(with_llm(pair, llm), pair, "c----------d", {
        "c": F.LLMContextFrame(pair.context()), "d": F.LLMContextFrame(pair.context()),
    })
    # After it: system, summary, 3 kept messages and "One.": 4 unsummarized, under the threshold of 5
    # (counting the summary message, as the seed's v0.1.0 did, would ask again at once).
    assert len(applied(rec)) == 1 and len(llm.summary_requests) == 1
    assert contents(pair)[-1] == "Two."


def test_a_custom_template_is_used_verbatim() -> None:
    """The template's text, with {summary} replaced; the role is user."""
    template = "<context_summary>\n{summary}\n</context_summary>"
    pair = Pair(conversation(8), summarization=auto(max_unsummarized_messages=5, summary_message_template=template))
    run(with_llm(pair, ScriptedLLM(["Ok."], summary="facts")), pair, "c", {"c": F.LLMContextFrame(pair.context())})
    assert pair.context().messages[1] == {"role": "user", "content": "<context_summary>\nfacts\n</context_summary>"}


def test_on_demand_summaries_work_without_the_option() -> None:
    """Without summarization=, a response start never asks; an LLMSummarizeContextFrame does."""
    pair = Pair(conversation(8))
    assert not pair.assistant().summarizer().auto_trigger
    rec = run(pair.assistant(), pair, "S-E-m", {"m": F.LLMSummarizeContextFrame()})
    assert len(requests(rec)) == 1
    assert "LLMSummarizeContextFrame" in rec.down_types()


def test_an_on_demand_request_takes_its_own_settings() -> None:
    """The frame's config overrides the summary settings for that request, and is what is applied."""
    pair = Pair(conversation(8))
    override = SummaryConfig(target_context_tokens=500, min_messages_after_summary=1)
    llm = ScriptedLLM([], summary="short")
    rec = run(with_llm(pair, llm), pair, "m", {"m": F.LLMSummarizeContextFrame(override)})
    [request] = llm.summary_requests
    assert (request.target_context_tokens, request.min_messages_to_keep) == (500, 1)
    assert contents(pair) == ["Be brief.", "Conversation summary: short", "message 7"]
    assert applied(rec)[0][1].preserved_message_count == 2


def test_a_second_on_demand_request_in_flight_is_ignored() -> None:
    """Asking again while a summary is in flight asks nothing more."""
    pair = Pair(conversation(8))
    rec = run(pair.assistant(), pair, "m-m", {"m": F.LLMSummarizeContextFrame()})
    assert len(requests(rec)) == 1


def test_the_summarizer_is_reachable_for_handlers() -> None:
    """pair.assistant().summarizer() is the Summarizer the assistant owns; its handlers are called."""
    pair = Pair(conversation(8), summarization=auto(max_unsummarized_messages=5))
    summarizer = pair.assistant().summarizer()
    assert isinstance(summarizer, Summarizer) and summarizer.auto_trigger
    assert summarizer is pair.assistant().summarizer()
    seen: list[Any] = []
    summarizer.events.on("on_summary_applied", lambda _s, report: seen.append(report))
    summarizer.events.on("on_request_summarization", lambda _s, frame: seen.append(type(frame).__name__))
    run(with_llm(pair, ScriptedLLM(["Ok."], summary="S")), pair, "c", {"c": F.LLMContextFrame(pair.context())})
    assert seen[0] == "LLMContextSummaryRequestFrame" and isinstance(seen[1], SummaryApplied)


def test_the_summarizer_sees_only_its_own_frame_types() -> None:
    """Tokens and other per-frame traffic never reach the summarizer (the assistant's hot path stays lean)."""
    summarizer = Pair(summarization=AutoSummarizationConfig()).assistant().summarizer()
    assert F.LLMTextFrame not in summarizer.handled_types
    assert F.LLMFullResponseStartFrame in summarizer.handled_types
    assert F.LLMFullResponseStartFrame not in Pair().assistant().summarizer().handled_types


def test_summarizer_configuration_errors() -> None:
    """A summarizer needs a context and an AutoSummarizationConfig."""
    with pytest.raises(ConfigurationError):
        Summarizer("context")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        Summarizer(LLMContext(), SummaryConfig())  # type: ignore[arg-type]


# ----------------------------------------------------------------------------------- bad answers


def test_a_result_for_an_unknown_request_is_ignored_and_consumed() -> None:
    """A stray result (no such request) changes nothing and goes no further."""
    pair = Pair(conversation(8))
    before = contents(pair)
    stray = F.LLMContextSummaryResultFrame("nobody-asked", "bogus", 3)
    rec = run(pair.assistant(), pair, "r", {"r": stray})
    assert contents(pair) == before
    assert rec.down_frames() == [] and rec.events == []


def test_a_failed_summary_leaves_the_conversation_alone() -> None:
    """The model answers with an error: nothing applied, on_error raised, no on_summary_applied."""
    pair = Pair(conversation(8))
    before = contents(pair)

    def failing(_req: F.LLMContextSummaryRequestFrame) -> tuple[str, int]:
        raise RuntimeError("model overloaded")

    rec = run(with_llm(pair, ScriptedLLM([], summary=failing)), pair, "m", {"m": F.LLMSummarizeContextFrame()})
    assert contents(pair) == before
    assert applied(rec) == []
    [(_, error)] = errors(rec)
    assert isinstance(error, SummarizationError) and "model overloaded" in str(error)
    assert not pair.assistant().summarizer().in_flight


@pytest.mark.parametrize(
    ("index", "reason"), [(99, "outside"), (6, "at least 4"), (-1, "outside"), (0, "system message")]
)
def test_an_invalid_cut_from_the_model_is_refused(index: int, reason: str) -> None:
    """An index out of range, at the system message, or keeping too few messages: refused, reported."""
    pair = Pair(conversation(8))
    before = contents(pair)
    llm = ScriptedLLM([], summary=lambda req: ("summary", index))
    rec = run(with_llm(pair, llm), pair, "m", {"m": F.LLMSummarizeContextFrame()})
    assert contents(pair) == before
    assert reason in str(errors(rec)[0][1])


def test_a_cut_separating_a_tool_call_from_its_result_is_refused() -> None:
    """The model's index would summarize a call but keep its result: refused."""
    ctx = conversation(4)
    ctx.add_assistant_tool_call("c1", "weather", {"city": "Paris"})
    ctx.add_tool_result("c1", "sunny")
    for i in range(4):
        ctx.add_user_message(f"later {i}")
    pair = Pair(ctx)
    call_index = 5
    rec = run(with_llm(pair, ScriptedLLM([], summary=lambda req: ("s", call_index))), pair, "m",
              {"m": F.LLMSummarizeContextFrame()})
    assert "tool call" in str(errors(rec)[0][1])
    assert len(pair.context().messages) == 11


def test_a_model_that_never_answers_times_out_on_the_scheduler() -> None:
    """No answer within summarization_timeout: reported, the mark cleared, the conversation unharmed."""
    pair = Pair(conversation(8), summarization=auto(max_unsummarized_messages=5, summarization_timeout=5.0))
    llm = ScriptedLLM(["One.", "Two."], summary="never", summary_delay=None)
    rec = run(with_llm(pair, llm), pair, "c", {"c": F.LLMContextFrame(pair.context())})
    [(t, error)] = errors(rec)
    assert t == 5000 and "5 s" in str(error)
    assert not pair.assistant().summarizer().in_flight
    assert applied(rec) == [] and len(pair.context().messages) == 10


def test_an_answer_after_the_timeout_is_ignored() -> None:
    """The model answers 10 s after each request, the timeout is 5 s: every answer is stale, nothing applied."""
    pair = Pair(conversation(8), summarization=auto(max_unsummarized_messages=5, summarization_timeout=5.0))
    before = len(pair.context().messages)
    llm = ScriptedLLM(["One.", "Two."], summary="late", summary_delay=10.0)
    legend = {"c": F.LLMContextFrame(pair.context())}
    rec = run(with_llm(pair, llm), pair, "c" + "-" * 119 + "c", legend)
    assert [t for t, _ in errors(rec)] == [5000, 17000]  # a new request could be made after the first timed out
    assert len(llm.summary_requests) == 2
    assert applied(rec) == [] and len(pair.context().messages) == before + 2


def test_an_interruption_keeps_the_pending_request() -> None:
    """Interrupted while the summary is made: the answer is still applied (nothing newer was asked)."""
    pair = Pair(conversation(8), summarization=auto(max_unsummarized_messages=5))
    llm = ScriptedLLM(["A long answer that is cut off"], token_delay=0.2, summary="kept", summary_delay=2.0)
    rec = run(with_llm(pair, llm), pair, "c----I", {"c": F.LLMContextFrame(pair.context())})
    assert [t for t, _ in applied(rec)] == [2000]
    assert "Conversation summary: kept" in contents(pair)


def test_a_newer_request_makes_the_interrupted_ones_answer_stale() -> None:
    """Request, interruption, request again: only the second answer is applied."""
    pair = Pair(conversation(8))
    llm = ScriptedLLM([], summary="S", summary_delay=2.0)
    legend = {"m": F.LLMSummarizeContextFrame()}
    rec = run(with_llm(pair, llm), pair, "m----I----m", legend)
    assert len(llm.summary_requests) == 2
    assert [t for t, _ in applied(rec)] == [3000]


def test_a_conversation_rewritten_meanwhile_makes_the_answer_stale() -> None:
    """The messages were replaced while the summary was made: the answer does not fit them; refused."""
    pair = Pair(conversation(8))
    rewrite = F.LLMMessagesUpdateFrame([SYSTEM] + [{"role": "user", "content": f"new {i}"} for i in range(8)])
    llm = ScriptedLLM([], summary=lambda req: ("old", 3), summary_delay=1.0)
    rec = run(with_llm(pair, llm), pair, "m-u", {"m": F.LLMSummarizeContextFrame(), "u": rewrite})
    assert "stale" in str(errors(rec)[0][1])
    assert contents(pair)[1] == "new 0"


# ------------------------------------------------------------------------------ dedicated models


def dedicated(pair_messages: int, llm: Any, **kw: Any) -> Pair:
    pair = Pair(conversation(pair_messages), summarization=auto(max_unsummarized_messages=5, llm=llm, **kw))
    pair.assistant().summarizer().executor = Inline()
    return pair


def test_a_dedicated_model_is_given_the_transcript() -> None:
    """A dedicated function receives the messages to summarize as a transcript; the pipeline's model is not asked."""
    asked: list[SummaryRequest] = []

    def model(request: SummaryRequest) -> str:
        asked.append(request)
        return "Dedicated summary."

    pair = dedicated(8, model)
    rec = run(pair.assistant(), pair, "S")
    [request] = asked
    assert request.transcript == "USER: message 0\n\nASSISTANT: message 1\n\nUSER: message 2\n\nASSISTANT: message 3"
    assert request.last_summarized_index == 4 and len(request.messages) == 4
    assert requests(rec) == [] and rec.up_frames() == []
    assert contents(pair)[1] == "Conversation summary: Dedicated summary."
    assert applied(rec) == [(0, SummaryApplied(9, 6, 4, 5))]


def test_a_dedicated_model_failure_leaves_the_conversation_alone() -> None:
    """A dedicated function that raises: reported, nothing applied."""

    def model(request: SummaryRequest) -> str:
        raise ConnectionError("summary service down")

    pair = dedicated(8, model)
    before = contents(pair)
    rec = run(pair.assistant(), pair, "S")
    assert contents(pair) == before
    assert "summary service down" in str(errors(rec)[0][1])
    assert not pair.assistant().summarizer().in_flight


def test_a_dedicated_model_returning_nonsense_is_refused() -> None:
    """A dedicated function returning something other than a string (or an empty one) is refused."""
    for answer in (42, "   "):
        pair = dedicated(8, lambda request, a=answer: a)
        rec = run(pair.assistant(), pair, "S")
        assert len(errors(rec)) == 1 and applied(rec) == []


def test_a_dedicated_model_may_answer_later_on_the_scheduler() -> None:
    """A function returning an observable: its first item is the summary, in virtual time."""
    pair = dedicated(8, lambda request: reactivex.timer(3.0).pipe(ops.map(lambda _: "Later.")))
    rec = run(pair.assistant(), pair, "S")
    assert [t for t, _ in applied(rec)] == [3000]


def test_a_dedicated_model_that_never_answers_times_out() -> None:
    """An answer that never comes is bounded by the timeout on the scheduler."""
    pair = dedicated(8, lambda request: reactivex.never(), summarization_timeout=20.0)
    before = contents(pair)
    rec = run(pair.assistant(), pair, "S")
    assert [t for t, _ in errors(rec)] == [20000]
    assert contents(pair) == before


def test_a_hung_dedicated_model_on_a_worker_thread_is_bounded_by_the_timeout() -> None:
    """A blocking model on a real worker: the virtual-time timeout frees the summarizer; its late answer is ignored."""
    release = threading.Event()
    returned = threading.Event()

    def model(request: SummaryRequest) -> str:
        release.wait(10.0)
        returned.set()
        return "too late"

    pair = Pair(conversation(8), summarization=auto(max_unsummarized_messages=5, llm=model, summarization_timeout=5.0))
    with _StartsAtOnce(1) as worker:
        # The virtual clock reaches the timeout at once: the model must be running by then (a job still
        # queued on a busy pool would be cancelled and never run, which is not what this test is about).
        pair.assistant().summarizer().executor = worker
        before = contents(pair)
        rec = run(pair.assistant(), pair, "S")
        assert [t for t, _ in errors(rec)] == [5000]
        release.set()
        assert returned.wait(10.0)
    assert contents(pair) == before


class _StartsAtOnce(concurrent.futures.ThreadPoolExecutor):
    """A pool whose ``submit`` returns once the job has started on its thread."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[Any]:
        started = threading.Event()

        def job() -> Any:
            started.set()
            return fn(*args, **kwargs)

        future = super().submit(job)
        assert started.wait(5.0)
        return future


def test_a_dedicated_model_stage_runs_beside_the_pipeline() -> None:
    """A model stage as the dedicated model: fed the request on the session, its result applied."""
    side = ScriptedLLM([], summary="From the side model.", summary_delay=1.5)
    pair = Pair(conversation(8), summarization=auto(max_unsummarized_messages=5, llm=side))
    main = ScriptedLLM(["Hi."])
    rec = run(with_llm(pair, main), pair, "c", {"c": F.LLMContextFrame(pair.context())})
    assert len(side.summary_requests) == 1 and main.summary_requests == []
    assert [t for t, _ in applied(rec)] == [1500]
    assert contents(pair)[1] == "Conversation summary: From the side model."


def test_a_coroutine_model_runs_on_the_event_loop() -> None:
    """An async dedicated model runs as a task on the session's loop; the answer is applied."""

    async def model(request: SummaryRequest) -> str:
        await asyncio.sleep(0)
        return "Async summary."

    pair = Pair(conversation(8), summarization=auto(max_unsummarized_messages=5, llm=model))
    done = asyncio.Event()

    async def main() -> list[F.Frame]:
        pair.assistant().summarizer().events.on("on_summary_applied", lambda *_: done.set())

        async def frames() -> Any:
            yield RS
            await asyncio.wait_for(done.wait(), 5.0)
            yield RE

        return [f async for f in arun(pair.assistant(), frames())]

    out = asyncio.run(main())
    assert [type(f).__name__ for f in out][:1] == ["LLMFullResponseStartFrame"]
    assert contents(pair)[1] == "Conversation summary: Async summary."


def test_the_end_of_the_session_abandons_a_summary_in_flight() -> None:
    """EndFrame while the dedicated model works: its answer is never applied."""
    pair = dedicated(8, lambda request: reactivex.timer(5.0).pipe(ops.map(lambda _: "Too late.")))
    before = contents(pair)
    rec = run(pair.assistant(), pair, "S---------Z")
    assert applied(rec) == [] and errors(rec) == []
    assert contents(pair) == before


# ------------------------------------------------------------------------- beside the conversation


def _turn_timeline(summarize: str) -> tuple[list[tuple[int, str]], Pair, ScriptedLLM, Recording]:
    """Two turns through user, model and assistant; a 5 s summary starts with the first answer."""
    ctx = conversation(12)
    side = ScriptedLLM([], summary="Earlier they talked.", summary_delay=5.0)
    config = {
        "off": None,
        "pipeline": auto(max_unsummarized_messages=10),
        "dedicated": auto(max_unsummarized_messages=10, llm=side),
    }[summarize]
    pair = Pair(ctx, summarization=config)
    llm = ScriptedLLM(["First answer here.", "Second answer here."], first_token_delay=0.2, token_delay=0.05,
                      summary="Earlier they talked.", summary_delay=5.0)
    legend = {"r": F.LLMRunFrame(), "h": F.TranscriptionFrame("And now?", "u1", finalized=True)}
    rec = run(pipeline(pair.user(), llm, pair.assistant()), pair, "r---------h", legend)
    timeline = [(t, type(f).__name__) for t, f in rec.down if 1000 <= t < 5000]
    return timeline, pair, llm, rec


@pytest.mark.parametrize("path", ["pipeline", "dedicated"])
def test_a_turns_answer_is_not_delayed_while_a_summary_is_in_flight(path: str) -> None:
    """Virtual time: the second turn's answer comes out at exactly the same instants with a summary in flight."""
    with_summary, pair, llm, rec = _turn_timeline(path)
    without_summary, *_ = _turn_timeline("off")
    assert with_summary == without_summary
    assert (1600, "LLMFullResponseStartFrame") in with_summary and (1900, "LLMFullResponseEndFrame") in with_summary
    assert len(llm.runs) == 2
    assert len(llm.runs[1].snapshot.messages) == 15  # the model saw the whole conversation, not summarized yet
    if path == "dedicated":
        assert llm.summary_requests == []
        assert [t for t, _ in applied(rec)] == [5000]
    else:
        # The user's turn interrupted (as every turn start does): the in-flight mark was released and the next
        # response start asked again; the first answer (5.0 s) is then stale and only the second one counts.
        assert len(llm.summary_requests) == 2
        assert [t for t, _ in applied(rec)] == [6600]
    assert pair.context().messages[1]["content"] == "Conversation summary: Earlier they talked."
    assert pair.context().messages[-1]["content"] == "Second answer here."


def test_an_interruption_does_not_reask_a_dedicated_model() -> None:
    """A dedicated model's request does not travel the pipeline: an interruption leaves it in flight."""
    pair = dedicated(8, lambda request: reactivex.timer(3.0).pipe(ops.map(lambda _: "One summary.")))
    rec = run(pair.assistant(), pair, "S-I-S")
    assert len(applied(rec)) == 1 and errors(rec) == []
