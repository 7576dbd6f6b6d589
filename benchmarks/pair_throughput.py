"""Throughput of the context aggregator pair: rxvoice vs Pipecat 1.14 vs a reactivex floor.

Run from the repository root, in an environment with the ``bench`` extra
(``pip install -e '.[bench]'``)::

    python benchmarks/pair_throughput.py            # N = 100 and 1000 turns
    python benchmarks/pair_throughput.py --quick    # N = 100 only

Every configuration is fed the same synthetic conversation
(``_scenario.build_conversation``: 39 frames a turn) in one process, one run.
Repetitions are interleaved across configurations (rep 1 of each, then rep 2
of each, ...) so a noisy stretch of the machine hits all of them alike, and
medians are reported.  The last line is::

    pair_vs_pipecat=<r> pair_vs_rx_floor=<r> turns_vs_pipecat=<r> pair_vs_pipecat_direct=<r>

at N = 1000 (at N = 100 with ``--quick``):

* ``pair_vs_pipecat``: rxvoice external-mode frames/s / Pipecat external frames/s
* ``pair_vs_rx_floor``: rxvoice external-mode µs/frame / floor µs/frame
* ``turns_vs_pipecat``: rxvoice turns-mode frames/s / Pipecat turns-mode frames/s
* ``pair_vs_pipecat_direct``: rxvoice external-mode frames/s / Pipecat external frames/s with its aggregators'
  private direct mode switched on (no input queues; still a correct context)

rxvoice is fed through its ``Inlet`` (the pipeline's own way in); the row
``rxvoice ext Subject`` feeds the same pair from a reactivex ``Subject``, as the
floor is, and is printed beside the ratios.

A ratio is ``nan`` when a side did not run or any of its repetitions was not
``ok`` (wrong context: a wrong run is not a fast run).

Pipecat is imported only by ``_pipecat_pair`` when this script runs;
rxvoice itself never imports it.
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _scenario import (
    FRAMES_PER_TURN,
    TURNS_USER_SPEECH_TIMEOUT,
    Event,
    Result,
    build_conversation,
    build_slotted_frames,
    check_messages,
)

REPS = {100: 5, 1000: 3}

# Configurations that take milliseconds (the floor and rxvoice) run this many
# times inside every repetition, alternating (floor, rxvoice, floor, rxvoice,
# ...), and all their samples enter the median: the machine's timing is
# bimodal (host noise), and a few cheap samples would make the pair/floor
# ratio a coin toss.  The floor and rxvoice are treated alike, so the ratio
# stays fair; Pipecat (seconds a run at N = 1000) runs once per repetition.
CHEAP_INNER = 5


# --- floor -------------------------------------------------------------------


def run_floor(events: list[Event], frames: list[object] | None = None) -> Result:
    """A reactivex ``Subject`` with two identity ``map``s, over slotted frames.

    ``frames`` defaults to fresh ``_scenario`` slotted dataclasses (one per
    event), built before the clock starts.  Time covers pushing every frame
    through ``on_next`` into a list-appending subscriber.
    """
    from reactivex import operators as ops
    from reactivex.subject import Subject

    if frames is None:
        frames = build_slotted_frames(events)
    out: list[object] = []
    subject: Subject[object] = Subject()

    def ident(f: object) -> object:
        return f

    subject.pipe(ops.map(ident), ops.map(ident)).subscribe(out.append)
    on_next = subject.on_next
    t0 = time.perf_counter()
    for f in frames:
        on_next(f)
    seconds = time.perf_counter() - t0
    ok = len(out) == len(frames) and all(a is b for a, b in zip(out, frames, strict=True))
    return Result(seconds=seconds, frames=len(frames), messages=0, ok=ok)


# --- rxvoice (the lead plugs it in here) --------------------------------------


def rxvoice_available() -> str | None:
    """None when rxvoice's aggregators can be imported, else the reason."""
    try:
        import rxvoice.aggregators as agg  # noqa: F401
    except ImportError as exc:
        return f"rxvoice.aggregators is not importable ({exc})"
    return None


def _rxvoice_frames(events: list[Event], mode: str) -> list[object]:
    """The scenario as rxvoice frames (built before the clock starts)."""
    from rxvoice import frames as F

    out: list[object] = []
    for ev in events:
        kind = ev[0]
        if kind == "vad_start":
            out.append(F.UserStartedSpeakingFrame() if mode == "external" else F.VADUserStartedSpeakingFrame(0.2))
        elif kind == "vad_stop":
            out.append(F.UserStoppedSpeakingFrame() if mode == "external" else F.VADUserStoppedSpeakingFrame(0.2))
        elif kind == "interim":
            out.append(F.InterimTranscriptionFrame(ev[1], user_id="user"))
        elif kind == "final":
            out.append(F.TranscriptionFrame(ev[1], user_id="user", finalized=ev[2]))
        elif kind == "response_start":
            out.append(F.LLMFullResponseStartFrame())
        elif kind == "text":
            out.append(F.LLMTextFrame(ev[1]))
        elif kind == "response_end":
            out.append(F.LLMFullResponseEndFrame())
        else:
            raise ValueError(kind)
    return out


