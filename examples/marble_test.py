"""A custom stage and its marble tests: "One moment." when a tool call takes a while.

:class:`OneMoment` sits between the model and the assistant aggregator. When
the model starts tool calls and they have not all finished ``after`` seconds
later, it asks the synthesizer to say "One moment." (a ``TTSSpeakFrame``
downstream), so the caller is not left in silence. A quick call says nothing;
an interruption (the user spoke) cancels the filler.

The tests below run the whole conversation (user aggregator, a scripted
model, the stage, the assistant aggregator) in virtual time with
:class:`~rxvoice.testing.FrameMarbles`: a two-second tool call takes
microseconds, and every frame's time is exact, so the assertions are about
*when* as well as *what*. Each ``-`` in a marble string is 100 ms.

Run the tests with pytest (``pytest examples/marble_test.py``; the
``marbles`` fixture comes with rxvoice), or ``python examples/marble_test.py``
to run them without pytest and print the timeline of one run.
"""

from __future__ import annotations

from reactivex import abc

from rxvoice import DOWN, LLMContext, Processor, pipeline
from rxvoice.aggregators import Pair
from rxvoice.errors import ConfigurationError
from rxvoice.frames import (
    Frame,
    FunctionCallCancelFrame,
    FunctionCallResultFrame,
    FunctionCallsStartedFrame,
    InterruptionFrame,
    TranscriptionFrame,
    TTSSpeakFrame,
)
from rxvoice.pipeline import Direction, Port
from rxvoice.testing import FrameMarbles, Recording, Reply, ScriptedLLM, ToolCall

# -- the stage ----------------------------------------------------------------------------


# --8<-- [start:stage]
class OneMoment(Processor):
    """Says ``text`` when tool calls are still running ``after`` seconds after they started.

    Args:
        after: Seconds of tool-call silence before the filler is spoken.
        text: What to say.
    """

    name = "OneMoment"

    def __init__(self, after: float = 0.5, text: str = "One moment.") -> None:
        if not after >= 0:
            raise ConfigurationError(f"OneMoment(after=...) must be >= 0 seconds, got {after!r}")
        self.after = after
        self.text = text

    def open(self, port: Port) -> _OneMomentSession:
        """One session per running pipeline: its own pending calls and timer."""
        return _OneMomentSession(self, port)


class _OneMomentSession:
    """The per-session state: which calls are running, and the filler's timer."""

    def __init__(self, owner: OneMoment, port: Port) -> None:
        self.owner = owner
        self.port = port
        self.pending: set[str] = set()
        self.timer: abc.DisposableBase | None = None

    def on_frame(self, frame: Frame, direction: Direction) -> None:
        self.port.push(frame, direction)  # everything goes on, untouched
        if direction is not DOWN:
            return
        if isinstance(frame, FunctionCallsStartedFrame):
            self.pending.update(call.tool_call_id for call in frame.function_calls)
            if self.timer is None:
                # A timer on the session's scheduler: virtual time in tests, the loop's clock in an app.
                self.timer = self.port.call_later(self.owner.after, self.speak)
        elif isinstance(frame, FunctionCallResultFrame | FunctionCallCancelFrame):
            self.pending.discard(frame.tool_call_id)
            if not self.pending:
                self.cancel()
        elif isinstance(frame, InterruptionFrame):
            self.pending.clear()
            self.cancel()

    def speak(self) -> None:
        self.timer = None
        if self.pending:
            self.port.push_down(TTSSpeakFrame(self.owner.text))

    def cancel(self) -> None:
        if self.timer is not None:
            self.timer.dispose()
            self.timer = None

    def on_input_end(self, direction: Direction) -> None:
        return None

    def close(self) -> None:
        self.cancel()
# --8<-- [end:stage]


# -- the tests ----------------------------------------------------------------------------

# --8<-- [start:tests]
QUESTION = TranscriptionFrame("What's the weather tomorrow?", user_id="ana", finalized=True)
WAIT = TranscriptionFrame("Actually, wait.", user_id="ana", finalized=True)
FILLER = TTSSpeakFrame("One moment.")


def weather_bot(tool_seconds: float) -> tuple[Pair, ScriptedLLM, OneMoment]:
    """A pair, a model whose first answer calls a tool taking ``tool_seconds``, and the stage."""
    pair = Pair(LLMContext([{"role": "system", "content": "Be brief."}]))
    llm = ScriptedLLM([
        Reply("Let me check.", tool_calls=[ToolCall("get_weather", {"when": "tomorrow"}, {"sky": "clear"},
                                                    delay=tool_seconds)]),
        "Clear skies tomorrow.",
    ])
    return pair, llm, OneMoment(after=0.5)


