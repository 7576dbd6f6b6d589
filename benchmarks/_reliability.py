"""Pieces shared by the reliability benchmarks (``soak.py``, ``sessions.py``).

A stand-in for the speaker (TTS plus output transport), so the assistant side
hears the bot start and stop speaking as it would in a real pipeline, and the
memory probes the benchmarks sample.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Sequence

from rxvoice import frames as F
from rxvoice.pipeline import DOWN, UP, Direction, Port, Processor

__all__ = ["Speaker", "heap_blocks", "rss_kib", "slope"]


class Speaker(Processor):
    """Plays each answer: ``BotStartedSpeakingFrame`` at its start, ``BotStoppedSpeakingFrame`` at its end.

    Both are sent both ways, as an output transport does, so the user side
    (mute, interruptions, idle) and the assistant side see the bot speak.
    """

    name = "Speaker"

    def open(self, port: Port) -> _Speaking:
        return _Speaking(port)


class _Speaking:
    def __init__(self, port: Port) -> None:
        self.port = port
        self.speaking = False

    def on_frame(self, frame: F.Frame, direction: Direction) -> None:
        port = self.port
        port.push(frame, direction)
        if direction is not DOWN:
            return
        t = type(frame)
        if t is F.LLMFullResponseStartFrame and not self.speaking:
            self.speaking = True
            self._both(F.BotStartedSpeakingFrame())
        elif (t is F.LLMFullResponseEndFrame or t is F.InterruptionFrame) and self.speaking:
            self.speaking = False
            self._both(F.BotStoppedSpeakingFrame())

    def _both(self, frame: F.Frame) -> None:
        self.port.push(frame, DOWN)
        self.port.push(frame, UP)

    def on_input_end(self, direction: Direction) -> None:
        return None

    def close(self) -> None:
        return None


def rss_kib() -> int:
    """The process's resident set size now, in KiB (``/proc/self/statm``; 0 where there is none)."""
    try:
        with open("/proc/self/statm") as statm:
            pages = int(statm.read().split()[1])
    except OSError:
        return 0
    return pages * os.sysconf("SC_PAGE_SIZE") // 1024


def heap_blocks() -> int:
    """Python objects alive after a full collection (``sys.getallocatedblocks``): a leak shows here first."""
    gc.collect()
    return sys.getallocatedblocks()


def slope(xs: Sequence[float], ys: Sequence[float]) -> float:
    """The least-squares slope of ``ys`` over ``xs`` (0 with fewer than two points)."""
    n = len(xs)
    if n < 2:
        return 0.0
    mx, my = sum(xs) / n, sum(ys) / n
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / den if den else 0.0
