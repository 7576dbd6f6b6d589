"""Summarization settings (placeholder; completed with the summarizer)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["AutoSummarizationConfig", "SummaryConfig"]


@dataclass(frozen=True)
class SummaryConfig:
    """How a summary is made."""

    target_context_tokens: int = 6000
    min_messages_after_summary: int = 4
    summarization_prompt: str | None = None
    summary_message_template: str = "Conversation summary: {summary}"
    llm: Any = None
    summarization_timeout: float = 120.0


@dataclass(frozen=True)
class AutoSummarizationConfig:
    """When a summary is made automatically."""

    max_context_tokens: int | None = 8000
    max_unsummarized_messages: int | None = 20
    summary: SummaryConfig = SummaryConfig()
