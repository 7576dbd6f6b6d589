"""A speech server on 127.0.0.1 for the HTTP stages' tests: OpenAI's two audio routes, with answers to script.

``/v1/audio/transcriptions`` answers ``{"text": "heard N samples"}`` and
``/v1/audio/speech`` a one-second 220 Hz tone as a 24 kHz WAV, unless the test
sets ``transcribe_with``/``speak_with`` to one of the bad answers below (an
HTML page, an empty body, a WAV without samples, MP3, a drip). It runs on a
thread of its own with its own loop, so the stages' blocking requests and the
server never wait on each other.
"""

from __future__ import annotations

import asyncio
import io
import threading
import wave
from collections.abc import Awaitable, Callable
from typing import Any

import numpy as np
from aiohttp import web

from rxvoice.services.stt import wav_bytes

Answer = Callable[[web.Request], Awaitable[web.StreamResponse]]

SIGN_IN_PAGE = "<!doctype html><html><head><title>Sign in</title></head><body>Please sign in</body></html>"


async def sign_in_page(_request: web.Request) -> web.StreamResponse:
    """A captive portal or a proxy's login: 200, ``text/html``."""
    return web.Response(text=SIGN_IN_PAGE, content_type="text/html")


async def empty_body(_request: web.Request) -> web.StreamResponse:
    return web.Response(body=b"", content_type="audio/wav")


async def wav_without_samples(_request: web.Request) -> web.StreamResponse:
    return web.Response(body=wav_bytes(b"", 24000), content_type="audio/wav")


async def mp3(_request: web.Request) -> web.StreamResponse:
    """What a server that ignores ``response_format`` sends: MPEG audio (an ID3 tag, then frames)."""
    return web.Response(body=b"ID3\x04\x00\x00\x00\x00\x00\x00" + b"\xff\xfb\x90\x64" * 200, content_type="audio/mpeg")


def drip(every: float, count: int) -> Answer:
    """200 at once, then one byte every ``every`` seconds, ``count`` bytes in all (each read is short)."""

    async def answer(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        try:
            for _ in range(count):
                # A real pause between bytes is the point: the client's per-read timeouts must not be what bounds it.
                await asyncio.sleep(every)
                await response.write(b" ")
        except (ConnectionError, asyncio.CancelledError):
            pass  # the client gave up: what this test wants
        return response

    return answer


class SpeechServer:
    """``/v1/audio/transcriptions`` and ``/v1/audio/speech`` on 127.0.0.1, in a thread of its own."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.fail_next: int | None = None
        self.transcribe_with: Answer | None = None
        self.speak_with: Answer | None = None
        self.loop = asyncio.new_event_loop()
        self.port = 0
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    async def _transcribe(self, request: web.Request) -> web.StreamResponse:
        form = await request.post()
        audio = form["file"]
        assert isinstance(audio, web.FileField)
        with wave.open(io.BytesIO(audio.file.read())) as w:
            frames, rate = w.getnframes(), w.getframerate()
        self.requests.append({"path": request.path, "model": form.get("model"), "language": form.get("language"),
                              "frames": frames, "rate": rate, "auth": request.headers.get("Authorization")})
        if self.transcribe_with is not None:
            return await self.transcribe_with(request)
        if self.fail_next is not None:
            status, self.fail_next = self.fail_next, None
            return web.Response(status=status, text='{"error": {"message": "the model is overloaded"}}')
        return web.json_response({"text": f"heard {frames} samples"})

    async def _speak(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append({"path": request.path, "auth": request.headers.get("Authorization"), **body})
        if self.speak_with is not None:
            return await self.speak_with(request)
        if body["input"] == "forbidden words":
            return web.Response(status=400, text="input not allowed")
        tone = (np.sin(np.arange(24000) / 24000 * 2 * np.pi * 220) * 8000).astype("<i2").tobytes()
        return web.Response(body=wav_bytes(tone, 24000), content_type="audio/wav")

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        app = web.Application()
        app.router.add_post("/v1/audio/transcriptions", self._transcribe)
        app.router.add_post("/v1/audio/speech", self._speak)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        self.loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0)
        self.loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.runner = runner
        self._ready.set()
        self.loop.run_forever()
        self.loop.run_until_complete(runner.cleanup())
        self.loop.close()

    def start(self) -> SpeechServer:
        self._thread.start()
        assert self._ready.wait(10)
        return self

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"
