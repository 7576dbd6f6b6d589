"""Speech-to-text stages in virtual time: utterances, interim and final words, end, cancel, failures."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from rxvoice import LLMContext, pipeline
from rxvoice.aggregators import Pair
from rxvoice.cli.transcribe import transcribe
from rxvoice.cli.wav import read_wav
from rxvoice.errors import ConfigurationError, ServiceError
from rxvoice.frames import (
    CancelFrame,
    EndFrame,
    ErrorFrame,
    InputAudioRawFrame,
    InterimTranscriptionFrame,
    StartFrame,
    STTMetadataFrame,
    STTMuteFrame,
    TranscriptionFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from rxvoice.pipeline import SchedulerOffload, inline_offload
from rxvoice.services.stt import PocketSphinxSTT, STTService, Utterance, word_error_rate
from rxvoice.testing import COMPLETED, FrameMarbles, ScriptedLLM, load_transcript

CHUNK = b"\x01\x00" * 320  # 20 ms at 16 kHz


class FakeRecognizer:
    """Counts audio; says ``heard N`` as its guess and the next scripted text when the utterance ends."""

    def __init__(self, owner: FakeSTT) -> None:
        self.owner = owner
        self.bytes = 0
        self.busy = False

    def accept(self, audio: bytes) -> str | None:
        assert not self.busy, "two calls at once"
        self.owner.calls.append(("accept", len(audio)))
        self.bytes += len(audio)
        return f"heard {self.bytes}"

    def finish(self) -> str:
        self.owner.calls.append(("finish", self.bytes))
        self.bytes = 0
        text = self.owner.script.pop(0)
        if isinstance(text, Exception):
            raise text
        return text

    def close(self) -> None:
        self.owner.closed += 1


class FakeSTT(STTService):
    name = "FakeSTT"

    def __init__(self, script: list[Any], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.script = list(script)
        self.calls: list[tuple[str, int]] = []
        self.closed = 0

    def new_recognizer(self) -> FakeRecognizer:
        return FakeRecognizer(self)


def utterance(start: float, seconds: float) -> list[tuple[float, Any]]:
    """VAD start at ``start``, 20 ms chunks for ``seconds``, VAD stop after them."""
    items: list[tuple[float, Any]] = [(start, VADUserStartedSpeakingFrame(start_secs=0.2))]
    n = round(seconds / 0.02)
    items += [(start + 0.02 * (i + 1), InputAudioRawFrame(CHUNK)) for i in range(n)]
    items.append((start + seconds + 0.001, VADUserStoppedSpeakingFrame(stop_secs=0.2)))
    return items


def test_an_utterance_gives_interim_guesses_then_final_words_stamped_with_user_and_time() -> None:
    m = FrameMarbles()
    stt = FakeSTT(["book a table"], user_id="caller-7", offload=SchedulerOffload(m.scheduler, 0.05))
    before = [(0.01 * (i + 1), InputAudioRawFrame(CHUNK)) for i in range(30)]  # pre-roll
    rec = m.run(stt, [(0.0, StartFrame()), *before, *utterance(1.0, 1.2)], until=5.0)
    down = rec.down_frames()
    assert isinstance(down[1], STTMetadataFrame) and down[1].service_name == "FakeSTT"
    assert sum(isinstance(f, InputAudioRawFrame) for f in down) == 30 + 60  # all audio passed on
    interim = [f for f in down if isinstance(f, InterimTranscriptionFrame)]
    finals = rec.of_type(TranscriptionFrame)
    assert interim and all(f.user_id == "caller-7" for f in interim)
    assert len(finals) == 1
    at, final = finals[0]
    assert final.text == "book a table" and final.finalized and final.user_id == "caller-7"
    assert datetime.fromisoformat(final.timestamp).tzinfo is not None
    assert final.result == Utterance(0.4, 1.6), "where in the audio: VAD start - start_secs .. stop - stop_secs"
    assert 2200 <= at <= 2400, "the words come one job after the VAD stop"
    # the pre-roll (start_secs 0.2 + 0.3 s) went in with the speech: 0.5 s + 1.2 s of audio
    total = sum(n for kind, n in stt.calls if kind == "accept")
    assert total == round(1.7 * 16000) * 2
    # the VAD frames and the final words are in order: stop, then words
    types = [type(f).__name__ for f in down if not isinstance(f, InputAudioRawFrame | InterimTranscriptionFrame)]
    assert types == ["StartFrame", "STTMetadataFrame", "VADUserStartedSpeakingFrame",
                     "VADUserStoppedSpeakingFrame", "TranscriptionFrame", "COMPLETED"][: len(types)]


def test_end_waits_for_the_last_words() -> None:
    m = FrameMarbles()
    stt = FakeSTT(["last words"], offload=SchedulerOffload(m.scheduler, 0.3))
    items = [*utterance(0.0, 0.5)[:-1], (0.6, EndFrame())]  # the stream ends mid-utterance
    rec = m.run(stt, items, until=3.0)
    names = [type(f).__name__ for f in rec.down_frames() if not isinstance(f, InputAudioRawFrame)]
    assert names.index("TranscriptionFrame") < names.index("EndFrame")
    assert rec.of_type(TranscriptionFrame)[0][1].text == "last words"


def test_cancel_drops_what_is_being_recognized_and_passes_at_once() -> None:
    m = FrameMarbles()
    stt = FakeSTT(["never said", ""], offload=SchedulerOffload(m.scheduler, 0.3))
    rec = m.run(stt, [*utterance(0.0, 0.5), (0.55, CancelFrame())], until=3.0)
    assert rec.of_type(TranscriptionFrame) == []
    assert rec.of_type(CancelFrame)[0][0] == 550


def test_a_failing_recognizer_is_reported_and_the_next_utterance_still_heard() -> None:
    m = FrameMarbles()
    stt = FakeSTT([ServiceError("boom"), "second try"], offload=SchedulerOffload(m.scheduler, 0.01))
    errors: list[Exception] = []
    stt.events.on("on_error", lambda _s, e: errors.append(e))
    rec = m.run(stt, [*utterance(0.0, 0.3), *utterance(1.0, 0.3)], until=3.0)
    assert [f.text for _, f in rec.of_type(TranscriptionFrame)] == ["second try"]
    assert any(isinstance(f, ErrorFrame) for f in rec.up_frames())
    assert [str(e) for e in errors] == ["boom"]


def test_nothing_heard_gives_no_transcription() -> None:
    m = FrameMarbles()
    stt = FakeSTT(["   "], offload=inline_offload)
    rec = m.run(stt, utterance(0.0, 0.3), until=2.0)
    assert rec.of_type(TranscriptionFrame) == []


def test_muted_audio_is_not_heard_and_an_open_utterance_is_finished() -> None:
    m = FrameMarbles()
    stt = FakeSTT(["before the mute"], offload=inline_offload)
    items = utterance(0.0, 0.6)
    items.insert(10, (0.19, STTMuteFrame(True)))
    rec = m.run(stt, sorted(items, key=lambda i: i[0]), until=2.0)
    assert [f.text for _, f in rec.of_type(TranscriptionFrame)] == ["before the mute"]
    assert stt.calls[-1][0] == "finish"
    heard = sum(n for kind, n in stt.calls if kind == "accept")
    assert heard < round(0.7 * 16000) * 2


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ConfigurationError):
        FakeSTT([], interim_interval=0)
    with pytest.raises(ConfigurationError):
        FakeSTT([], pre_roll=3)
    with pytest.raises(ConfigurationError):
        FakeSTT([], user_id=7)  # type: ignore[arg-type]


def test_word_error_rate() -> None:
    assert word_error_rate("Hi, I would like", "hi i would like") == 0.0
    assert word_error_rate("a b c d", "a x c") == 0.5
    assert word_error_rate("", "") == 0.0
    assert re.fullmatch(r"0\.\d+", f"{word_error_rate('one two three', 'one two'):.2f}")


def test_pocketsphinx_hears_the_booking_call(booking_wav: Path) -> None:
    """The real engine through the real VAD: one final per utterance, in order, and about the words measured."""
    wav = booking_wav
    heard = transcribe(read_wav(wav), PocketSphinxSTT(offload=inline_offload))
    reference = " ".join(s.text for s in load_transcript(wav.with_name("booking.transcript.json")).segments)
    text = " ".join(s.text for s in heard.segments)
    assert len(heard.segments) >= 5
    assert all(a.end <= b.start for a, b in zip(heard.segments, heard.segments[1:], strict=False))
    assert "that is all" in text
    assert word_error_rate(reference, text) <= 0.7, text  # 0.61 measured (see the voice guide)


# -- the end of input (an EndFrame, then the input completing right behind it) ------------------------------


def _kinds(rec: Any) -> list[str]:
    return [type(f).__name__ if not isinstance(f, type(COMPLETED)) else "COMPLETED" for _, f in rec.down
            if not isinstance(f, InputAudioRawFrame)]


def test_the_input_completing_right_behind_an_end_frame_still_waits_for_the_last_words() -> None:
    """The async-generator pattern: the last utterance, ``EndFrame``, and the source is done at the same instant."""
    m = FrameMarbles()
    stt = FakeSTT(["last words"], offload=SchedulerOffload(m.scheduler, 0.3))
    items = [*utterance(0.0, 0.5), (0.51, EndFrame()), (0.51, COMPLETED)]
    rec = m.run(stt, items, until=3.0)
    assert _kinds(rec)[-3:] == ["TranscriptionFrame", "EndFrame", "COMPLETED"]
    assert rec.of_type(TranscriptionFrame)[0][1].text == "last words"
    said_at = rec.of_type(TranscriptionFrame)[0][0]
    assert said_at > 510 and rec.down[-1][0] == said_at, "completed as soon as the words were out"


def test_the_input_completing_mid_utterance_is_an_end_that_waits_for_the_words() -> None:
    m = FrameMarbles()
    stt = FakeSTT(["cut short"], offload=SchedulerOffload(m.scheduler, 0.3))
    rec = m.run(stt, [*utterance(0.0, 0.5)[:-1], (0.55, COMPLETED)], until=3.0)
    assert _kinds(rec)[-2:] == ["TranscriptionFrame", "COMPLETED"]
    assert rec.of_type(TranscriptionFrame)[0][1].text == "cut short"


def test_the_end_of_input_waits_for_the_words_their_answer_and_the_end_frame_through_a_whole_voice() -> None:
    """STT → user aggregator → model → assistant: the last words are written and answered before the end."""
    m = FrameMarbles()
    stt = FakeSTT(["book a table"], offload=SchedulerOffload(m.scheduler, 0.3))
    pair = Pair(LLMContext())
    voice = pipeline(stt, pair.user(), ScriptedLLM(["For how many?"], token_delay=0.05), pair.assistant())
    rec = m.run(voice, [*utterance(0.0, 0.5), (0.51, EndFrame()), (0.51, COMPLETED)], until=10.0)
    assert [(msg["role"], msg["content"]) for msg in pair.context().messages] == [
        ("user", "book a table"), ("assistant", "For how many?")]
    assert _kinds(rec)[-2:] == ["EndFrame", "COMPLETED"]

