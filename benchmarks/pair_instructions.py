"""The pair benchmark's timed loop alone, for counting instructions under callgrind.

Wall-clock ratios move with the load of the machine; instruction counts do
not. This script builds what ``pair_throughput.py`` builds for one
configuration (the same frames, pipeline, scheduler and subscriber) and runs
only its timed loop inside ``operator.call``, so callgrind can collect that
call alone::

    for n in 50 150; do
      PYTHONPATH=$PWD PYTHONHASHSEED=0 OPENBLAS_NUM_THREADS=1 setarch -R valgrind --tool=callgrind \\
        --collect-atstart=no \\
        --toggle-collect=_operator_call --callgrind-out-file=cg.turns.$n \\
        .venv/bin/python benchmarks/pair_instructions.py turns $n
    done
    # instructions a frame: (total of cg.turns.150 - total of cg.turns.50) / (100 * 39)

Configurations: ``floor``, ``external``, ``turns`` (as in ``pair_throughput.py``).
Two turn counts in two processes, subtracted, cancel what does not grow with
the conversation. ``PYTHONPATH`` names the checkout counted: a script's own
directory, not the current one, comes first on Python's path, so without it
the installed ``rxvoice`` is counted. ``--profile`` prints a cProfile of the
loop instead; ``--calls`` the Python-level calls a turn (``sys.setprofile``,
Python functions only, the given count of turns and three times as many,
subtracted), the most frequent first; ``--events`` the wall time of each
event of a turn (each frame timed as it goes in, and the clock's advance
that fires the speech timer), the median over the turns of five runs. The
last line says whether the run left the expected context.
"""

from __future__ import annotations

import argparse
import gc
import operator
import os
import sys
from collections.abc import Callable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _scenario import TURNS_USER_SPEECH_TIMEOUT, Event, build_conversation, build_slotted_frames, check_messages
from pair_throughput import _rxvoice_frames


def _floor(events: list[Event]) -> tuple[Callable[[], None], Callable[[], bool]]:
    from reactivex import operators as ops
    from reactivex.subject import Subject

    frames = build_slotted_frames(events)
    out: list[object] = []
    subject: Subject[object] = Subject()

    def ident(f: object) -> object:
        return f

    subject.pipe(ops.map(ident), ops.map(ident)).subscribe(out.append)
    on_next = subject.on_next

    def loop() -> None:
        for f in frames:
            on_next(f)

    return loop, lambda: len(out) == len(frames)


def _parts(
    events: list[Event], mode: str
) -> tuple[list[object], Callable[[object], None], Callable[[float], None], Callable[[], bool]]:
    """The pair as ``pair_throughput.py`` builds it: (its frames, the way in, the clock's advance, the check)."""
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
    source = Inlet()
    down, _up = pipeline(pair.user(), pair.assistant()).connect(source)
    contexts = [0]

    def sink(frame: object) -> None:
        if type(frame) is F.LLMContextFrame:
            contexts[0] += 1

    subscription = down.subscribe(sink, scheduler=scheduler)

    def ok() -> bool:
        subscription.dispose()
        return check_messages([dict(m) for m in pair.context().messages], events)

    return frames, source.on_next, scheduler.advance_by, ok  # type: ignore[return-value]


def _pair(events: list[Event], mode: str) -> tuple[Callable[[], None], Callable[[], bool]]:
    from rxvoice import frames as F

    frames, on_next, advance, ok = _parts(events, mode)
    stop_type = F.VADUserStoppedSpeakingFrame

    def loop() -> None:
        for f in frames:
            on_next(f)
            if type(f) is stop_type:
                advance(0.001)

    return loop, ok


