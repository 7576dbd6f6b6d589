"""The wait for the words of the last speech, as plain asserts on the one sub-machine the stop strategies share."""

from __future__ import annotations

import subprocess
import sys

import pytest

from rxvoice import frames as F
from rxvoice.turns import (
    ExternalStop,
    FusedTurnStop,
    SpeechTimeoutStop,
    TurnAnalyzerStop,
    WordsState,
    WordsWait,
)
from rxvoice.turns.strategy import Arm, Disarm

from .helpers import FakeAnalyzer

VS = F.VADUserStartedSpeakingFrame(0.2)
VE = F.VADUserStoppedSpeakingFrame(0.2)


def step(wait: WordsWait, w: WordsState, *frames: tuple[float, F.Frame]) -> tuple[WordsState, list[object]]:
    effects: list[object] = []
    for now, frame in frames:
        w, out = wait.on_frame(w, frame, now)
        effects.extend(out)
    return w, effects


def test_a_vad_stop_arms_the_stt_latency_and_the_grace_counted_from_the_end_of_speech() -> None:
    wait = WordsWait()
    w, effects = step(wait, wait.initial(), (0.0, F.STTMetadataFrame("stt", 0.5)), (1.0, VS), (1.4, VE))
    assert effects[-2:] == [Arm("stt", pytest.approx(0.3)), Arm("grace", pytest.approx(0.3))]
    assert w.speech_end == pytest.approx(1.2) and not wait.ready(w)


def test_words_after_the_speech_ended_are_the_last_speechs() -> None:
    wait = WordsWait()
    w, _ = step(wait, wait.initial(), (0.0, VS), (0.3, VE), (0.4, F.TranscriptionFrame("hi", finalized=True)))
    assert w.fresh and wait.ready(w) and w.text == "hi"


def test_words_heard_during_the_speech_are_not_the_last_speechs_until_the_grace_ran_out() -> None:
    wait = WordsWait()
    w, _ = step(wait, wait.initial(), (0.0, VS), (0.1, F.TranscriptionFrame("first", finalized=True)), (0.6, VE))
    assert not w.fresh and not wait.ready(w)
    w2 = wait.on_timer(w, "grace")
    assert w2 is not None and wait.ready(w2) and not w2.fresh
    assert wait.on_timer(w, "speech") is None  # not its timer


def test_an_interim_after_a_final_waits_out_the_stt_again() -> None:
    wait = WordsWait()
    w, _ = step(wait, wait.initial(), (0.0, F.STTMetadataFrame("stt", 0.5)), (0.0, VS),
                (0.1, F.TranscriptionFrame("hi", finalized=True)), (0.2, F.InterimTranscriptionFrame("and")),
                (0.3, VE), (0.35, F.TranscriptionFrame("and then")))
    assert w.fresh and not w.finalized and not wait.ready(w)
    w2 = wait.on_timer(w, "stt")
    assert w2 is not None and wait.ready(w2) and w2.text == "hi and then"


def test_words_without_a_vad_are_their_own_end() -> None:
    wait = WordsWait()
    w, effects = step(wait, wait.initial(), (1.0, F.TranscriptionFrame("typed")))
    assert w.no_vad and wait.ready(w) and effects == [Disarm("stt"), Disarm("grace")]


def test_blank_words_are_no_words() -> None:
    wait = WordsWait()
    w, _ = step(wait, wait.initial(), (0.0, VS), (0.3, VE))
    after, effects = wait.on_frame(w, F.TranscriptionFrame(" \u200b "), 0.4)
    assert after == w and effects == ()


def test_not_waiting_is_always_ready_and_arms_no_grace() -> None:
    wait = WordsWait(wait=False)
    w, effects = step(wait, wait.initial(), (0.0, VS), (0.3, VE))
    assert wait.ready(w) and not any(isinstance(e, Arm) and e.key == "grace" for e in effects)


def test_reset_starts_the_words_over_and_keeps_the_stt_latency() -> None:
    wait = WordsWait(grace=2.0)
    w, _ = step(wait, wait.initial(), (0.0, F.STTMetadataFrame("stt", 0.4)), (0.0, VS),
                (0.1, F.TranscriptionFrame("hi")))
    w, effects = wait.reset(w)
    assert (w.text, w.fresh, w.stt_known, w.stt_timeout, w.speaking) == ("", False, True, 0.4, True)
    assert effects == WordsWait.cancel
    assert WordsWait(grace=2.0).timeout(WordsState()) == 2.0 and wait.timeout(w) == 0.4


def test_every_stop_strategy_that_waits_for_words_holds_one_words_wait() -> None:
    for strategy in (SpeechTimeoutStop(), TurnAnalyzerStop(FakeAnalyzer()), ExternalStop(timeout=0.7),
                     FusedTurnStop(), SpeechTimeoutStop(wait_for_transcript=False)):
        assert isinstance(strategy.words, WordsWait)  # type: ignore[attr-defined]
        assert strategy.words.wait is strategy.wait_for_transcript  # type: ignore[attr-defined]
    assert ExternalStop(timeout=0.7).words.grace == 0.7


def test_the_turn_decisions_import_no_numpy() -> None:
    """The decisions are pure Python: importing them loads no numpy (the audio side has the DSP)."""
    code = "import sys, rxvoice.turns; print('numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
