"""A model stage for OpenAI-compatible chat-completions servers, streamed over HTTP.

:class:`OpenAILLM` stands where :class:`~rxvoice.testing.ScriptedLLM` does
(between the user and assistant aggregators) and answers each
``LLMContextFrame``, whichever way it travels, with a streaming
``POST /chat/completions``. The request runs in a task on the asyncio loop,
off the session; every piece of the answer re-enters the session through its
gate, so the stage's handler still sees one input at a time and an
interruption, handled in the session, is always in time to drop what the
cancelled stream would have said.

Requires an asyncio loop: run the pipeline with :func:`rxvoice.pipeline.arun`,
or subscribe it with ``scheduler=loop_scheduler(loop)`` (then frames may enter
from any thread), or pass ``loop=``. Install with ``pip install
'rxvoice[openai]'``.

What comes out, downstream: ``LLMFullResponseStartFrame`` once the server
accepted the request, ``LLMThoughtStartFrame``/``LLMThoughtTextFrame``/
``LLMThoughtEndFrame`` when the server streams reasoning, one
``LLMTextFrame`` per content delta, ``LLMFullResponseEndFrame``; then, for
tool calls, ``FunctionCallsStartedFrame`` (both ways),
``FunctionCallInProgressFrame`` per call and, as each handler returns,
``FunctionCallResultFrame`` (both ways). The assistant aggregator writes the
results and sends the context back up, which runs the model again. A
``LLMContextSummaryRequestFrame`` (from the summarizer) is answered with an
``LLMContextSummaryResultFrame`` downstream.

Data and control frames that arrive downstream while an answer streams wait
behind it (they came after the context, so they leave after the answer);
system frames pass at once. An interruption drops the held frames that are
interruptible, as Pipecat does.

One job a module: :mod:`~.llm` (the stage's configuration and its session),
:mod:`~.stream` (the streamed answer), :mod:`~.tools` (the tool calls),
:mod:`~.summaries` (the summaries the summarizer asks for), :mod:`~.classifier`
(:class:`OpenAITurnClassifier`, the choice question a
:class:`~rxvoice.turns.ClassifierStop` asks).
"""

from __future__ import annotations

from .classifier import CLASSIFIER_PROMPT, OpenAITurnClassifier
from .llm import DEFAULT_BASE_URL, OPENAI_EVENTS, OpenAILLM

__all__ = ["CLASSIFIER_PROMPT", "DEFAULT_BASE_URL", "OPENAI_EVENTS", "OpenAILLM", "OpenAITurnClassifier"]
