"""Testing kit: frame marbles in virtual time, a scripted model, a replayed STT."""

from .llm import Reply, ScriptedLLM, ToolCall, tokens
from .marbles import COMPLETED, ERROR, FrameMarbles, MarbleError, Recording, parse_marbles
from .stt import Segment, Transcript, load_transcript, replay_transcript

__all__ = [
    "COMPLETED",
    "ERROR",
    "FrameMarbles",
    "MarbleError",
    "Recording",
    "Reply",
    "ScriptedLLM",
    "Segment",
    "ToolCall",
    "Transcript",
    "load_transcript",
    "parse_marbles",
    "replay_transcript",
    "tokens",
]
