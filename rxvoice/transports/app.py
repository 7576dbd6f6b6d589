"""The web app around the transport: a page, one pipeline per WebSocket, the guards, admission and ``/load``.

Per upgrade at ``/ws``, in order: the Origin rule and the token
(:mod:`.guard`; refused with 403 / 401, the warnings rate-limited), then
the address's rate of session starts (:class:`.admission.SessionStarts`: a
client reconnecting in a loop is refused with 429 before the WebSocket is
opened, so it cannot slow the sessions down), then admission
(:mod:`.admission`; past the capacity the WebSocket is opened and closed at
once with code 1013 and the reason ``server full: ...``, which a page can
show, where a refused HTTP upgrade would reach it as a bare 1006), then the
greeting (when given) and the pipeline (with ``lazy``, built at the client's
first audio or words). ``GET /load`` answers ``{"load": ..., "sessions": ...,
"capacity": ..., "lag_ms": ...}`` for the app's dispatcher or load balancer (with several workers also
``"worker_sessions"``, the answering process's own).

Slow or silent clients cannot hold the server: a request whose headers are
not in after ``header_timeout`` seconds is dropped (aiohttp's keep-alive
timer, which also closes idle keep-alive connections then).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
from collections.abc import Callable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from aiohttp import WSCloseCode, web

from ..errors import ConfigurationError
from ..pipeline import Stage
from .admission import Admission, AdmissionControl, SessionStarts
from .guard import RefusalLog, origin_allowed, own_authorities, token_matches
from .websocket import CappedWebSocketResponse, Limits, WebSocketAudioTransport

__all__ = ["ADMISSION", "LIVE_TRANSPORTS", "STATIC", "LoopLag", "voice_app"]

log = logging.getLogger("rxvoice.transports.websocket")

LIVE_TRANSPORTS: web.AppKey[set[WebSocketAudioTransport]] = web.AppKey("rxvoice_transports", set)
"""The key of a :func:`voice_app`'s live connections: ``app[LIVE_TRANSPORTS]``."""

ADMISSION: web.AppKey[AdmissionControl] = web.AppKey("rxvoice_admission", AdmissionControl)
"""The key of a :func:`voice_app`'s admission control: ``app[ADMISSION].load()``."""

SESSION_STARTS = (4.0, 32)
"""The default :class:`~rxvoice.transports.SessionStarts` of a :func:`voice_app`: ``(rate, burst)``, 32 sessions
from one address at once, then 4 a second."""

REFUSAL_DELAY = 1.0
"""Seconds a start refused for its rate waits before its 429: a client retrying at once costs a sleeping
request a second, not a busy loop of refusals."""

STATIC = resources.files("rxvoice.transports") / "static"
"""The built-in page (``index.html``, its script and audio worklet): the live turn inspector of ``rxvoice serve``."""


class LoopLag:
    """How late the event loop runs: a timer every ``period`` seconds measures how late it fired.

    ``lag_ms`` is the worst lateness of the last ``window`` ticks: a server
    whose loop is behind answers everyone late, whatever its session count.
    """

    def __init__(self, period: float = 0.1, window: int = 30) -> None:
        self.period = period
        self.window = window
        self._recent: list[float] = []
        self._handle: asyncio.TimerHandle | None = None

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        due = loop.time() + self.period

        def tick() -> None:
            nonlocal due
            now = loop.time()
            self._recent.append(max(0.0, now - due))
            del self._recent[:-self.window]
            due = now + self.period
            self._handle = loop.call_at(due, tick)

        self._handle = loop.call_at(due, tick)

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    @property
    def lag_ms(self) -> float:
        return round(1000 * max(self._recent, default=0.0), 1)


