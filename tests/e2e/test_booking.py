"""The booking call end to end: Silero VAD operator, turn strategies, the pair, a scripted model.

Two of the call's five pauses fall mid-sentence. With Smart Turn deciding,
the caller is answered exactly three times, each answer holding the words
just spoken whenever the transcript arrives, and within 0.25 s of the end of
speech when the transcript is already in. With a plain 0.8 s silence timeout
the two mid-sentence fragments are answered on their own.
"""

from __future__ import annotations

import functools

import pytest

from rxvoice.aggregators import Pair
from rxvoice.audio.recommended import recommended_turn_setup
from rxvoice.audio.turn import SmartTurnAnalyzer
from rxvoice.audio.vad import SileroVADAnalyzer, VADParams
from rxvoice.audio.vad_processor import VADProcessor
from rxvoice.context import LLMContext
from rxvoice.turns import SpeechTimeoutStop, TurnAnalyzerStop, TurnsConfig
from tests.support import smart_turn_model_path

from .booking import Call, run_call

TURNS = [
    "Hi, I would like to book a flight to Boston, next Friday.",
    "Actually, could we, uh leave on Saturday.",
    "Thanks, that is all.",
]
MS = 0.0005  # half a millisecond: recorded times are whole milliseconds
FAST_VAD_STOP = 0.12  # four Silero windows: the model alone then answers "Boston, next Friday." within 0.25 s


@functools.cache
def smart_turn_call(delay: float, latency: float) -> Call:
    """TurnAnalyzerStop alone (the model's verdicts), the VAD stopping after 4 silent windows (each run once)."""
    vad = VADProcessor(lambda: SileroVADAnalyzer(params=VADParams(stop_secs=FAST_VAD_STOP)))
    pair = Pair(LLMContext(), turns=TurnsConfig(stop=[TurnAnalyzerStop(SmartTurnAnalyzer(smart_turn_model_path()))]))
    return run_call([vad], pair, delay=delay, latency=latency)


@functools.cache
def recommended_call(delay: float, latency: float) -> Call:
    """The recommended setup (``recommended_turn_setup``): its VAD parameters and its stop strategy."""
    setup = recommended_turn_setup(smart_turn_model_path())
    vad = VADProcessor(lambda: SileroVADAnalyzer(params=setup.vad_params))
    return run_call([vad], Pair(LLMContext(), turns=setup.turns_config()), delay=delay, latency=latency)


@pytest.mark.parametrize(("delay", "latency"), [(0.1, 0.02), (0.1, 0.04), (0.3, 0.04), (0.8, 0.05)])
def test_the_recommended_setup_answers_three_times_with_the_words_just_spoken(delay: float, latency: float) -> None:
    """No answer at the two mid-sentence pauses; three answers, each after the words of the turn were in."""
    call = recommended_call(delay, latency)
    assert call.questions == TURNS
    for answer, end in zip(call.answers, call.transcript.turn_ends, strict=True):
        assert answer >= end + delay - MS


@pytest.mark.parametrize("latency", [0.02, 0.04])
def test_the_recommended_setup_answers_within_0_3_s_when_the_words_and_audio_agree(latency: float) -> None:
    """Transcript 0.1 s after speech: the answers whose words and audio agree come at most 0.3 s after the
    segment's end (the VAD stop, then the audio model's verdict, which the calibrated wait takes in).
    The last, "thanks that is all", waits: the words' signal reads "is all" as likely to go on
    (a known shortfall against the 0.35 s p90 target; docs/turn-taking.md)."""
    call = recommended_call(0.1, latency)
    gaps = [answer - end for answer, end in zip(call.answers, call.transcript.turn_ends, strict=True)]
    assert len(gaps) == 3
    assert all(0 < g <= 0.3 + MS for g in gaps[:2]), gaps
    assert 0.3 < gaps[2] <= 1.4, gaps