def run_rxvoice(events: list[Event], *, mode: str, feed: str = "inlet") -> Result:
    """rxvoice's pair on the same scenario, in one duplex pipeline.

    Both modes run on reactivex's ``TestScheduler``: the speech-timeout
    timer of ``"turns"`` mode fires when virtual time is advanced right after
    each VAD stop (its wait costs no wall time, which is what virtual time is
    for), and everything else is synchronous. The response of a turn is fed
    only after the turn's ``LLMContextFrame`` came out, as Pipecat's feeder
    does.

    ``feed``: ``"inlet"`` pushes the frames into an ``rxvoice.pipeline.Inlet``
    (the pipeline's own way in: its ``on_next`` is the session's door),
    ``"subject"`` into a reactivex ``Subject`` (what the floor is fed by).
    """
    from reactivex.subject import Subject
    from reactivex.testing import TestScheduler

    from rxvoice import LLMContext, pipeline
    from rxvoice import frames as F
    from rxvoice.aggregators import Pair
    from rxvoice.pipeline import Inlet
    from rxvoice.turns import ExternalStrategies, SpeechTimeoutStop, TurnsConfig, VADStart

    frames = _rxvoice_frames(events, mode)
    if mode == "external":
        turns = TurnsConfig(strategies=ExternalStrategies())
    else:
        turns = TurnsConfig(start=[VADStart()], stop=[SpeechTimeoutStop(TURNS_USER_SPEECH_TIMEOUT)])
    scheduler = TestScheduler()
    pair = Pair(LLMContext(), turns=turns)
    source: Subject[object] | Inlet = Inlet() if feed == "inlet" else Subject()
    down, _up = pipeline(pair.user(), pair.assistant()).connect(source)  # type: ignore[arg-type]
    contexts = [0]
    sunk = [0]

    def sink(frame: object) -> None:
        sunk[0] += 1
        if type(frame) is F.LLMContextFrame:
            contexts[0] += 1

    subscription = down.subscribe(sink, scheduler=scheduler)
    on_next: Callable[[object], None] = source.on_next  # type: ignore[assignment]
    stop_type = F.VADUserStoppedSpeakingFrame
    advance = scheduler.advance_by
    t0 = time.perf_counter()
    for f in frames:
        on_next(f)
        if type(f) is stop_type:
            advance(0.001)
    seconds = time.perf_counter() - t0
    subscription.dispose()
    messages = [dict(m) for m in pair.context().messages]
    return Result(seconds=seconds, frames=len(events), messages=len(messages), ok=check_messages(messages, events))


# --- harness -----------------------------------------------------------------


def _median(results: list[Result]) -> tuple[float, float, float, bool]:
    """(median µs/frame, min, max, all ok)."""
    us = [r.us_per_frame for r in results]
    return statistics.median(us), min(us), max(us), all(r.ok for r in results)


Config = tuple[Callable[[list[Event]], Result], int]  # (runner, runs per repetition)


def _bench(n: int, reps: int, configs: dict[str, Config]) -> dict[str, list[Result]]:
    """Interleaved: repetition 1 of every configuration, then repetition 2, ..."""
    events = build_conversation(n)
    results: dict[str, list[Result]] = {name: [] for name in configs}
    rounds = max(inner for _, inner in configs.values())
    for _ in range(reps):
        for i in range(rounds):  # cheap configurations alternate run by run
            for name, (fn, inner) in configs.items():
                if i < inner:
                    gc.collect()
                    results[name].append(fn(events))
    return results


def _print_table(n: int, results: dict[str, list[Result]]) -> dict[str, float]:
    """Print one table; return median µs/frame per config (nan if not ok)."""
    frames = n * FRAMES_PER_TURN
    print(f"\nN = {n} turns ({frames} frames), medians")
    head = f"{'configuration':<20} {'us/frame':>10} {'frames/s':>12} {'min-max us/frame':>18}"
    print(f"  {head}  {'msgs':>6}  {'runs':>4}  ok")
    medians: dict[str, float] = {}
    for name, rs in results.items():
        med, lo, hi, ok = _median(rs)
        msgs = rs[-1].messages
        row = f"{name:<20} {med:>10.2f} {1e6 / med:>12,.0f} {lo:>8.2f} - {hi:<8.2f}"
        print(f"  {row}  {msgs:>6}  {len(rs):>4}  {'yes' if ok else 'NO'}")
        medians[name] = med if ok else math.nan
    return medians


