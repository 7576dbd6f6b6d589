"""turn_steps: the turn machine as an operator over any stream of frames, in virtual time."""

from __future__ import annotations

import pytest
import reactivex
from reactivex.testing import TestScheduler

from rxvoice import frames as F
from rxvoice.aggregators import UserTurnProcessor
from rxvoice.errors import InvalidFrameError
from rxvoice.operators import turn_steps
from rxvoice.testing import FrameMarbles, Recording
from rxvoice.turns import SpeechTimeoutStop, TurnMachine, TurnScan, TurnsConfig, VADStart

LEGEND: dict[str, F.Frame] = {
    "v": F.VADUserStartedSpeakingFrame(0.2),
    "s": F.VADUserStoppedSpeakingFrame(0.2),
    "h": F.TranscriptionFrame("hello there", "u1", finalized=True),
    "B": F.BotStartedSpeakingFrame(),
}


def steps(rec: Recording) -> list[tuple[int, TurnScan]]:
    return [(t, x) for t, x in rec.down if isinstance(x, TurnScan)]


def emitted(rec: Recording, direction: F.Direction = F.DOWN) -> list[tuple[int, str]]:
    """The frames the machine passed on, as (ms, name), from the steps."""
    return [(t, c[1].name) for t, x in steps(rec) for c in x.calls if c[0] == "emit" and c[2] is direction]


def events(rec: Recording) -> list[tuple[int, str]]:
    return [(t, c[1]) for t, x in steps(rec) for c in x.calls if c[0] == "event"]


def test_the_marble_of_the_docstring() -> None:
    """v-h-s: the turn starts with the VAD, the speech timeout fires 0.6 s after the stop and ends it."""
    rec = FrameMarbles(LEGEND).run(turn_steps(), down="v-h-s", until=3)
    assert [t for t, _ in steps(rec)] == [0, 200, 400, 1000]
    assert events(rec) == [(0, "on_user_turn_started"), (1000, "on_user_turn_inference_triggered"),
                           (1000, "on_user_turn_stopped")]
    assert [x.open for _, x in steps(rec)] == [True, True, True, False]


@pytest.mark.parametrize("down", ["v-h-s", "h---v-s--h-s", "v-s-------v-h-s", "Bv-h-s"])
def test_the_operator_decides_what_the_stage_decides(down: str) -> None:
    """The same frames through turn_steps and through UserTurnProcessor: the same frames go on, at the same
    times (the stage feeds the same TurnMachine.step the operator's accumulator does)."""
    turns = TurnsConfig(start=[VADStart()], stop=[SpeechTimeoutStop(0.4)])
    by_operator = FrameMarbles(LEGEND).run(turn_steps(turns), down=down, until=5)
    processor = UserTurnProcessor(turns)
    by_stage = FrameMarbles(LEGEND).run(processor, down=down, until=5)
    assert emitted(by_operator) == [(t, f.name) for t, f in by_stage.down if isinstance(f, F.Frame)]
    assert emitted(by_operator, F.UP) == [(t, f.name) for t, f in by_stage.up if isinstance(f, F.Frame)]


def test_a_machine_can_be_shared_and_each_subscription_has_its_own_turn() -> None:
    """State is per subscription: two subscriptions of one operator decide independently."""
    op = turn_steps(TurnMachine(TurnsConfig()))
    first = FrameMarbles(LEGEND).run(op, down="v-h-s", until=3)
    second = FrameMarbles(LEGEND).run(op, down="--v-h-s", until=3)
    assert [t for t, _ in events(first)] == [0, 1000, 1000]
    assert [t for t, _ in events(second)] == [200, 1200, 1200]


def test_disposing_cancels_the_timers() -> None:
    """Disposed before the speech timeout: nothing fires afterwards, nothing stays scheduled."""
    scheduler = TestScheduler()
    source = reactivex.from_iterable([LEGEND["v"], LEGEND["h"], LEGEND["s"]]).pipe(
        lambda o: reactivex.concat(o, reactivex.never()))
    got: list[TurnScan] = []
    subscription = source.pipe(turn_steps()).subscribe(got.append, scheduler=scheduler)
    scheduler.advance_by(0.3)
    subscription.dispose()
    scheduler.advance_by(10.0)
    assert len(got) == 3 and all(not any(c[0] == "event" and c[1] == "on_user_turn_stopped" for c in s.calls)
                                 for s in got)
    assert not scheduler._queue  # type: ignore[attr-defined]


def test_the_end_of_the_input_ends_the_session() -> None:
    """The source completes mid-turn: the open turn is reported stopped, as at an EndFrame, then it completes."""
    rec = FrameMarbles(LEGEND).run(turn_steps(), down="v-h|")
    *_, (t, last) = steps(rec)
    assert t == 300 and not last.open
    assert [c[1] for c in last.calls if c[0] == "event"] == ["on_user_turn_stopped"]
    assert rec.down[-1][1] is not last  # completion recorded after the last step


def test_something_that_is_not_a_frame_is_a_typed_error() -> None:
    errors: list[Exception] = []
    scheduler = TestScheduler()
    reactivex.of("hello").pipe(turn_steps()).subscribe(on_error=errors.append, scheduler=scheduler)
    scheduler.advance_by(1.0)
    assert len(errors) == 1 and isinstance(errors[0], InvalidFrameError)


def test_a_model_verdict_runs_at_once_on_the_strategy_resource() -> None:
    """A strategy's model call is computed inline: a complete verdict ends the turn at the VAD stop."""
    from rxvoice.turns import TurnAnalyzerStop

    from ..turns.helpers import FakeAnalyzer

    turns = TurnsConfig(start=[VADStart()], stop=[TurnAnalyzerStop(FakeAnalyzer(script=[(True, 0.9)]))])
    rec = FrameMarbles(LEGEND).run(turn_steps(turns), down="v-h-s", until=3)
    assert events(rec)[-1] == (400, "on_user_turn_stopped")
    assert any(isinstance(c[1], F.MetricsFrame) for _, x in steps(rec) for c in x.calls if c[0] == "emit")


