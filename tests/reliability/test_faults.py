"""Faults: a model that raises, hangs or talks garbage; VAD and Smart Turn failing; handlers and subscribers.

Each test states the documented outcome (see ``docs/errors.md``, "Faults"):
the session survives, and what the user said is in the conversation.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

import numpy as np
import pytest
from reactivex import operators as ops
from reactivex.subject import Subject

import rxvoice.audio.vad_processor as vad_processor
from rxvoice import LLMContext, pipeline
from rxvoice import frames as F
from rxvoice.aggregators import Pair
from rxvoice.audio.vad import SileroModel
from rxvoice.audio.vad_processor import VADBatcher, VADProcessor
from rxvoice.errors import InvalidFrameError, InvalidToolCallError, ModelError, RxVoiceError, ServiceError
from rxvoice.pipeline import DOWN, UP, Direction, Port, Processor, SchedulerOffload, lift, loop_scheduler
from rxvoice.services import LoopbackChatServer, StreamReply, text_chunks
from rxvoice.services.openai import OpenAILLM
from rxvoice.testing import FrameMarbles, Recording, Reply, ScriptedLLM, run_virtual
from rxvoice.turns import TurnAnalyzerStop, TurnsConfig
from tests.services._harness import Harness, SteppedClock
from tests.turns.helpers import FakeAnalyzer

from .conftest import Crashes

FIRST = F.TranscriptionFrame("book a table for two", finalized=True)
SECOND = F.TranscriptionFrame("at eight please", finalized=True)
TWO_TURNS = [(0.1, FIRST), (3.0, SECOND)]


def said(pair: Pair) -> list[str]:
    """The user messages."""
    return [m["content"] for m in pair.context().messages if m["role"] == "user"]


def answers(pair: Pair) -> list[str]:
    """The assistant messages with text."""
    return [m["content"] for m in pair.context().messages if m["role"] == "assistant" and m.get("content")]


def talk(stage: Any, pair: Pair, down: Any = TWO_TURNS, **kwargs: Any) -> Recording:
    """Run ``stage`` in virtual time, recording the pair's events."""
    return FrameMarbles().run(stage, down=down, watch=[pair.user(), pair.assistant()], **kwargs)


class _Handler:
    def __init__(self, port: Port, act: Any) -> None:
        self.port = port
        self.act = act

    def on_frame(self, frame: F.Frame, direction: Direction) -> None:
        if not self.act(self.port, frame, direction):
            self.port.push(frame, direction)

    def on_input_end(self, direction: Direction) -> None:
        return None

    def close(self) -> None:
        return None


class Model(Processor):
    """A model stage (or a fault in front of one) acting on each frame: ``act(port, frame, direction) -> handled``."""

    name = "FaultyModel"

    def __init__(self, act: Any) -> None:
        self.act = act

    def open(self, port: Port) -> _Handler:
        return _Handler(port, act=self.act)


# -- the model stage -----------------------------------------------------------------------------


def test_a_model_stage_that_raises_loses_that_answer_only(crashes: Crashes) -> None:
    """Raising on a context: logged with its traceback, an ErrorFrame upstream; that turn is unanswered, the next is."""
    calls = [0]

    def explode_once(_port: Port, frame: F.Frame, _d: Direction) -> bool:
        if type(frame) is F.LLMContextFrame:
            calls[0] += 1
            if calls[0] == 1:
                raise RuntimeError("the model crashed")
        return False

    pair = Pair(LLMContext())
    rec = talk(pipeline(pair.user(), Model(explode_once), ScriptedLLM(["At eight it is."]), pair.assistant()), pair)
    assert said(pair) == ["book a table for two", "at eight please"]
    assert answers(pair) == ["At eight it is."]
    (error,) = [f for f in rec.up_frames() if isinstance(f, F.ErrorFrame)]
    assert isinstance(error.error, RuntimeError) and error.processor == "FaultyModel"
    assert [r.getMessage() for r in crashes.records] == ["FaultyModel failed on LLMContextFrame; the frame is skipped"]


