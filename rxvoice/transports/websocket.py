"""A browser's microphone and speaker over one WebSocket (aiohttp), around any rxvoice pipeline.

The protocol, per connection:

* **client → server, binary**: 16-bit little-endian mono PCM at the
  transport's ``sample_rate`` (16 kHz by default), any length (20 ms chunks
  are typical). Each becomes an ``InputAudioRawFrame``.
* **client → server, text**: JSON objects with a ``type``:
  ``{"type": "start", "sample_rate": 16000}`` (optional; a different rate is
  refused), ``{"type": "ping"}`` (answered with ``pong``).
* **server → client, binary**: bot audio, a 4-byte little-endian sample rate
  then 16-bit mono PCM.
* **server → client, text**: JSON events, ``{"type": ...}``: ``error``
  (``message``), ``interrupt`` (stop playing at once), ``pong``, and whatever
  the app sends with :meth:`WebSocketAudioTransport.send`.

Bad input never reaches the pipeline and never ends the connection: an odd
byte count, a wrong rate, JSON that does not parse or an unknown type gets an
``error`` event to that client only. A message over ``max_message_bytes``
cannot be read past, so the connection is closed with code 1009 and a reason
saying so. Messages over the rate caps are dropped, with one ``error`` a
second. Other connections notice none of it.

Usage, behind your own page::

    async def websocket(request):
        ws = web.WebSocketResponse(max_msg_size=Limits().hard_max_message_bytes)
        await ws.prepare(request)
        transport = WebSocketAudioTransport(ws)
        context = LLMContext()
        pair = Pair(context)
        await transport.run(pipeline(VADProcessor(), PocketSphinxSTT(), pair.user(), llm, EspeakTTS(),
                                     transport.output(), pair.assistant()))
        return ws
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import struct
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

try:
    from aiohttp import WSCloseCode, WSMsgType, web
except ImportError as exc:  # pragma: no cover - depends on the install
    raise ImportError("rxvoice.transports needs aiohttp: pip install 'rxvoice[serve]'") from exc

import reactivex
from reactivex.disposable import CompositeDisposable
from reactivex.subject import Subject

from ..errors import ConfigurationError
from ..frames import (
    DOWN,
    CancelFrame,
    Direction,
    EndFrame,
    Frame,
    InputAudioRawFrame,
    InterruptionFrame,
    OutputAudioRawFrame,
    StartFrame,
)
from ..pipeline import Pipeline, Port, Processor, Stage, loop_scheduler, pipeline
from ..pipeline.session import Session

__all__ = ["LIVE_TRANSPORTS", "STATIC", "Limits", "WebSocketAudioTransport", "origin_allowed", "voice_app"]

log = logging.getLogger("rxvoice.transports.websocket")


@dataclass(frozen=True)
class Limits:
    """What one connection may send.

    Attributes:
        max_message_bytes: The largest message taken (a larger one is answered with an error and dropped).
        hard_max_message_bytes: The largest message read at all (a larger one closes the connection, code
            1009): give it to ``WebSocketResponse(max_msg_size=...)``.
        messages_per_second: Sustained message rate (bursts of twice as many pass).
        bytes_per_second: Sustained audio rate (real time is 32,000 at 16 kHz; bursts of twice as many pass).
        max_queued_messages: Messages waiting to be sent to a slow client before events are dropped.
    """

    max_message_bytes: int = 256 * 1024
    hard_max_message_bytes: int = 16 * 1024 * 1024
    messages_per_second: float = 200.0
    bytes_per_second: float = 256_000.0
    max_queued_messages: int = 4000

    def __post_init__(self) -> None:
        names = ("max_message_bytes", "hard_max_message_bytes", "messages_per_second", "bytes_per_second",
                 "max_queued_messages")
        for name in names:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise ConfigurationError(f"Limits.{name} must be a positive number, got {value!r}")


def origin_allowed(origin: str | None, host: str | None, allowed: tuple[str, ...] = ()) -> bool:
    """Whether a WebSocket upgrade from ``origin`` may go on: none (not a browser), the page's own host, or listed.

    A browser always sends ``Origin``; a page on another site must not be able
    to open a microphone connection to a local server.
    """
    if origin is None:
        return True
    if origin in allowed:
        return True
    bare = origin.split("://", 1)[-1].rstrip("/")
    return host is not None and bare == host


class _Bucket:
    """A token bucket on the loop's clock."""

    __slots__ = ("capacity", "level", "rate", "stamp")

    def __init__(self, rate: float, now: float) -> None:
        self.rate = rate
        self.capacity = 2 * rate
        self.level = self.capacity
        self.stamp = now

    def take(self, amount: float, now: float) -> bool:
        self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.level < amount:
            return False
        self.level -= amount
        return True


