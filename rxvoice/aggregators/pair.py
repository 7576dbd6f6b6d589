"""A user and an assistant aggregator sharing one conversation."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from reactivex import abc

from ..context import LLMContext
from ..errors import ConfigurationError
from ..summarization import AutoSummarizationConfig
from ..turns.config import TurnsConfig
from ..turns.mute import MuteStrategy
from .assistant import AssistantAggregator
from .summarizer import Summarizer
from .user import UserAggregator
from .vad_config import VADConfig

__all__ = ["Pair"]


class Pair:
    """The user and assistant halves of one conversation.

    Place ``pair.user()`` after speech-to-text and before the model, and
    ``pair.assistant()`` at the end of the pipeline::

        pipeline(stt, pair.user(), llm, tts, output, pair.assistant())

    Both halves write to one :class:`~rxvoice.LLMContext`, so the
    conversation accrues across turns.

    Args:
        context: The shared conversation (a new, empty one by default).
        turns: How the user's turn is decided (``WithTurns``); defaults
            stand without it.
        vad: Run a VAD inside the user aggregator (``WithVAD``).
        mute: Mute strategies (``WithMuteStrategies``); merged with
            ``turns.mute``.
        summarization: Summarize automatically past these thresholds
            (``WithSummarization``). On-demand summaries always work.
        tool_change_messages: Announce toolset changes to the model
            (``WithToolChangeMessages``).
        scheduler: The scheduler both halves run on (default: the one given
            at subscribe time).
    """

    def __init__(
        self,
        context: LLMContext | None = None,
        *,
        turns: TurnsConfig | None = None,
        vad: VADConfig | None = None,
        mute: Sequence[MuteStrategy[Any]] = (),
        summarization: AutoSummarizationConfig | None = None,
        tool_change_messages: bool = False,
        scheduler: abc.SchedulerBase | None = None,
    ) -> None:
        if context is not None and not isinstance(context, LLMContext):
            raise ConfigurationError(f"Pair needs an LLMContext, got {type(context).__name__}")
        if turns is not None and not isinstance(turns, TurnsConfig):
            raise ConfigurationError(f"turns must be a TurnsConfig, got {type(turns).__name__}")
        if vad is not None and not isinstance(vad, VADConfig):
            raise ConfigurationError(f"vad must be a VADConfig, got {type(vad).__name__}")
        for m in mute:
            if not isinstance(m, MuteStrategy):
                raise ConfigurationError(f"{m!r} is not a mute strategy")
        if summarization is not None and not isinstance(summarization, AutoSummarizationConfig):
            raise ConfigurationError("summarization must be an AutoSummarizationConfig")
        self._context = context if context is not None else LLMContext()
        self._user = UserAggregator(
            self._context, turns=turns, mute=mute, vad=vad,
            tool_change_messages=tool_change_messages, scheduler=scheduler,
        )
        summarizer = Summarizer(
            self._context, summarization, auto_trigger=summarization is not None
        )
        self._assistant = AssistantAggregator(
            self._context, summarizer=summarizer, tool_change_messages=tool_change_messages, scheduler=scheduler
        )

    def user(self) -> UserAggregator:
        """The user aggregator (the same object on every call)."""
        return self._user

    def assistant(self) -> AssistantAggregator:
        """The assistant aggregator (the same object on every call)."""
        return self._assistant

    def context(self) -> LLMContext:
        """The shared conversation."""
        return self._context

    def __iter__(self) -> Iterator[UserAggregator | AssistantAggregator]:
        """``user, assistant = pair``."""
        return iter((self._user, self._assistant))
