"""The rules the pair's shortest paths keep: a subscriber's stop, turn hooks, a write nobody watches."""

from __future__ import annotations

from typing import Any

from reactivex.testing import TestScheduler

from rxvoice import LLMContext, pipeline
from rxvoice import frames as F
from rxvoice.aggregators import Pair
from rxvoice.pipeline import Inlet
from rxvoice.turns import ExternalStrategies, TurnsConfig
from rxvoice.turns.controller import TurnController
from rxvoice.turns.start import VADStart
from rxvoice.turns.stop import SpeechTimeoutStop


def test_a_disposed_subscriber_gets_nothing_more_while_another_keeps_the_pipeline() -> None:
    """Called past reactivex's observer layer, a subscriber still stops on dispose (its rule kept)."""
    scheduler = TestScheduler()
    inlet = Inlet()
    pair = Pair(LLMContext(), turns=TurnsConfig(strategies=ExternalStrategies()))
    down, _up = pipeline(pair.user(), pair.assistant()).connect(inlet)
    first: list[F.Frame] = []
    second: list[F.Frame] = []
    sub1 = down.subscribe(first.append, scheduler=scheduler)
    down.subscribe(second.append, scheduler=scheduler)
    token = F.LLMTextFrame("one")
    inlet.on_next(token)
    sub1.dispose()
    inlet.on_next(F.LLMTextFrame("two"))
    assert first == [token]
    assert [f.text for f in second if isinstance(f, F.LLMTextFrame)] == ["one", "two"]


def test_a_subscriber_that_completed_gets_no_frame() -> None:
    """After the end, nothing: the stop rule of reactivex's observer, checked on the direct call."""
    scheduler = TestScheduler()
    inlet = Inlet()
    pair = Pair(LLMContext(), turns=TurnsConfig(strategies=ExternalStrategies()))
    down, _up = pipeline(pair.user(), pair.assistant()).connect(inlet)
    got: list[Any] = []
    down.subscribe(got.append, on_completed=lambda: got.append("end"), scheduler=scheduler)
    inlet.on_next(F.LLMTextFrame("one"))
    inlet.on_completed()
    scheduler.advance_by(5.0)
    inlet.on_next(F.LLMTextFrame("late"))
    assert got[-1] == "end"
    assert not any(isinstance(f, F.LLMTextFrame) and f.text == "late" for f in got)


def test_turn_hooks_are_told_to_the_strategies_that_answer_them() -> None:
    """A strategy keeping the base class's hook (unchanged state, no effects) is not asked; one that answers is."""

    class Counting(VADStart):
        def on_turn_stopped(self, state: Any, now: float) -> tuple[Any, Any]:
            return state, ()

    start, counting, stop = VADStart(), Counting(), SpeechTimeoutStop(0.5)
    controller = TurnController([start, counting], [stop], 5.0)
    assert "on_turn_started" not in vars(VADStart)
    assert controller.told["on_turn_started"] == ((2, stop),)
    assert controller.told["on_turn_stopped"] == ((1, counting), (2, stop))
    assert all(s is not start for _, s in controller.told["on_turn_resumed"])


def test_a_write_nobody_watches_is_still_what_a_later_subscriber_sees_first() -> None:
    """With no subscriber, a write only stores the snapshot: a subscriber then gets it, and every write after."""
    context = LLMContext()
    context.add_user_message("hello")
    context.add_assistant_message("hi")
    seen: list[int] = []
    context.subscribe(lambda snapshot: seen.append(len(snapshot.messages)))
    context.add_user_message("again")
    assert seen == [2, 3]
    assert context.snapshot.version == 3


def test_an_inlets_on_next_taken_before_it_was_connected_still_feeds_the_pipeline() -> None:
    """``on_next`` becomes the door once connected; a reference taken before goes through the inlet and works."""
    scheduler = TestScheduler()
    inlet = Inlet()
    early = inlet.on_next
    pair = Pair(LLMContext(), turns=TurnsConfig(strategies=ExternalStrategies()))
    down, _up = pipeline(pair.user(), pair.assistant()).connect(inlet)
    got: list[F.Frame] = []
    down.subscribe(got.append, scheduler=scheduler)
    early(F.LLMTextFrame("early"))
    inlet.on_next(F.LLMTextFrame("late"))
    assert [f.text for f in got if isinstance(f, F.LLMTextFrame)] == ["early", "late"]
    assert inlet.on_next is inlet.emit  # the door itself, no call of the inlet's own


def test_the_door_passes_on_what_the_user_stage_only_passes_on_and_keeps_the_order(monkeypatch: Any) -> None:
    """Frames the user's stage does not handle (the model's tokens) go past it from the door, in order;
    the frames it handles still reach it, and a swap of its strategies keeps the door's table its own."""
    from rxvoice.aggregators import user as user_module

    calls: list[type] = []
    on_down = user_module._UserSession.on_down

    def counting(self: Any, frame: F.Frame) -> None:
        calls.append(type(frame))
        on_down(self, frame)

    monkeypatch.setattr(user_module._UserSession, "on_down", counting)
    scheduler = TestScheduler()
    inlet = Inlet()
    pair = Pair(LLMContext(), turns=TurnsConfig(strategies=ExternalStrategies()))
    down, _up = pipeline(pair.user(), pair.assistant()).connect(inlet)
    got: list[F.Frame] = []
    down.subscribe(got.append, scheduler=scheduler)
    frames: list[F.Frame] = [
        F.UserStartedSpeakingFrame(), F.TranscriptionFrame("hello there", user_id="u", finalized=True),
        F.UserStoppedSpeakingFrame(), F.LLMFullResponseStartFrame(), F.LLMTextFrame("Hi"),
        F.LLMTextFrame(" you."), F.LLMFullResponseEndFrame(),
    ]
    for f in frames:
        inlet.on_next(f)
    assert F.LLMTextFrame not in calls and F.LLMFullResponseStartFrame not in calls
    assert F.TranscriptionFrame in calls and F.UserStoppedSpeakingFrame in calls
    tokens = [f for f in got if isinstance(f, F.LLMTextFrame)]
    assert tokens == frames[4:6]
    assert got.index(tokens[0]) > next(i for i, f in enumerate(got) if isinstance(f, F.LLMContextFrame))
    assert [(m["role"], m["content"]) for m in pair.context().messages] == [
        ("user", "hello there"), ("assistant", "Hi you.")]
    session = pair.user()._sessions[-1]
    table = session.down_handled
    session.use(session.controller)  # what a recommended controller does: the door's table is updated in place
    assert session.down_handled is table and session._dispatch is table and F.TranscriptionFrame in table
    calls.clear()
    inlet.on_next(F.UserStartedSpeakingFrame())
    inlet.on_next(F.LLMTextFrame("late"))
    assert calls == [F.UserStartedSpeakingFrame]
    assert got[-1].text == "late"  # type: ignore[attr-defined]