class WebSocketAudioTransport:
    """One browser connection: its microphone into a pipeline, the bot's audio and events back.

    Args:
        ws: A prepared ``aiohttp.web.WebSocketResponse`` (give it
            ``max_msg_size=limits.hard_max_message_bytes``).
        sample_rate: The rate of the client's audio.
        limits: What the client may send.
        user_id: Not stamped on frames; kept for the app (the STT stamps transcriptions).
    """

    def __init__(
        self, ws: web.WebSocketResponse, *, sample_rate: int = 16000, limits: Limits | None = None,
        user_id: str = "user",
    ) -> None:
        self.ws = ws
        self.sample_rate = sample_rate
        self.limits = limits or Limits()
        self.user_id = user_id
        self.loop: asyncio.AbstractEventLoop | None = None
        self._thread = 0
        with contextlib.suppress(RuntimeError):  # made on the loop (a request handler): events can go out now
            self.loop = asyncio.get_running_loop()
            self._thread = threading.get_ident()
        self._queue: asyncio.Queue[str | bytes | None] = asyncio.Queue()
        self._input: Subject[Frame] = Subject()
        self._audio_seconds = 0.0
        self._last_error = -10.0
        self.closed = False
        self.errors_sent = 0
        self._on_close: list[Callable[[], None]] = []

    def on_close(self, fn: Callable[[], None]) -> None:
        """Call ``fn()`` when the connection's run ends (release what the app opened for it)."""
        self._on_close.append(fn)

    @property
    def audio_seconds(self) -> float:
        """Seconds of client audio received so far (the position of the session's recording)."""
        return self._audio_seconds

    # -- out --------------------------------------------------------------------------

    def send(self, event: Mapping[str, Any]) -> None:
        """Send a JSON event to the client (from any thread; dropped once the connection closed)."""
        self._put(json.dumps(event, separators=(",", ":"), default=str))

    def send_audio(self, frame: OutputAudioRawFrame) -> None:
        """Send bot audio to the client (from any thread)."""
        self._put(struct.pack("<I", frame.sample_rate) + frame.audio)

    def _put(self, message: str | bytes) -> None:
        loop = self.loop
        if self.closed or loop is None:
            return
        if threading.get_ident() == self._thread:
            self._enqueue(message)
        else:
            with contextlib.suppress(RuntimeError):  # the loop closed
                loop.call_soon_threadsafe(self._enqueue, message)

    def _enqueue(self, message: str | bytes | None) -> None:
        if self.closed and message is not None:
            return
        if isinstance(message, str) and self._queue.qsize() >= self.limits.max_queued_messages:
            return  # a slow client loses events before it loses audio
        self._queue.put_nowait(message)

    def error(self, message: str) -> None:
        """Tell the client what was wrong with what it sent (at most one a second while it keeps at it)."""
        loop = self.loop
        now = loop.time() if loop is not None else 0.0
        if now - self._last_error < 1.0:
            return
        self._last_error = now
        self.errors_sent += 1
        self.send({"type": "error", "message": message})

    def output(self) -> Processor:
        """The stage that plays the bot: audio to the client, an interruption stops the client's playback."""
        return _Output(self)

    # -- in ---------------------------------------------------------------------------

    def _audio_in(self, data: bytes) -> Frame | None:
        if len(data) % 2:
            self.error(f"audio must be whole 16-bit samples: got {len(data)} bytes (an odd count); dropped")
            return None
        if not data:
            return None
        self._audio_seconds += len(data) / (2 * self.sample_rate)
        return InputAudioRawFrame(data, self.sample_rate)

    def _text_in(self, text: str) -> None:
        try:
            message = json.loads(text)
        except ValueError:
            self.error("a text message must be a JSON object such as {\"type\": \"ping\"}; it did not parse")
            return
        if not isinstance(message, dict):
            self.error("a text message must be a JSON object with a \"type\"")
            return
        kind = message.get("type")
        if kind == "ping":
            self.send({"type": "pong"})
        elif kind == "start":
            rate = message.get("sample_rate", self.sample_rate)
            if rate != self.sample_rate:
                self.error(f"this server takes {self.sample_rate} Hz mono 16-bit PCM, not {rate!r} Hz; "
                           f"resample before sending")
        else:
            self.error(f"unknown message type {kind!r} (known: start, ping)")

    # -- the run ----------------------------------------------------------------------

    async def run(self, stage: Stage, *, on_start: Callable[[], None] | None = None) -> None:
        """Run ``stage`` for this connection until the client goes away; everything it holds is released then.

        ``on_start`` is called once the pipeline is subscribed (to send a greeting, ...).
        """
        loop = asyncio.get_running_loop()
        self.loop = loop
        self._thread = threading.get_ident()
        runnable = stage if isinstance(stage, Pipeline) else pipeline(stage)
        session = Session(loop_scheduler(loop))
        down, up = runnable.duplex(self._input, reactivex.never())
        subscriptions = CompositeDisposable()
        writer = loop.create_task(self._write())
        try:
            subscriptions.add(up.subscribe(lambda _f: None, lambda _e: None, scheduler=session))
            subscriptions.add(down.subscribe(lambda _f: None, self._pipeline_failed, scheduler=session))
            self._input.on_next(StartFrame(audio_in_sample_rate=self.sample_rate))
            if on_start is not None:
                on_start()
            await self._read(loop)
        finally:
            self.closed = True
            with contextlib.suppress(Exception):
                self._input.on_next(CancelFrame(reason="the client disconnected"))
            subscriptions.dispose()
            for fn in self._on_close:
                try:
                    fn()
                except Exception:
                    log.exception("a close handler failed; contained")
            self._queue.put_nowait(None)
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await writer

    def _pipeline_failed(self, error: Exception) -> None:
        log.error("the pipeline failed: %r", error)
        self.send({"type": "error", "message": f"the server's pipeline failed: {error}"})

    async def _read(self, loop: asyncio.AbstractEventLoop) -> None:
        limits = self.limits
        messages = _Bucket(limits.messages_per_second, loop.time())
        volume = _Bucket(limits.bytes_per_second, loop.time())
        feed = self._input.on_next
        async for msg in self.ws:
            now = loop.time()
            if msg.type in (WSMsgType.BINARY, WSMsgType.TEXT) and len(msg.data) > limits.max_message_bytes:
                self.error(f"a message of {len(msg.data)} bytes is over the cap of {limits.max_message_bytes} "
                           "(send audio in chunks of 20-100 ms); dropped")
                continue
            if msg.type == WSMsgType.BINARY:
                data: bytes = msg.data
                if not messages.take(1, now) or not volume.take(len(data), now):
                    self.error("too much audio: over the rate cap (real time is 32 kB/s); dropped")
                    continue
                frame = self._audio_in(data)
                if frame is not None:
                    feed(frame)
            elif msg.type == WSMsgType.TEXT:
                if not messages.take(1, now):
                    self.error("too many messages: over the rate cap; dropped")
                    continue
                self._text_in(msg.data)
            elif msg.type == WSMsgType.ERROR:
                error = self.ws.exception()
                log.info("a client's connection failed: %r", error)
                if not self.ws.closed:
                    await self.ws.close(code=WSCloseCode.MESSAGE_TOO_BIG, message=str(error).encode()[:120])
                self.closed = True
                break
        with contextlib.suppress(Exception):
            feed(EndFrame(reason="the client disconnected"))

    async def _write(self) -> None:
        queue = self._queue
        ws = self.ws
        while True:
            message = await queue.get()
            if message is None:
                return
            if ws.closed:
                continue
            try:
                if isinstance(message, bytes):
                    await ws.send_bytes(message)
                else:
                    await ws.send_str(message)
            except (ConnectionError, RuntimeError) as exc:
                log.debug("sending to a client failed: %r", exc)