def test_a_plain_rx_operator_that_raises_ends_the_stream_with_its_error() -> None:
    """A plain reactivex operator has Rx semantics: its exception ends the output (on_error); the stages before it
    go on, so every word is still written."""

    def boom(frame: F.Frame) -> F.Frame:
        if type(frame) is F.LLMContextFrame:
            raise RuntimeError("inside ops.map")
        return frame

    pair = Pair(LLMContext())
    rec = talk(pipeline(pair.user(), lift(ops.map(boom)), ScriptedLLM(["Hi."]), pair.assistant()), pair)
    assert said(pair) == ["book a table for two", "at eight please"]
    assert answers(pair) == []
    assert [str(e) for _, e in rec.errors] == ["inside ops.map"]


def test_a_model_that_never_answers_does_not_block_the_next_turn() -> None:
    """A run with no answer at all (a hung model stage): the next turn is taken and answered."""
    pair = Pair(LLMContext())
    script = iter([None, Reply("At eight.")])
    llm = ScriptedLLM(lambda _s: next(script))
    talk(pipeline(pair.user(), llm, pair.assistant()), pair)
    assert said(pair) == ["book a table for two", "at eight please"]
    assert answers(pair) == ["At eight."]
    assert len(llm.runs) == 2


def test_a_model_that_stalls_mid_answer_is_cut_off_by_the_next_turn() -> None:
    """An answer that stops streaming: the user's next turn interrupts it; what was heard is kept, marked cut off."""
    pair = Pair(LLMContext())
    llm = ScriptedLLM([Reply("One moment while I", token_delay=600.0), "At eight."], token_delay=0.0)
    stopped: list[Any] = []
    pair.assistant().events.on("on_assistant_turn_stopped", lambda _a, t: stopped.append(t))
    down = [(0.1, FIRST), (2.9, F.VADUserStartedSpeakingFrame(0.2, 2.9)), (3.0, SECOND),
            (3.1, F.VADUserStoppedSpeakingFrame(0.2, 3.1))]
    talk(pipeline(pair.user(), llm, pair.assistant()), pair, down=down)
    assert said(pair) == ["book a table for two", "at eight please"]
    assert [(t.content, t.interrupted) for t in stopped] == [("One", True), ("At eight.", False)]


def test_an_openai_model_that_hangs_is_bounded_by_its_timeout() -> None:
    """OpenAILLM silent past ``timeout`` (scheduler time): a retryable ServiceError, the response closed; the next
    turn is answered on a fresh request."""

    async def main() -> None:
        async with LoopbackChatServer([StreamReply(text_chunks("Let me", finish=False), done=False, hold=True),
                                       StreamReply(text_chunks("At eight."))]) as server:
            clock = SteppedClock(asyncio.get_running_loop())
            pair = Pair(LLMContext())
            llm = OpenAILLM("m", base_url=server.base_url, timeout=2.0)
            h = Harness(pipeline(pair.user(), llm, pair.assistant()), clock)
            h.send(FIRST)
            clock.advance(0.7)  # the speech timeout: the turn ends, the model is asked
            await h.until(lambda h: h.count(F.LLMTextFrame) == 2)
            clock.advance(2.1)  # the server says nothing more
            (error,) = [f.error for f in h.up(F.ErrorFrame)]
            assert isinstance(error, ServiceError) and error.retryable
            assert h.count(F.LLMFullResponseEndFrame) == 1
            h.send(SECOND)
            clock.advance(0.7)
            await h.until(lambda h: h.count(F.LLMFullResponseEndFrame) == 2)
            assert said(pair) == ["book a table for two", "at eight please"]
            assert answers(pair) == ["Let me", "At eight."]
            h.close()
            await llm.aclose()

    asyncio.run(asyncio.wait_for(main(), 10))


