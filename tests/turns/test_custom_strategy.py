"""The custom-strategy example of docs/turn-taking.md, run as written."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rxvoice import frames as F
from rxvoice.aggregators import Pair
from rxvoice.testing import FrameMarbles
from rxvoice.turns import SpeechTimeoutStop, StopStrategy, TurnsConfig
from rxvoice.turns.strategy import NOTHING, Effects, stopped


@dataclass(frozen=True)
class QuestionStop(StopStrategy[bool]):
    """A final transcript ending with '?' ends the turn at once (the state: is the VAD hearing speech)."""

    handles: ClassVar[frozenset[type[F.Frame]]] = frozenset(
        {F.TranscriptionFrame, F.VADUserStartedSpeakingFrame, F.VADUserStoppedSpeakingFrame}
    )

    def initial(self) -> bool:
        return False

    def on_frame(self, speaking: bool, frame: F.Frame, now: float) -> tuple[bool, Effects]:
        if isinstance(frame, F.VADUserStartedSpeakingFrame):
            return True, NOTHING
        if isinstance(frame, F.VADUserStoppedSpeakingFrame):
            return False, NOTHING
        if isinstance(frame, F.TranscriptionFrame) and frame.text.rstrip().endswith("?"):
            return speaking, stopped()
        return speaking, NOTHING


turns = TurnsConfig(stop=[QuestionStop(), SpeechTimeoutStop()])


def test_question_stop_as_a_pure_function() -> None:
    """Plain asserts: a question while quiet asks for the answer and the end of the turn."""
    s = QuestionStop()
    assert s.on_frame(False, F.TranscriptionFrame("is it open?"), 0.0)[1] == stopped()
    assert s.on_frame(False, F.TranscriptionFrame("it is open"), 0.0)[1] == NOTHING


def test_question_stop_answers_a_question_at_once() -> None:
    """In the aggregator: a question is answered the moment it is heard; a statement waits for the speech
    timeout after the VAD stop."""
    legend = {
        "v": F.VADUserStartedSpeakingFrame(0.2), "s": F.VADUserStoppedSpeakingFrame(0.2),
        "q": F.TranscriptionFrame("is it open?"), "t": F.TranscriptionFrame("it is open"),
    }
    for words, answered in (("q", 400), ("t", 200 + 600)):
        pair = Pair(turns=turns)
        rec = FrameMarbles(legend).run(pair.user(), down=f"v-s-{words}")
        assert [t for t, _ in rec.of_type(F.LLMContextFrame)] == [answered]
