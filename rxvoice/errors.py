"""Typed errors: every way rxvoice refuses input has a class here.

Each error says what was wrong and, where there is one, what to do instead.
They also subclass the matching builtin (``TypeError``, ``ValueError``,
``FileNotFoundError``) so code written against the builtins keeps working.
"""

from __future__ import annotations

__all__ = [
    "ConfigurationError",
    "FrameError",
    "InvalidAudioError",
    "InvalidFrameError",
    "InvalidFrameFieldError",
    "InvalidMessageError",
    "InvalidToolCallError",
    "InvalidTranscriptError",
    "ModelError",
    "ModelNotFoundError",
    "RxVoiceError",
    "RxVoiceWarning",
    "ServiceError",
    "SummarizationError",
]


class RxVoiceError(Exception):
    """Base of every error rxvoice raises on purpose."""


class FrameError(RxVoiceError):
    """A frame could not be accepted."""


class InvalidFrameError(FrameError, TypeError):
    """Something that is not a frame (or not the frame expected) reached a stage."""


class InvalidFrameFieldError(FrameError, ValueError, TypeError):
    """A frame field of the wrong type or out of range: a timeout of ``inf``, a latency given as a string,
    ``None`` or ``True`` where a number belongs, a flag that is not a ``bool``.

    It is both a ``ValueError`` and a ``TypeError``, so code catching either keeps working.
    """


class InvalidAudioError(FrameError, ValueError):
    """Audio of the wrong rate, width, length or content (NaN, inf, odd byte count)."""


class InvalidTranscriptError(FrameError, ValueError):
    """A transcription whose text is not a string, or a transcript file that cannot be replayed."""


class InvalidMessageError(RxVoiceError, ValueError):
    """A conversation message of an unknown role or the wrong shape."""


class InvalidToolCallError(InvalidMessageError):
    """A tool call or tool result that cannot be written into the conversation."""


class ConfigurationError(RxVoiceError, ValueError):
    """A configuration that cannot work (negative timeouts, no stop strategy, ...)."""


class ModelError(RxVoiceError, RuntimeError):
    """A model failed to load or to run."""


class ModelNotFoundError(ModelError, FileNotFoundError):
    """A model file was looked for and not found; the message says where to put it."""


class ServiceError(RxVoiceError, RuntimeError):
    """A remote service (an LLM over HTTP) failed; the session goes on."""

    def __init__(self, message: str, *, status: int | None = None, retryable: bool = False):
        super().__init__(message)
        self.status = status
        self.retryable = retryable


class SummarizationError(RxVoiceError, RuntimeError):
    """A summary could not be produced or applied; the conversation is left as it was."""


class RxVoiceWarning(UserWarning):
    """Something that works but probably not as meant (a stage subscribed twice, say)."""