def test_an_openai_model_that_streams_garbage_is_reported_and_the_session_goes_on() -> None:
    """Data that is not JSON: a ServiceError upstream, the response closed; the next turn is answered."""

    async def main() -> None:
        async with LoopbackChatServer([StreamReply(["{this is not json"]),
                                       StreamReply(text_chunks("At eight."))]) as server:
            clock = SteppedClock(asyncio.get_running_loop())
            pair = Pair(LLMContext())
            llm = OpenAILLM("m", base_url=server.base_url)
            h = Harness(pipeline(pair.user(), llm, pair.assistant()), clock)
            h.send(FIRST)
            clock.advance(0.7)
            await h.until(lambda h: bool(h.up(F.ErrorFrame)))
            assert "not JSON" in str(h.up(F.ErrorFrame)[0].error)
            h.send(SECOND)
            clock.advance(0.7)
            await h.until(lambda h: answers(pair) == ["At eight."])
            # No answer came before the user went on: the continuation reopened the turn (one message).
            assert said(pair) == ["book a table for two at eight please"]
            h.close()
            await llm.aclose()

    asyncio.run(asyncio.wait_for(main(), 10))


def test_a_model_stage_that_emits_garbage_is_contained_frame_by_frame(crashes: Crashes) -> None:
    """Non-frames, orphan results, a bad tool choice, stray ends, a summary nobody asked for: each skipped (typed
    errors where the input was malformed); the session goes on and the next turn is answered. (Tool arguments that
    are not JSON cannot even be put in a frame.)"""
    with pytest.raises(InvalidToolCallError):
        F.FunctionCallInProgressFrame("f", "c1", {"x": object()})
    sent = [False]

    def garbage(port: Port, frame: F.Frame, _d: Direction) -> bool:
        if type(frame) is not F.LLMContextFrame or sent[0]:
            return False
        sent[0] = True
        for item in ("garbage", F.LLMFullResponseEndFrame(), F.FunctionCallResultFrame("f", "unknown", {}, 1),
                     F.LLMSetToolChoiceFrame("sometimes"), F.FunctionCallCancelFrame("f", "zz"),
                     F.LLMContextSummaryResultFrame("nobody", "sum", 99), F.LLMFullResponseStartFrame(),
                     F.LLMTextFrame("Sorry,"), F.LLMFullResponseEndFrame()):
            port.push_down(item)  # type: ignore[arg-type]
        return True

    pair = Pair(LLMContext())
    errors: list[BaseException] = []
    for source in (pair.user(), pair.assistant(), pair.assistant().summarizer()):
        source.events.on("on_error", lambda _s, e: errors.append(e))
    llm = ScriptedLLM(["At eight."])
    rec = talk(pipeline(pair.user(), Model(garbage), llm, pair.assistant()), pair)
    assert said(pair) == ["book a table for two", "at eight please"]
    assert answers(pair) == ["Sorry,", "At eight."]
    assert [type(e) for e in errors] == [InvalidToolCallError]
    assert {type(f.error) for f in rec.up_frames() if isinstance(f, F.ErrorFrame)} == {
        InvalidFrameError, InvalidToolCallError}
    assert crashes.messages() == []


# -- audio models -------------------------------------------------------------------------------


def _speech(seconds: float, start: float = 0.0) -> list[tuple[float, F.Frame]]:
    rng = np.random.default_rng(7)
    frames: list[tuple[float, F.Frame]] = []
    for k in range(int(seconds / 0.02)):
        samples = (np.sin(np.arange(320) * 0.2) * 6000 + rng.normal(0, 300, 320)).astype("<i2")
        frames.append((start + 0.02 * (k + 1), F.InputAudioRawFrame(samples.tobytes())))
    return frames


def test_an_end_of_turn_model_that_raises_leaves_the_turn_to_the_watchdog(crashes: Crashes) -> None:
    """Every verdict raising: each counts as "incomplete" (logged); the stop watchdog still ends the turn, words in."""
    analyzer = FakeAnalyzer(script=[ModelError("smart turn failed")] * 10)
    pair = Pair(LLMContext(), turns=TurnsConfig(stop=[TurnAnalyzerStop(analyzer)], stop_timeout=2.0))
    bench = FrameMarbles()
    pair.user().offload = SchedulerOffload(bench.scheduler, 0.05)
    down = [(0.0, F.StartFrame()), (0.1, F.VADUserStartedSpeakingFrame(0.2, 0.1)), *_speech(0.8, 0.1),
            (0.6, FIRST), (1.0, F.VADUserStoppedSpeakingFrame(0.2, 1.0))]
    rec = bench.run(pipeline(pair.user(), ScriptedLLM(["Sure."]), pair.assistant()), down=down,
                    watch=[pair.user()])
    assert analyzer.analyses >= 1
    (stopped,) = rec.events_named("on_user_turn_stopped")
    assert stopped[0] == pytest.approx(3000, abs=50)  # the watchdog: 2 s after the last activity
    assert said(pair) == ["book a table for two"] and answers(pair) == ["Sure."]
    assert crashes.messages() == []


