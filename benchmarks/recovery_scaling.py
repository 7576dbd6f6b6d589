"""What a turn costs as the conversation grows, with recovery from false ends on and off.

Run from the repository root (the ``rxvoice`` venv is enough)::

    python benchmarks/recovery_scaling.py                 # 1,000 and 10,000 blocks, recovery on and off
    python benchmarks/recovery_scaling.py --blocks 500 5000

Each block is one exchange through ``pipeline(pair.user(), pair.assistant())``
in virtual time (a ``TestScheduler``), text only (no speech output, so the
answer is in the conversation at once): the user says "I'd like a table
for", pauses (the 0.6 s speech timeout ends the turn: a false end), goes on
0.3 s later with "two people." (recovery reopens the turn: one user message),
the model's reply streams in and is written, and 0.5 s after it the next
block begins (inside the recovery window, so the turn's start asks whether
the last turn can reopen; it cannot, it was answered). Recovery off
(``recovery_window=0``) the same frames make two user turns a block.

A turn should cost the same at block 100 and at block 10,000: the
conversation is a persistent sequence, and reopening a turn rewrites only
its end. Printed: the wall time of the whole run and of two stretches of
1,000 blocks (the second thousand, the last thousand) for each size, and the
ratios. Target: ``total_ratio`` near the ratio of the sizes (10 for 1k vs
10k) and ``late_vs_early`` near 1. Timings are wall clock (``perf_counter``),
which is what a benchmark measures; run it on a quiet machine and compare
ratios taken in the same run. The last line::

    recovery_on_total_ratio=<x> recovery_on_late_vs_early=<x>
    recovery_off_total_ratio=<x> recovery_off_late_vs_early=<x>

(on one line).
"""

from __future__ import annotations

import argparse
import gc
import time

from reactivex.subject import Subject
from reactivex.testing import TestScheduler

from rxvoice import LLMContext, pipeline
from rxvoice import frames as F
from rxvoice.aggregators import Pair
from rxvoice.turns import TurnsConfig

STRETCH = 1000


def run(blocks: int, recovery: bool) -> tuple[float, list[float]]:
    """Feed ``blocks`` blocks; returns the total seconds and the seconds of every stretch of 1,000 blocks."""
    scheduler = TestScheduler()
    turns = TurnsConfig() if recovery else TurnsConfig(recovery_window=0)
    pair = Pair(LLMContext([{"role": "system", "content": "Be brief."}]), turns=turns)
    source: Subject[F.Frame] = Subject()
    down, _ = pipeline(pair.user(), pair.assistant()).connect(source)  # type: ignore[arg-type]
    subscription = down.subscribe(lambda _: None, scheduler=scheduler)
    vs, ve = F.VADUserStartedSpeakingFrame(0.2), F.VADUserStoppedSpeakingFrame(0.2)
    first, rest = F.TranscriptionFrame("I'd like a table for", "u"), F.TranscriptionFrame("two people.", "u")
    reply = [F.LLMFullResponseStartFrame(), F.LLMTextFrame("A table for two,"), F.LLMTextFrame(" booked."),
             F.LLMFullResponseEndFrame()]
    push, advance = source.on_next, scheduler.advance_by
    stretches: list[float] = []
    gc.collect()
    t0 = mark = time.perf_counter()
    for i in range(blocks):
        push(vs)
        push(first)
        push(ve)
        advance(0.7)  # the speech timeout ends the turn: a false end
        push(vs)  # 0.3 s later the user goes on: recovery reopens the turn
        push(rest)
        push(ve)
        advance(0.7)
        for frame in reply:
            push(frame)
        advance(0.5)  # the next block starts inside the recovery window
        if (i + 1) % STRETCH == 0:
            now = time.perf_counter()
            stretches.append(now - mark)
            mark = now
    total = time.perf_counter() - t0
    subscription.dispose()
    users = [m for m in pair.context().messages if m["role"] == "user"]
    expected = blocks if recovery else 2 * blocks
    assert len(users) == expected, (len(users), expected)
    if recovery:
        assert all(m["content"] == "I'd like a table for two people." for m in users)
    return total, stretches


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--blocks", type=int, nargs=2, default=[1000, 10000], metavar=("SMALL", "LARGE"))
    args = parser.parse_args(argv)
    small, large = args.blocks
    figures: list[str] = []
    for recovery in (True, False):
        name = "recovery_on" if recovery else "recovery_off"
        t_small, _ = run(small, recovery)
        t_large, stretches = run(large, recovery)
        early = stretches[1] if len(stretches) > 1 else stretches[0]
        late = stretches[-1]
        print(f"{name}: {small} blocks {t_small:.2f} s ({t_small / small * 1e6:.0f} us/block), "
              f"{large} blocks {t_large:.2f} s ({t_large / large * 1e6:.0f} us/block); "
              f"blocks 1000-2000 {early:.2f} s, the last 1000 {late:.2f} s")
        figures.append(f"{name}_total_ratio={t_large / t_small:.2f} {name}_late_vs_early={late / early:.2f}")
    print(" ".join(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
