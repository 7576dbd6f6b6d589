"""Gates: Gated (a window over the frame stream) and GatedContext (the conversation held for a notifier)."""

from __future__ import annotations

import logging
import threading
from typing import Any

import pytest
import reactivex
from reactivex.subject import Subject

from rxvoice import LLMContext
from rxvoice import frames as F
from rxvoice.aggregators import Gated, GatedConfig, GatedContext, Notifier
from rxvoice.errors import ConfigurationError
from rxvoice.pipeline import DOWN, UP
from rxvoice.testing import FrameMarbles, Recording


def text(t: str) -> F.TextFrame:
    return F.TextFrame(t)


def is_text(value: str) -> Any:
    return lambda f: isinstance(f, F.TextFrame) and f.text == value


LEGEND: dict[str, F.Frame] = {
    "o": text("open"), "c": text("close"), "1": text("one"), "2": text("two"), "3": text("three"),
    "I": F.InterruptionFrame(), "Z": F.EndFrame(), "X": F.CancelFrame(),
}


def run(stage: Any, down: str = "", *, up: str = "", legend: dict[str, Any] | None = None,
        watch: Any = (), m: FrameMarbles | None = None) -> Recording:
    bench = m or FrameMarbles()
    return bench.run(stage, down=down, up=up, legend={**LEGEND, **(legend or {})}, watch=watch)


def texts(frames: list[F.Frame]) -> list[str]:
    return [f.text if isinstance(f, F.TextFrame) else type(f).__name__ for f in frames]


# ---------------------------------------------------------------------------------------- Gated


def test_gated_releases_the_opener_first() -> None:
    """Closed: frames are held; the opener goes first, then what was held, in arrival order."""
    rec = run(Gated(open=is_text("open")), "1-2-o")
    assert rec.down == [(400, text("open")), (400, text("one")), (400, text("two"))]


def test_gated_starts_open_and_holds_the_closer() -> None:
    """Open from the start: frames pass; the closer is held with the rest and released first next time."""
    gate = Gated(open=is_text("open"), close=is_text("close"), start_open=True)
    rec = run(gate, "1-c-2-o-3")
    assert texts(rec.down_frames()) == ["one", "open", "close", "two", "three"]
    assert [t for t, _ in rec.down] == [0, 600, 600, 600, 800]


def test_gated_never_holds_a_system_frame() -> None:
    """An interruption in the middle of a closed gate passes at once; what was held stays held, in order."""
    rec = run(Gated(open=is_text("open")), "1-I-2-o")
    assert rec.down == [
        (200, F.InterruptionFrame()), (600, text("open")), (600, text("one")), (600, text("two")),
    ]


def test_gated_lets_the_other_direction_through() -> None:
    """Frames travelling upstream are not a downstream gate's business."""
    rec = run(Gated(open=is_text("open")), "1", up="2")
    assert rec.up_frames() == [text("two")]
    assert rec.down_frames() == []


def test_gated_reference_ordering() -> None:
    """Closed gate, opened by an image-like frame, closed by a response start: the reference's order."""
    image = F.TTSSpeakFrame("image")
    audio = F.OutputAudioRawFrame(b"\x00\x00")
    legend = {"S": F.LLMFullResponseStartFrame(), "t": text("t"), "a": audio, "m": image,
              "e": F.LLMFullResponseEndFrame()}
    gate = Gated(open=lambda f: f is image, close=lambda f: isinstance(f, F.LLMFullResponseStartFrame))
    rec = run(gate, "Sttamae", legend=legend)
    assert rec.down_types() == [
        "TTSSpeakFrame", "LLMFullResponseStartFrame", "TextFrame", "TextFrame", "OutputAudioRawFrame",
        "OutputAudioRawFrame", "LLMFullResponseEndFrame",
    ]


def test_gated_holds_the_end_frame_but_not_a_cancel() -> None:
    """The end-of-stream caveat: a closed gate holds EndFrame (it is not a system frame); CancelFrame passes."""
    rec = run(Gated(open=is_text("open")), "1-Z-X")
    assert rec.down_types() == ["CancelFrame"]
    rec = run(Gated(open=is_text("open")), "1-Z-o")
    assert texts(rec.down_frames()) == ["open", "one", "EndFrame"]


