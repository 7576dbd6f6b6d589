"""The OpenAI-compatible speech stages against a real HTTP server on loopback, started by the test."""

from __future__ import annotations

import asyncio
import io
import threading
import wave
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from aiohttp import web

from rxvoice.errors import ConfigurationError, ServiceError
from rxvoice.frames import (
    ErrorFrame,
    InputAudioRawFrame,
    OutputAudioRawFrame,
    TranscriptionFrame,
    TTSSpeakFrame,
    TTSTextFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from rxvoice.services.stt import OpenAITranscriptionSTT, wav_bytes
from rxvoice.services.tts import OpenAISpeechTTS
from rxvoice.testing import FrameMarbles
from rxvoice.turns import inline_offload


class SpeechServer:
    """``/v1/audio/transcriptions`` and ``/v1/audio/speech`` on 127.0.0.1, in a thread of its own."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.fail_next: int | None = None
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
        if self.fail_next is not None:
            status, self.fail_next = self.fail_next, None
            return web.Response(status=status, text='{"error": {"message": "the model is overloaded"}}')
        return web.json_response({"text": f"heard {frames} samples"})

    async def _speak(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append({"path": request.path, **body})
        if body["input"] == "forbidden words":
            return web.Response(status=400, text="input not allowed")
        tone = (np.sin(np.arange(24000) / 24000 * 2 * np.pi * 220) * 8000).astype("<i2").tobytes()
        return web.Response(body=wav_bytes(tone, 24000), content_type="audio/wav")

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        app = web.Application()
        app.router.add_post("/v1/audio/transcriptions", self._transcribe)
        app.router.add_post("/v1/audio/speech", self._speak)
        runner = web.AppRunner(app, access_log=None)
        self.loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0)
        self.loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.runner = runner
        self._ready.set()
        self.loop.run_forever()
        self.loop.run_until_complete(runner.cleanup())

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


@pytest.fixture
def server() -> Iterator[SpeechServer]:
    s = SpeechServer().start()
    yield s
    s.stop()


def utterance(start: float, chunks: int = 25) -> list[tuple[float, Any]]:
    audio = b"\x02\x00" * 320
    items: list[tuple[float, Any]] = [(start, VADUserStartedSpeakingFrame(start_secs=0.0))]
    items += [(start + 0.02 * (i + 1), InputAudioRawFrame(audio)) for i in range(chunks)]
    items.append((start + 0.02 * chunks + 0.01, VADUserStoppedSpeakingFrame(stop_secs=0.0)))
    return items


def test_one_request_per_utterance_with_the_utterance_as_a_wav(server: SpeechServer) -> None:
    stt = OpenAITranscriptionSTT("whisper-local", base_url=server.base_url, api_key="k", offload=inline_offload,
                                 pre_roll=0.0)
    rec = FrameMarbles().run(stt, [*utterance(0.0), *utterance(1.0, 10)], until=3)
    assert [f.text for _, f in rec.of_type(TranscriptionFrame)] == ["heard 8000 samples", "heard 3200 samples"]
    assert [r["frames"] for r in server.requests] == [8000, 3200]
    assert all(r["rate"] == 16000 and r["model"] == "whisper-local" and r["language"] == "en" for r in server.requests)
    assert server.requests[0]["auth"] == "Bearer k"


def test_an_http_error_is_a_typed_error_and_the_session_goes_on(server: SpeechServer) -> None:
    stt = OpenAITranscriptionSTT(base_url=server.base_url, offload=inline_offload)
    errors: list[Exception] = []
    stt.events.on("on_error", lambda _s, e: errors.append(e))
    server.fail_next = 503
    rec = FrameMarbles().run(stt, [*utterance(0.0), *utterance(1.0)], until=3)
    assert [f.text for _, f in rec.of_type(TranscriptionFrame)] == ["heard 8000 samples"]
    assert isinstance(errors[0], ServiceError) and errors[0].status == 503 and errors[0].retryable
    assert "overloaded" in str(errors[0])
    assert any(isinstance(f, ErrorFrame) for f in rec.up_frames())


def test_a_server_that_is_not_there_is_a_retryable_error() -> None:
    stt = OpenAITranscriptionSTT(base_url="http://127.0.0.1:9/v1", offload=inline_offload, timeout=2)
    errors: list[Exception] = []
    stt.events.on("on_error", lambda _s, e: errors.append(e))
    rec = FrameMarbles().run(stt, utterance(0.0), until=2)
    assert rec.of_type(TranscriptionFrame) == []
    assert isinstance(errors[0], ServiceError) and errors[0].retryable


def test_speech_comes_from_the_server_at_its_rate(server: SpeechServer) -> None:
    tts = OpenAISpeechTTS("tts-local", voice="nova", base_url=server.base_url, offload=inline_offload)
    rec = FrameMarbles().run(tts, [(0.0, TTSSpeakFrame("forbidden words")), (0.1, TTSSpeakFrame("hello world"))],
                             until=3)
    audio = rec.of_type(OutputAudioRawFrame)
    assert {f.sample_rate for _, f in audio} == {24000}
    assert sum(len(f.audio) for _, f in audio) == 48000
    assert [f.text for _, f in rec.of_type(TTSTextFrame)] == ["hello", "world"]
    assert [(r["model"], r["voice"], r["input"]) for r in server.requests] == [
        ("tts-local", "nova", "forbidden words"), ("tts-local", "nova", "hello world")]
    errors = [f.error for f in rec.up_frames() if isinstance(f, ErrorFrame)]
    assert len(errors) == 1 and isinstance(errors[0], ServiceError) and errors[0].status == 400
    tts.close()


def test_openais_own_host_needs_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ConfigurationError, match="needs a key"):
        OpenAITranscriptionSTT()
    with pytest.raises(ConfigurationError, match="needs a key"):
        OpenAISpeechTTS()
    with pytest.raises(ConfigurationError, match="http"):
        OpenAISpeechTTS(base_url="ftp://example")
