"""The live server's edges on loopback: hostile JSON, DNS rebinding, oversized and slow requests, the token,
the refusal log, admission, pacing, the last words of a client that leaves, and a stalled server's idle watch.

Each test is bounded (``run(..., seconds)``) and uses a handful of connections; where a real clock is the point
(a header that never finishes, pacing, a stalled loop) the waits are a second or two.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import os
import struct
import time
import wave
from importlib import resources
from typing import Any

import aiohttp
import pytest

from rxvoice.frames import (
    DOWN,
    Direction,
    EndFrame,
    Frame,
    InputAudioRawFrame,
    TranscriptionFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from rxvoice.pipeline import Port, Processor, pipeline
from rxvoice.transports import (
    ADMISSION,
    LIVE_TRANSPORTS,
    Limits,
    RefusalLog,
    SessionStarts,
    origin_allowed,
    own_authorities,
    voice_app,
)
from tests.transports.test_websocket import echo_app, next_event, run, serving


class Recorder(Processor):
    """Keeps every downstream frame of every session in ``frames`` (and passes it on)."""

    name = "Recorder"

    def __init__(self) -> None:
        self.frames: list[Frame] = []

    def open(self, port: Port) -> Any:
        frames = self.frames

        class Handler:
            def on_frame(self, frame: Frame, direction: Direction) -> None:
                if direction is DOWN:
                    frames.append(frame)
                port.push(frame, direction)

            def on_input_end(self, direction: Direction) -> None:
                return None

            def close(self) -> None:
                return None

        return Handler()


async def _raw_upgrade(host: str, port: int, headers: dict[str, str]) -> tuple[asyncio.StreamReader,
                                                                               asyncio.StreamWriter, bytes]:
    """A hand-made WebSocket upgrade (to send what aiohttp's client would not): the reader, writer, status line."""
    reader, writer = await asyncio.open_connection(host, port)
    key = base64.b64encode(os.urandom(16)).decode()
    headers = {"Host": f"{host}:{port}", **headers}
    lines = ["GET /ws HTTP/1.1", "Upgrade: websocket", "Connection: Upgrade", f"Sec-WebSocket-Key: {key}",
             "Sec-WebSocket-Version: 13", *(f"{k}: {v}" for k, v in headers.items())]
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    return reader, writer, head.split(b"\r\n", 1)[0]


# -- 19: JSON nested too deeply ---------------------------------------------------------------------------


def test_deeply_nested_json_closes_the_connection_cleanly_without_a_traceback(caplog: pytest.LogCaptureFixture
                                                                              ) -> None:
    async def go() -> None:
        server = await serving(echo_app())
        try:
            async with aiohttp.ClientSession() as client:
                bystander = await client.ws_connect(server.make_url("/ws"))
                ws = await client.ws_connect(server.make_url("/ws"))
                await ws.send_str("[" * 50_000 + "]" * 50_000)  # 100 kB
                msg = await asyncio.wait_for(ws.receive(), 10)
                assert msg.type == aiohttp.WSMsgType.CLOSE, msg
                assert ws.close_code == 1008 and "nested too deeply" in str(msg.extra), msg
                await bystander.send_str('{"type": "ping"}')
                await next_event(bystander, "pong")
                await bystander.close()
        finally:
            await server.close()

    with caplog.at_level(logging.INFO):
        run(go, 30)
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR], caplog.text
    assert "RecursionError" not in caplog.text


# -- 20: the Origin against the server's own addresses ------------------------------------------------------


