"""rxvoice: the conversation layer of a voice agent, as reactivex operators.

>>> from rxvoice import LLMContext, pipeline, frames
>>> from rxvoice.aggregators import Pair
>>> pair = Pair(LLMContext(messages=[{"role": "system", "content": "Be brief."}]))
"""

from . import frames
from .context import ContextSnapshot, LLMContext
from .pipeline import DOWN, UP, Direction, Pipeline, Processor, Session, Stage, lift
from .pipeline import pipeline as pipeline

__version__ = "0.1.0"

__all__ = [
    "DOWN",
    "UP",
    "ContextSnapshot",
    "Direction",
    "LLMContext",
    "Pipeline",
    "Processor",
    "Session",
    "Stage",
    "__version__",
    "frames",
    "lift",
    "pipeline",
]
