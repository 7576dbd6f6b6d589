"""The way into a pipeline: an Inlet behaves as a Subject does, and a fused chain's door checks what comes in."""

from __future__ import annotations

from typing import Any

from reactivex import operators as ops
from reactivex.subject import Subject
from reactivex.testing import TestScheduler

from rxvoice import LLMContext, pipeline
from rxvoice import frames as F
from rxvoice.aggregators import Pair
from rxvoice.pipeline import Inlet, Processor, lift
from rxvoice.turns import SpeechTimeoutStop, TurnsConfig, VADStart

from .test_pipeline import Echo


def _conversation(turns: int) -> list[F.Frame]:
    """Turns of a VAD start, interim words, a VAD stop and the final words, then the bot's answer."""
    frames: list[F.Frame] = []
    for i in range(turns):
        frames += [
            F.VADUserStartedSpeakingFrame(0.2), F.InterimTranscriptionFrame(f"hello {i}", user_id="u"),
            F.VADUserStoppedSpeakingFrame(0.2), F.TranscriptionFrame(f"hello {i}", user_id="u", finalized=True),
            F.LLMFullResponseStartFrame(), F.LLMTextFrame(f"answer {i}."), F.LLMFullResponseEndFrame(),
        ]
    return frames


def _run_pair(source: Subject[F.Frame] | Inlet) -> tuple[list[tuple[float, str]], list[Any]]:
    """Feed the pair in virtual time; what came out (time, repr) each way, and the conversation written."""
    scheduler = TestScheduler()
    pair = Pair(LLMContext(), turns=TurnsConfig(start=[VADStart()], stop=[SpeechTimeoutStop(0.0)]))
    down, up = pipeline(pair.user(), pair.assistant()).connect(source)
    out: list[tuple[float, str]] = []
    down.subscribe(lambda f: out.append((scheduler.clock, f"down {f!r}")), scheduler=scheduler)
    up.subscribe(lambda f: out.append((scheduler.clock, f"up {f!r}")), scheduler=scheduler)
    for frame in _conversation(5):
        source.on_next(frame)
        scheduler.advance_by(0.25)
    source.on_completed()
    scheduler.advance_by(5.0)
    return out, [dict(m) for m in pair.context().messages]


def test_an_inlet_feeds_the_pair_exactly_as_a_subject_does() -> None:
    """Same frames, same order, same times, both ways, and the same conversation."""
    by_subject = _run_pair(Subject())
    by_inlet = _run_pair(Inlet())
    assert by_inlet == by_subject
    assert len(by_inlet[1]) == 10 and by_inlet[0][-1][1].startswith(("down", "up"))


def test_a_non_frame_through_an_inlet_is_reported_and_the_stream_goes_on() -> None:
    """The fused chain's door checks: a non-frame is skipped with an ErrorFrame upstream."""
    inlet = Inlet()
    down, up = pipeline(Echo(), Echo()).connect(inlet)
    out: list[F.Frame] = []
    errors: list[F.Frame] = []
    down.subscribe(out.append)
    up.subscribe(errors.append)
    inlet.on_next("not a frame")  # type: ignore[arg-type]
    inlet.on_next(F.TextFrame("still here"))
    assert out == [F.TextFrame("still here")]
    assert len(errors) == 1 and isinstance(errors[0], F.ErrorFrame)
    assert "not a Frame" in str(errors[0].error)


def test_the_end_of_an_inlet_completes_the_pipeline_and_closes_the_way_in() -> None:
    """After on_completed nothing more goes through; a late observer gets the end."""
    inlet = Inlet()
    down, _ = pipeline(Echo()).connect(inlet)
    got: list[object] = []
    down.subscribe(got.append, on_completed=lambda: got.append("completed"))
    inlet.on_next(F.TextFrame("a"))
    inlet.on_completed()
    inlet.on_next(F.TextFrame("after the end"))
    assert got == [F.TextFrame("a"), "completed"]
    late: list[object] = []
    inlet.subscribe(late.append, on_completed=lambda: late.append("completed"))
    assert late == ["completed"]


def test_an_inlet_error_reaches_the_outputs() -> None:
    inlet = Inlet()
    down, _ = pipeline(Echo()).connect(inlet)
    errors: list[Exception] = []
    down.subscribe(lambda f: None, on_error=errors.append)
    failure = RuntimeError("the microphone went away")
    inlet.on_error(failure)
    inlet.on_next(F.TextFrame("after the error"))
    assert errors == [failure]


def test_a_plain_operator_in_the_chain_still_works_behind_an_inlet() -> None:
    """Not every stage an rxvoice stage: the chain is wired as before (the operator subscribes)."""
    upper = ops.map(lambda f: F.TextFrame(f.text.upper()) if isinstance(f, F.TextFrame) else f)
    inlet = Inlet()
    pipe = pipeline(Echo(), upper, Echo())
    assert not pipe.fused and pipeline(Echo(), Echo()).fused and not pipeline(lift(upper)).fused
    down, _ = pipe.connect(inlet)
    out: list[F.Frame] = []
    down.subscribe(out.append)
    inlet.on_next(F.TextFrame("a"))
    assert out == [F.TextFrame("A")]


def test_an_inlet_is_a_plain_observable_too() -> None:
    """Any observer can subscribe to it (each frame is handed over as pushed), and it can be subscribed to a source."""
    inlet = Inlet()
    seen: list[F.Frame] = []
    inlet.subscribe(seen.append)
    source: Subject[F.Frame] = Subject()
    source.subscribe(inlet)
    source.on_next(F.TextFrame("x"))
    assert seen == [F.TextFrame("x")]


class _OwnClock(Echo):
    """An rxvoice stage on a scheduler of its own (its session is not the pipeline's)."""

    scheduler = TestScheduler()


def test_a_stage_on_its_own_session_still_checks_what_comes_in() -> None:
    """First stage with its own scheduler: no door to check for it, so it checks itself."""
    assert isinstance(_OwnClock(), Processor)
    inlet = Inlet()
    down, up = pipeline(_OwnClock(), Echo()).connect(inlet)
    out: list[F.Frame] = []
    errors: list[F.Frame] = []
    down.subscribe(out.append)
    up.subscribe(errors.append)
    inlet.on_next(42)  # type: ignore[arg-type]
    inlet.on_next(F.TextFrame("ok"))
    assert out == [F.TextFrame("ok")]
    assert len(errors) == 1 and "not a Frame" in str(errors[0].error)  # type: ignore[attr-defined]