def run(marbles: FrameMarbles, tool_seconds: float, down: str = "q") -> tuple[Recording, Pair, ScriptedLLM]:
    """Play ``down`` (``q``: the question, ``w``: "Actually, wait.") through the whole pipeline; record the run."""
    pair, llm, one_moment = weather_bot(tool_seconds)
    rec = marbles.run(
        pipeline(pair.user(), llm, one_moment, pair.assistant()),
        down=down,
        legend={"q": QUESTION, "w": WAIT},
        watch=[pair.user(), pair.assistant()],
    )
    return rec, pair, llm


def test_a_slow_tool_call_gets_a_filler(marbles: FrameMarbles) -> None:
    """A tool call still running 0.5 s after it started makes the bot say "One moment." then, once."""
    rec, pair, llm = run(marbles, tool_seconds=2.0)
    # The turn ends 0.6 s after the question (the default speech timeout), the model calls the tool
    # at once, and 0.5 s later the filler goes out: at 1.1 s.
    assert rec.of_type(TTSSpeakFrame) == marbles.expect("-----------f", {"f": FILLER})
    # The tool answers at 2.6 s; the assistant writes it and re-runs the model, which answers then.
    assert rec.events_named("on_assistant_turn_stopped")[-1][0] == 2600
    assert [m["role"] for m in pair.context().messages] == [
        "system", "user", "assistant", "assistant", "tool", "assistant",
    ]
    assert pair.context().messages[-1]["content"] == "Clear skies tomorrow."
    assert len(llm.runs) == 2


def test_a_quick_tool_call_says_nothing(marbles: FrameMarbles) -> None:
    """A tool call that finishes within 0.5 s needs no filler."""
    rec, pair, _llm = run(marbles, tool_seconds=0.2)
    assert rec.of_type(TTSSpeakFrame) == []
    assert pair.context().messages[-1]["content"] == "Clear skies tomorrow."


def test_an_interruption_cancels_the_filler(marbles: FrameMarbles) -> None:
    """The user speaking again while the tool runs (at 0.8 s) cancels the filler that was due at 1.1 s."""
    rec, _pair, _llm = run(marbles, tool_seconds=2.0, down="q-------w")
    assert rec.of_type(TTSSpeakFrame) == []
    # Each turn's start interrupts the bot: the question's at 0 ms, the new words' at 800 ms.
    assert [ms for ms, _ in rec.of_type(InterruptionFrame)] == [0, 800]


def test_the_stage_alone_with_marbles(marbles: FrameMarbles) -> None:
    """Alone, the stage forwards every frame and adds the filler 0.5 s after an unanswered call started."""
    from rxvoice.frames import FunctionCallFromLLM

    call = FunctionCallFromLLM("get_weather", "call_1", {})
    legend = {
        "s": FunctionCallsStartedFrame([call]),
        "r": FunctionCallResultFrame("get_weather", "call_1", result="sunny"),
        "f": FILLER,
    }
    rec = marbles.run(OneMoment(after=0.5), down="s-------r", legend=legend)
    assert rec.down == marbles.expect("s----f--r", legend)


def test_bad_configuration_fails_at_construction() -> None:
    """A negative delay is refused when the stage is built, not when the call runs."""
    try:
        OneMoment(after=-1)
    except ConfigurationError as error:
        assert "after" in str(error)
    else:
        raise AssertionError("OneMoment(after=-1) was accepted")
# --8<-- [end:tests]


def main() -> None:
    """Run the tests without pytest, then print the timeline of the slow-tool run."""
    tests = [test_a_slow_tool_call_gets_a_filler, test_a_quick_tool_call_says_nothing,
             test_an_interruption_cancels_the_filler, test_the_stage_alone_with_marbles]
    for test in tests:
        test(FrameMarbles())
        print(f"ok  {test.__name__}")
    test_bad_configuration_fails_at_construction()
    print(f"ok  {test_bad_configuration_fails_at_construction.__name__}")

    rec, _pair, _llm = run(FrameMarbles(), tool_seconds=2.0)
    print("\ndownstream, in virtual milliseconds (the tool takes 2 s):")
    for ms, frame in rec.down:
        text = getattr(frame, "text", "")
        print(f"  {ms:5d}  {type(frame).__name__}{f' {text!r}' if text else ''}")


if __name__ == "__main__":
    main()
