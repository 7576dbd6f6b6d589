"""HTTP for the speech stages: the whole answer bounded by one deadline, credentials kept out of URLs.

httpx's ``timeout`` bounds each network operation (a connect, one read), not
the answer: a server that drips a byte now and then keeps every read short
and the request open for as long as it likes. Cancelling the request's
coroutine bounds the whole exchange (connecting, sending, waiting, reading)
and closes its connection cleanly. The speech stages call from worker
threads, so their requests run as coroutines on one asyncio loop of their own
(a daemon thread, started on first use, shared by every stage) and the
worker waits for the result. Written here because httpx offers no total
deadline for a synchronous request.

Credentials written in a base URL (``https://user:key@host/v1``) are taken
out of it and sent as basic auth, as httpx itself would: the URL the stages
keep, show and log (httpx logs every request at INFO) holds none.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import threading
from dataclasses import dataclass
from typing import Any
from urllib.parse import SplitResult, unquote, urlsplit

from .._seconds import check_seconds
from ..errors import ConfigurationError, ServiceError
from ..pipeline.offload import Offload, io_offload

__all__ = ["Answer", "BoundedHTTP", "HTTPStage", "endpoint", "http_error", "need_httpx", "split_credentials"]


@dataclass(frozen=True)
class Answer:
    """A whole HTTP answer: its status, its media type (lower case, no parameters) and its body."""

    status: int
    media_type: str
    body: bytes
    encoding: str

    def text(self) -> str:
        """The body as text (in the charset the answer named, else UTF-8; bad bytes replaced)."""
        try:
            return self.body.decode(self.encoding or "utf-8", "replace")
        except LookupError:  # a charset Python does not know
            return self.body.decode("utf-8", "replace")


def split_credentials(parts: SplitResult) -> tuple[str, tuple[str, str] | None]:
    """The URL without user and password, and those two (``None`` when it had none)."""
    netloc = parts.netloc
    if "@" not in netloc:
        return parts.geturl(), None
    userinfo, _, host = netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    return parts._replace(netloc=host).geturl(), (unquote(user), unquote(password))


_UNWIND = 5.0  # seconds a cancelled request may take to unwind before the caller stops waiting
_LOOP: asyncio.AbstractEventLoop | None = None
_LOOP_LOCK = threading.Lock()


def _loop() -> asyncio.AbstractEventLoop:
    """The speech stages' own loop, running on a daemon thread (started on first use)."""
    global _LOOP
    loop = _LOOP
    if loop is None:
        with _LOOP_LOCK:
            loop = _LOOP
            if loop is None:
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="rxvoice-http", daemon=True).start()
                _LOOP = loop
    return loop


class BoundedHTTP:
    """An ``httpx.AsyncClient`` on the shared loop: :meth:`post` from any thread, the whole answer bounded.

    Args:
        who: How errors name the server (``"the speech server"``).
        timeout: Seconds the whole exchange may take.
        auth: User and password for basic auth (from the base URL), or ``None``.
    """

    def __init__(self, who: str, timeout: float, auth: tuple[str, str] | None = None) -> None:
        self.who = who
        self.timeout = timeout
        self.auth = auth
        self._client: Any = None  # an httpx.AsyncClient, made and used on the loop only

    def post(self, url: str, **request: Any) -> Answer:
        """POST and read the whole answer; a ``ServiceError`` (retryable) when it fails or takes too long.

        Blocks the calling thread for ``timeout`` seconds at most (plus a
        moment for the cancelled request to unwind).
        """
        loop = _loop()
        future = asyncio.run_coroutine_threadsafe(self._post(url, request), loop)
        try:
            return future.result(self.timeout + _UNWIND)
        except concurrent.futures.TimeoutError:  # the loop itself is stuck: give up waiting on it
            future.cancel()
            raise ServiceError(f"{self.who} did not answer within {self.timeout:g} s", retryable=True) from None

    async def _post(self, url: str, request: dict[str, Any]) -> Answer:
        import httpx

        if self._client is None:
            self._client = httpx.AsyncClient(timeout=self.timeout)
        if self.auth is not None:
            request["auth"] = httpx.BasicAuth(*self.auth)
        try:
            async with asyncio.timeout(self.timeout):
                async with self._client.stream("POST", url, **request) as response:
                    body = await response.aread()
                    kind = response.headers.get("content-type", "")
                    return Answer(response.status_code, kind.split(";")[0].strip().lower(), body,
                                  response.charset_encoding or "")
        except TimeoutError:
            raise ServiceError(
                f"{self.who} did not answer within {self.timeout:g} s; the request was cancelled", retryable=True
            ) from None
        except httpx.HTTPError as exc:
            raise ServiceError(f"{self.who} did not answer: {exc!r}", retryable=True) from exc

    def close(self) -> None:
        """Close the connections (the client reopens on the next request)."""
        client, self._client = self._client, None
        loop = _LOOP
        if client is not None and loop is not None and not loop.is_closed():
            done = asyncio.run_coroutine_threadsafe(client.aclose(), loop)
            try:
                done.result(5.0)
            except Exception:  # closing is best effort: the connections die with the process
                return


