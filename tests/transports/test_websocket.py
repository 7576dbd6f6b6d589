"""The WebSocket transport and the serve app on loopback: origin, bad input, caps, cleanup, no cross-talk."""

from __future__ import annotations

import asyncio
import gc
import json
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import numpy as np
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from rxvoice.cli import serve
from rxvoice.frames import DOWN, Direction, Frame, InputAudioRawFrame, OutputAudioRawFrame
from rxvoice.pipeline import Port, Processor, pipeline
from rxvoice.transports import LIVE_TRANSPORTS, Limits, WebSocketAudioTransport, origin_allowed, voice_app


def run(coro: Callable[[], Awaitable[None]], seconds: float = 60.0) -> None:
    async def bounded() -> None:
        await asyncio.wait_for(coro(), seconds)

    asyncio.run(bounded())


class Echo(Processor):
    """Sends each audio chunk back as bot audio (a pipeline whose output shows whose input it was)."""

    name = "Echo"

    def open(self, port: Port) -> Any:
        class Handler:
            def on_frame(self, frame: Frame, direction: Direction) -> None:
                port.push(frame, direction)
                if direction is DOWN and isinstance(frame, InputAudioRawFrame):
                    port.push_down(OutputAudioRawFrame(frame.audio, frame.sample_rate))

            def on_input_end(self, direction: Direction) -> None:
                return None

            def close(self) -> None:
                return None

        return Handler()


def echo_app(**kwargs: Any) -> web.Application:
    return voice_app(lambda t: pipeline(Echo(), t.output()), **kwargs)


async def serving(app: web.Application) -> TestServer:
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    return server


async def next_event(ws: aiohttp.ClientWebSocketResponse, kind: str, wait: float = 10.0) -> dict[str, Any]:
    while True:
        msg = await asyncio.wait_for(ws.receive(), wait)
        if msg.type == aiohttp.WSMsgType.TEXT:
            event = json.loads(msg.data)
            if event.get("type") == kind:
                return event
        elif msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.ERROR):
            raise AssertionError(f"the connection closed while waiting for {kind!r}: {msg}")


def test_origin_rule() -> None:
    assert origin_allowed(None, "127.0.0.1:8765")
    assert origin_allowed("http://127.0.0.1:8765", "127.0.0.1:8765")
    assert not origin_allowed("http://evil.example", "127.0.0.1:8765")
    assert not origin_allowed("http://127.0.0.1:9999", "127.0.0.1:8765")
    assert origin_allowed("http://app.example", "127.0.0.1:8765", ("http://app.example",))


def test_an_upgrade_from_another_origin_is_refused_and_the_own_page_is_served() -> None:
    async def go() -> None:
        server = await serving(echo_app())
        url = server.make_url("/ws")
        try:
            async with aiohttp.ClientSession() as client:
                async with client.get(server.make_url("/")) as page:
                    assert page.status == 200 and "live turn inspector" in await page.text()
                async with client.get(server.make_url("/static/app.js")) as js:
                    assert js.status == 200
                try:
                    await client.ws_connect(url, headers={"Origin": "http://evil.example"})
                    raise AssertionError("the upgrade was accepted")
                except aiohttp.WSServerHandshakeError as exc:
                    assert exc.status == 403
                own = f"http://{server.host}:{server.port}"
                async with client.ws_connect(url, headers={"Origin": own}) as ws:
                    await ws.send_str('{"type": "ping"}')
                    await next_event(ws, "pong")
        finally:
            await server.close()

    run(go)


def test_malformed_messages_get_an_error_to_that_client_only() -> None:
    async def go() -> None:
        server = await serving(echo_app())
        try:
            async with aiohttp.ClientSession() as client:
                bystander = await client.ws_connect(server.make_url("/ws"))
                ws = await client.ws_connect(server.make_url("/ws"))
                # the limiter allows one error a second: wait out the window between bad messages
                bad: list[tuple[str, Callable[[], Awaitable[None]]]] = [
                    ("odd count", lambda: ws.send_bytes(b"\x01\x02\x03")),
                    ("not 16000", lambda: ws.send_str('{"type": "start", "sample_rate": 44100}')),
                    ("did not parse", lambda: ws.send_str("{garbage")),
                    ("unknown message type", lambda: ws.send_str('{"type": "launch"}')),
                ]
                for words, send in bad:
                    await send()
                    error = await next_event(ws, "error")
                    assert words in error["message"] or words.split()[0] in error["message"], error
                    await asyncio.sleep(1.05)
                await ws.send_str('{"type": "ping"}')
                await next_event(ws, "pong")  # still connected
                await bystander.send_bytes(b"\x05\x00" * 320)
                msg = await asyncio.wait_for(bystander.receive(), 5)
                assert msg.type == aiohttp.WSMsgType.BINARY and msg.data[4:] == b"\x05\x00" * 320
                await bystander.send_str('{"type": "ping"}')
                event = await next_event(bystander, "pong")
                assert event == {"type": "pong"}
                await ws.close()
                await bystander.close()
        finally:
            await server.close()

    run(go)


