"""Duplex stages, pipelines, sessions and asyncio bridges: the runtime every stage runs on.

The runtime wing: :mod:`~rxvoice.pipeline.stage` (stages and ``pipeline()``),
:mod:`~rxvoice.pipeline.processor` (rxvoice's own stages and their ports),
:mod:`~rxvoice.pipeline.session` (one session's gate and clock),
:mod:`~rxvoice.pipeline.wire` (the plain-call hand-over between stages),
:mod:`~rxvoice.pipeline.deadline` (named timers), :mod:`~rxvoice.pipeline.shell`
(the one interpreter of a pure core's port: frames, timers, events, writes,
work off the session), :mod:`~rxvoice.pipeline.offload` (where heavy work
runs) and :mod:`~rxvoice.pipeline.bridges` (asyncio).
"""

from ..frames import DOWN, UP, Direction
from .bridges import arun, from_async_iterable, loop_scheduler, to_async_iterator
from .offload import Offload, SchedulerOffload, default_offload, inline_offload, shared_pool
from .processor import FrameHandler, Port, Processor
from .session import Session, default_scheduler
from .stage import Operator, Pipeline, Stage, as_stage, lift, pipeline

__all__ = [
    "DOWN",
    "UP",
    "Direction",
    "FrameHandler",
    "Offload",
    "Operator",
    "Pipeline",
    "Port",
    "Processor",
    "SchedulerOffload",
    "Session",
    "Stage",
    "arun",
    "as_stage",
    "default_offload",
    "default_scheduler",
    "from_async_iterable",
    "inline_offload",
    "lift",
    "loop_scheduler",
    "pipeline",
    "shared_pool",
    "to_async_iterator",
]