def need_httpx(stage: object) -> None:
    """Raise a ``ConfigurationError`` naming the extra when httpx is missing (the HTTP speech stages need it)."""
    import importlib.util

    if importlib.util.find_spec("httpx") is None:
        raise ConfigurationError(f"{type(stage).__name__} needs httpx: pip install 'rxvoice[openai]'")


def http_error(who: str, status: int, body: str) -> ServiceError:
    """The typed error for an HTTP error answer (retryable for 408, 429 and 5xx)."""
    detail = " ".join(body.split())[:200]
    return ServiceError(
        f"{who} answered HTTP {status}: {detail or '(no body)'}", status=status,
        retryable=status in (408, 429) or status >= 500,
    )


def endpoint(
    base_url: str | None, api_key: str | None
) -> tuple[str, dict[str, str], tuple[str, str] | None]:
    """The API root (without credentials), the auth header, and basic-auth credentials from the URL, checked."""
    base = base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
    parts = urlsplit(base)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        shown = split_credentials(parts)[0] if parts.netloc else base
        raise ConfigurationError(
            f"base_url must be an http(s) URL such as https://api.openai.com/v1, got {shown!r}"
        )
    key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
    if not key and parts.hostname == "api.openai.com":
        raise ConfigurationError("OpenAI's API needs a key: pass api_key= or set OPENAI_API_KEY")
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    root, auth = split_credentials(parts)
    return root.rstrip("/"), headers, auth


class HTTPStage:
    """What an OpenAI-compatible speech stage is configured with, checked once: its model, where it posts, how.

    Args:
        name: The stage's name (for the errors).
        model: The model name sent with each request.
        path: The endpoint below the API root (``audio/transcriptions``).
        base_url: The API root (default ``OPENAI_BASE_URL``, else OpenAI's).
        api_key: Sent as a bearer token (default ``OPENAI_API_KEY``).
        timeout: Seconds the whole answer may take.
    """

    __slots__ = ("auth", "base_url", "headers", "model", "timeout", "url")

    def __init__(self, name: str, model: object, path: str, base_url: str | None, api_key: str | None,
                 timeout: object) -> None:
        self.timeout = check_seconds(timeout, "timeout", positive=True)
        if not isinstance(model, str) or not model:
            raise ConfigurationError(f"{name} needs a model name, got {model!r}")
        self.model = model
        self.base_url, self.headers, self.auth = endpoint(base_url, api_key)
        self.url = f"{self.base_url}/{path}"

    @staticmethod
    def stage_arguments(stage: object, kwargs: dict[str, Any], timeout: object, offload: Offload | None) -> None:
        """The stage's own defaults, before its base class sees them: httpx present, the requests on the I/O
        threads, an end waiting a second longer than a request may take."""
        need_httpx(stage)
        seconds = check_seconds(timeout, "timeout", positive=True)
        kwargs.setdefault("end_grace", seconds + 1.0)
        kwargs["offload"] = offload if offload is not None else io_offload
