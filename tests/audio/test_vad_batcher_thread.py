"""VADBatcher(thread=True): Silero off the event loop, each session's verdicts handed back on its loop, in order.

These sessions run on a real asyncio loop (the thread hands verdicts back through the loop's scheduler),
fed as fast as they are read: the VAD frames must be those of sessions analyzed alone, in virtual time.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import Any

import numpy as np
import reactivex

from rxvoice import frames as F
from rxvoice import pipeline
from rxvoice.audio.vad_processor import VADBatcher, VADProcessor
from rxvoice.pipeline import loop_scheduler

from .test_vad_processor import run_sessions, vad_frames

N = 320
VAD_TYPES = (F.VADUserStartedSpeakingFrame, F.VADUserStoppedSpeakingFrame)


def timelines(booking: np.ndarray, sessions: int) -> list[list[tuple[float, Any]]]:
    out = []
    for k in range(sessions):
        samples = np.roll(booking[: 16000 * 8], k * 4000)
        out.append([(round((i + N) / 16000, 6), F.InputAudioRawFrame(samples[i:i + N].tobytes()))
                    for i in range(0, len(samples) - N + 1, N)])
    return out


async def on_a_loop(lines: list[list[tuple[float, Any]]], batcher: VADBatcher,
                    expected: int) -> tuple[list[list[str]], set[str]]:
    """Each timeline through its own VAD pipeline on this loop; the VAD frames each saw (once ``expected`` came,
    or a bound of 30 s), and the threads that delivered them."""
    scheduler = loop_scheduler(asyncio.get_running_loop())
    seen: list[list[str]] = [[] for _ in lines]
    threads: set[str] = set()
    enough = asyncio.Event()
    for out, line in zip(seen, lines, strict=True):
        frames = [F.StartFrame(audio_in_sample_rate=16000), *(f for _, f in line)]
        down, _up = pipeline(VADProcessor(batcher=batcher, audio_idle_timeout=0)).duplex(
            reactivex.concat(reactivex.from_iterable(frames), reactivex.never()), reactivex.never())

        def record(frame: Any, out: list[str] = out) -> None:
            if isinstance(frame, VAD_TYPES):
                out.append(type(frame).__name__)
                threads.add(threading.current_thread().name)
                if sum(map(len, seen)) >= expected:
                    enough.set()

        down.subscribe(record, scheduler=scheduler)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(enough.wait(), 10.0)  # a bound on a real loop, not a sleep
    assert batcher._worker is not None
    await asyncio.wrap_future(batcher._worker.submit(lambda: None))  # anything still pending is flushed
    await asyncio.wrap_future(asyncio.get_running_loop().run_in_executor(None, lambda: None))
    return seen, threads


def test_verdicts_on_the_batchers_thread_match_sessions_analyzed_alone(booking: np.ndarray) -> None:
    lines = timelines(booking, 3)
    alone = [[name for _, name in vad_frames(r)] for r in run_sessions(lines, None)]
    assert all(len(a) >= 2 for a in alone)
    batcher = VADBatcher(thread=True)
    try:
        seen, threads = asyncio.run(on_a_loop(lines, batcher, sum(map(len, alone))))
    finally:
        batcher.close()
    assert seen == alone
    assert threads == {threading.main_thread().name}  # handed back to the loop, never run on the worker
    assert 0 < batcher.calls < sum(len(line) for line in lines)


def test_a_closed_batcher_analyzes_on_the_sessions_scheduler(booking: np.ndarray) -> None:
    lines = timelines(booking, 2)
    batcher = VADBatcher(thread=True)
    batcher.close()
    recs = run_sessions(lines, batcher)  # virtual time: the flushes run on the test scheduler again
    alone = run_sessions(lines, None)
    assert [r.down for r in recs] == [a.down for a in alone]
