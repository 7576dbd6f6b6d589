"""A browser's microphone and speaker over one WebSocket (aiohttp), around any rxvoice pipeline.

The protocol, per connection:

* **client → server, binary**: 16-bit little-endian mono PCM at the
  transport's ``sample_rate`` (16 kHz by default), any length (20 ms chunks
  are typical). Each becomes an ``InputAudioRawFrame``.
* **client → server, text**: JSON objects with a ``type``:
  ``{"type": "start", "sample_rate": 16000}`` (optional; a different rate is
  refused), ``{"type": "ping"}`` (answered with ``pong``) and, when the
  transport takes the client's words (``client_words=True``: the client runs
  its own speech-to-text), ``{"type": "transcript", "text": "...", "final":
  true}`` (a ``TranscriptionFrame``; ``"final": false`` is an interim guess).
* **server → client, binary**: bot audio, a 4-byte little-endian sample rate
  then 16-bit mono PCM.
* **server → client, text**: JSON events, ``{"type": ...}``: ``error``
  (``message``), ``interrupt`` (stop playing at once), ``pause`` (stop
  playing at once, keeping what is left: the user may be saying "mm-hmm"),
  ``resume`` (play what was kept, from where it paused), ``pong``, and whatever
  the app sends with :meth:`WebSocketAudioTransport.send`.

Bad input never reaches the pipeline: an odd byte count, a wrong rate, JSON
that does not parse or an unknown type gets an ``error`` event to that
client only, and the connection goes on. Two things end it, with a close
code and a reason: a message over ``max_message_bytes`` (code 1009; the
WebSocket reader refuses it from its header, before reading it) and JSON
nested too deeply to parse (code 1008). Messages over the rate caps are
dropped, with one ``error`` a second. Audio sent faster than real time is
paced: past a burst of ``max_ahead_seconds`` the transport reads it at real
time, so the client's socket pushes back (no session is slowed by another
client's speed). Other connections notice none of it.

When the client leaves, its pipeline gets an ``EndFrame`` and up to
``end_grace`` seconds to finish what it holds (the words still being
recognized, the turn they end); after that it is cancelled. So the last
words are either written whole or dropped on purpose, never half-written.

Usage, behind your own page::

    async def websocket(request):
        ws = web.WebSocketResponse(max_msg_size=Limits().max_message_bytes)
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
import math
import struct
import threading
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

try:
    from aiohttp import WSCloseCode, WSMsgType, web
except ImportError as exc:  # pragma: no cover - depends on the install
    raise ImportError("rxvoice.transports needs aiohttp: pip install 'rxvoice[serve]'") from exc

import reactivex
from reactivex.disposable import CompositeDisposable

from ..errors import ConfigurationError
from ..frames import (
    DOWN,
    BotSpeechPauseFrame,
    BotSpeechResumeFrame,
    CancelFrame,
    Direction,
    EndFrame,
    Frame,
    InputAudioRawFrame,
    InterimTranscriptionFrame,
    InterruptionFrame,
    OutputAudioRawFrame,
    StartFrame,
    TranscriptionFrame,
)
from ..pipeline import Inlet, Pipeline, Port, Processor, Stage, loop_scheduler, pipeline
from ..pipeline.session import Session

__all__ = ["CappedWebSocketResponse", "Limits", "WebSocketAudioTransport"]

log = logging.getLogger("rxvoice.transports.websocket")

_CLOSING: set[asyncio.Task[None]] = set()  # close-downs running on after their handler was cancelled

NESTED_TOO_DEEPLY = "a control message nested too deeply to read; the connection is closed"


@dataclass(frozen=True)
class Limits:
    """What one connection may send.

    Attributes:
        max_message_bytes: The largest message read: the WebSocket reader refuses a larger one from its
            header, before buffering it, and closes the connection (code 1009, the cap in the reason).
            Give it to ``WebSocketResponse(max_msg_size=...)`` (:class:`CappedWebSocketResponse` does).
        hard_max_message_bytes: Deprecated, not used: ``max_message_bytes`` is now the one cap.
        messages_per_second: Sustained message rate (bursts of twice as many pass).
        bytes_per_second: Sustained audio rate (real time is 32,000 at 16 kHz; bursts of twice as many pass).
        max_queued_messages: Messages waiting to be sent to a slow client before events are dropped.
        max_ahead_seconds: Audio a client may send ahead of real time in a burst; past it, its audio is
            read at real time (the client is paced by its own socket).
        end_grace: Seconds a pipeline gets, after its client left, to finish its last words.
    """

    max_message_bytes: int = 256 * 1024
    hard_max_message_bytes: int | None = None
    messages_per_second: float = 200.0
    bytes_per_second: float = 256_000.0
    max_queued_messages: int = 4000
    max_ahead_seconds: float = 2.0
    end_grace: float = 2.0

    def __post_init__(self) -> None:
        names = ("max_message_bytes", "messages_per_second", "bytes_per_second", "max_queued_messages",
                 "max_ahead_seconds", "end_grace")
        for name in names:
            value = getattr(self, name)
            if (isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value)
                    or value <= 0):
                raise ConfigurationError(f"Limits.{name} must be a positive number, got {value!r}")
        if self.hard_max_message_bytes is not None:
            warnings.warn("Limits.hard_max_message_bytes is deprecated and not used: max_message_bytes is the "
                          "one cap, enforced by the WebSocket reader", DeprecationWarning, stacklevel=3)


class CappedWebSocketResponse(web.WebSocketResponse):
    """A ``WebSocketResponse`` reading at most ``limits.max_message_bytes`` a message, closing with a reason past it.

    aiohttp's reader refuses an oversized message from its header and closes
    with code 1009 but no reason; this one says what the cap is.
    """

    def __init__(self, limits: Limits, **kwargs: Any) -> None:
        super().__init__(max_msg_size=limits.max_message_bytes, **kwargs)
        self._cap_reason = (f"a message over {limits.max_message_bytes} bytes "
                            "(send audio in chunks of 20-100 ms)").encode()[:120]

    async def close(self, *, code: int = WSCloseCode.OK, message: bytes = b"", drain: bool = True) -> bool:
        if code == WSCloseCode.MESSAGE_TOO_BIG and not message:
            message = self._cap_reason
        return await super().close(code=code, message=message, drain=drain)


class _Bucket:
    """A token bucket on the loop's clock."""

    __slots__ = ("capacity", "level", "rate", "stamp")

    def __init__(self, rate: float, now: float, capacity: float | None = None) -> None:
        self.rate = rate
        self.capacity = 2 * rate if capacity is None else capacity
        self.level = self.capacity
        self.stamp = now

    def _fill(self, now: float) -> None:
        self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
        self.stamp = now

    def take(self, amount: float, now: float) -> bool:
        self._fill(now)
        if self.level < amount:
            return False
        self.level -= amount
        return True

    def borrow(self, amount: float, now: float) -> float:
        """Take ``amount`` even when it is not there; the seconds until the bucket is out of debt again."""
        self._fill(now)
        self.level -= amount
        return -self.level / self.rate if self.level < 0 else 0.0