def _ratios(m: dict[str, float]) -> tuple[float, float, float, float]:
    nan = math.nan
    rx_ext = m.get("rxvoice external", nan)
    rx_turns = m.get("rxvoice turns", nan)
    pair_vs_pipecat = m.get("pipecat external", nan) / rx_ext  # fps ratio = inverse time ratio
    pair_vs_floor = rx_ext / m.get("floor", nan)
    turns_vs_pipecat = m.get("pipecat turns", nan) / rx_turns
    pair_vs_direct = m.get("pipecat ext direct", nan) / rx_ext
    return pair_vs_pipecat, pair_vs_floor, turns_vs_pipecat, pair_vs_direct


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="N = 100 only")
    parser.add_argument("--reps", type=int, default=None, help="override repetitions per N")
    args = parser.parse_args(argv)

    from importlib.metadata import version

    from _pipecat_pair import run_pipecat  # imports Pipecat lazily, on first run

    print(
        f"python {platform.python_version()}, pipecat-ai {version('pipecat-ai')}, "
        f"reactivex {version('reactivex')}, {os.cpu_count()} CPUs"
    )
    print(
        f"turns mode: user_speech_timeout={TURNS_USER_SPEECH_TIMEOUT} s "
        "(timer wait included, nothing subtracted)"
    )

    configs: dict[str, Config] = {
        "floor": (run_floor, CHEAP_INNER),
        "pipecat external": (lambda ev: run_pipecat(ev, mode="external"), 1),
        "pipecat turns": (lambda ev: run_pipecat(ev, mode="turns"), 1),
        "pipecat ext direct": (lambda ev: run_pipecat(ev, mode="external", direct=True), 1),
    }

    reason = rxvoice_available()
    if reason is None:
        try:  # probe once on a tiny conversation, so a stub is skipped cleanly
            probe = build_conversation(2)
            for mode in ("external", "turns"):
                run_rxvoice(probe, mode=mode)
        except NotImplementedError as exc:
            reason = f"run_rxvoice is not implemented yet ({exc})"
    if reason is None:
        configs["rxvoice external"] = (lambda ev: run_rxvoice(ev, mode="external"), CHEAP_INNER)
        configs["rxvoice turns"] = (lambda ev: run_rxvoice(ev, mode="turns"), CHEAP_INNER)
        # The same pair fed through a reactivex Subject, as the floor is: shown, not in the ratios.
        configs["rxvoice ext Subject"] = (lambda ev: run_rxvoice(ev, mode="external", feed="subject"), CHEAP_INNER)
    else:
        print(f"NOTE: skipping rxvoice: {reason}")

    # Warm-up: imports, first-call caches, lazy Pipecat setup (not reported).
    _bench(5, 1, configs)

    sizes = [100] if args.quick else [100, 1000]
    last: dict[str, float] = {}
    for n in sizes:
        reps = args.reps or REPS[n]
        results = _bench(n, reps, configs)
        last = _print_table(n, results)
        if "rxvoice external" in results:
            paired = statistics.median(
                rx.seconds / fl.seconds
                for rx, fl in zip(results["rxvoice external"], results["floor"], strict=True)
            )
            print(f"  (pair/floor, median of back-to-back pairs of runs: {paired:.2f})")
        ppc, pfl, tpc, pdc = _ratios(last)
        floor = last["floor"]
        print(
            f"  ratios at N={n}: pair_vs_pipecat={ppc:.1f} pair_vs_rx_floor={pfl:.2f} "
            f"turns_vs_pipecat={tpc:.1f} pair_vs_pipecat_direct={pdc:.1f}; Pipecat/floor: "
            f"external {last['pipecat external'] / floor:.0f}x, "
            f"turns {last['pipecat turns'] / floor:.0f}x"
        )
        if "rxvoice ext Subject" in last:
            print(f"  fed through a Subject instead of the Inlet: pair/floor "
                  f"{last['rxvoice ext Subject'] / floor:.2f}, "
                  f"vs Pipecat {last['pipecat external'] / last['rxvoice ext Subject']:.1f}x")

    if args.quick:
        print("(--quick: the ratios below are at N = 100, not 1000)")
    ppc, pfl, tpc, pdc = _ratios(last)
    print(f"pair_vs_pipecat={ppc:.1f} pair_vs_rx_floor={pfl:.2f} turns_vs_pipecat={tpc:.1f} "
          f"pair_vs_pipecat_direct={pdc:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