def test_the_origin_rule_compares_with_the_servers_own_addresses() -> None:
    own = own_authorities("127.0.0.1", 8765, names=())
    assert origin_allowed(None, own)
    assert origin_allowed("http://127.0.0.1:8765", own) and origin_allowed("http://localhost:8765", own)
    assert origin_allowed("http://[::1]:8765", own) and origin_allowed("HTTP://LOCALHOST:8765/", own)
    assert not origin_allowed("http://evil.example:8765", own)  # a rebinding page: its own name, our address
    assert not origin_allowed("http://127.0.0.1:9999", own) and not origin_allowed("null", own)
    assert origin_allowed("https://app.example", own, ("https://app.example:443",))
    lan = own_authorities("192.0.2.7", 8765, names=("box.lan",))
    assert origin_allowed("http://192.0.2.7:8765", lan) and origin_allowed("http://box.lan:8765", lan)
    assert not origin_allowed("http://localhost:8765", lan)  # a LAN address is not loopback


def test_a_dns_rebinding_page_is_refused_while_the_own_page_and_listed_origins_connect() -> None:
    async def go() -> None:
        server = await serving(echo_app(allowed_origins=("https://app.example",)))
        host, port = str(server.host), int(server.port or 0)
        try:
            # The attack: the page's own (rebound) name in both Host and Origin.
            evil = f"evil.example:{port}"
            *_, status = await _raw_upgrade(host, port, {"Origin": f"http://{evil}", "Host": evil})
            assert b" 403 " in status, status
            async with aiohttp.ClientSession() as client:
                for origin in (f"http://127.0.0.1:{port}", f"http://localhost:{port}", "https://app.example"):
                    async with client.ws_connect(server.make_url("/ws"), headers={"Origin": origin}) as ws:
                        await ws.send_str('{"type": "ping"}')
                        await next_event(ws, "pong")
        finally:
            await server.close()

    run(go, 30)


# -- 21: the message cap in the reader ----------------------------------------------------------------------


def test_a_message_over_the_cap_is_refused_from_its_header_with_a_reason() -> None:
    async def go() -> None:
        server = await serving(echo_app())
        host, port = str(server.host), int(server.port or 0)
        try:
            reader, writer, status = await _raw_upgrade(host, port, {})
            assert b" 101 " in status
            # A binary frame announcing 16 MiB, of which only 1 KiB ever comes: the reader must not wait for it.
            header = bytes([0x82, 0x80 | 127]) + struct.pack(">Q", 16 * 1024 * 1024) + b"\0\0\0\0"
            writer.write(header + b"\0" * 1024)
            await writer.drain()
            frame = await asyncio.wait_for(reader.read(2 + 125), 5)
            assert frame[0] == 0x88, frame  # a close frame
            code = struct.unpack(">H", frame[2:4])[0]
            assert code == 1009 and b"262144" in frame, frame
            writer.close()
            async with aiohttp.ClientSession() as client, client.ws_connect(server.make_url("/ws")) as ws:
                await ws.send_bytes(b"\0" * (300 * 1024))
                msg = await asyncio.wait_for(ws.receive(), 5)
                assert msg.type == aiohttp.WSMsgType.CLOSE and ws.close_code == 1009 and "262144" in str(msg.extra)
        finally:
            await server.close()

    run(go, 30)


# -- 22: headers that never finish ---------------------------------------------------------------------------


