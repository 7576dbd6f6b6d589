"""An end lets the answer already asked for finish (bounded); a cancel does not.

A transcript followed at once by the end of the conversation (an ``EndFrame``,
or the input simply completing) writes the user message and then waits for
the model's answer, as a Pipecat user expects; ``CancelFrame`` stops at once.
"""

from __future__ import annotations

import reactivex
from reactivex.testing import TestScheduler

from rxvoice import LLMContext, pipeline
from rxvoice import frames as F
from rxvoice.aggregators import Pair
from rxvoice.testing import COMPLETED, FrameMarbles, ScriptedLLM


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