def _events(mode: str, turns: int, reps: int = 5) -> int:
    """The wall time of each event of a turn: the median over ``turns`` turns and ``reps`` runs, in µs.

    Each frame is timed as it goes in (``perf_counter_ns`` around its ``on_next``, the collector off), and
    so is the ``advance_by`` after a VAD stop (the speech timer's firing: the turn's end in turns mode).
    A transcript is named by its place in the turn. The last line is the sum for one turn.
    """
    import statistics
    import time
    from collections import defaultdict

    from rxvoice import frames as F

    spent: dict[str, list[int]] = defaultdict(list)
    for _ in range(reps):
        loop_frames, on_next, advance, ok = _parts(build_conversation(turns), mode)
        clock = time.perf_counter_ns
        gc.collect()
        gc.disable()
        try:
            place = 0
            for f in loop_frames:
                name = type(f).__name__
                if "Transcription" in name:
                    name, place = f"{name} {place + 1}", place + 1
                else:
                    place = 0
                t0 = clock()
                on_next(f)
                spent[name].append(clock() - t0)
                if type(f) is F.VADUserStoppedSpeakingFrame:  # turns mode: the speech timer fires as time moves
                    t0 = clock()
                    advance(0.001)
                    spent["advance_by (the speech timer fires)"].append(clock() - t0)
        finally:
            gc.enable()
        if not ok():
            print("ok=False")
            return 1
    total = 0.0
    for name, ns in spent.items():
        per_turn = len(ns) / (turns * reps)
        median = statistics.median(ns) / 1000
        total += per_turn * median
        print(f"{median:8.2f} us  x{per_turn:4.0f}  {name}")
    print(f"{total:8.2f} us  a turn (medians)")
    return 0


def _calls(build: Callable[[list[Event]], tuple[Callable[[], None], Callable[[], bool]]], turns: int) -> int:
    """Python-level calls a turn, by function: ``turns`` and ``3 * turns`` turns, subtracted."""
    from collections import Counter
    from types import FrameType

    def count(n: int) -> tuple[Counter[tuple[str, int, str]], bool]:
        loop, ok = build(build_conversation(n))
        calls: Counter[tuple[str, int, str]] = Counter()

        def seen(frame: FrameType, event: str, _arg: object) -> None:
            if event == "call":
                code = frame.f_code
                calls[(os.path.basename(code.co_filename), code.co_firstlineno, code.co_qualname)] += 1

        sys.setprofile(seen)
        try:
            loop()
        finally:
            sys.setprofile(None)
        return calls, ok()

    few, ok_few = count(turns)
    many, ok_many = count(3 * turns)
    per_turn = {k: (many[k] - few[k]) / (2 * turns) for k in many if many[k] != few[k]}
    print(f"Python calls a turn: {sum(per_turn.values()):.1f}")
    for (name, line, qualname), n in sorted(per_turn.items(), key=lambda kv: -kv[1])[:40]:
        print(f"{n:8.2f}  {qualname}  ({name}:{line})")
    print(f"ok={ok_few and ok_many}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=["floor", "external", "turns"])
    parser.add_argument("turns", type=int)
    parser.add_argument("--profile", action="store_true", help="print a cProfile of the loop")
    parser.add_argument("--calls", action="store_true", help="print the Python calls a turn")
    parser.add_argument("--events", action="store_true", help="print the wall time of each event of a turn")
    args = parser.parse_args(argv)

    def build(events: list[Event]) -> tuple[Callable[[], None], Callable[[], bool]]:
        return _floor(events) if args.mode == "floor" else _pair(events, args.mode)

    warm, _ = build(build_conversation(5))  # imports and first-call caches, not counted
    warm()
    if args.calls:
        return _calls(build, args.turns)
    if args.events:
        if args.mode == "floor":
            parser.error("--events times the pair (external or turns)")
        return _events(args.mode, args.turns)
    loop, ok = build(build_conversation(args.turns))
    gc.collect()
    if args.profile:
        import cProfile
        import pstats

        profile = cProfile.Profile()
        profile.runcall(loop)
        pstats.Stats(profile).sort_stats("tottime").print_stats(40)
    else:
        operator.call(loop)  # the call callgrind collects (--toggle-collect=_operator_call)
    print(f"ok={ok()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