class _Output(Processor):
    """Bot audio to the client; everything passes on."""

    name = "WebSocketOutput"

    def __init__(self, transport: WebSocketAudioTransport) -> None:
        self.transport = transport

    def open(self, port: Port) -> _OutputSession:
        return _OutputSession(self.transport, port)


class _OutputSession:
    def __init__(self, transport: WebSocketAudioTransport, port: Port) -> None:
        self.transport = transport
        self.port = port

    def on_frame(self, frame: Frame, direction: Direction) -> None:
        if direction is DOWN:
            t = type(frame)
            if t is OutputAudioRawFrame:
                self.transport.send_audio(frame)  # type: ignore[arg-type]
            elif t is InterruptionFrame:
                self.transport.send({"type": "interrupt"})
        self.port.push(frame, direction)

    def on_input_end(self, direction: Direction) -> None:
        return None

    def close(self) -> None:
        return None


LIVE_TRANSPORTS: web.AppKey[set[WebSocketAudioTransport]] = web.AppKey("rxvoice_transports", set)
"""The key of a :func:`voice_app`'s live connections: ``app[LIVE_TRANSPORTS]``."""

STATIC = resources.files("rxvoice.transports") / "static"
"""The built-in page (``index.html``, its script and audio worklet): the live turn inspector of ``rxvoice serve``."""