def test_an_end_of_turn_stream_that_refuses_a_chunk_skips_that_chunk_only(crashes: Crashes) -> None:
    """A chunk the end-of-turn stream raises on is skipped (logged); the verdict and the turn come as usual."""
    analyzer = FakeAnalyzer(script=[(True, 0.9)])
    fed = [0]
    pair = Pair(LLMContext(), turns=TurnsConfig(stop=[TurnAnalyzerStop(analyzer)]))
    bench = FrameMarbles()
    pair.user().offload = SchedulerOffload(bench.scheduler, 0.05)
    original = analyzer.open_stream

    def open_stream(rate: int) -> Any:
        stream = original(rate)
        append = stream.append_audio

        def flaky(pcm: bytes, is_speech: bool) -> bool:
            fed[0] += 1
            if fed[0] == 5:
                raise ModelError("bad chunk")
            return append(pcm, is_speech)

        stream.append_audio = flaky  # type: ignore[method-assign]
        return stream

    analyzer.open_stream = open_stream  # type: ignore[method-assign]
    down = [(0.0, F.StartFrame()), (0.1, F.VADUserStartedSpeakingFrame(0.2, 0.1)), *_speech(0.8, 0.1),
            (0.8, FIRST), (1.0, F.VADUserStoppedSpeakingFrame(0.2, 1.0))]  # the words as the speech ends
    rec = bench.run(pipeline(pair.user(), ScriptedLLM(["Sure."]), pair.assistant()), down=down,
                    watch=[pair.user()])
    assert fed[0] > 5
    assert [t for t, _ in rec.events_named("on_user_turn_stopped")] == [1050]
    assert said(pair) == ["book a table for two"]
    assert crashes.messages() == []


def test_silero_failing_on_a_chunk_counts_as_silence_and_the_stream_goes_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """onnxruntime raising on some windows: confidence 0 for them (a warning); every frame still passes."""
    session = SileroModel.shared().session
    real = session.run_with_iobinding
    calls = [0]

    def flaky(binding: Any) -> Any:
        calls[0] += 1
        if calls[0] % 7 == 0:
            raise RuntimeError("onnxruntime hiccup")
        return real(binding)

    monkeypatch.setattr(session, "run_with_iobinding", flaky)
    speech = _speech(1.5, 0.0)
    rec = FrameMarbles().run(VADProcessor(), down=[(0.0, F.StartFrame()), *speech])
    assert calls[0] > 20
    assert len([f for f in rec.down_frames() if type(f) is F.InputAudioRawFrame]) == len(speech)


def test_a_batched_vad_call_that_raises_is_redone_one_by_one(monkeypatch: pytest.MonkeyPatch,
                                                             crashes: Crashes) -> None:
    """Regression: an unexpected exception in a batched VAD call used to escape into the scheduler (the batch's
    verdicts lost, the test scheduler crashed); now the batch is redone session by session."""
    real = vad_processor.analyze_batch
    calls = [0]

    def flaky(analyzers: Any, chunks: Any) -> Any:
        calls[0] += 1
        if calls[0] == 3:
            raise RuntimeError("onnxruntime exploded")
        return real(analyzers, chunks)

    monkeypatch.setattr(vad_processor, "analyze_batch", flaky)
    bench = FrameMarbles()
    batcher = VADBatcher()
    down = [(0.0, F.StartFrame()), *_speech(1.0, 0.0)]
    plain = FrameMarbles().run(VADProcessor(), down=down)
    batched = bench.run(VADProcessor(batcher=batcher), down=down)
    assert calls[0] > 3
    assert batched.down_types() == plain.down_types()  # the same verdicts, at the same frames
    assert crashes.messages() == []


# -- handlers and subscribers ----------------------------------------------------------------------


