"""Text-to-speech stages in virtual time: pace, bot notices, words as spoken, interruptions, the real espeak-ng."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from rxvoice import LLMContext, pipeline
from rxvoice.aggregators import Pair
from rxvoice.errors import ConfigurationError, ServiceError
from rxvoice.frames import (
    AggregatedTextFrame,
    BotSpeechPauseFrame,
    BotSpeechResumeFrame,
    BotStartedSpeakingFrame,
    BotStoppedSpeakingFrame,
    EndFrame,
    ErrorFrame,
    InterruptionFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    LLMTextFrame,
    OutputAudioRawFrame,
    TranscriptionFrame,
    TTSSpeakFrame,
    TTSStartedFrame,
    TTSStoppedFrame,
    TTSTextFrame,
)
from rxvoice.pipeline import SchedulerOffload, inline_offload
from rxvoice.services.stt import wav_bytes
from rxvoice.services.tts import EspeakTTS, PacedTextTTS, Speech, TTSService, read_wav_pcm, word_times
from rxvoice.testing import COMPLETED, FrameMarbles, ScriptedLLM, tokens
from tests.support import require_program

RESPONSE = [
    (0.0, LLMFullResponseStartFrame()),
    (0.01, LLMTextFrame("Hello there.")),
    (0.02, LLMTextFrame(" How are you?")),
    (0.03, LLMFullResponseEndFrame()),
]


class ToneTTS(TTSService):
    """One second of audio per word at 8 kHz (a real audio path without a synthesizer)."""

    name = "ToneTTS"

    def __init__(self, fail_on: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.fail_on = fail_on
        self.said: list[str] = []

    def synthesize(self, text: str) -> Speech:
        if self.fail_on is not None and self.fail_on in text:
            raise ServiceError(f"cannot say {text!r}")
        self.said.append(text)
        words = text.split()
        return Speech(b"\x10\x00" * 8000 * len(words), 8000, word_times(text, float(len(words))), float(len(words)))


def names(rec: Any, ignore: tuple[type, ...] = (OutputAudioRawFrame,)) -> list[str]:
    return [type(f).__name__ for f in rec.down_frames() if not isinstance(f, ignore)]


def test_words_come_out_at_speaking_pace_with_the_bot_notices_both_ways() -> None:
    m = FrameMarbles()
    rec = m.run(PacedTextTTS(words_per_minute=120), RESPONSE, until=5)
    words = rec.of_type(TTSTextFrame)
    assert [(t, f.text) for t, f in words] == [(20, "Hello"), (520, "there."), (1020, "How"), (1520, "are"),
                                              (2020, "you?")]
    assert all(f.aggregated_by == "word" for _, f in words)
    assert names(rec) == [
        "LLMFullResponseStartFrame", "TTSStartedFrame", "BotStartedSpeakingFrame", *["TTSTextFrame"] * 5,
        "TTSStoppedFrame", "BotStoppedSpeakingFrame", "LLMFullResponseEndFrame",
    ]
    assert [(t, type(f).__name__) for t, f in rec.up] == [(20, "BotStartedSpeakingFrame"),
                                                          (2520, "BotStoppedSpeakingFrame")]
    assert rec.of_type(LLMFullResponseEndFrame)[0][0] == 2520, "the end waits behind the speech"
    assert not any(isinstance(f, LLMTextFrame) for f in rec.down_frames()), "the spoken words replace the text"


def test_audio_is_released_at_pace_a_little_ahead() -> None:
    m = FrameMarbles()
    tts = ToneTTS(chunk_secs=0.1, lead=0.2, offload=SchedulerOffload(m.scheduler, 0.05))
    rec = m.run(tts, [(0.0, TTSSpeakFrame("one two"))], until=4)
    chunks = rec.of_type(OutputAudioRawFrame)
    assert sum(len(f.audio) for _, f in chunks) == 2 * 8000 * 2
    assert all(f.sample_rate == 8000 for _, f in chunks)
    starts = [t for t, _ in chunks]
    assert starts[0] == 50 and starts[:3] == [50, 50, 50], "the lead goes out at once"
    assert starts[-1] == 50 + 1900 - 200
    stopped = [t for t, f in rec.down if isinstance(f, BotStoppedSpeakingFrame)]
    assert stopped == [2050]


def test_an_interruption_stops_at_once_and_keeps_what_cannot_be_interrupted() -> None:
    m = FrameMarbles()
    tts = ToneTTS(offload=inline_offload)
    items = [*RESPONSE, (0.04, EndFrame()), (1.5, InterruptionFrame())]
    rec = m.run(tts, items, until=8)
    assert [f.text for _, f in rec.of_type(TTSTextFrame)] == ["Hello", "there."]
    after = [type(f).__name__ for t, f in rec.down if t >= 1500 and not isinstance(f, OutputAudioRawFrame)]
    assert after[:4] == ["InterruptionFrame", "TTSStoppedFrame", "BotStoppedSpeakingFrame", "EndFrame"]
    assert not any(t > 1500 for t, f in rec.down if isinstance(f, OutputAudioRawFrame | TTSTextFrame))
    assert "LLMFullResponseEndFrame" not in names(rec)
    assert [type(f).__name__ for t, f in rec.up] == ["BotStartedSpeakingFrame", "BotStoppedSpeakingFrame"]


def test_the_assistant_writes_what_was_actually_said() -> None:
    """Interrupted after two words, the conversation holds those two words, not the whole reply."""
    m = FrameMarbles()
    context = LLMContext()
    pair = Pair(context)
    stage = pipeline(PacedTextTTS(words_per_minute=120), pair.assistant())
    rec = m.run(stage, [*RESPONSE, (0.8, InterruptionFrame())], until=3)
    assert [msg["content"] for msg in context.messages] == ["Hello there."]
    full = LLMContext()
    pair = Pair(full)
    m.run(pipeline(PacedTextTTS(words_per_minute=120), pair.assistant()), RESPONSE, until=5)
    assert [msg["content"] for msg in full.messages] == ["Hello there. How are you?"]
    assert rec.of_type(BotStartedSpeakingFrame)


def test_aggregated_sentences_are_spoken_as_they_are_and_skip_tts_text_goes_on() -> None:
    m = FrameMarbles()
    tts = ToneTTS(offload=inline_offload)
    items = [(0.0, AggregatedTextFrame("Ready, Dr. Smith?")), (0.1, LLMTextFrame("(silent)", skip_tts=True))]
    rec = m.run(tts, items, until=6)
    assert tts.said == ["Ready, Dr. Smith?"]
    texts = [(t, f.text) for t, f in rec.of_type(LLMTextFrame)]
    assert texts == [(3000, "(silent)")], "kept in its place, after the speech before it"


def test_a_failed_synthesis_is_reported_and_the_rest_is_spoken() -> None:
    m = FrameMarbles()
    tts = ToneTTS(fail_on="bad", offload=inline_offload)
    items = [(0.0, TTSSpeakFrame("a bad one")), (0.01, TTSSpeakFrame("good"))]
    rec = m.run(tts, items, until=4)
    assert [f.text for _, f in rec.of_type(TTSTextFrame)] == ["good"]
    assert any(isinstance(f, ErrorFrame) for f in rec.up_frames())
    assert names(rec).count("TTSStartedFrame") == 1 and names(rec).count("TTSStoppedFrame") == 1


def test_speech_runs_on_while_the_next_sentence_is_synthesized() -> None:
    """Between two sentences the bot keeps the floor: one started/stopped pair, not two."""
    m = FrameMarbles()
    tts = ToneTTS(offload=SchedulerOffload(m.scheduler, 0.3))
    rec = m.run(tts, RESPONSE, until=8)
    assert names(rec).count("BotStartedSpeakingFrame") == 1
    assert names(rec).count(TTSStartedFrame.__name__) == 1 and names(rec).count(TTSStoppedFrame.__name__) == 1


def test_wav_parsing_takes_streamed_and_stereo_files() -> None:
    pcm = b"\x01\x00\x02\x00" * 10
    assert read_wav_pcm(wav_bytes(pcm, 22050)) == (pcm, 22050)
    streamed = bytearray(wav_bytes(pcm, 16000))
    streamed[40:44] = (0x7FFFFFFF).to_bytes(4, "little")  # espeak-ng's "until the end" size
    assert read_wav_pcm(bytes(streamed)) == (pcm, 16000)
    with pytest.raises(ServiceError):
        read_wav_pcm(b"not a wav file at all")


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ConfigurationError):
        PacedTextTTS(words_per_minute=0)
    with pytest.raises(ConfigurationError):
        PacedTextTTS(chunk_secs=-1)
    with pytest.raises(ConfigurationError, match="Debian package espeak-ng"):
        EspeakTTS(program="no-such-espeak-program")


def test_espeak_speaks_for_real() -> None:
    require_program("espeak-ng")
    m = FrameMarbles()
    tts = EspeakTTS(offload=inline_offload)
    rec = m.run(tts, RESPONSE, until=6)
    audio = b"".join(f.audio for _, f in rec.of_type(OutputAudioRawFrame))
    rate = rec.of_type(OutputAudioRawFrame)[0][1].sample_rate
    assert rate == 22050 and 1.0 < len(audio) / (2 * rate) < 3.5
    assert [f.text for _, f in rec.of_type(TTSTextFrame)] == ["Hello", "there.", "How", "are", "you?"]
    assert np.abs(np.frombuffer(audio, dtype="<i2")).max() > 1000, "it is speech, not silence"


# -- the end of input (an EndFrame, then the input completing right behind it) ------------------------------

NINE_WORDS = "Your table for two is booked at eight tonight."


def _kinds(rec: Any) -> list[str]:
    return ["COMPLETED" if f is COMPLETED else type(f).__name__ for _, f in rec.down
            if not isinstance(f, OutputAudioRawFrame)]


def test_the_input_completing_right_behind_an_end_frame_lets_the_reply_be_spoken_whole() -> None:
    """The reply streams in, ``EndFrame`` and the input's end follow at once: all nine words, then the end."""
    m = FrameMarbles()
    reply = [(0.0, LLMFullResponseStartFrame())]
    reply += [(0.01 * (i + 1), LLMTextFrame(tok)) for i, tok in enumerate(tokens(NINE_WORDS))]
    reply += [(0.1, LLMFullResponseEndFrame()), (0.1, EndFrame()), (0.1, COMPLETED)]
    rec = m.run(PacedTextTTS(words_per_minute=180), reply, until=10)
    assert " ".join(f.text for _, f in rec.of_type(TTSTextFrame)) == NINE_WORDS
    assert _kinds(rec)[-3:] == ["LLMFullResponseEndFrame", "EndFrame", "COMPLETED"]
    assert rec.down[-1][0] == rec.of_type(EndFrame)[0][0] >= 3000, "nine words at 180 a minute: 3 s"


