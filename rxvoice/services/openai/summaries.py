"""Summaries the summarizer asks the model for: one request each, answered downstream with a result frame.

A ``LLMContextSummaryRequestFrame`` names the older part of the
conversation to summarize; the model's streamed text comes back, gathered,
as one ``LLMContextSummaryResultFrame`` (its error set when there was
nothing to summarize, no loop, a failure, an empty answer or a timeout on
the session's scheduler).
"""

from __future__ import annotations

import asyncio
from functools import partial
from typing import Any

from reactivex import abc

from ...errors import ServiceError
from ...frames import Frame, LLMContextSummaryRequestFrame, LLMContextSummaryResultFrame, LLMTextFrame
from ...summarization import format_transcript, messages_to_summarize
from .._jobs import Job
from ..chat_stream import ChatStreamDecoder
from .link import Link
from .stream import read_answer

__all__ = ["Summaries"]


class Summaries:
    """The summaries one session is computing."""

    def __init__(self, link: Link) -> None:
        self.link = link
        self.pending: dict[str, tuple[Job, abc.DisposableBase]] = {}

    def summarize(self, request: LLMContextSummaryRequestFrame) -> None:
        """Summarize the older part of the conversation, as the summarizer asked; answer with a result frame."""
        link = self.link
        messages = request.context.messages
        selection = messages_to_summarize(messages, request.min_messages_to_keep)
        if selection.empty:
            self._result(request.request_id, "", -1, "there is nothing to summarize yet")
            return
        loop = link.resolve_loop()
        if loop is None:
            self._result(request.request_id, "", -1, "no event loop to run the summary request on")
            return
        transcript = format_transcript(messages[selection.start : selection.end])
        llm = link.llm
        body: dict[str, Any] = {
            "model": llm.model, **llm.params, "stream": True,
            "max_tokens": request.target_context_tokens,
            "messages": [
                {"role": "system", "content": request.summarization_prompt},
                {"role": "user", "content": "Conversation history:\n" + transcript},
            ],
        }
        rid = request.request_id
        timer = link.later(request.summarization_timeout, partial(self._timed_out, request))
        job = link.spawn(loop, self._run(rid, selection.last_index, body))
        self.pending[rid] = (job, timer)

    def cancel(self) -> None:
        """Cancel every summary in flight (the session is cancelled)."""
        for job, timer in self.pending.values():
            job.cancel()
            timer.dispose()
        self.pending.clear()

    async def _run(self, request_id: str, last_index: int, body: dict[str, Any]) -> None:
        """The summary request (on the loop): the streamed text gathered, then one result in the session."""
        pieces: list[Frame] = []
        try:
            await read_answer(self.link, body, ChatStreamDecoder(), opened=lambda: None, frames=pieces.extend,
                              done=lambda: None, drain=False)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            error = exc if isinstance(exc, ServiceError) else ServiceError(f"the summary request failed: {exc!r}")
            self.link.enter(partial(self._done, request_id, "", -1, error))
            return
        text = "".join(f.text for f in pieces if type(f) is LLMTextFrame).strip()
        self.link.enter(partial(self._done, request_id, text, last_index, None))

    def _done(self, request_id: str, summary: str, last_index: int, error: ServiceError | None) -> None:
        entry = self.pending.pop(request_id, None)
        if entry is None:
            return  # timed out or cancelled: already answered
        entry[1].dispose()
        if error is not None:
            self.link.failed(error, "the summary request")
            self._result(request_id, "", -1, str(error))
        elif not summary:
            self._result(request_id, "", -1, "the model returned an empty summary")
        else:
            self._result(request_id, summary, last_index, None)

    def _timed_out(self, request: LLMContextSummaryRequestFrame) -> None:
        entry = self.pending.pop(request.request_id, None)
        if entry is None:
            return
        entry[0].cancel()
        message = f"the summary took more than {request.summarization_timeout:g} s; cancelled"
        self._result(request.request_id, "", -1, message)

    def _result(self, request_id: str, summary: str, last_index: int, error: str | None) -> None:
        self.link.port.push_down(LLMContextSummaryResultFrame(request_id, summary, last_index, error))
