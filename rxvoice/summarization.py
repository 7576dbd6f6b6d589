"""Conversation summarization: settings and the pure decisions behind them.

A long conversation is compressed by replacing its older messages with one
summary message. This module holds what that takes, with no frames, no
schedulers and no model: the settings (:class:`SummaryConfig`,
:class:`AutoSummarizationConfig`), the token estimate and thresholds that say
when, the cut that says which messages (:func:`messages_to_summarize`), the
transcript a model summarizes (:func:`format_transcript`) and the validation and
rewrite that apply its answer (:func:`apply_summary`). The
:class:`~rxvoice.aggregators.Summarizer` drives them.

The cut keeps the first system message, keeps the last
``min_messages_after_summary`` messages, and never separates a tool call from
its result: it stops before the earliest call whose result is not inside the
summarized range yet (still ``IN_PROGRESS``, an async call still running, or a
result that falls in the kept tail).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, NamedTuple, TypeAlias

from ._seconds import check_seconds
from .context import IN_PROGRESS, FrozenDict, Messages, estimate_message_tokens, estimate_text_tokens, user_message
from .errors import ConfigurationError, SummarizationError

if TYPE_CHECKING:
    from reactivex import Observable

__all__ = [
    "DEFAULT_SUMMARIZATION_PROMPT",
    "DEFAULT_SUMMARY_MESSAGE_TEMPLATE",
    "AppliedSummary",
    "AutoSummarizationConfig",
    "SummaryConfig",
    "SummaryModel",
    "SummaryRequest",
    "SummarySelection",
    "apply_summary",
    "check_cut",
    "estimate_context_tokens",
    "estimate_message_tokens",
    "estimate_text_tokens",
    "format_transcript",
    "messages_to_summarize",
    "should_summarize",
    "unsummarized_message_count",
]

DEFAULT_SUMMARIZATION_PROMPT = (
    "You summarize a conversation between a user and an assistant so that the assistant can carry on "
    "without the full history. Keep every key fact, decision, preference, name, number and commitment, "
    "and anything still open (questions not answered, tasks not done, tool calls and their results that "
    "still matter). Write short, factual statements in the third person. Leave out greetings, small talk "
    "and anything already resolved that no longer matters. Output only the summary."
)
"""The instruction given to the model that writes the summary (when none is configured)."""

DEFAULT_SUMMARY_MESSAGE_TEMPLATE = "Conversation summary: {summary}"
"""How the summary is written into the conversation; ``{summary}`` is replaced by it."""


# ---------------------------------------------------------------------------------------------
# Settings


def _positive_int(name: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigurationError(f"{name} must be an int >= {minimum}, got {value!r}")
    return value


@dataclass(frozen=True)
class SummaryConfig:
    """How a summary is made.

    Attributes:
        target_context_tokens: Roughly how long the summarized conversation may
            be (the summary's token budget); > 0.
        min_messages_after_summary: How many of the latest messages are always
            kept verbatim; >= 0.
        summarization_prompt: The instruction for the model; the default prompt
            (keep facts, decisions, preferences and open items; drop small talk)
            when ``None`` or empty.
        summary_message_template: The summary message's text; must contain
            ``{summary}``. The message is written with the ``user`` role.
        llm: A dedicated model for summaries (e.g. a cheaper one): a callable
            ``(SummaryRequest) -> str | Awaitable[str] | Observable[str]``, or a
            stage that answers an ``LLMContextSummaryRequestFrame`` with an
            ``LLMContextSummaryResultFrame``. ``None``: the pipeline's own model
            is asked, through a request frame sent upstream.
        summarization_timeout: Seconds (scheduler time) a summary may take; a
            later answer is ignored. > 0.
    """

    target_context_tokens: int = 6000
    min_messages_after_summary: int = 4
    summarization_prompt: str | None = None
    summary_message_template: str = DEFAULT_SUMMARY_MESSAGE_TEMPLATE
    llm: Any = None
    summarization_timeout: float = 120.0

    def __post_init__(self) -> None:
        _positive_int("target_context_tokens", self.target_context_tokens, 1)
        _positive_int("min_messages_after_summary", self.min_messages_after_summary, 0)
        if self.summarization_prompt is not None and not isinstance(self.summarization_prompt, str):
            raise ConfigurationError(f"summarization_prompt must be a string, got {self.summarization_prompt!r}")
        template = self.summary_message_template
        if not isinstance(template, str) or "{summary}" not in template:
            raise ConfigurationError(
                f"summary_message_template must be a string containing {{summary}}, got {template!r}"
            )
        check_seconds(self.summarization_timeout, "summarization_timeout", positive=True)
        if self.llm is not None and not callable(self.llm) and not callable(getattr(self.llm, "duplex", None)):
            # A stage is recognized by its duplex method here (this module sits below the pipeline); the
            # summarizer checks it is a real Stage when it asks it.
            raise ConfigurationError(
                f"llm must be a callable (SummaryRequest) -> str or a model stage, got {self.llm!r}"
            )

    @property
    def prompt(self) -> str:
        """The instruction actually used (the default one when none is set)."""
        return self.summarization_prompt or DEFAULT_SUMMARIZATION_PROMPT


@dataclass(frozen=True)
class AutoSummarizationConfig:
    """When a conversation is summarized automatically, and how.

    A summary is requested when a response starts and either threshold is
    reached. ``None`` disables a threshold; disabling both is refused. A
    ``target_context_tokens`` above ``max_context_tokens`` is lowered to 80% of
    it (a summary longer than the limit would trigger again at once).

    Attributes:
        max_context_tokens: Estimated tokens of the whole conversation; > 0 or ``None``.
        max_unsummarized_messages: Messages since the last summary (the leading
            system message and the summary itself not counted); >= 1 or ``None``.
        summary_config: How the summary is made.

    Examples:
        >>> AutoSummarizationConfig(max_context_tokens=1000).summary_config.target_context_tokens
        800
    """

    max_context_tokens: int | None = 8000
    max_unsummarized_messages: int | None = 20
    summary_config: SummaryConfig = field(default_factory=SummaryConfig)

    def __post_init__(self) -> None:
        if self.max_context_tokens is None and self.max_unsummarized_messages is None:
            raise ConfigurationError(
                "AutoSummarizationConfig needs max_context_tokens or max_unsummarized_messages (both are None)"
            )
        if self.max_context_tokens is not None:
            _positive_int("max_context_tokens", self.max_context_tokens, 1)
        if self.max_unsummarized_messages is not None:
            _positive_int("max_unsummarized_messages", self.max_unsummarized_messages, 1)
        if not isinstance(self.summary_config, SummaryConfig):
            raise ConfigurationError(f"summary_config must be a SummaryConfig, got {self.summary_config!r}")
        limit = self.max_context_tokens
        if limit is not None and self.summary_config.target_context_tokens > limit:
            target = max(1, int(0.8 * limit))
            object.__setattr__(self, "summary_config", replace(self.summary_config, target_context_tokens=target))


@dataclass(frozen=True)
class SummaryRequest:
    """What a dedicated summary model is asked: summarize ``messages`` (``transcript``) per ``prompt``.

    Attributes:
        request_id: Identifies the request (the answer is matched to it).
        messages: The messages to summarize, as they stand in the conversation.
        transcript: The same messages as text (see :func:`format_transcript`).
        prompt: The instruction.
        target_context_tokens: The token budget (``max_tokens`` for the call).
        last_summarized_index: Index of the last message summarized.
        min_messages_to_keep: How many recent messages stay verbatim.
        timeout: Seconds the answer may take.
    """

    request_id: str
    messages: tuple[Any, ...]
    transcript: str
    prompt: str
    target_context_tokens: int
    last_summarized_index: int
    min_messages_to_keep: int
    timeout: float

    def as_messages(self) -> list[dict[str, str]]:
        """The request as chat messages: the prompt as system, the history as the user's turn."""
        return [
            {"role": "system", "content": self.prompt},
            {"role": "user", "content": "Conversation history:\n" + self.transcript},
        ]


SummaryModel: TypeAlias = "Callable[[SummaryRequest], str | Awaitable[str] | Observable[str]]"
"""A dedicated summary model: a function of the request returning the summary (or an awaitable/observable of it)."""


# ---------------------------------------------------------------------------------------------
# Token estimate and thresholds


def estimate_context_tokens(messages: Sequence[Any]) -> int:
    """The conversation's estimated tokens (sum of :func:`estimate_message_tokens`).

    A snapshot's :class:`~rxvoice.context.Messages` keep this sum as they
    grow, so for them it costs O(1), whatever the conversation's length; any
    other sequence is summed.
    """
    if isinstance(messages, Messages):
        return messages.tokens
    return sum(estimate_message_tokens(m) for m in messages)


def _is_system(message: Any) -> bool:
    return isinstance(message, Mapping) and message.get("role") == "system"


def unsummarized_message_count(messages: Sequence[Any], summary_message: Any = None) -> int:
    """Messages since the last summary: all, minus a leading system message and the summary right after it."""
    n = len(messages)
    head = 1 if n and _is_system(messages[0]) else 0
    if summary_message is not None and n > head and messages[head] == summary_message:
        head += 1
    return n - head


def should_summarize(messages: Sequence[Any], config: AutoSummarizationConfig, summary_message: Any = None) -> bool:
    """Whether either automatic threshold is reached."""
    limit = config.max_unsummarized_messages
    if limit is not None and unsummarized_message_count(messages, summary_message) >= limit:
        return True
    tokens = config.max_context_tokens
    return tokens is not None and estimate_context_tokens(messages) >= tokens


# ---------------------------------------------------------------------------------------------
# The cut


class SummarySelection(NamedTuple):
    """Which messages a summary replaces: ``messages[start:end]`` (empty when ``start >= end``)."""

    start: int
    end: int

    @property
    def empty(self) -> bool:
        """Whether there is nothing to summarize."""
        return self.start >= self.end

    @property
    def last_index(self) -> int:
        """Index of the last message summarized (-1 when there is none)."""
        return self.end - 1 if not self.empty else -1


def _async_payload(content: Any) -> Mapping[str, Any] | None:
    if not isinstance(content, str) or '"async_tool"' not in content:
        return None
    try:
        payload = json.loads(content)
    except ValueError:
        return None
    if isinstance(payload, Mapping) and payload.get("type") == "async_tool":
        return payload
    return None


def _unresolved_calls(messages: Sequence[Any], start: int, end: int) -> list[int]:
    """Indices of tool calls in ``messages[start:end]`` whose final result is not in that range."""
    calls: dict[str, int] = {}
    resolved: set[str] = set()
    for i in range(start, end):
        m = messages[i]
        if not isinstance(m, Mapping):
            continue
        role = m.get("role")
        if role == "assistant":
            for call in m.get("tool_calls") or ():
                if isinstance(call, Mapping) and isinstance(call.get("id"), str):
                    calls.setdefault(call["id"], i)
        elif role == "tool":
            content = m.get("content")
            payload = _async_payload(content)
            running = content == IN_PROGRESS or (payload is not None and payload.get("status") != "finished")
            if not running:
                resolved.add(str(m.get("tool_call_id")))
        elif role == "developer":
            payload = _async_payload(m.get("content"))
            if payload is not None and payload.get("status") == "finished":
                resolved.add(str(payload.get("tool_call_id")))
    return sorted(i for call_id, i in calls.items() if call_id not in resolved)


def messages_to_summarize(messages: Sequence[Any], keep: int) -> SummarySelection:
    """Which messages to summarize, keeping the last ``keep``.

    A leading system message is never summarized. The range ends ``keep``
    messages before the end, or earlier, before the first tool call whose
    result is not inside the range (so a call and its result are always
    summarized together or kept together).

    Examples:
        >>> msgs = [{"role": "system", "content": "s"}] + [{"role": "user", "content": str(i)} for i in range(6)]
        >>> messages_to_summarize(msgs, 4)
        SummarySelection(start=1, end=3)
    """
    if keep < 0:
        raise ValueError(f"keep must be >= 0, got {keep}")
    n = len(messages)
    if n <= keep:
        return SummarySelection(0, 0)
    start = 1 if _is_system(messages[0]) else 0
    end = n - keep
    if start >= end:
        return SummarySelection(start, start)
    # Moving the end before a call can leave an earlier call's result outside the range in turn
    # ([call a, call b, result a] with b unanswered): repeat until the range answers all its calls.
    while start < end:
        unresolved = _unresolved_calls(messages, start, end)
        if not unresolved:
            break
        end = unresolved[0]
    return SummarySelection(start, max(start, end))


def check_cut(messages: Sequence[Any], last_index: int, keep: int) -> str | None:
    """Why replacing ``messages[..last_index]`` with a summary is refused, or ``None`` if it is fine."""
    n = len(messages)
    if not 0 <= last_index < n:
        return f"last_summarized_index {last_index} is outside the conversation (0..{n - 1})"
    start = 1 if _is_system(messages[0]) else 0
    if last_index < start:
        return "nothing would be summarized (the index points at the system message)"
    kept = n - 1 - last_index
    if kept < keep:
        return f"only {kept} message(s) would be kept; at least {keep} must be"
    if _unresolved_calls(messages, start, last_index + 1):
        return "the cut would separate a tool call from its result"
    return None


# ---------------------------------------------------------------------------------------------
# The transcript


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list | tuple):
        return " ".join(
            str(p.get("text", "")) for p in content if isinstance(p, Mapping) and p.get("type") == "text"
        )
    return ""