def test_a_client_over_the_rate_cap_is_told_and_stays_connected() -> None:
    async def go() -> None:
        server = await serving(echo_app(limits=Limits(messages_per_second=50)))
        try:
            async with aiohttp.ClientSession() as client, client.ws_connect(server.make_url("/ws")) as ws:
                for _ in range(400):
                    await ws.send_bytes(b"\0\0" * 320)
                error = await next_event(ws, "error")
                assert "rate cap" in error["message"]
                await asyncio.sleep(1.0)
                await ws.send_str('{"type": "ping"}')
                await next_event(ws, "pong")
        finally:
            await server.close()

    run(go)


def test_twenty_connections_each_hear_only_themselves() -> None:
    async def go() -> None:
        server = await serving(echo_app())
        try:
            async with aiohttp.ClientSession() as client:
                sockets = [await client.ws_connect(server.make_url("/ws")) for _ in range(20)]

                async def talk(i: int, ws: aiohttp.ClientWebSocketResponse) -> None:
                    mine = np.full(320, i + 1, dtype="<i2").tobytes()
                    for _ in range(10):
                        await ws.send_bytes(mine)
                    got = 0
                    while got < 10:
                        msg = await asyncio.wait_for(ws.receive(), 10)
                        if msg.type == aiohttp.WSMsgType.BINARY:
                            assert msg.data[4:] == mine, f"connection {i} heard someone else"
                            got += 1
                    await ws.close()

                await asyncio.gather(*(talk(i, ws) for i, ws in enumerate(sockets)))
        finally:
            await server.close()

    run(go)


def test_a_hundred_disconnects_mid_turn_leave_nothing_behind(monkeypatch: pytest.MonkeyPatch) -> None:
    """The full serve stack: each client speaks (noise the VAD takes for speech) and leaves mid-turn."""
    from rxvoice.transports import app as app_module

    monkeypatch.setattr(app_module, "SESSION_STARTS", (1000.0, 1000))  # a hundred from one address, on purpose
    options = serve.ServeOptions(stt="none", tts="paced", stop="speech-timeout")
    app = serve.make_app(options)
    rng = np.random.default_rng(7)
    speech = (rng.standard_normal(16000) * 6000).astype("<i2").tobytes()

    async def go() -> None:
        server = await serving(app)
        loop = asyncio.get_running_loop()
        try:
            async with aiohttp.ClientSession() as client:
                async def cycle() -> None:
                    async with client.ws_connect(server.make_url("/ws")) as ws:
                        await next_event(ws, "hello")
                        for i in range(0, len(speech), 640):
                            await ws.send_bytes(speech[i:i + 640])
                        await asyncio.sleep(0.01)

                await cycle()  # warm up: models loaded, pools started
                await asyncio.sleep(0.5)
                threads = {t.ident for t in threading.enumerate()}
                for _ in range(100):
                    await cycle()
                for _ in range(100):
                    if not app[LIVE_TRANSPORTS]:
                        break
                    await asyncio.sleep(0.05)
                assert not app[LIVE_TRANSPORTS], "a connection is still open on the server"
                await asyncio.sleep(0.3)
                gc.collect()
                assert not [o for o in gc.get_objects() if type(o).__name__ == "PageWatch"], "a session survived"
                new = [t.name for t in threading.enumerate() if t.ident not in threads]
                pools = [n for n in new if n.startswith("rxvoice-worker")]
                assert len(pools) <= 2 and len(new) == len(pools), f"threads were left running: {new}"
                timers = [h for h in getattr(loop, "_scheduled", []) if not h.cancelled()]
                assert len(timers) <= 3, f"timers left on the loop: {timers}"
        finally:
            await server.close()

    run(go, 120)


def test_the_transport_refuses_bad_limits() -> None:
    import pytest

    from rxvoice.errors import ConfigurationError

    with pytest.raises(ConfigurationError):
        Limits(messages_per_second=0)
    assert WebSocketAudioTransport.__init__ is not None


def test_the_output_tells_the_client_to_pause_resume_and_stop_the_bot_s_voice() -> None:
    """A pause, a resume and an interruption each become their message to the client, in order, and pass on."""
    from rxvoice.frames import BotSpeechPauseFrame, BotSpeechResumeFrame, InterruptionFrame
    from rxvoice.testing import FrameMarbles

    sent: list[dict[str, Any]] = []

    class Recorder(WebSocketAudioTransport):
        def send(self, event: dict[str, Any]) -> None:
            sent.append(event)

    transport = Recorder(None)  # type: ignore[arg-type]  # the output only sends: no socket needed
    items = [(0.0, BotSpeechPauseFrame()), (0.1, BotSpeechResumeFrame()), (0.2, BotSpeechPauseFrame()),
             (0.3, InterruptionFrame())]
    rec = FrameMarbles().run(transport.output(), items, until=1)
    assert [e["type"] for e in sent] == ["pause", "resume", "pause", "interrupt"]
    assert len(rec.down_frames()) == 4