def test_a_request_whose_headers_never_finish_is_dropped_and_live_sessions_stay() -> None:
    async def go() -> None:
        server = await serving(echo_app(header_timeout=0.5))
        host, port = str(server.host), int(server.port or 0)
        loop = asyncio.get_running_loop()
        try:
            async with aiohttp.ClientSession() as client, client.ws_connect(server.make_url("/ws")) as ws:
                reader, writer = await asyncio.open_connection(host, port)
                writer.write(b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ")  # and nothing more
                await writer.drain()
                t0 = loop.time()
                assert await asyncio.wait_for(reader.read(), 5) == b""  # the server hung up
                assert loop.time() - t0 < 3
                writer.close()
                await ws.send_str('{"type": "ping"}')  # a session older than the timeout goes on
                await next_event(ws, "pong")
        finally:
            await server.close()

    run(go, 30)


# -- 23: the token ---------------------------------------------------------------------------------------------


def test_a_token_is_required_when_set() -> None:
    async def go() -> None:
        server = await serving(echo_app(token="s3cret-token"))
        try:
            async with aiohttp.ClientSession() as client:
                for url, headers in ((server.make_url("/ws"), {}),
                                     (server.make_url("/ws").with_query(token="wrong-token"), {}),
                                     (server.make_url("/ws"), {"Authorization": "Bearer nope"})):
                    with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                        await client.ws_connect(url, headers=headers)
                    assert refused.value.status == 401
                for url, headers in ((server.make_url("/ws").with_query(token="s3cret-token"), {}),
                                     (server.make_url("/ws"), {"Authorization": "Bearer s3cret-token"})):
                    async with client.ws_connect(url, headers=headers) as ws:
                        await ws.send_str('{"type": "ping"}')
                        await next_event(ws, "pong")
        finally:
            await server.close()

    run(go, 30)


# -- 24: refused origins do not flood the log --------------------------------------------------------------------


def test_refused_origins_are_logged_at_most_once_per_window(caplog: pytest.LogCaptureFixture) -> None:
    async def go() -> None:
        server = await serving(echo_app())
        try:
            async with aiohttp.ClientSession() as client:
                for _ in range(30):
                    with pytest.raises(aiohttp.WSServerHandshakeError):
                        await client.ws_connect(server.make_url("/ws"), headers={"Origin": "http://evil.example"})
        finally:
            await server.close()

    with caplog.at_level(logging.WARNING, logger="rxvoice.transports.websocket"):
        run(go, 30)
    warnings = [r for r in caplog.records if "refused a WebSocket" in r.getMessage()]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]


def test_the_refusal_log_counts_what_it_held_back() -> None:
    now = [0.0]
    records: list[str] = []

    class Log(logging.Logger):
        def warning(self, msg: object, *args: object, **_kw: Any) -> None:
            records.append(str(msg) % args)

    refusals = RefusalLog(Log("test"), lambda: now[0], every=10.0)
    for t in (0.0, 1.0, 2.0, 9.0, 10.5, 11.0):
        now[0] = t
        refusals.refused_request("refused %s", "x")
    assert records == ["refused x", "refused x (and 3 more refused in the last 10 s)"]
    assert refusals.refused == 6 and refusals.suppressed == 1


# -- admission: "server full" and /load -----------------------------------------------------------------------


def test_past_the_capacity_a_session_is_refused_with_server_full_and_load_tells() -> None:
    async def go() -> None:
        app = echo_app(max_sessions=2)
        server = await serving(app)
        try:
            async with aiohttp.ClientSession() as client:
                a = await client.ws_connect(server.make_url("/ws"))
                b = await client.ws_connect(server.make_url("/ws"))
                for ws in (a, b):
                    await ws.send_str('{"type": "ping"}')
                    await next_event(ws, "pong")
                async with client.get(server.make_url("/load")) as r:
                    load = await r.json()
                assert load["load"] == 1.0 and load["sessions"] == 2 and load["capacity"] == 2
                full = await client.ws_connect(server.make_url("/ws"))
                error = await next_event(full, "error")
                assert error["message"].startswith("server full")
                msg = await asyncio.wait_for(full.receive(), 5)
                assert msg.type == aiohttp.WSMsgType.CLOSE and full.close_code == 1013
                assert "server full" in str(msg.extra)
                await a.close()
                for _ in range(100):
                    if app[ADMISSION].sessions < 2:
                        break
                    await asyncio.sleep(0.02)
                async with client.ws_connect(server.make_url("/ws")) as again:  # room again
                    await again.send_str('{"type": "ping"}')
                    await next_event(again, "pong")
                    async with client.get(server.make_url("/load")) as r:
                        assert (await r.json())["load"] == 1.0
                await b.close()
        finally:
            await server.close()

    run(go, 30)