def format_transcript(messages: Sequence[Any]) -> str:
    """The messages as text for a summary model, one entry per message, blank lines between.

    ``ROLE: text``; tool calls as ``TOOL_CALL: name(arguments)``; tool results as
    ``TOOL_RESULT[id]: content``. Provider-specific messages are left out.

    Examples:
        >>> print(format_transcript([{"role": "user", "content": "Weather?"},
        ...     {"role": "assistant", "tool_calls": [{"id": "c1", "function": {"name": "w", "arguments": "{}"}}]},
        ...     {"role": "tool", "tool_call_id": "c1", "content": "sunny"}]))
        USER: Weather?
        <BLANKLINE>
        TOOL_CALL: w({})
        <BLANKLINE>
        TOOL_RESULT[c1]: sunny
    """
    entries: list[str] = []
    for m in messages:
        if not isinstance(m, Mapping):
            continue
        role = str(m.get("role", "")).upper()
        text = _text_of(m.get("content"))
        lines: list[str] = []
        if role == "TOOL":
            lines.append(f"TOOL_RESULT[{m.get('tool_call_id', '')}]: {text}")
        else:
            if text:
                lines.append(f"{role}: {text}")
            for call in m.get("tool_calls") or ():
                fn = call.get("function") if isinstance(call, Mapping) else None
                if isinstance(fn, Mapping):
                    lines.append(f"TOOL_CALL: {fn.get('name', '')}({fn.get('arguments', '')})")
        if lines:
            entries.append("\n".join(lines))
    return "\n\n".join(entries)


