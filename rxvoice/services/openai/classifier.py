"""A turn-completion classifier that asks an OpenAI-compatible model a choice question.

:class:`~rxvoice.turns.ClassifierStop` asks it, off the session, whether the
user finished their turn: the recent conversation and the turn's words go
to the model with a short instruction, and the first word of its answer is
the verdict (``complete``, ``short`` or ``long``). A short answer is all it
needs (``max_tokens`` 3, temperature 0). It blocks on the request (it runs on
a worker), bounded by ``timeout`` seconds; ``ClassifierStop.fail_open_after``
bounds what the turn waits for it, whatever the network does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from ...errors import ConfigurationError, ServiceError
from ...turns.classifier import ClassifyRequest, TurnCompletion, parse_completion
from .._http import endpoint
from ..chat_stream import status_error

__all__ = ["CLASSIFIER_PROMPT", "OpenAITurnClassifier"]

CLASSIFIER_PROMPT = (
    "You watch a spoken conversation between a user and a voice assistant, transcribed by speech "
    "recognition. The user has just stopped talking. Decide whether they finished their turn. Answer with "
    "one word: complete (they are done and expect an answer now), short (they paused mid-thought and will go "
    "on within a few seconds), or long (they asked for time, or are looking something up, and will go on "
    "later)."
)
"""The instruction the model is given (the conversation and the user's words follow it)."""


class OpenAITurnClassifier:
    """Asks a chat-completions model (OpenAI's, or any server speaking its API) whether a turn is over.

    Args:
        model: The model name.
        base_url: The API's root (``.../v1``); default ``OPENAI_BASE_URL``, else OpenAI's.
        api_key: Default ``OPENAI_API_KEY``.
        prompt: The instruction (:data:`CLASSIFIER_PROMPT`).
        timeout: Seconds the request may take (the turn waits at most
            ``ClassifierStop.fail_open_after`` for it anyway).
        client: An ``httpx.Client`` to use (the caller closes it).
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        prompt: str = CLASSIFIER_PROMPT,
        timeout: float = 2.0,
        client: httpx.Client | None = None,
    ) -> None:
        if not isinstance(model, str) or not model:
            raise ConfigurationError(f"OpenAITurnClassifier needs a model name, got {model!r}")
        root, bearer, auth = endpoint(base_url, api_key)
        if not isinstance(timeout, int | float) or isinstance(timeout, bool) or not 0 < timeout <= 60:
            raise ConfigurationError(f"OpenAITurnClassifier.timeout must be seconds in (0, 60], got {timeout!r}")
        self.model = model
        self.url = f"{root}/chat/completions"
        self.prompt = prompt
        self.timeout = float(timeout)
        self.headers = bearer
        self.auth: Any = httpx.BasicAuth(*auth) if auth is not None else None
        self.client = client

    @classmethod
    def like(cls, llm: Any, **kwargs: Any) -> OpenAITurnClassifier:
        """The classifier asking the same model, at the same place, as an ``OpenAILLM`` stage."""
        auth = getattr(llm, "request_auth", {}).get("auth")
        classifier = cls(llm.model, base_url=llm.base_url, api_key="", **kwargs)
        classifier.headers = {k: v for k, v in llm.headers.items() if k.lower() == "authorization"}
        classifier.auth = auth
        return classifier

    def __repr__(self) -> str:
        return f"OpenAITurnClassifier({self.model!r})"

    def body(self, request: ClassifyRequest) -> dict[str, Any]:
        """The JSON body asked for ``request``."""
        lines = [f"{m.get('role', 'user')}: {m.get('content', '')}" for m in request.conversation
                 if isinstance(m, Mapping)]
        said = "\n".join([*lines, f"user (just now): {request.words}"])
        return {"model": self.model, "stream": False, "temperature": 0, "max_tokens": 3,
                "messages": [{"role": "system", "content": self.prompt}, {"role": "user", "content": said}]}

    def classify(self, request: ClassifyRequest) -> TurnCompletion | str:
        """Ask the model; its answer's first word (junk goes back as it is, for the strategy to report)."""
        body = self.body(request)
        try:
            if self.client is not None:
                response = self.client.post(self.url, json=body, headers=self.headers, auth=self.auth,
                                            timeout=self.timeout)
            else:
                with httpx.Client(timeout=self.timeout) as client:
                    response = client.post(self.url, json=body, headers=self.headers, auth=self.auth)
        except httpx.HTTPError as exc:
            raise ServiceError(f"the turn classifier's request failed: {exc!r}", retryable=True) from exc
        if response.status_code >= 400:
            raise status_error(response.status_code, response.content)
        try:
            text = response.json()["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise ServiceError(f"the turn classifier's answer is not a chat completion: {response.text[:200]!r}") \
                from None
        verdict = parse_completion(text)
        return verdict if verdict is not None else str(text)
