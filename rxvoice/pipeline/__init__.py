"""Duplex stages, pipelines, sessions and asyncio bridges."""

from .processor import FrameHandler, Port, Processor
from .session import Session, default_scheduler
from .stage import DOWN, UP, Direction, Operator, Pipeline, Stage, as_stage, lift, pipeline

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
    "as_stage",
    "default_scheduler",
    "lift",
    "pipeline",
]