class _Close(Exception):
    """The client sent something the connection cannot go on after."""

    def __init__(self, code: int, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


class WebSocketAudioTransport:
    """One browser connection: its microphone into a pipeline, the bot's audio and events back.

    Args:
        ws: A prepared ``aiohttp.web.WebSocketResponse`` (a :class:`CappedWebSocketResponse`,
            or give it ``max_msg_size=limits.max_message_bytes``).
        sample_rate: The rate of the client's audio.
        limits: What the client may send.
        user_id: Stamped on the client's own words (``client_words``); kept for the app.
        client_words: Take ``{"type": "transcript"}`` messages as the user's words.
    """

    def __init__(
        self, ws: web.WebSocketResponse, *, sample_rate: int = 16000, limits: Limits | None = None,
        user_id: str = "user", client_words: bool = False,
    ) -> None:
        self.ws = ws
        self.sample_rate = sample_rate
        self.limits = limits or Limits()
        self.user_id = user_id
        self.client_words = client_words
        self.loop: asyncio.AbstractEventLoop | None = None
        self._thread = 0
        with contextlib.suppress(RuntimeError):  # made on the loop (a request handler): events can go out now
            self.loop = asyncio.get_running_loop()
            self._thread = threading.get_ident()
        self._queue: asyncio.Queue[str | bytes | None] = asyncio.Queue()
        self._input = Inlet("the WebSocket transport")  # a frame enters the fused chain in one call
        self._audio_seconds = 0.0
        self._last_error = -10.0
        self.closed = False
        self.errors_sent = 0
        self.paced_seconds = 0.0
        """Seconds the reader waited because the client sent audio faster than real time."""
        self.ended_cleanly: bool | None = None
        """After the run: whether the pipeline finished within ``end_grace`` (``False``: it was cancelled)."""
        self._on_close: list[Callable[[], None]] = []
        self._ended: asyncio.Event | None = None
        self.started = False
        """Whether :meth:`run` has begun (from then on it releases everything itself, ``on_close`` last)."""
        self._running = False  # whether the pipeline is subscribed (with run(build=...): once the client spoke)

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

    def _text_in(self, text: str) -> Frame | None:
        """A control message: answered here, or the frame it stands for (the client's words).

        Raises:
            _Close: JSON nested too deeply to parse (the connection ends; nothing is logged past INFO).
        """
        try:
            message = json.loads(text)
        except RecursionError:
            raise _Close(WSCloseCode.POLICY_VIOLATION, NESTED_TOO_DEEPLY) from None
        except ValueError:
            self.error("a text message must be a JSON object such as {\"type\": \"ping\"}; it did not parse")
            return None
        if not isinstance(message, dict):
            self.error("a text message must be a JSON object with a \"type\"")
            return None
        kind = message.get("type")
        if kind == "ping":
            self.send({"type": "pong"})
        elif kind == "start":
            rate = message.get("sample_rate", self.sample_rate)
            if rate != self.sample_rate:
                self.error(f"this server takes {self.sample_rate} Hz mono 16-bit PCM, not {rate!r} Hz; "
                           f"resample before sending")
        elif kind == "transcript" and self.client_words:
            return self._words_in(message)
        else:
            known = "start, ping, transcript" if self.client_words else "start, ping"
            self.error(f"unknown message type {str(kind)[:40]!r} (known: {known})")
        return None

    def _words_in(self, message: Mapping[str, Any]) -> Frame | None:
        text, final, stamp = message.get("text"), message.get("final", True), message.get("timestamp", "")
        if not isinstance(text, str) or not isinstance(final, bool) or not isinstance(stamp, str):
            self.error("a transcript needs \"text\" (a string), optionally \"final\" (true or false) and "
                       "\"timestamp\" (a string); dropped")
            return None
        if final:
            return TranscriptionFrame(text, user_id=self.user_id, timestamp=stamp, finalized=True)
        return InterimTranscriptionFrame(text, user_id=self.user_id, timestamp=stamp)

    # -- the run ----------------------------------------------------------------------

    async def run(self, stage: Stage | None = None, *, on_start: Callable[[], None] | None = None,
                  build: Callable[[], Stage] | None = None) -> None:
        """Run ``stage`` for this connection until the client goes away; everything it holds is released then.

        ``on_start`` is called once the pipeline is subscribed (to send a greeting, ...). When the
        client leaves, the pipeline gets an ``EndFrame`` and ``limits.end_grace`` seconds to let it
        through (its last words recognized and written) before it is cancelled.

        ``build`` instead of ``stage``: the pipeline is built and started when the client's first audio
        or words arrive, so a connection that never speaks costs no pipeline (pings are answered all
        the same). An error from ``build`` ends the run (it is raised here).

        Raises:
            ConfigurationError: neither or both of ``stage`` and ``build`` given.
        """
        if (stage is None) == (build is None):
            raise ConfigurationError("WebSocketAudioTransport.run takes a stage or a build function (one of them)")
        loop = asyncio.get_running_loop()
        self.loop = loop
        self._thread = threading.get_ident()
        self._ended = asyncio.Event()
        self.started = True
        subscriptions = CompositeDisposable()

        def start(stage: Stage) -> None:
            runnable = stage if isinstance(stage, Pipeline) else pipeline(stage)
            session = Session(loop_scheduler(loop))
            down, up = runnable.duplex(self._input, reactivex.never())
            self._running = True
            subscriptions.add(up.subscribe(lambda _f: None, lambda _e: None, scheduler=session))
            subscriptions.add(down.subscribe(self._out, self._pipeline_failed, self._completed, scheduler=session))
            self._input.on_next(StartFrame(audio_in_sample_rate=self.sample_rate))
            if on_start is not None:
                on_start()

        writer = loop.create_task(self._write())
        try:
            if stage is not None:
                start(stage)
                await self._read(loop)
            else:
                assert build is not None
                await self._read(loop, lambda: start(build()))
        finally:
            # aiohttp cancels the handler when the client's connection drops: the close-down runs as a task of
            # its own, so the pipeline's last words still get their grace and everything is released after.
            closing = loop.create_task(self._close_down(subscriptions, writer))
            _CLOSING.add(closing)
            closing.add_done_callback(_CLOSING.discard)
            await asyncio.shield(closing)

    async def _close_down(self, subscriptions: CompositeDisposable, writer: asyncio.Task[None]) -> None:
        try:
            if self._running:
                await self._finish()
            else:
                self.ended_cleanly = True  # no pipeline was built: nothing to finish
        finally:
            self.closed = True
            assert self._ended is not None
            if not self._ended.is_set():
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

    def _out(self, frame: Frame) -> None:
        if type(frame) is EndFrame:
            self._completed()

    def _completed(self) -> None:
        ended, loop = self._ended, self.loop
        if ended is None or loop is None:
            return
        if threading.get_ident() == self._thread:
            ended.set()
        else:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(ended.set)

    async def _finish(self) -> None:
        """The client left: let the ``EndFrame`` through the pipeline, for at most ``end_grace`` seconds."""
        ended = self._ended
        assert ended is not None
        with contextlib.suppress(Exception):
            self._input.on_next(EndFrame(reason="the client disconnected"))
        try:
            await asyncio.wait_for(ended.wait(), self.limits.end_grace)  # a real bound: the client is gone
        except TimeoutError:
            log.info("a pipeline did not finish within %.1f s of its client leaving; cancelled", self.limits.end_grace)
            self.ended_cleanly = False
        else:
            self.ended_cleanly = True

    def _pipeline_failed(self, error: Exception) -> None:
        log.error("the pipeline failed: %r", error)
        self.send({"type": "error", "message": f"the server's pipeline failed: {error}"})
        self._completed()

    async def _read(self, loop: asyncio.AbstractEventLoop, pending: Callable[[], None] | None = None) -> None:
        """Read the client's messages into the pipeline; ``pending``: start it before the first frame."""
        limits = self.limits
        messages = _Bucket(limits.messages_per_second, loop.time())
        volume = _Bucket(limits.bytes_per_second, loop.time())
        pace = _Bucket(1.0, loop.time(), capacity=limits.max_ahead_seconds)  # seconds of audio per second
        feed = self._input.on_next
        bytes_per_second = 2 * self.sample_rate
        async for msg in self.ws:
            now = loop.time()
            if msg.type == WSMsgType.BINARY:
                data: bytes = msg.data
                if not messages.take(1, now) or not volume.take(len(data), now):
                    self.error("too much audio: over the rate cap (real time is 32 kB/s); dropped")
                    continue
                frame = self._audio_in(data)
                if frame is not None:
                    if pending is not None:
                        start, pending = pending, None
                        start()
                    feed(frame)
                    wait = pace.borrow(len(data) / bytes_per_second, now)
                    if wait > 0:  # ahead of real time: stop reading, so the client's socket fills and it waits
                        self.paced_seconds += wait
                        await asyncio.sleep(wait)  # the real clock is the point: pacing a network peer
            elif msg.type == WSMsgType.TEXT:
                if not messages.take(1, now):
                    self.error("too many messages: over the rate cap; dropped")
                    continue
                try:
                    words = self._text_in(msg.data)
                except _Close as close:
                    log.info("closed a connection: %s", close.reason)
                    await self.ws.close(code=close.code, message=close.reason.encode()[:120])
                    break
                if words is not None:
                    if pending is not None:
                        start, pending = pending, None
                        start()
                    feed(words)
            elif msg.type == WSMsgType.ERROR:
                error = self.ws.exception()
                log.info("a client's connection failed: %r", error)
                if not self.ws.closed:
                    await self.ws.close(code=WSCloseCode.MESSAGE_TOO_BIG, message=str(error).encode()[:120])
                break

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
            elif t is BotSpeechPauseFrame:
                self.transport.send({"type": "pause"})
            elif t is BotSpeechResumeFrame:
                self.transport.send({"type": "resume"})
        self.port.push(frame, direction)

    def on_input_end(self, direction: Direction) -> None:
        return None

    def close(self) -> None:
        return None