def test_session_starts_are_a_bucket_per_address_in_the_callers_time() -> None:
    starts = SessionStarts(rate=2.0, burst=3)
    assert [starts.allow("a", 0.0) for _ in range(4)] == [True, True, True, False]
    assert starts.allow("b", 0.0)  # another address has its own bucket
    assert not starts.allow("a", 0.4) and starts.allow("a", 0.6)  # 2 a second: one more after 0.5 s
    assert [starts.allow("a", 10.0) for _ in range(4)] == [True, True, True, False]  # never more than the burst
    assert starts.refused == 3


def test_session_starts_forget_quiet_addresses_first() -> None:
    starts = SessionStarts(rate=1.0, burst=2, max_addresses=2)
    starts.allow("busy", 0.0)
    starts.allow("busy", 0.0)
    starts.allow("quiet", 0.0)
    starts.allow("new", 5.0)  # over the bound: the addresses whose buckets are full again by now go
    assert set(starts._buckets) == {"new"}
    starts.allow("a", 5.0)
    starts.allow("b", 5.0)  # none is full: the oldest goes
    assert set(starts._buckets) == {"a", "b"}


@pytest.mark.parametrize("kwargs", [{"rate": 0}, {"rate": True}, {"burst": 0}, {"max_addresses": 1.5}])
def test_session_starts_refuse_a_bad_configuration(kwargs: dict[str, Any]) -> None:
    from rxvoice.errors import ConfigurationError

    with pytest.raises(ConfigurationError):
        SessionStarts(**kwargs)


def test_a_client_reconnecting_in_a_loop_is_refused_before_its_websocket_opens_and_a_session_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from rxvoice.transports import app as app_module

    monkeypatch.setattr(app_module, "REFUSAL_DELAY", 0.05)  # each refusal is held back: kept short here

    async def go() -> None:
        app = echo_app(session_starts=SessionStarts(rate=0.5, burst=3))
        server = await serving(app)
        try:
            async with aiohttp.ClientSession() as client:
                live = await client.ws_connect(server.make_url("/ws"))
                opened, refused = 0, 0
                for _ in range(6):
                    try:
                        async with client.ws_connect(server.make_url("/ws")):
                            opened += 1
                    except aiohttp.WSServerHandshakeError as exc:
                        assert exc.status == 429
                        refused += 1
                assert (opened, refused) == (2, 4)
                await live.send_str('{"type": "ping"}')
                await next_event(live, "pong")  # the live session was never touched
                await live.close()
        finally:
            await server.close()

    run(go, 30)


# -- pacing: a client faster than real time ------------------------------------------------------------------


def test_a_client_sending_faster_than_real_time_is_paced_and_others_are_not_held_up() -> None:
    recorder = Recorder()
    arrivals: list[float] = []

    class Clock(Processor):
        name = "Clock"

        def open(self, port: Port) -> Any:
            class Handler:
                def on_frame(self, frame: Frame, direction: Direction) -> None:
                    if isinstance(frame, InputAudioRawFrame):
                        arrivals.append(time.monotonic())  # the real clock is the point: pacing
                    port.push(frame, direction)

                def on_input_end(self, direction: Direction) -> None:
                    return None

                def close(self) -> None:
                    return None

            return Handler()

    app = voice_app(lambda t: pipeline(Clock(), recorder), limits=Limits(max_ahead_seconds=0.2))

    async def go() -> None:
        server = await serving(app)
        loop = asyncio.get_running_loop()
        try:
            async with aiohttp.ClientSession() as client:
                bystander = await client.ws_connect(server.make_url("/ws"))
                fast = await client.ws_connect(server.make_url("/ws"))
                t0 = time.monotonic()
                for _ in range(60):  # 1.2 s of audio, sent at once
                    await fast.send_bytes(b"\0\0" * 320)
                t = loop.time()
                await bystander.send_str('{"type": "ping"}')
                await next_event(bystander, "pong")
                assert loop.time() - t < 0.5, "the fast client held the other one up"
                for _ in range(200):
                    if len(arrivals) >= 60:
                        break
                    await asyncio.sleep(0.02)
                assert len(arrivals) == 60
                spread = arrivals[-1] - t0
                assert spread >= 0.85, f"1.2 s of audio read in {spread:.2f} s: not paced"
                transport = next(t for t in app[LIVE_TRANSPORTS] if t.audio_seconds > 1)
                assert transport.paced_seconds > 0.5
                await fast.close()
                await bystander.close()
        finally:
            await server.close()

    run(go, 30)