def test_gated_can_hold_upstream_frames() -> None:
    """direction=UP gates frames travelling upstream; downstream ones pass."""
    gate = Gated(open=is_text("open"), direction=UP)
    rec = run(gate, "3", up="1-2-o")
    assert texts(rec.up_frames()) == ["open", "one", "two"]
    assert texts(rec.down_frames()) == ["three"]


def test_gated_reports_a_failing_predicate_and_loses_nothing() -> None:
    """A predicate that raises counts as "no": reported (on_error, ErrorFrame upstream), the frame is held."""

    def opener(f: F.Frame) -> bool:
        if isinstance(f, F.TextFrame) and f.text == "one":
            raise ValueError("bad frame")
        return is_text("open")(f)  # type: ignore[no-any-return]

    gate = Gated(open=opener)
    rec = run(gate, "1-2-o", watch=[gate])
    assert texts(rec.down_frames()) == ["open", "one", "two"]
    assert rec.event_names() == ["on_error"]
    assert rec.up_types() == ["ErrorFrame"]


def test_gated_drops_what_it_holds_when_the_input_ends(caplog: pytest.LogCaptureFixture) -> None:
    """When the input completes with frames held, they are dropped with a warning (the gate can never open)."""
    with caplog.at_level(logging.WARNING, "rxvoice.aggregators.gates"):
        rec = run(Gated(open=is_text("open")), "1-2-|")
    assert rec.down_frames() == []
    assert "2 frame(s) held" in caplog.text


def test_gated_takes_a_config() -> None:
    """A GatedConfig is the same as the separate arguments; bad settings are refused."""
    rec = run(Gated(GatedConfig(open=is_text("open"))), "1-o")
    assert texts(rec.down_frames()) == ["open", "one"]
    with pytest.raises(ConfigurationError):
        Gated(GatedConfig(), start_open=True)
    with pytest.raises(ConfigurationError):
        Gated(open="yes")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        Gated(direction="down")  # type: ignore[arg-type]


def test_gated_state_is_per_subscription() -> None:
    """Two subscriptions of one gate hold and open independently."""
    gate = Gated(open=is_text("open"))
    a: Subject[F.Frame] = Subject()
    b: Subject[F.Frame] = Subject()
    out_a: list[F.Frame] = []
    out_b: list[F.Frame] = []
    a.pipe(gate).subscribe(out_a.append)
    b.pipe(gate).subscribe(out_b.append)
    a.on_next(text("one"))
    b.on_next(text("two"))
    a.on_next(text("open"))
    assert texts(out_a) == ["open", "one"]
    assert out_b == []


# ---------------------------------------------------------------------------------- GatedContext


def contexts(n: int) -> dict[str, F.Frame]:
    ctx = LLMContext()
    frames = {}
    for i in range(n):
        ctx.add_user_message(f"m{i}")
        frames[f"{i}"] = F.LLMContextFrame(ctx)
    return frames


def released(rec: Recording) -> list[tuple[int, int]]:
    """(ms, number of messages) of each context that came out."""
    return [(t, len(f.snapshot.messages)) for t, f in rec.of_type(F.LLMContextFrame)]  # type: ignore[attr-defined]


def test_gated_context_waits_for_the_notifier() -> None:
    """A context is held until the notifier signals; other frames pass."""
    n = Notifier()
    m = FrameMarbles()
    m.scheduler.schedule_relative(0.35, lambda *_: n.notify())
    rec = run(GatedContext(n), "0-1", legend={**contexts(1), "1": text("one")}, m=m)
    assert released(rec) == [(350, 1)]
    assert rec.of_type(F.TextFrame) == [(200, text("one"))]


def test_gated_context_keeps_only_the_latest() -> None:
    """Three contexts held, one signal: only the last is released."""
    n = Notifier()
    m = FrameMarbles()
    m.scheduler.schedule_relative(0.5, lambda *_: n.notify())
    rec = run(GatedContext(n), "012", legend=contexts(3), m=m)
    assert released(rec) == [(500, 3)]


def test_gated_context_can_start_open() -> None:
    """start_open lets the first context through; the second is held."""
    rec = run(GatedContext(Notifier(), start_open=True), "0-1", legend=contexts(2))
    assert released(rec) == [(0, 1)]