def test_the_whole_reply_is_written_when_the_input_ends_behind_the_end_frame() -> None:
    """Model → TTS → assistant aggregator: the conversation holds the nine-word reply, not its first two words."""
    m = FrameMarbles()
    pair = Pair(LLMContext())
    voice = pipeline(pair.user(), ScriptedLLM([NINE_WORDS], token_delay=0.02), PacedTextTTS(), pair.assistant())
    rec = m.run(voice, [(0.0, TranscriptionFrame("a table for two", finalized=True)), (0.7, EndFrame()),
                        (0.7, COMPLETED)], until=20)
    assert [(msg["role"], msg["content"]) for msg in pair.context().messages] == [
        ("user", "a table for two"), ("assistant", NINE_WORDS)]
    assert _kinds(rec)[-2:] == ["EndFrame", "COMPLETED"]


def test_the_input_completing_without_an_end_frame_flushes_and_speaks_the_rest() -> None:
    m = FrameMarbles()
    rec = m.run(PacedTextTTS(), [(0.0, LLMTextFrame("Half a")), (0.01, LLMTextFrame(" sentence")),
                                 (0.01, COMPLETED)], until=10)
    assert [f.text for _, f in rec.of_type(TTSTextFrame)] == ["Half", "a", "sentence"]
    assert _kinds(rec)[-3:] == ["TTSStoppedFrame", "BotStoppedSpeakingFrame", "COMPLETED"]



