"""Model services: stages that talk to a real model over the network.

:class:`OpenAILLM` (in :mod:`rxvoice.services.openai`) needs the ``openai``
extra (``pip install 'rxvoice[openai]'``, which brings httpx); it is imported
on first use, so ``rxvoice.services`` itself imports without it. The protocol
pieces (:mod:`~rxvoice.services.sse`, :mod:`~rxvoice.services.chat_stream`)
are pure and dependency-free. :class:`LoopbackChatServer` is a small
chat-completions server on ``127.0.0.1`` for tests and offline demos.

Speech in and out live in their own modules: :mod:`rxvoice.services.stt`
(``PocketSphinxSTT``, ``OpenAITranscriptionSTT``) and
:mod:`rxvoice.services.tts` (``EspeakTTS``, ``OpenAISpeechTTS``, ``PacedTextTTS``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .chat_stream import ChatStreamDecoder, ToolCallRequest, parse_arguments, payload_error, status_error
from .functions import Function, FunctionHandler
from .loopback import (
    ErrorReply,
    JSONReply,
    LoopbackChatServer,
    RecordedRequest,
    StreamReply,
    chunk,
    text_chunks,
    tool_call_chunks,
)
from .sse import SSEDecoder, SSEEvent

if TYPE_CHECKING:
    from .openai import OpenAILLM

__all__ = [
    "ChatStreamDecoder",
    "ErrorReply",
    "Function",
    "FunctionHandler",
    "JSONReply",
    "LoopbackChatServer",
    "OpenAILLM",
    "RecordedRequest",
    "SSEDecoder",
    "SSEEvent",
    "StreamReply",
    "ToolCallRequest",
    "chunk",
    "parse_arguments",
    "payload_error",
    "status_error",
    "text_chunks",
    "tool_call_chunks",
]


def __getattr__(name: str) -> Any:
    if name == "OpenAILLM":
        from .openai import OpenAILLM

        return OpenAILLM
    raise AttributeError(f"module 'rxvoice.services' has no attribute {name!r}")