def test_gated_context_takes_an_observable_of_signals() -> None:
    """Each item of an observable releases what is held at that moment (on the session's scheduler)."""
    m = FrameMarbles()
    signals = reactivex.timer(0.25, 0.5)
    rec = run(GatedContext(signals), "0-----1", legend=contexts(2), m=m)
    assert released(rec) == [(250, 1), (750, 2)]


def test_gated_context_spends_a_signal_that_finds_nothing() -> None:
    """A signal with nothing held is spent: the context that comes after waits for the next one."""
    n = Notifier()
    m = FrameMarbles()
    m.scheduler.schedule_relative(0.05, lambda *_: n.notify())
    m.scheduler.schedule_relative(0.45, lambda *_: n.notify())
    rec = run(GatedContext(n), "-0", legend=contexts(1), m=m)
    assert released(rec) == [(450, 1)]


def test_gated_context_releases_in_the_direction_it_travelled() -> None:
    """A context travelling upstream is held too, and released upstream."""
    n = Notifier()
    m = FrameMarbles()
    m.scheduler.schedule_relative(0.2, lambda *_: n.notify())
    rec = run(GatedContext(n), up="0", legend=contexts(1), m=m)
    assert [type(f).__name__ for f in rec.up_frames()] == ["LLMContextFrame"]
    assert rec.up[0][0] == 200


def test_gated_context_stops_at_end_of_session() -> None:
    """After EndFrame a signal releases nothing: the notifier is no longer heard."""
    n = Notifier()
    m = FrameMarbles()
    m.scheduler.schedule_relative(0.5, lambda *_: n.notify())
    rec = run(GatedContext(n), "0-Z", legend=contexts(1), m=m)
    assert rec.down_types() == ["EndFrame"]
    assert n.pending  # nobody listens any more: the signal is remembered for the next listener


def test_gated_context_serializes_signals_from_other_threads() -> None:
    """notify() from another thread releases the context inside the session, never overlapping a frame."""
    n = Notifier()
    src: Subject[F.Frame] = Subject()
    out: list[F.Frame] = []
    done = threading.Event()

    def on_next(f: F.Frame) -> None:
        out.append(f)
        done.set()

    src.pipe(GatedContext(n)).subscribe(on_next)
    src.on_next(F.LLMContextFrame(LLMContext()))
    worker = threading.Thread(target=n.notify)
    worker.start()
    worker.join()
    assert done.wait(5.0)
    assert [type(f).__name__ for f in out] == ["LLMContextFrame"]


def test_gated_context_reports_a_failing_notifier() -> None:
    """A notifier that errors is reported; the frames keep flowing."""
    gate = GatedContext(reactivex.throw(RuntimeError("notifier down")))
    rec = run(gate, "1", legend={"1": text("one")}, watch=[gate])
    assert rec.event_names() == ["on_error"]
    assert texts(rec.down_frames()) == ["one"]


def test_gated_context_refuses_what_cannot_signal() -> None:
    """Neither an observable nor a notifier: a configuration error."""
    with pytest.raises(ConfigurationError):
        GatedContext(42)  # type: ignore[arg-type]


# -------------------------------------------------------------------------------------- Notifier


def test_notifier_remembers_one_signal_not_a_count() -> None:
    """Three signals with nobody listening release one listener once; the next listener gets nothing."""
    n = Notifier()
    n.notify()
    n.notify()
    n.notify()
    first: list[None] = []
    second: list[None] = []
    n.signals.subscribe(first.append)
    assert first == [None]
    d = n.signals.subscribe(second.append)
    assert second == []
    n.notify()
    assert first == [None, None] and second == [None]
    d.dispose()


def test_notifier_clear_forgets_a_remembered_signal() -> None:
    """clear() drops a remembered signal."""
    n = Notifier()
    n.notify()
    n.clear()
    got: list[None] = []
    n.signals.subscribe(got.append)
    assert got == [] and not n.pending


def test_notifier_contains_a_raising_listener() -> None:
    """A listener that raises does not stop the others."""
    n = Notifier()
    got: list[None] = []

    def bad(_: None) -> None:
        raise RuntimeError("listener")

    n.signals.subscribe(bad)
    n.signals.subscribe(got.append)
    n.notify()
    assert got == [None]
    assert DOWN is not UP