def test_an_event_handler_that_raises_is_contained_and_the_others_still_run(crashes: Crashes) -> None:
    """A raising handler: logged; the handlers after it run; the model is still asked."""
    pair = Pair(LLMContext())
    seen: list[str] = []

    def bad(_agg: Any, _stopped: Any) -> None:
        raise RuntimeError("handler bug")

    pair.user().events.on("on_user_turn_stopped", bad)
    pair.user().events.on("on_user_turn_stopped", lambda _a, s: seen.append(s.content))
    talk(pipeline(pair.user(), ScriptedLLM(["A.", "B."]), pair.assistant()), pair)
    assert seen == ["book a table for two", "at eight please"]
    assert answers(pair) == ["A.", "B."]
    assert len(crashes.records) == 2 and all("handler" in r.getMessage() for r in crashes.records)


def test_a_blocking_sync_handler_delays_the_session_but_loses_nothing() -> None:
    """A sync handler runs inline (by design): while it blocks, frames from other threads queue at the gate; then
    every one of them is handled, in order."""
    pair = Pair(LLMContext())
    blocking = threading.Event()
    released = threading.Event()
    later: list[str] = []

    def slow(_agg: Any, _stopped: Any) -> None:
        blocking.set()
        assert released.wait(5.0)  # a handler stuck in blocking I/O on the session's thread until the other is done

    pair.user().events.on("on_user_turn_stopped", slow)
    pair.user().events.on("on_user_turn_message_added", lambda _a, m: later.append(m.content))
    down: Subject[F.Frame] = Subject()
    out: list[F.Frame] = []

    def other_thread() -> None:
        assert blocking.wait(5.0)
        for i in range(50):  # arrives while the handler blocks the loop
            down.on_next(F.TextFrame(f"t{i}"))
        down.on_next(F.LLMMessagesAppendFrame([{"role": "user", "content": "typed meanwhile"}], run_llm=True))
        released.set()

    async def main() -> None:
        loop = asyncio.get_running_loop()
        sub = pipeline(pair.user(), ScriptedLLM(["A.", "B.", "C."]), pair.assistant()).connect(down)[0].subscribe(
            out.append, scheduler=loop_scheduler(loop))
        thread = threading.Thread(target=other_thread)
        thread.start()
        down.on_next(FIRST)
        await asyncio.sleep(0.7)  # virtual: the speech timeout ends the turn and the handler blocks
        thread.join(5.0)
        await asyncio.sleep(0.1)
        sub.dispose()

    run_virtual(main())
    texts = [f.text for f in out if type(f) is F.TextFrame]
    assert texts == [f"t{i}" for i in range(50)]
    assert said(pair) == ["book a table for two", "typed meanwhile"]
    assert len(answers(pair)) == 2


def test_an_async_handler_that_waits_does_not_hold_up_frames() -> None:
    """Coroutine handlers run on the loop: one waiting for a later event does not stop that event from coming."""
    pair = Pair(LLMContext())
    answered = asyncio.Event()
    order: list[str] = []

    async def waits(_agg: Any, _stopped: Any) -> None:
        order.append("handler waits")
        await answered.wait()  # set only once the answer has gone through the pipeline
        order.append("handler resumes")

    def bot_done(_agg: Any, _turn: Any) -> None:
        order.append("answer written")
        answered.set()

    pair.user().events.on("on_user_turn_stopped", waits)
    pair.assistant().events.on("on_assistant_turn_stopped", bot_done)

    async def main() -> None:
        frames = [FIRST]
        async with asyncio.timeout(5.0):
            outputs = pipeline(pair.user(), ScriptedLLM(["Sure."], first_token_delay=0.2), pair.assistant())
            down: Subject[F.Frame] = Subject()
            sub = outputs.connect(down)[0].subscribe(lambda _f: None,
                                                      scheduler=loop_scheduler(asyncio.get_running_loop()))
            for f in frames:
                down.on_next(f)
            while "handler resumes" not in order:  # noqa: ASYNC110 (a bounded poll)
                await asyncio.sleep(0.05)  # virtual time: a poll costs nothing
            await pair.user().events.drain()
            sub.dispose()

    run_virtual(main())
    assert order == ["handler waits", "answer written", "handler resumes"]