def voice_app(
    make_stage: Callable[[WebSocketAudioTransport], Stage],
    *,
    static: Path | None = None,
    allowed_origins: tuple[str, ...] = (),
    limits: Limits | None = None,
    max_connections: int | None = None,
    max_sessions: int = 64,
    admission: AdmissionControl | None = None,
    token: str | None = None,
    client_words: bool = False,
    sample_rate: int = 16000,
    header_timeout: float = 10.0,
    session_starts: SessionStarts | None = None,
    lazy: bool = False,
    greeting: Mapping[str, Any] | None = None,
) -> web.Application:
    """An aiohttp app: the page at ``/``, its files under ``/static/``, one pipeline per WebSocket at ``/ws``.

    Args:
        make_stage: Builds the pipeline of a new connection (it may send events
            through the transport and register cleanups with ``transport.on_close``).
        static: The folder of the page (``index.html`` and what it loads); default: the built-in inspector.
        allowed_origins: Origins besides the server's own that may open ``/ws`` (``"https://host:port"``).
        limits: What each connection may send.
        max_connections: Deprecated name of ``max_sessions``.
        max_sessions: Sessions at once; more are refused with "server full" (close code 1013).
        admission: Shared admission control instead (several worker processes; ``max_sessions`` is then unused).
        token: When set, ``/ws`` needs it (``?token=`` or ``Authorization: Bearer``); others get 401.
        client_words: Take the client's own words (``{"type": "transcript"}``) into the pipeline.
        sample_rate: The rate of the clients' audio.
        header_timeout: Seconds a client has to send its request headers.
        session_starts: How fast one address may open sessions (default: 32 at once, then 4 a second; behind
            a proxy that hides the callers' addresses, give one sized for all of them).
        lazy: Build a connection's pipeline (``make_stage``) when its first audio or words arrive, not as
            it opens: a connection that never speaks costs its socket and nothing more (see
            :meth:`WebSocketAudioTransport.run`'s ``build``).
        greeting: An event sent to each client as soon as its session is admitted (before its pipeline is
            built, with ``lazy``): e.g. ``{"type": "hello", ...}``.

    ``app[LIVE_TRANSPORTS]`` holds the live connections, ``app[ADMISSION]`` the admission control.
    """
    if max_connections is not None:
        max_sessions = max_connections
    if isinstance(header_timeout, bool) or not isinstance(header_timeout, int | float) or header_timeout <= 0:
        raise ConfigurationError(f"header_timeout must be a positive number of seconds, got {header_timeout!r}")
    if token is not None and (not isinstance(token, str) or len(token) < 8):
        raise ConfigurationError("a token must be a string of at least 8 characters")
    limits = limits or Limits()
    control: AdmissionControl = admission if admission is not None else Admission(max_sessions)
    starts = session_starts if session_starts is not None else SessionStarts(*SESSION_STARTS)
    folder = Path(str(static if static is not None else STATIC))
    app = web.Application(handler_args={"keepalive_timeout": float(header_timeout)})
    live: set[WebSocketAudioTransport] = set()
    app[LIVE_TRANSPORTS] = live
    app[ADMISSION] = control
    lag = LoopLag()
    refusals: list[RefusalLog] = []

    def refusal_log() -> RefusalLog:
        if not refusals:
            refusals.append(RefusalLog(log, asyncio.get_running_loop().time))
        return refusals[0]

    async def started(_app: web.Application) -> None:
        lag.start(asyncio.get_running_loop())

    async def stopped(_app: web.Application) -> None:
        lag.stop()

    app.on_startup.append(started)
    app.on_cleanup.append(stopped)

    async def page(_request: web.Request) -> web.StreamResponse:
        return web.FileResponse(folder / "index.html", headers={"Cache-Control": "no-store"})

    async def load(_request: web.Request) -> web.StreamResponse:
        answer = {"load": round(control.load(), 4), "sessions": control.sessions, "capacity": control.capacity,
                  "lag_ms": lag.lag_ms, "pid": os.getpid()}
        own = getattr(control, "own_sessions", None)
        if isinstance(own, int):
            answer["worker_sessions"] = own  # the answering worker's own (several workers)
        return web.json_response(answer, headers={"Cache-Control": "no-store"})

    async def websocket(request: web.Request) -> web.StreamResponse:
        origin = request.headers.get("Origin")
        sockname = request.transport.get_extra_info("sockname") if request.transport is not None else None
        own = own_authorities(str(sockname[0]), int(sockname[1])) if sockname else frozenset()
        if not origin_allowed(origin, own, allowed_origins):
            refusal_log().refused_request("refused a WebSocket from origin %.100s (not this server's own page; "
                                          "--allow-origin lets a page in)", origin)
            raise web.HTTPForbidden(text="this server only takes WebSockets from its own page")
        if not token_matches(token, request.query.get("token"), request.headers.get("Authorization")):
            refusal_log().refused_request("refused a WebSocket without the right token (from %s)", request.remote)
            raise web.HTTPUnauthorized(text="this server needs its token: open the address it printed")
        if not starts.allow(str(request.remote), asyncio.get_running_loop().time()):
            refusal_log().refused_request("refused a session: %s opens sessions faster than %g a second",
                                          request.remote, starts.rate)
            await asyncio.sleep(REFUSAL_DELAY)  # the real clock is the point: a loop that retries at once waits
            raise web.HTTPTooManyRequests(text="too many new sessions from this address; wait a moment")
        ws = CappedWebSocketResponse(limits, heartbeat=30.0)
        await ws.prepare(request)
        if not control.admit():
            reason = f"server full: {control.capacity} sessions already; try again later"
            with contextlib.suppress(Exception):
                await ws.send_str(json.dumps({"type": "error", "message": reason}))
                await ws.close(code=WSCloseCode.TRY_AGAIN_LATER, message=reason.encode()[:120])
            return ws
        transport = WebSocketAudioTransport(ws, sample_rate=sample_rate, limits=limits, client_words=client_words)
        live.add(transport)
        released = False

        def release() -> None:
            nonlocal released
            if not released:
                released = True
                live.discard(transport)
                control.release()

        transport.on_close(release)  # after the pipeline's grace, even when the handler is cancelled
        try:
            if greeting is not None:
                transport.send(greeting)
            if lazy:
                await transport.run(build=lambda: make_stage(transport))
            else:
                await transport.run(make_stage(transport))
        except Exception as exc:
            log.exception("a connection's pipeline failed")
            if not ws.closed:
                await ws.send_str(json.dumps({"type": "error", "message": f"the server failed: {exc}"}))
        finally:
            if not transport.started:
                release()
            if not ws.closed:
                await ws.close()
        return ws

    app.router.add_get("/", page)
    app.router.add_get("/ws", websocket)
    app.router.add_get("/load", load)
    app.router.add_static("/static/", folder, show_index=False)
    return app