# -- the last words of a client that leaves ----------------------------------------------------------------------


class SlowWords(Processor):
    """Like an STT: the words of the audio come 0.3 s after it, and an EndFrame waits for them."""

    name = "SlowWords"

    def open(self, port: Port) -> Any:
        class Handler:
            heard = 0
            pending = False
            held: Frame | None = None

            def on_frame(self, frame: Frame, direction: Direction) -> None:
                if isinstance(frame, InputAudioRawFrame):
                    port.push(frame, direction)
                    self.heard += 1
                    if not self.pending:
                        self.pending = True
                        port.call_later(0.3, self.words)
                elif isinstance(frame, EndFrame) and self.pending:
                    self.held = frame
                else:
                    port.push(frame, direction)

            def words(self) -> None:
                port.push(TranscriptionFrame(f"{self.heard} chunks heard", finalized=True), DOWN)
                self.pending = False
                if self.held is not None:
                    port.push(self.held, DOWN)
                    self.held = None

            def on_input_end(self, direction: Direction) -> None:
                return None

            def close(self) -> None:
                return None

        return Handler()


def test_words_in_flight_when_the_client_leaves_are_finished_before_the_pipeline_ends() -> None:
    recorder = Recorder()
    app = voice_app(lambda t: pipeline(SlowWords(), recorder))

    async def go() -> None:
        server = await serving(app)
        try:
            async with aiohttp.ClientSession() as client:
                ws = await client.ws_connect(server.make_url("/ws"))
                for _ in range(5):
                    await ws.send_bytes(b"\0\0" * 320)
                await ws.close()  # leaves before the words are out
                for _ in range(100):
                    if not app[LIVE_TRANSPORTS]:
                        break
                    await asyncio.sleep(0.05)
                assert not app[LIVE_TRANSPORTS]
        finally:
            await server.close()

    run(go, 30)
    words = [f.text for f in recorder.frames if isinstance(f, TranscriptionFrame)]
    assert words == ["5 chunks heard"], recorder.frames
    assert any(isinstance(f, EndFrame) for f in recorder.frames)


def test_a_pipeline_that_does_not_finish_is_cancelled_after_the_grace() -> None:
    class Never(Processor):
        name = "Never"

        def open(self, port: Port) -> Any:
            class Handler:
                def on_frame(self, frame: Frame, direction: Direction) -> None:
                    if not isinstance(frame, EndFrame):  # holds the end forever
                        port.push(frame, direction)

                def on_input_end(self, direction: Direction) -> None:
                    return None

                def close(self) -> None:
                    return None

            return Handler()

    app = voice_app(lambda t: pipeline(Never()), limits=Limits(end_grace=0.3))
    seen: list[bool | None] = []

    async def go() -> None:
        server = await serving(app)
        try:
            async with aiohttp.ClientSession() as client:
                ws = await client.ws_connect(server.make_url("/ws"))
                await ws.send_bytes(b"\0\0" * 320)
                for _ in range(50):
                    if app[LIVE_TRANSPORTS]:
                        break
                    await asyncio.sleep(0.02)
                transport = next(iter(app[LIVE_TRANSPORTS]))
                await ws.close()
                for _ in range(100):
                    if not app[LIVE_TRANSPORTS]:
                        break
                    await asyncio.sleep(0.05)
                seen.append(transport.ended_cleanly)
        finally:
            await server.close()

    run(go, 30)
    assert seen == [False]


