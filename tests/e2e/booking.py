"""The booking call as a test bench: 20 ms audio frames plus a replayed transcript, on one virtual timeline.

``booking.wav`` (18.3 s, 16 kHz) holds five spoken segments; its transcript
gives each segment's text, start, end and whether a listener would take the
turn after it. :func:`run_call` plays the audio as ``InputAudioRawFrame``\\ s
(each stamped when its last sample has arrived, as a live transport delivers
it) and the transcript as finalized ``TranscriptionFrame``\\ s ``delay``
seconds after each segment's end, through ``pipeline(front, pair.user(),
ScriptedLLM, pair.assistant())`` on a ``TestScheduler``; Smart Turn verdicts
take ``latency`` virtual seconds (``SchedulerOffload``) but run the real model.
"""

from __future__ import annotations

import wave
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import reactivex

from rxvoice import frames as F
from rxvoice import pipeline
from rxvoice.aggregators import Pair
from rxvoice.pipeline import SchedulerOffload
from rxvoice.pipeline.stage import Stage
from rxvoice.testing import FrameMarbles, Recording, ScriptedLLM, Transcript, load_transcript, replay_transcript
from tests.support import booking_paths

CHUNK_SAMPLES = 320  # 20 ms at 16 kHz


def load_booking() -> tuple[np.ndarray, Transcript]:
    """int16 samples and the transcript."""
    wav, transcript = booking_paths()
    with wave.open(str(wav)) as w:
        assert (w.getframerate(), w.getnchannels(), w.getsampwidth()) == (16000, 1, 2)
        samples = np.frombuffer(w.readframes(w.getnframes()), "<i2").copy()
    return samples, load_transcript(transcript)


def audio_frames(samples: np.ndarray) -> list[tuple[float, F.Frame]]:
    """A StartFrame, then 20 ms frames stamped at the time their last sample arrives."""
    out: list[tuple[float, F.Frame]] = [(0.0, F.StartFrame())]
    for i in range(0, len(samples) - CHUNK_SAMPLES + 1, CHUNK_SAMPLES):
        out.append(((i + CHUNK_SAMPLES) / 16000, F.InputAudioRawFrame(samples[i:i + CHUNK_SAMPLES].tobytes())))
    return out


@dataclass
class Call:
    """What a run of the call produced."""

    rec: Recording
    llm: ScriptedLLM
    pair: Pair
    transcript: Transcript

    @property
    def answers(self) -> list[float]:
        """When (s) each answer started streaming."""
        return [t / 1000 for t, _ in self.rec.of_type(F.LLMFullResponseStartFrame)]

    @property
    def questions(self) -> list[str]:
        """The user message each model run answered."""
        return [run.snapshot.messages[-1]["content"] for run in self.llm.runs]

    def verdicts(self) -> list[tuple[float, bool, float]]:
        """``(s, complete, probability)`` of every Smart Turn verdict."""
        out = []
        for t, f in self.rec.of_type(F.MetricsFrame):
            for d in f.data:  # type: ignore[attr-defined]
                if isinstance(d, F.TurnMetricsData):
                    out.append((t / 1000, d.is_complete, d.probability))
        return out


def run_call(
    front: Sequence[Stage],
    pair: Pair,
    *,
    delay: float,
    latency: float = 0.0,
    interims: bool = False,
    offloaded: Sequence[Any] = (),
) -> Call:
    """Play the call through ``pipeline(*front, pair.user(), ScriptedLLM, pair.assistant())``.

    ``offloaded``: more stages (a detector) whose model calls take ``latency`` virtual seconds.
    """
    samples, transcript = load_booking()
    bench = FrameMarbles()
    for stage in (pair.user(), *offloaded):
        stage.offload = SchedulerOffload(bench.scheduler, latency)
    llm = ScriptedLLM(["Sure."] * 10)
    words = replay_transcript(transcript, delay=delay, interims=interims)
    down: Any = reactivex.merge(bench.from_timeline(audio_frames(samples)), words)
    stage = pipeline(*front, pair.user(), llm, pair.assistant())
    rec = bench.run(stage, down=down, watch=[pair.user()], until=(transcript.duration or 20.0) + 3.0)
    return Call(rec, llm, pair, transcript)
