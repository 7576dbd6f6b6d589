"""Duplex stages, pipelines, sessions and asyncio bridges."""

from ..frames import DOWN, UP, Direction
from .bridges import arun, from_async_iterable, loop_scheduler, to_async_iterator
from .processor import FrameHandler, Port, Processor
from .session import Session, default_scheduler
from .stage import Operator, Pipeline, Stage, as_stage, lift, pipeline

__all__ = [
    "DOWN",
    "UP",
    "Direction",
    "FrameHandler",
    "Operator",
    "Pipeline",
    "Port",
    "Processor",
    "Session",
    "Stage",
    "arun",
    "as_stage",
    "default_scheduler",
    "from_async_iterable",
    "lift",
    "loop_scheduler",
    "pipeline",
    "to_async_iterator",
]