def test_a_lazy_app_builds_a_connection_s_pipeline_only_when_its_client_first_speaks() -> None:
    """``voice_app(lazy=True)``: the greeting at once, pings answered, no pipeline until audio; a silent client that
    leaves is let go at once (no end grace for a pipeline that never was)."""
    built: list[WebSocketAudioTransport] = []

    def make(t: WebSocketAudioTransport) -> Any:
        built.append(t)
        return pipeline(Echo(), t.output())

    async def go() -> None:
        app = voice_app(make, lazy=True, greeting={"type": "hello", "n": 1}, limits=Limits(end_grace=5.0))
        server = await serving(app)
        try:
            async with aiohttp.ClientSession() as client:
                silent = await client.ws_connect(server.make_url("/ws"))
                assert await next_event(silent, "hello") == {"type": "hello", "n": 1}
                await silent.send_str('{"type": "ping"}')
                await next_event(silent, "pong")
                assert built == [] and len(app[LIVE_TRANSPORTS]) == 1
                loop = asyncio.get_running_loop()
                left = loop.time()
                await silent.close()
                for _ in range(100):
                    if not app[LIVE_TRANSPORTS]:
                        break
                    await asyncio.sleep(0.02)
                assert not app[LIVE_TRANSPORTS] and loop.time() - left < 2.0  # not held for the 5 s grace
                assert built == []
                async with client.ws_connect(server.make_url("/ws")) as ws:
                    await next_event(ws, "hello")
                    assert built == []
                    await ws.send_bytes(b"\x07\x00" * 320)
                    msg = await asyncio.wait_for(ws.receive(), 10)
                    assert msg.type == aiohttp.WSMsgType.BINARY and msg.data[4:] == b"\x07\x00" * 320
                    assert len(built) == 1
                    await ws.send_bytes(b"\x08\x00" * 320)
                    msg = await asyncio.wait_for(ws.receive(), 10)
                    assert msg.data[4:] == b"\x08\x00" * 320 and len(built) == 1  # built once
        finally:
            await server.close()

    run(go)


def test_a_lazy_pipeline_that_fails_to_build_tells_its_client_and_frees_its_place() -> None:
    def make(_t: WebSocketAudioTransport) -> Any:
        raise RuntimeError("no model today")

    async def go() -> None:
        app = voice_app(make, lazy=True, max_sessions=1)
        server = await serving(app)
        try:
            async with aiohttp.ClientSession() as client:
                for _ in range(2):  # the place is given back: the second session is admitted too
                    async with client.ws_connect(server.make_url("/ws")) as ws:
                        await ws.send_bytes(b"\0\0" * 320)
                        error = await next_event(ws, "error")
                        assert "no model today" in error["message"]
                    for _ in range(100):
                        if not app[LIVE_TRANSPORTS]:
                            break
                        await asyncio.sleep(0.02)
                    assert not app[LIVE_TRANSPORTS]
        finally:
            await server.close()

    run(go)


def test_run_takes_a_stage_or_a_build_function() -> None:
    from rxvoice.errors import ConfigurationError

    transport = WebSocketAudioTransport(None)  # type: ignore[arg-type]

    async def go() -> None:
        with pytest.raises(ConfigurationError):
            await transport.run()
        with pytest.raises(ConfigurationError):
            await transport.run(Echo(), build=Echo)

    run(go)


def test_serve_greets_an_idle_connection_once_and_builds_its_session_when_it_speaks() -> None:
    """``rxvoice serve``: the hello as the connection opens (once), no session objects while the caller is
    silent, the whole pipeline (the page's events) once audio comes."""
    options = serve.ServeOptions(stt="none", tts="paced", stop="speech-timeout")
    app = serve.make_app(options)

    def watches() -> int:
        return len([o for o in gc.get_objects() if type(o).__name__ == "PageWatch"])

    async def go() -> None:
        server = await serving(app)
        try:
            async with aiohttp.ClientSession() as client, client.ws_connect(server.make_url("/ws")) as ws:
                hello = await next_event(ws, "hello")
                assert hello["setup"] == options.describe()
                await ws.send_str('{"type": "ping"}')
                await next_event(ws, "pong")
                assert watches() == 0
                for _ in range(5):
                    await ws.send_bytes(b"\0\0" * 320)
                await next_event(ws, "audio")  # the page's level trace (every fifth chunk): the session runs
                assert watches() == 1
                await ws.send_str('{"type": "ping"}')
                while True:  # no second hello from the pipeline
                    msg = await asyncio.wait_for(ws.receive(), 10)
                    event = json.loads(msg.data) if msg.type == aiohttp.WSMsgType.TEXT else {}
                    assert event.get("type") != "hello"
                    if event.get("type") == "pong":
                        break
        finally:
            await server.close()

    run(go)