@pytest.mark.parametrize("delay", [0.3, 0.8])
def test_the_recommended_setup_answers_as_soon_as_a_late_transcript_arrives(delay: float) -> None:
    """Finished words arriving after the VAD stop are answered the moment they arrive (the first two ends;
    the last waits its calibrated silence, or its words if they come later still)."""
    call = recommended_call(delay, 0.05)
    ends = call.transcript.turn_ends
    assert call.answers[:2] == pytest.approx([end + delay for end in ends[:2]], abs=MS)
    assert call.answers[2] >= ends[2] + delay - MS


@pytest.mark.parametrize(("delay", "latency"), [(0.1, 0.02), (0.1, 0.04), (0.3, 0.04), (0.8, 0.05)])
def test_smart_turn_answers_three_times_with_the_words_just_spoken(delay: float, latency: float) -> None:
    """Smart Turn: no answer at the mid-sentence pauses, three answers, each with the whole turn's words."""
    call = smart_turn_call(delay, latency)
    assert call.questions == TURNS
    assert len(call.llm.runs) == 3
    ends = call.transcript.turn_ends
    for answer, end in zip(call.answers, ends, strict=True):
        assert answer >= end + delay - MS  # the words were in
    # The model was asked at both mid-sentence pauses and said "incomplete" there.
    mid = [s.end for s in call.transcript.segments if not s.turn_end]
    for end in mid:
        after = [v for v in call.verdicts() if end < v[0] < end + 0.6]
        assert after and not any(complete for _, complete, _ in after), (end, after)
    # ... and "complete" at each turn end.
    for end in ends:
        assert any(complete for t, complete, _ in call.verdicts() if end < t < end + 0.35), end


@pytest.mark.parametrize("latency", [0.02, 0.04])
def test_smart_turn_answers_within_a_quarter_second_when_the_words_are_in(latency: float) -> None:
    """Transcript 0.1 s after speech: each answer starts at most 0.25 s after the segment's end."""
    call = smart_turn_call(0.1, latency)
    gaps = [answer - end for answer, end in zip(call.answers, call.transcript.turn_ends, strict=True)]
    assert len(gaps) == 3
    assert all(0 < g <= 0.25 + MS for g in gaps), gaps


def test_the_default_vad_stop_is_too_late_for_a_quarter_second() -> None:
    """The trade-off pinned: with the VAD's default 0.2 s stop, "Boston, next Friday." is answered > 0.25 s late."""
    pair = Pair(LLMContext(), turns=TurnsConfig(stop=[TurnAnalyzerStop(SmartTurnAnalyzer(smart_turn_model_path()))]))
    call = run_call([VADProcessor()], pair, delay=0.1, latency=0.02)
    assert call.questions == TURNS
    gaps = [answer - end for answer, end in zip(call.answers, call.transcript.turn_ends, strict=True)]
    assert gaps[0] > 0.25 + MS


@pytest.mark.parametrize("delay", [0.3, 0.8])
def test_smart_turn_answers_as_soon_as_a_late_transcript_arrives(delay: float) -> None:
    """Transcript after the verdict: the answer starts the moment the words arrive, not later."""
    call = smart_turn_call(delay, 0.04 if delay < 0.5 else 0.05)
    arrivals = [end + delay for end in call.transcript.turn_ends]
    assert call.answers == pytest.approx(arrivals, abs=MS)


@pytest.mark.parametrize("delay", [0.1, 0.8])
def test_silence_timeout_cuts_the_caller_off_twice(delay: float) -> None:
    """A plain 0.8 s of silence (0.2 s VAD + 0.6 s timeout): five answers, the fragments answered alone."""
    pair = Pair(LLMContext(), turns=TurnsConfig(stop=[SpeechTimeoutStop(user_speech_timeout=0.6)]))
    call = run_call([VADProcessor()], pair, delay=delay)
    assert call.questions == [s.text for s in call.transcript.segments]
    assert len(call.llm.runs) == 5
    mid = [s.end for s in call.transcript.segments if not s.turn_end]
    cut = [a for a in call.answers if any(e < a < e + 1.2 for e in mid)]
    assert len(cut) == 2  # answered inside the two mid-sentence pauses
