"""The conversation summarizer (placeholder: completed in the summarization work)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..context import LLMContext
from ..events import EventRegistry
from ..frames import Frame
from ..pipeline.stage import Direction
from ..summarization import AutoSummarizationConfig

if TYPE_CHECKING:
    from .effects import ShellSession

__all__ = ["Summarizer", "SummarizerSession"]


class Summarizer:
    """Compresses a conversation that has grown long."""

    handled_types: frozenset[type[Frame]] = frozenset()

    def __init__(
        self, context: LLMContext, config: AutoSummarizationConfig | None = None, *, auto_trigger: bool = False
    ) -> None:
        self.context = context
        self.config = config or AutoSummarizationConfig()
        self.auto_trigger = auto_trigger
        self.events = EventRegistry(self, ("on_request_summarization", "on_summary_applied", "on_error"))

    def open(self, shell: ShellSession) -> SummarizerSession:
        return SummarizerSession(self, shell)


class SummarizerSession:
    """The summarizer of one session."""

    def __init__(self, summarizer: Summarizer, shell: ShellSession) -> None:
        self.summarizer = summarizer
        self.shell = shell

    def on_frame(self, frame: Frame, direction: Direction) -> None:
        return None

    def on_timer(self, owner: int, key: str) -> None:
        return None

    def on_result(self, owner: int, key: str, value: Any) -> None:
        return None

    def close(self) -> None:
        return None
