"""An end lets the answer already asked for finish (bounded); a cancel does not.

A transcript followed at once by the end of the conversation (an ``EndFrame``,
or the input simply completing) writes the user message and then waits for
the model's answer, as a Pipecat user expects; ``CancelFrame`` stops at once.
The speech stages hold an end for the words being recognized and the reply
being spoken, each recognition or synthesis for ``end_grace`` at most.
"""

from __future__ import annotations

import reactivex
from reactivex.testing import TestScheduler

from rxvoice import LLMContext, pipeline
from rxvoice import frames as F
from rxvoice.aggregators import Pair
from rxvoice.errors import ServiceError
from rxvoice.pipeline import SchedulerOffload
from rxvoice.services.stt import STTService
from rxvoice.services.tts import Speech, TTSService, word_times
from rxvoice.testing import COMPLETED, FrameMarbles, Recording, ScriptedLLM


def conversation(pair: Pair) -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in pair.context().messages]


def voice(pair: Pair) -> object:
    return pipeline(pair.user(), ScriptedLLM(["Hello, how can I help?"], first_token_delay=0.5, token_delay=0.1),
                    pair.assistant())


def test_an_end_frame_right_after_the_words_waits_for_the_answer() -> None:
    """The words are written and asked about before the end goes on; the end then waits for the answer."""
    pair = Pair(LLMContext())
    rec = FrameMarbles().run(voice(pair), down=[(0.0, F.TranscriptionFrame("hi", "u")), (0.1, F.EndFrame())])
    assert conversation(pair) == [("user", "hi"), ("assistant", "Hello, how can I help?")]
    kinds = rec.down_types()
    assert kinds.count("EndFrame") == 1 and kinds[-1] == "EndFrame"
    assert kinds.index("EndFrame") > kinds.index("LLMFullResponseEndFrame")


def test_an_end_frame_during_the_reply_waits_for_it() -> None:
    """The turn ended at 0.6 s and the reply is on its way (first token at 1.1 s): the end at 0.7 s waits for it."""
    pair = Pair(LLMContext())
    rec = FrameMarbles().run(voice(pair), down=[(0.0, F.TranscriptionFrame("hi", "u")), (0.7, F.EndFrame())])
    assert conversation(pair) == [("user", "hi"), ("assistant", "Hello, how can I help?")]
    kinds = rec.down_types()
    assert kinds.index("EndFrame") > kinds.index("LLMFullResponseEndFrame")
    assert kinds.count("EndFrame") == 1


def test_an_input_that_completes_right_after_the_words_waits_for_the_answer() -> None:
    """reactivex.of(transcription) through the pair: the output completes after the answer, not before."""
    pair = Pair(LLMContext())
    rec = FrameMarbles().run(voice(pair), down=[(0.0, F.TranscriptionFrame("hi", "u")), (0.1, COMPLETED)])
    assert conversation(pair) == [("user", "hi"), ("assistant", "Hello, how can I help?")]
    assert rec.down[-1][1] is COMPLETED and rec.down[-1][0] >= 500


def test_a_plain_observable_of_one_transcription_gets_its_answer() -> None:
    pair = Pair(LLMContext())
    scheduler = TestScheduler()
    out: list[F.Frame] = []
    done: list[float] = []
    reactivex.of(F.TranscriptionFrame("hi", "u")).pipe(voice(pair)).subscribe(
        out.append, on_completed=lambda: done.append(scheduler.clock), scheduler=scheduler)
    scheduler.advance_to(60.0)
    assert conversation(pair) == [("user", "hi"), ("assistant", "Hello, how can I help?")]
    assert done and done[0] >= 0.5


def test_a_cancel_does_not_wait() -> None:
    pair = Pair(LLMContext())
    FrameMarbles().run(voice(pair), down=[(0.0, F.TranscriptionFrame("hi", "u")), (0.1, F.CancelFrame())])
    assert [role for role, _ in conversation(pair)] == ["user"]


# -- speech stages that hang while an end waits for them ---------------------------------------------------


class _Recognizer:
    def accept(self, audio: bytes) -> str | None:
        return None

    def finish(self) -> str:
        return "never heard"

    def close(self) -> None:
        return None


class _STT(STTService):
    name = "SlowSTT"

    def new_recognizer(self) -> _Recognizer:
        return _Recognizer()


class _TTS(TTSService):
    """One second of audio per word."""

    name = "SlowTTS"

    def synthesize(self, text: str) -> Speech:
        words = len(text.split())
        return Speech(b"\x10\x00" * 8000 * words, 8000, word_times(text, float(words)), float(words))


def _utterance() -> list[tuple[float, object]]:
    audio = [(0.02 * (i + 1), F.InputAudioRawFrame(b"\x01\x00" * 320)) for i in range(25)]
    return [(0.0, F.VADUserStartedSpeakingFrame(start_secs=0.0)), *audio,
            (0.5, F.VADUserStoppedSpeakingFrame(stop_secs=0.0))]


def _tail(rec: Recording) -> list[str]:
    return ["COMPLETED" if f is COMPLETED else type(f).__name__ for _, f in rec.down][-2:]


def test_a_recognizer_that_hangs_holds_the_end_for_end_grace_at_most() -> None:
    """Every recognition takes 100 s: the end waits 2 s (``end_grace``), reports the words lost, and goes on."""
    m = FrameMarbles()
    stt = _STT(offload=SchedulerOffload(m.scheduler, 100.0), end_grace=2.0)
    errors: list[Exception] = []
    stt.events.on("on_error", lambda _s, e: errors.append(e))
    rec = m.run(stt, [*_utterance(), (0.51, F.EndFrame()), (0.51, COMPLETED)], until=200.0)
    assert _tail(rec) == ["EndFrame", "COMPLETED"] and rec.of_type(F.EndFrame)[0][0] == 2510
    assert rec.of_type(F.TranscriptionFrame) == []
    assert len(errors) == 1 and isinstance(errors[0], ServiceError) and "more than 2 s" in str(errors[0])


def test_a_synthesizer_that_hangs_holds_the_end_for_end_grace_at_most() -> None:
    """The second of three sentences never comes back: the end waits 2 s for it, then the third is spoken."""
    m = FrameMarbles()
    tts = _TTS(offload=SchedulerOffload(m.scheduler, lambda n: 100.0 if n == 1 else 0.0), end_grace=2.0)
    errors: list[Exception] = []
    tts.events.on("on_error", lambda _s, e: errors.append(e))
    items = [(0.0, F.TTSSpeakFrame("one")), (0.0, F.TTSSpeakFrame("stuck")), (0.0, F.TTSSpeakFrame("three")),
             (0.1, F.EndFrame()), (0.1, COMPLETED)]
    rec = m.run(tts, items, until=200)
    assert [f.text for _, f in rec.of_type(F.TTSTextFrame)] == ["one", "three"]
    assert len(errors) == 1 and isinstance(errors[0], ServiceError) and "'stuck'" in str(errors[0])
    assert _tail(rec) == ["EndFrame", "COMPLETED"] and rec.down[-1][0] == 3100, "2.1 s, then one second of speech"