# ---------------------------------------------------------------------------------------------
# Applying a summary


class AppliedSummary(NamedTuple):
    """The conversation after a summary, and the counts reported for it."""

    messages: list[Any]
    summary_message: FrozenDict
    original_message_count: int
    new_message_count: int
    summarized_message_count: int
    preserved_message_count: int


def summary_message(summary: str, template: str = DEFAULT_SUMMARY_MESSAGE_TEMPLATE) -> FrozenDict:
    """The message a summary is written as: a user message from ``template``."""
    return user_message(template.replace("{summary}", summary))


def apply_summary(
    messages: Sequence[Any],
    summary: str,
    last_index: int,
    *,
    keep: int,
    template: str = DEFAULT_SUMMARY_MESSAGE_TEMPLATE,
) -> AppliedSummary:
    """Replace ``messages[start..last_index]`` with one summary message.

    The result is ``[leading system message] + [summary] + messages[last_index + 1:]``.

    Raises:
        SummarizationError: The summary is empty, or the cut is refused (see
            :func:`check_cut`); the conversation is to be left as it is.
    """
    text = summary.strip() if isinstance(summary, str) else ""
    if not text:
        raise SummarizationError("the summary is empty")
    reason = check_cut(messages, last_index, keep)
    if reason is not None:
        raise SummarizationError(reason)
    preserved_system = 1 if _is_system(messages[0]) else 0
    head = [messages[0]] if preserved_system else []
    message = summary_message(text, template)
    recent = list(messages[last_index + 1 :])
    new = [*head, message, *recent]
    return AppliedSummary(
        new,
        message,
        len(messages),
        len(new),
        last_index + 1 - preserved_system,
        len(recent) + preserved_system,
    )