def test_a_pause_stops_the_speech_at_once_and_a_resume_plays_on_from_there() -> None:
    """Paused at 0.7 s for 0.8 s: no word or audio in the pause, the rest 0.8 s later, no bot notice."""
    m = FrameMarbles()
    tts = PacedTextTTS(words_per_minute=120)
    items = [*RESPONSE, (0.7, BotSpeechPauseFrame()), (1.5, BotSpeechResumeFrame())]
    rec = m.run(tts, items, until=6)
    words = [(t, f.text) for t, f in rec.of_type(TTSTextFrame)]
    assert words == [(20, "Hello"), (520, "there."), (1820, "How"), (2320, "are"), (2820, "you?")]
    assert not any(700 < t < 1500 for t, f in rec.down if isinstance(f, OutputAudioRawFrame | TTSTextFrame))
    assert [(t, type(f).__name__) for t, f in rec.up] == [(20, "BotStartedSpeakingFrame"),
                                                          (3320, "BotStoppedSpeakingFrame")]
    assert [t for t, _ in rec.of_type((BotSpeechPauseFrame, BotSpeechResumeFrame))] == [700, 1500]


def test_an_interruption_in_a_pause_drops_the_rest_and_a_late_resume_is_harmless() -> None:
    m = FrameMarbles()
    tts = PacedTextTTS(words_per_minute=120)
    items = [*RESPONSE, (0.7, BotSpeechPauseFrame()), (1.0, InterruptionFrame()), (1.2, BotSpeechResumeFrame())]
    rec = m.run(tts, items, until=6)
    assert [f.text for _, f in rec.of_type(TTSTextFrame)] == ["Hello", "there."]
    assert [(t, type(f).__name__) for t, f in rec.up] == [(20, "BotStartedSpeakingFrame"),
                                                          (1000, "BotStoppedSpeakingFrame")]
    # the next reply is not held by the pause that ended
    again = [*items, (2.0, TTSSpeakFrame("Okay."))]
    rec = FrameMarbles().run(PacedTextTTS(words_per_minute=120), again, until=6)
    assert [(t, f.text) for t, f in rec.of_type(TTSTextFrame)][-1] == (2000, "Okay.")


def test_a_pause_while_the_bot_is_quiet_holds_nothing() -> None:
    m = FrameMarbles()
    items = [(0.0, BotSpeechPauseFrame()), (0.5, TTSSpeakFrame("Hello there."))]
    rec = m.run(PacedTextTTS(words_per_minute=120), items, until=3)
    assert [(t, f.text) for t, f in rec.of_type(TTSTextFrame)] == [(500, "Hello"), (1000, "there.")]


def test_a_pause_between_two_sentences_holds_the_next_one() -> None:
    """Paused 10 ms before "Hello there." ends (2 s): "How are you?" starts 10 ms after the resume (2.5 s),
    0.51 s later than without the pause (2.0 s)."""
    m = FrameMarbles()
    tts = ToneTTS(offload=inline_offload)
    items = [(0.0, TTSSpeakFrame("Hello there.")), (0.01, TTSSpeakFrame("How are you?")),
             (1.99, BotSpeechPauseFrame()), (2.5, BotSpeechResumeFrame())]
    rec = m.run(tts, items, until=8)
    words = [(t, f.text) for t, f in rec.of_type(TTSTextFrame)]
    assert words == [(0, "Hello"), (923, "there."), (2510, "How"), (3433, "are"), (4356, "you?")]
