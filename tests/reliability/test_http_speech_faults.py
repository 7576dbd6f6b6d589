"""The HTTP speech stages against servers that misbehave in time: the whole answer is bounded, not each read.

Loopback tests against a real server on 127.0.0.1: the time measured is wall
time because a real socket's reads are what is being bounded (each run takes
about one second, the ``timeout`` given).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from rxvoice.errors import ServiceError
from rxvoice.frames import (
    InputAudioRawFrame,
    OutputAudioRawFrame,
    TranscriptionFrame,
    TTSSpeakFrame,
    TTSTextFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from rxvoice.pipeline import inline_offload
from rxvoice.services.stt import OpenAITranscriptionSTT
from rxvoice.services.tts import OpenAISpeechTTS
from rxvoice.testing import FrameMarbles
from tests.services._speech_server import SpeechServer, drip

TIMEOUT = 1.0
DRIP = drip(every=0.2, count=40)  # 8 s of answer, one byte every 0.2 s: no single read ever waits long


@pytest.fixture
def server() -> Iterator[SpeechServer]:
    s = SpeechServer().start()
    yield s
    s.stop()


def utterance() -> list[tuple[float, Any]]:
    items: list[tuple[float, Any]] = [(0.0, VADUserStartedSpeakingFrame(start_secs=0.0))]
    items += [(0.02 * (i + 1), InputAudioRawFrame(b"\x02\x00" * 320)) for i in range(25)]
    items.append((0.51, VADUserStoppedSpeakingFrame(stop_secs=0.0)))
    return items


def timed_errors(stage: Any, items: list[tuple[float, Any]]) -> tuple[float, list[Exception], Any]:
    errors: list[Exception] = []
    stage.events.on("on_error", lambda _s, e: errors.append(e))
    started = time.monotonic()  # wall time: the socket's reads are real
    rec = FrameMarbles().run(stage, items, until=3)
    return time.monotonic() - started, errors, rec


def test_a_transcription_server_that_drips_its_answer_is_cut_off_at_the_timeout(server: SpeechServer) -> None:
    server.transcribe_with = DRIP
    stt = OpenAITranscriptionSTT(base_url=server.base_url, offload=inline_offload, timeout=TIMEOUT)
    took, errors, rec = timed_errors(stt, utterance())
    assert rec.of_type(TranscriptionFrame) == []
    assert len(errors) == 1 and isinstance(errors[0], ServiceError) and errors[0].retryable
    assert f"did not answer within {TIMEOUT:g} s" in str(errors[0])
    assert TIMEOUT <= took < TIMEOUT + 0.8, f"{took:.2f} s for a {TIMEOUT:g} s timeout"


def test_a_speech_server_that_drips_its_answer_is_cut_off_at_the_timeout(server: SpeechServer) -> None:
    server.speak_with = DRIP
    tts = OpenAISpeechTTS(base_url=server.base_url, offload=inline_offload, timeout=TIMEOUT)
    took, errors, rec = timed_errors(tts, [(0.0, TTSSpeakFrame("Your table is booked."))])
    tts.close()
    assert rec.of_type(OutputAudioRawFrame) == [] and rec.of_type(TTSTextFrame) == []
    assert len(errors) == 1 and isinstance(errors[0], ServiceError) and errors[0].retryable
    assert TIMEOUT <= took < TIMEOUT + 0.8, f"{took:.2f} s for a {TIMEOUT:g} s timeout"
