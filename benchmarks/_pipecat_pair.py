"""Pipecat 1.14's ``LLMContextAggregatorPair`` on the synthetic conversation.

Method (as Pipecat's own benchmarking notes describe it):

* ``Pipeline([pair.user(), pair.assistant(), sink])`` run by a
  ``PipelineWorker`` and a ``WorkerRunner`` (the machinery Pipecat's own test
  helper ``pipecat.tests.utils.run_test`` uses), in the **lean**
  configuration: no observers (turn tracking off, no idle observer), RTVI
  off, metrics and heartbeats off (the defaults).  The sink is a
  direct-mode processor, like the test helper's.
* Frames are fed with ``worker.queue_frame``.  The clock starts at the first
  scenario frame, after the ``StartFrame`` has reached the sink, and stops
  when a final barrier data frame reaches the sink.
* Pacing: Pipecat handles system frames ahead of queued data frames, so
  before every system frame the feeder queues a small probe data frame and
  waits for it to reach the sink.  Without this, "stopped" overtakes its
  transcripts and turns merge.
* All Pipecat frames are built before the clock starts (as the floor's are).
* A run is ``ok`` only if the context ends with exactly 2N messages with the
  expected contents (``_scenario.check_messages``).

Modes:

``"external"``
    ``ExternalUserTurnStrategies()``: the VAD start/stop events are fed as
    ``UserStartedSpeakingFrame`` / ``UserStoppedSpeakingFrame`` (a turn
    announced elsewhere, which the external start strategy adopts); the
    external stop strategy ends the turn synchronously on
    ``UserStoppedSpeakingFrame`` since the final transcript is already in.
``"turns"``
    ``UserTurnStrategies(start=[VADUserTurnStartStrategy()],
    stop=[SpeechTimeoutUserTurnStopStrategy(user_speech_timeout=0.0)])``: the
    VAD events are fed as ``VADUserStartedSpeakingFrame`` /
    ``VADUserStoppedSpeakingFrame(stop_secs=0.2)``.  The turn ends when the
    speech timer (``asyncio.sleep(0)``) fires after the VAD stop, so the
    feeder, like an LLM service would, waits for the user aggregator's
    ``LLMContextFrame`` to reach the sink before feeding the response.  That
    wait is inside the measured time and nothing is subtracted: with a 0 s
    timeout it is a few event-loop passes, not sleeping.

Pipecat is imported only here (and only when the benchmark runs).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from _scenario import TURNS_USER_SPEECH_TIMEOUT, Event, Result, check_messages

__all__ = ["MODES", "PIPECAT_FRAME_CLASSES", "run_pipecat", "run_pipecat_async"]

MODES = ("external", "turns")

# Which Pipecat frame class each scenario event becomes, per mode.
PIPECAT_FRAME_CLASSES = {
    "external": {
        "vad_start": "UserStartedSpeakingFrame",
        "vad_stop": "UserStoppedSpeakingFrame",
    },
    "turns": {
        "vad_start": "VADUserStartedSpeakingFrame",
        "vad_stop": "VADUserStoppedSpeakingFrame(stop_secs=0.2)",
    },
    "both": {
        "interim": "InterimTranscriptionFrame(text, user_id='user', timestamp='')",
        "final": "TranscriptionFrame(text, user_id='user', timestamp='', finalized=...)",
        "response_start": "LLMFullResponseStartFrame",
        "text": "LLMTextFrame(token)",
        "response_end": "LLMFullResponseEndFrame",
    },
}

_pc = None  # lazily imported Pipecat names


def _pipecat():
    """Import Pipecat on first use and quiet its DEBUG logging.

    Pipecat logs through loguru at DEBUG level by default; a deployed agent
    runs at INFO or above, and the per-turn debug lines would otherwise be
    part of the measurement.  Warnings and errors are still shown.
    """
    global _pc
    if _pc is not None:
        return _pc
    import sys

    from loguru import logger

    logger.remove()
    logger.add(sys.stderr, level="WARNING")

    from pipecat.frames import frames as F
    from pipecat.pipeline.pipeline import Pipeline
    from pipecat.pipeline.worker import PipelineParams, PipelineWorker
    from pipecat.processors.aggregators.llm_context import LLMContext
    from pipecat.processors.aggregators.llm_response_universal import (
        LLMContextAggregatorPair,
        LLMUserAggregatorParams,
    )
    from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
    from pipecat.turns.user_start import VADUserTurnStartStrategy
    from pipecat.turns.user_stop import SpeechTimeoutUserTurnStopStrategy
    from pipecat.turns.user_turn_strategies import ExternalUserTurnStrategies, UserTurnStrategies
    from pipecat.workers.runner import WorkerRunner

    @dataclass
    class ProbeFrame(F.DataFrame):
        """A small data frame both aggregators forward untouched."""

    class Sink(FrameProcessor):
        """Last processor: signals probes, the barrier, StartFrame and LLMContextFrame."""

        def __init__(self):
            super().__init__(enable_direct_mode=True)
            self.started = asyncio.Event()
            self.probe = asyncio.Event()
            self.context = asyncio.Event()
            self.barrier = asyncio.Event()
            self.barrier_frame = None
            self.barrier_time = 0.0

        async def process_frame(self, frame, direction):
            await super().process_frame(frame, direction)
            if direction == FrameDirection.DOWNSTREAM:
                if isinstance(frame, ProbeFrame):
                    if frame is self.barrier_frame:
                        self.barrier_time = time.perf_counter()
                        self.barrier.set()
                    else:
                        self.probe.set()
                elif isinstance(frame, F.LLMContextFrame):
                    self.context.set()
                elif isinstance(frame, F.StartFrame):
                    self.started.set()
            await self.push_frame(frame, direction)

    class NS:
        pass

    ns = NS()
    ns.F = F
    ns.Pipeline = Pipeline
    ns.PipelineParams = PipelineParams
    ns.PipelineWorker = PipelineWorker
    ns.LLMContext = LLMContext
    ns.LLMContextAggregatorPair = LLMContextAggregatorPair
    ns.LLMUserAggregatorParams = LLMUserAggregatorParams
    ns.FrameDirection = FrameDirection
    ns.VADUserTurnStartStrategy = VADUserTurnStartStrategy
    ns.SpeechTimeoutUserTurnStopStrategy = SpeechTimeoutUserTurnStopStrategy
    ns.ExternalUserTurnStrategies = ExternalUserTurnStrategies
    ns.UserTurnStrategies = UserTurnStrategies
    ns.WorkerRunner = WorkerRunner
    ns.ProbeFrame = ProbeFrame
    ns.Sink = Sink
    _pc = ns
    return ns


def _build_frames(pc, events: list[Event], mode: str) -> list:
    F = pc.F
    out = []
    for ev in events:
        kind = ev[0]
        if kind == "vad_start":
            f = (
                F.UserStartedSpeakingFrame()
                if mode == "external"
                else F.VADUserStartedSpeakingFrame()
            )
        elif kind == "vad_stop":
            # stop_secs=0.2 is Pipecat's default VAD stop window (and silences
            # the speech-timeout strategy's "differs from default" warning).
            f = (
                F.UserStoppedSpeakingFrame()
                if mode == "external"
                else F.VADUserStoppedSpeakingFrame(stop_secs=0.2)
            )
        elif kind == "interim":
            f = F.InterimTranscriptionFrame(text=ev[1], user_id="user", timestamp="")
        elif kind == "final":
            f = F.TranscriptionFrame(text=ev[1], user_id="user", timestamp="", finalized=ev[2])
        elif kind == "response_start":
            f = F.LLMFullResponseStartFrame()
        elif kind == "text":
            f = F.LLMTextFrame(text=ev[1])
        elif kind == "response_end":
            f = F.LLMFullResponseEndFrame()
        else:
            raise ValueError(f"unknown event {ev!r}")
        out.append((kind, f))
    return out


def _user_params(pc, mode: str):
    if mode == "external":
        strategies = pc.ExternalUserTurnStrategies()
    elif mode == "turns":
        strategies = pc.UserTurnStrategies(
            start=[pc.VADUserTurnStartStrategy()],
            stop=[
                pc.SpeechTimeoutUserTurnStopStrategy(user_speech_timeout=TURNS_USER_SPEECH_TIMEOUT)
            ],
        )
    else:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    # Everything else at Pipecat's defaults (5 s stop watchdog, idle off,
    # empty-turn recovery on; none of them fire in this scenario).
    return pc.LLMUserAggregatorParams(user_turn_strategies=strategies)


async def run_pipecat_async(events: list[Event], *, mode: str, direct: bool = False) -> Result:
    pc = _pipecat()
    F = pc.F
    frames = _build_frames(pc, events, mode)
    # One probe per system frame, prebuilt too.
    probes = [pc.ProbeFrame() for kind, f in frames if isinstance(f, F.SystemFrame)]
    barrier = pc.ProbeFrame()

    context = pc.LLMContext()
    pair = pc.LLMContextAggregatorPair(context, user_params=_user_params(pc, mode))
    if direct:
        # The aggregators' private direct mode (frames processed at once, no input queues): still a correct
        # context, and about 11% faster than the lean public setup; reported so the ratio is honest.
        pair.user()._enable_direct_mode = True
        pair.assistant()._enable_direct_mode = True
    sink = pc.Sink()
    sink.barrier_frame = barrier
    pipeline = pc.Pipeline([pair.user(), pair.assistant(), sink])
    worker = pc.PipelineWorker(
        pipeline,
        cancel_on_idle_timeout=False,
        enable_rtvi=False,
        enable_turn_tracking=False,
        idle_timeout_secs=None,
        observers=[],
        params=pc.PipelineParams(),  # metrics, usage metrics, heartbeats: off
        check_dangling_tasks=False,
    )
    pipeline_started = asyncio.Event()

    @worker.event_handler("on_pipeline_started")
    async def _on_started(_worker, _frame):
        pipeline_started.set()

    runner = pc.WorkerRunner(handle_sigint=False, check_dangling_tasks=False)
    await runner.add_workers(worker)
    run_task = asyncio.ensure_future(runner.run())

    await asyncio.wait_for(pipeline_started.wait(), timeout=10)
    await asyncio.wait_for(sink.started.wait(), timeout=10)

    turns_mode = mode == "turns"
    queue_frame = worker.queue_frame
    probe_event = sink.probe
    context_event = sink.context
    SystemFrame = F.SystemFrame
    probe_iter = iter(probes)

    t0 = time.perf_counter()
    for kind, frame in frames:
        if isinstance(frame, SystemFrame):
            probe_event.clear()
            await queue_frame(next(probe_iter))
            await probe_event.wait()
            if turns_mode and kind == "vad_stop":
                context_event.clear()
        elif turns_mode and kind == "response_start":
            # The turn ends when the 0 s speech timer fires; an LLM would
            # only answer the LLMContextFrame that ending the turn pushes.
            await context_event.wait()
        await queue_frame(frame)
    await queue_frame(barrier)
    await sink.barrier.wait()
    seconds = sink.barrier_time - t0

    await queue_frame(F.EndFrame())
    await asyncio.wait_for(run_task, timeout=30)

    messages = list(context.messages)
    ok = check_messages(messages, events)
    return Result(seconds=seconds, frames=len(events), messages=len(messages), ok=ok)


def run_pipecat(events: list[Event], *, mode: str, direct: bool = False) -> Result:
    """Drive Pipecat's pair over ``events`` once, in a fresh event loop (``direct``: its private direct mode)."""
    return asyncio.run(run_pipecat_async(events, mode=mode, direct=direct))