# -- the client's own words ------------------------------------------------------------------------------------------


def test_client_words_become_transcriptions_only_when_taken() -> None:
    recorder = Recorder()

    async def go() -> None:
        for client_words in (True, False):
            server = await serving(voice_app(lambda t: pipeline(recorder), client_words=client_words))
            try:
                async with aiohttp.ClientSession() as client, client.ws_connect(server.make_url("/ws")) as ws:
                    await ws.send_str(json.dumps({"type": "transcript", "text": "book a table", "final": True}))
                    await ws.send_str(json.dumps({"type": "transcript", "text": 5}))
                    if client_words:
                        error = await next_event(ws, "error")
                        assert "needs \"text\"" in error["message"]
                    else:
                        error = await next_event(ws, "error")
                        assert "unknown message type 'transcript'" in error["message"]
            finally:
                await server.close()

    run(go, 30)
    words = [f for f in recorder.frames if isinstance(f, TranscriptionFrame)]
    assert [(w.text, w.finalized) for w in words] == [("book a table", True)]


# -- the audio-idle watch and a stalled server -----------------------------------------------------------------------


def _demo_speech() -> bytes:
    with resources.as_file(resources.files("rxvoice.data") / "demo.wav") as path, wave.open(str(path)) as w:
        pcm = w.readframes(w.getnframes())
    return pcm[int(0.3 * 32000):int(2.5 * 32000)]  # silence, then "So what I was thinking is that" (0.5-2.33 s)


class Stall(Processor):
    """Blocks the event loop once, for ``seconds``, just after the VAD took the ``after``-th chunk.

    The stall comes from a callback of its own, with no audio in flight (as a burst of CPU work elsewhere on
    the loop would): what the client sends meanwhile waits in the socket.
    """

    name = "Stall"

    def __init__(self, after: int, seconds: float) -> None:
        self.after = after
        self.seconds = seconds

    def open(self, port: Port) -> Any:
        owner = self

        class Handler:
            chunks = 0

            def on_frame(self, frame: Frame, direction: Direction) -> None:
                port.push(frame, direction)
                if isinstance(frame, InputAudioRawFrame):
                    self.chunks += 1
                    if self.chunks == owner.after:  # a real stall is the point: the server's loop blocked
                        asyncio.get_running_loop().call_later(0.005, time.sleep, owner.seconds)

            def on_input_end(self, direction: Direction) -> None:
                return None

            def close(self) -> None:
                return None

        return Handler()


def test_a_stalled_server_does_not_end_the_speech_of_a_client_that_kept_talking() -> None:
    from rxvoice.audio.vad_processor import VADProcessor

    recorder = Recorder()
    speech = _demo_speech()

    async def go() -> None:
        # 1.2 s in (1 s into the speech) the server stalls for 1.4 s, longer than the 1 s audio-idle watch.
        server = await serving(voice_app(lambda t: pipeline(VADProcessor(), Stall(60, 1.4), recorder)))
        loop = asyncio.get_running_loop()
        try:
            async with aiohttp.ClientSession() as client, client.ws_connect(server.make_url("/ws")) as ws:
                t0 = loop.time()
                for i in range(0, len(speech), 640):
                    await ws.send_bytes(speech[i:i + 640])
                    delay = t0 + (i + 640) / 32000 - loop.time()
                    if delay > 0:
                        await asyncio.sleep(delay)
                await asyncio.sleep(0.3)
        finally:
            await server.close()

    run(go, 30)
    vad = [type(f).__name__ for f in recorder.frames
           if isinstance(f, VADUserStartedSpeakingFrame | VADUserStoppedSpeakingFrame)]
    assert vad[:1] == ["VADUserStartedSpeakingFrame"]
    # one speech: no stop in the middle of it (the stall), at most the stop at its end
    assert vad.count("VADUserStartedSpeakingFrame") == 1, vad