def voice_app(
    make_stage: Callable[[WebSocketAudioTransport], Stage],
    *,
    static: Path | None = None,
    allowed_origins: tuple[str, ...] = (),
    limits: Limits | None = None,
    max_connections: int = 64,
    sample_rate: int = 16000,
) -> web.Application:
    """An aiohttp app: the page at ``/``, its files under ``/static/``, one pipeline per WebSocket at ``/ws``.

    Args:
        make_stage: Builds the pipeline of a new connection (it may send events
            through the transport and register cleanups with ``transport.on_close``).
        static: The folder of the page (``index.html`` and what it loads); default: the built-in inspector.
        allowed_origins: Origins besides the page's own that may open ``/ws`` (``"http://host:port"``).
        limits: What each connection may send.
        max_connections: Connections at once; more are refused with 503.
        sample_rate: The rate of the clients' audio.

    ``app[LIVE_TRANSPORTS]`` holds the live connections.
    """
    limits = limits or Limits()
    folder = Path(str(static if static is not None else STATIC))
    app = web.Application()
    live: set[WebSocketAudioTransport] = set()
    app[LIVE_TRANSPORTS] = live

    async def page(_request: web.Request) -> web.StreamResponse:
        return web.FileResponse(folder / "index.html", headers={"Cache-Control": "no-store"})

    async def websocket(request: web.Request) -> web.StreamResponse:
        if not origin_allowed(request.headers.get("Origin"), request.host, allowed_origins):
            log.warning("refused a WebSocket from origin %s (this page is %s)", request.headers.get("Origin"),
                        request.host)
            raise web.HTTPForbidden(text="this server only takes WebSockets from its own page")
        if len(live) >= max_connections:
            raise web.HTTPServiceUnavailable(text=f"{max_connections} connections already: try again later")
        ws = web.WebSocketResponse(max_msg_size=limits.hard_max_message_bytes, heartbeat=30.0)
        await ws.prepare(request)
        transport = WebSocketAudioTransport(ws, sample_rate=sample_rate, limits=limits)
        live.add(transport)
        try:
            stage = make_stage(transport)
            await transport.run(stage)
        except Exception as exc:
            log.exception("a connection's pipeline failed")
            if not ws.closed:
                await ws.send_str(json.dumps({"type": "error", "message": f"the server failed: {exc}"}))
        finally:
            live.discard(transport)
            if not ws.closed:
                await ws.close()
        return ws

    app.router.add_get("/", page)
    app.router.add_get("/ws", websocket)
    app.router.add_static("/static/", folder, show_index=False)
    return app
