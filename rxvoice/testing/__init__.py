"""Testing kit: frame marbles in virtual time, a scripted model, a replayed STT, asyncio in virtual time."""

from .llm import Reply, ScriptedLLM, ToolCall, tokens
from .marbles import COMPLETED, ERROR, FrameMarbles, MarbleError, Recording, parse_marbles
from .stt import Segment, Transcript, load_transcript, replay_transcript
from .virtual_loop import VirtualTimeLoop, run_virtual

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
    "VirtualTimeLoop",
    "load_transcript",
    "parse_marbles",
    "replay_transcript",
    "run_virtual",
    "tokens",
]