def test_a_pipeline_subscriber_that_raises_does_not_stop_the_frames_after_it(crashes: Crashes) -> None:
    """A subscriber raising on every token: logged each time; every frame after still reaches it and the rest."""
    pair = Pair(LLMContext())
    stage = pipeline(pair.user(), ScriptedLLM(["One two three."]), pair.assistant())
    got: list[str] = []

    def picky(frame: F.Frame) -> None:
        got.append(frame.name)
        if type(frame) is F.LLMTextFrame:
            raise ValueError("cannot display tokens")

    bench = FrameMarbles()
    out, _ = stage.duplex(bench.from_timeline(TWO_TURNS[:1]), bench.from_timeline([]))
    out.subscribe(picky, scheduler=bench.scheduler)
    bench.scheduler.advance_to(5.0)
    assert got.count("LLMTextFrame") == 3 and got[-1] == "LLMFullResponseEndFrame"
    assert answers(pair) == ["One two three."]
    assert len(crashes.records) == 3


def test_a_stage_subscriber_that_raises_is_reported_as_the_stages_on_error() -> None:
    """Subscribed to a stage used as an operator: the failure is contained and raised as that stage's on_error."""
    pair = Pair(LLMContext())
    errors: list[BaseException] = []
    pair.user().events.on("on_error", lambda _a, e: errors.append(e))
    bench = FrameMarbles()

    def fails(frame: F.Frame) -> None:
        if type(frame) is F.LLMContextFrame:
            raise KeyError("subscriber bug")

    pair.user()(bench.from_timeline(TWO_TURNS)).subscribe(fails, scheduler=bench.scheduler)
    bench.scheduler.advance_to(5.0)
    assert [type(e) for e in errors] == [KeyError, KeyError]
    assert said(pair) == ["book a table for two", "at eight please"]


def test_a_context_subscriber_that_raises_does_not_stop_the_turn_or_other_subscribers(
        caplog: pytest.LogCaptureFixture) -> None:
    """Regression: a raising subscriber of the conversation used to abort the write's step (no model run, no
    events) and starve the subscribers after it. Now it is logged and everything else happens."""
    pair = Pair(LLMContext())
    seen: list[int] = []

    def broken(snapshot: Any) -> None:
        if snapshot.messages:
            raise RuntimeError("transcript view crashed")

    pair.context().subscribe(broken)
    pair.context().subscribe(lambda s: seen.append(len(s.messages)))
    with caplog.at_level(logging.ERROR, logger="rxvoice.subscribers"):
        rec = talk(pipeline(pair.user(), ScriptedLLM(["A.", "B."]), pair.assistant()), pair)
    assert answers(pair) == ["A.", "B."]
    assert seen == [0, 1, 2, 3, 4]
    assert rec.event_names().count("on_user_turn_stopped") == 2
    assert all(r.name == "rxvoice.subscribers" for r in caplog.records)


def test_an_event_observer_that_raises_does_not_starve_the_others() -> None:
    """Regression: an observer of ``events.observe()`` that raised kept the observers after it from the event."""
    pair = Pair(LLMContext())
    pair.user().events.observe().subscribe(lambda e: 1 / 0)
    names: list[str] = []
    pair.user().events.observe("on_user_turn_stopped").subscribe(lambda e: names.append(e.name))
    talk(pipeline(pair.user(), ScriptedLLM(["A.", "B."]), pair.assistant()), pair)
    assert names == ["on_user_turn_stopped"] * 2


def test_every_reported_error_is_typed() -> None:
    """What the stages raise as on_error for bad input is an RxVoiceError (faults of user code keep their type)."""
    pair = Pair(LLMContext())
    errors: list[BaseException] = []
    pair.assistant().events.on("on_error", lambda _a, e: errors.append(e))
    bad = [(0.5, F.LLMMessagesAppendFrame([{"role": "wizard", "content": "x"}])),
           (0.6, F.LLMSetToolChoiceFrame("sometimes")), (0.7, F.LLMSetToolsFrame("junk"))]
    talk(pipeline(pair.user(), pair.assistant()), pair, down=[], up=bad)
    assert errors and all(isinstance(e, RxVoiceError) for e in errors)
    assert UP is not DOWN
