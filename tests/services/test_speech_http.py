"""The OpenAI-compatible speech stages against a real HTTP server on loopback, started by the test."""

from __future__ import annotations

import asyncio
import base64
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from aiohttp import web

from rxvoice import LLMContext, pipeline
from rxvoice.aggregators import Pair
from rxvoice.errors import ConfigurationError, ServiceError
from rxvoice.frames import (
    EndFrame,
    ErrorFrame,
    InputAudioRawFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    LLMTextFrame,
    OutputAudioRawFrame,
    TranscriptionFrame,
    TTSSpeakFrame,
    TTSTextFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from rxvoice.pipeline import arun, inline_offload
from rxvoice.services.stt import OpenAITranscriptionSTT
from rxvoice.services.tts import OpenAISpeechTTS
from rxvoice.testing import FrameMarbles, ScriptedLLM

from ._speech_server import SpeechServer, empty_body, mp3, sign_in_page, wav_without_samples


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


# -- answers that are not what they should be ------------------------------------------------------------


def _errors(stage: Any) -> list[Exception]:
    errors: list[Exception] = []
    stage.events.on("on_error", lambda _s, e: errors.append(e))
    return errors


def test_a_sign_in_page_is_not_the_users_words(server: SpeechServer) -> None:
    """A 200 ``text/html`` answer (a captive portal, a wrong base URL) is an error; the next utterance is heard."""
    stt = OpenAITranscriptionSTT(base_url=server.base_url, offload=inline_offload, pre_roll=0.0)
    errors = _errors(stt)
    server.transcribe_with = sign_in_page
    rec = FrameMarbles().run(stt, utterance(0.0), until=2)
    server.transcribe_with = None
    rec2 = FrameMarbles().run(stt, utterance(0.0), until=2)
    assert rec.of_type(TranscriptionFrame) == []
    assert [f.text for _, f in rec2.of_type(TranscriptionFrame)] == ["heard 8000 samples"]
    assert len(errors) == 1 and isinstance(errors[0], ServiceError)
    assert "text/html, not a transcription" in str(errors[0]) and "Sign in" in str(errors[0])
    assert [type(f.error) for f in rec.up_frames() if isinstance(f, ErrorFrame)] == [ServiceError]


def test_a_plain_text_answer_is_taken_as_the_words(server: SpeechServer) -> None:
    """``response_format=text``: the server answers ``text/plain`` and that is the transcription."""

    async def plain(_request: web.Request) -> web.StreamResponse:
        return web.Response(text="  a table for two \n", content_type="text/plain")

    server.transcribe_with = plain
    stt = OpenAITranscriptionSTT(base_url=server.base_url, offload=inline_offload, params={"response_format": "text"})
    rec = FrameMarbles().run(stt, utterance(0.0), until=2)
    assert [f.text for _, f in rec.of_type(TranscriptionFrame)] == ["a table for two"]


@pytest.mark.parametrize(("answer", "says"), [
    (empty_body, "empty body"),
    (wav_without_samples, "no samples"),
    (mp3, "audio/mpeg (MP3), not WAV or 16-bit PCM"),
])
def test_a_speech_answer_with_nothing_to_play_is_an_error_and_nothing_counts_as_spoken(
    server: SpeechServer, answer: Any, says: str
) -> None:
    """Empty, sample-less or compressed answers: a typed error, no audio, no word spoken, nothing written."""
    server.speak_with = answer
    tts = OpenAISpeechTTS(base_url=server.base_url, offload=inline_offload)
    errors = _errors(tts)
    pair = Pair(LLMContext())
    rec = FrameMarbles().run(pipeline(tts, pair.assistant()), [
        (0.0, LLMFullResponseStartFrame()), (0.01, LLMTextFrame("Your table is booked.")),
        (0.02, LLMFullResponseEndFrame())], until=3)
    tts.close()
    assert rec.of_type(OutputAudioRawFrame) == [] and rec.of_type(TTSTextFrame) == []
    assert [m for m in pair.context().messages if m["role"] == "assistant" and m["content"]] == []
    assert len(errors) == 1 and isinstance(errors[0], ServiceError) and says in str(errors[0]), errors


def test_raw_pcm_is_still_taken_at_openais_rate(server: SpeechServer) -> None:
    async def pcm(_request: web.Request) -> web.StreamResponse:
        return web.Response(body=b"\x10\x00" * 2400, content_type="audio/pcm")

    server.speak_with = pcm
    tts = OpenAISpeechTTS(base_url=server.base_url, offload=inline_offload, params={"response_format": "pcm"})
    rec = FrameMarbles().run(tts, [(0.0, TTSSpeakFrame("hello"))], until=2)
    tts.close()
    assert sum(len(f.audio) for _, f in rec.of_type(OutputAudioRawFrame)) == 4800
    assert [f.text for _, f in rec.of_type(TTSTextFrame)] == ["hello"]


# -- credentials in the base URL ---------------------------------------------------------------------------


def test_credentials_in_the_base_url_go_as_basic_auth_and_never_into_a_log_line(
    server: SpeechServer, caplog: pytest.LogCaptureFixture
) -> None:
    """httpx logs every request at INFO with its URL: the URL the stages use holds no credentials."""
    url = server.base_url.replace("http://", "http://ana:s3cr%40t-key@")
    caplog.set_level(logging.DEBUG)
    stt = OpenAITranscriptionSTT(base_url=url, offload=inline_offload)
    tts = OpenAISpeechTTS(base_url=url, offload=inline_offload)
    FrameMarbles().run(stt, utterance(0.0), until=2)
    FrameMarbles().run(tts, [(0.0, TTSSpeakFrame("hi"))], until=2)
    tts.close()
    basic = "Basic " + base64.b64encode(b"ana:s3cr@t-key").decode()
    assert [r["auth"] for r in server.requests] == [basic, basic]
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "HTTP Request: POST http://127.0.0.1" in logged, "httpx's own line is there, without the credentials"
    for shown in (logged, repr(stt), repr(tts), stt.url, tts.url):
        assert "s3cr" not in shown and "ana:" not in shown


# -- the end of input on a real loop -------------------------------------------------------------------


def test_on_a_real_loop_the_input_completing_behind_an_end_frame_waits_for_the_words(server: SpeechServer) -> None:
    """The quickstart's async generator (audio, ``EndFrame``, done) into the HTTP stage on its own I/O threads."""

    async def microphone() -> Any:
        for _, frame in utterance(0.0):
            yield frame
        yield EndFrame()

    async def main() -> list[Any]:
        stt = OpenAITranscriptionSTT(base_url=server.base_url, pre_roll=0.0)
        pair = Pair(LLMContext())
        voice = pipeline(stt, pair.user(), ScriptedLLM(["For how many?"]), pair.assistant())
        async with asyncio.timeout(10):  # a guard: the run takes a few milliseconds of requests
            out = [f async for f in arun(voice, microphone())]
        return [out, pair.context().messages]

    out, messages = asyncio.run(main())
    kinds = [type(f).__name__ for f in out if not isinstance(f, InputAudioRawFrame)]
    assert kinds[-1] == "EndFrame", kinds
    assert [(m["role"], m["content"]) for m in messages] == [("user", "heard 8000 samples"),
                                                             ("assistant", "For how many?")]
