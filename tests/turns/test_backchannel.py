"""Backchannels: a continuer while the bot speaks is no barge-in; anything else still is, as soon as it shows.

Marble tests in virtual time through the user aggregator (100 ms a dash).
The bot speaks from 0 s (``B``, upstream); the user's speech starts 0.2 s
before its VAD start (``start_secs``) and ends 0.2 s before its VAD stop.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rxvoice import LLMContext
from rxvoice import frames as F
from rxvoice.aggregators import Pair
from rxvoice.errors import ConfigurationError
from rxvoice.testing import FrameMarbles, Recording
from rxvoice.turns import SpeechTimeoutStop, TranscriptionStart, TurnsConfig, VADStart
from rxvoice.turns.backchannel import BackchannelStart, is_continuer, may_be_continuer, register_backchannels

L: dict[str, F.Frame] = {
    "v": F.VADUserStartedSpeakingFrame(0.2),
    "s": F.VADUserStoppedSpeakingFrame(0.2),
    "m": F.TranscriptionFrame("Mm-hmm.", "u1", finalized=True),
    "y": F.InterimTranscriptionFrame("yeah", "u1"),
    "Y": F.TranscriptionFrame("Yeah.", "u1", finalized=True),
    "w": F.InterimTranscriptionFrame("wait", "u1"),
    "W": F.TranscriptionFrame("Wait, I meant Tuesday.", "u1", finalized=True),
    "n": F.TranscriptionFrame("No.", "u1", finalized=True),
    "b": F.InterimTranscriptionFrame("yeah but", "u1"),
    "B": F.BotStartedSpeakingFrame(),
    "-B": F.BotStoppedSpeakingFrame(),
    "o": F.BotStoppedSpeakingFrame(),
    "k": F.InterimTranscriptionFrame("i", "u1"),
    "E": F.EndFrame(),
}


def run(down: str, up: str = "B", *, backchannels: bool = True, **kw: Any) -> tuple[Pair, Recording]:
    start = [BackchannelStart(**kw)] if backchannels else []
    turns = TurnsConfig(start=[*start, VADStart(), TranscriptionStart()], stop=[SpeechTimeoutStop()])
    pair = Pair(LLMContext(), turns=turns)
    rec = FrameMarbles(L).run(pair.user(), down=down, up=up, watch=[pair.user()])
    return pair, rec


def interruptions(rec: Recording) -> list[int]:
    return [t for t, _ in rec.of_type(F.InterruptionFrame)]


def backchannels(rec: Recording) -> list[tuple[int, str]]:
    return [(t, p.text) for t, p in rec.events_named("on_user_backchannel")]


def test_a_continuer_while_the_bot_speaks_does_not_interrupt() -> None:
    """ "Mm-hmm" (VAD 0.3-0.6 s, final at 0.8 s): the bot goes on, nothing enters the conversation."""
    pair, rec = run("---v--s-m" + "-" * 20 + "E")
    assert interruptions(rec) == []
    assert backchannels(rec) == [(800, "Mm-hmm.")]
    assert rec.events_named("on_user_turn_started") == []
    assert pair.context().messages == []
    [(t, frame)] = rec.of_type(F.UserBackchannelFrame)
    assert t == 800 and frame.text == "Mm-hmm." and frame.user_id == "u1"


def test_without_backchannels_the_same_continuer_interrupts_at_the_vad_start() -> None:
    pair, rec = run("---v--s-m" + "-" * 20 + "E", backchannels=False)
    assert interruptions(rec) == [300]
    assert [m["content"] for m in pair.context().messages] == ["Mm-hmm."]


def test_an_interim_that_cannot_be_a_continuer_interrupts_at_once() -> None:
    """ "wait" as an interim at 0.5 s: interrupted then (0.2 s after the VAD start), and the turn keeps its words."""
    pair, rec = run("---v-w-----s-W" + "-" * 20 + "E")
    assert interruptions(rec) == [500]
    assert backchannels(rec) == []
    assert [m["content"] for m in pair.context().messages] == ["Wait, I meant Tuesday."]


def test_a_continuer_that_goes_on_interrupts_when_it_stops_being_one() -> None:
    """ "yeah" (0.4 s) may be a continuer; "yeah but" (0.6 s) is not: the interruption comes at 0.6 s."""
    _pair, rec = run("---vy-b-----s-W" + "-" * 20 + "E")
    assert interruptions(rec) == [600]


def test_speech_longer_than_max_duration_interrupts_when_it_reaches_it() -> None:
    """No interim transcripts: speech from 0.1 s the VAD still hears at 1.3 s (1 s, plus its stop window)."""
    pair, rec = run("---v--------------s-W" + "-" * 20 + "E")
    assert interruptions(rec) == [1300]
    assert [m["content"] for m in pair.context().messages] == ["Wait, I meant Tuesday."]


def test_a_short_final_that_is_no_continuer_interrupts_when_it_comes() -> None:
    """ "No." after short speech: not a continuer: the bot is interrupted at the final (0.8 s)."""
    pair, rec = run("---v--s-n" + "-" * 20 + "E")
    assert interruptions(rec) == [800]
    assert [m["content"] for m in pair.context().messages] == ["No."]


def test_short_speech_with_no_words_lets_the_bot_go_on() -> None:
    """A cough (VAD only): after words_timeout the bot is still speaking and no turn started."""
    _pair, rec = run("---v--s" + "-" * 30 + "E")
    assert interruptions(rec) == [] and backchannels(rec) == []
    assert rec.events_named("on_user_turn_started") == []


def test_the_interim_decides_when_the_final_never_comes() -> None:
    _pair, rec = run("---vy-s" + "-" * 30 + "E")
    assert backchannels(rec) == [(1600, "yeah")]  # the VAD stop at 0.6 s, then words_timeout (1 s)
    assert interruptions(rec) == []


def test_when_the_bot_is_quiet_speech_starts_a_turn_at_once() -> None:
    _pair, rec = run("---v--s-m" + "-" * 20 + "E", up="")
    assert [t for t, _ in rec.events_named("on_user_turn_started")] == [300]
    assert backchannels(rec) == []


def test_the_boundary_a_continuer_just_under_max_duration_is_kept() -> None:
    """Speech 0.1-1.0 s (0.9 s), then "Yeah.": kept; the same words over 1.2 s are a barge-in, when the VAD
    still hears speech 1 s after it began (1.1 s, plus its 0.2 s stop window)."""
    _, short = run("---v--------s-Y" + "-" * 20 + "E")
    assert interruptions(short) == [] and backchannels(short) == [(1400, "Yeah.")]
    _, long = run("---v-----------s-Y" + "-" * 20 + "E")
    assert interruptions(long) == [1300]


def test_a_model_hook_decides_before_the_list() -> None:
    _pair, rec = run("---v--s-n" + "-" * 20 + "E", judge=lambda words: "no" in words.lower() or None)
    assert interruptions(rec) == [] and backchannels(rec) == [(800, "No.")]


def test_a_transcript_without_vad_speech_is_held_the_same_way() -> None:
    _pair, rec = run("---m" + "-" * 20 + "E")
    assert backchannels(rec) == [(300, "Mm-hmm.")] and interruptions(rec) == []


@pytest.mark.parametrize("bad", [{"max_duration": 0}, {"max_duration": 6}, {"words_timeout": -1},
                                 {"language": "xx"}, {"judge": "yes"}, {"max_pause": 0}, {"max_pause": 5.5},
                                 {"pause": "yes"}])
def test_parameters_out_of_range_fail_at_construction(bad: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        BackchannelStart(**bad)


# -- the pause: the bot falls silent at the speech's start, then resumes or is interrupted ------------------


def pauses(rec: Recording) -> list[tuple[int, str]]:
    """The bot's speech paused (``P``), resumed (``R``) and interrupted (``I``), in order."""
    names = {F.BotSpeechPauseFrame: "P", F.BotSpeechResumeFrame: "R", F.InterruptionFrame: "I"}
    return [(t, names[type(f)]) for t, f in rec.of_type(tuple(names))]


def test_a_continuer_pauses_the_bot_at_its_start_and_resumes_it_at_its_words() -> None:
    """ "Mm-hmm" (VAD start 0.3 s, final 0.8 s): paused at 0.3 s, resumed at 0.8 s with the backchannel first
    in line behind it; nothing is cancelled, nothing enters the conversation."""
    pair, rec = run("---v--s-m" + "-" * 20 + "E")
    assert pauses(rec) == [(300, "P"), (800, "R")]
    kinds = [type(f) for t, f in rec.down if t == 800]
    assert kinds.index(F.BotSpeechResumeFrame) < kinds.index(F.UserBackchannelFrame)
    assert backchannels(rec) == [(800, "Mm-hmm.")] and pair.context().messages == []


def test_a_real_interruption_silences_the_bot_at_the_vad_start_as_without_backchannels() -> None:
    """ "wait" (interim 0.5 s): the bot is paused at 0.3 s, when the VAD start interrupts it without
    backchannels; the pause becomes the interruption at 0.5 s, never resumed."""
    _, without = run("---v-w-----s-W" + "-" * 20 + "E", backchannels=False)
    pair, rec = run("---v-w-----s-W" + "-" * 20 + "E")
    assert pauses(without)[0] == (300, "I")
    assert pauses(rec) == [(300, "P"), (500, "I")]
    assert [m["content"] for m in pair.context().messages] == ["Wait, I meant Tuesday."]


def test_a_pause_that_outlasts_its_bound_becomes_an_interruption() -> None:
    """ "i" (it may become "I see") and no final: undecided until the words timeout, 1 s after the VAD stop
    (1.6 s), which calls it a barge-in. A bound of 1 s on the pause (from 0.3 s) interrupts at 1.3 s."""
    _, bound = run("---vk-s" + "-" * 30 + "E", max_pause=1.0)
    assert pauses(bound) == [(300, "P"), (1300, "I")]
    assert [t for t, _ in bound.events_named("on_user_turn_started")] == [1300]
    _, loose = run("---vk-s" + "-" * 30 + "E")
    assert pauses(loose) == [(300, "P"), (1600, "I")]


def test_interim_words_that_are_a_continuer_resume_the_bot_at_the_vad_stop() -> None:
    """ "yeah" (interim 0.4 s), the VAD stop at 0.6 s: the bot goes on then, before the final (0.8 s) that
    makes it a backchannel; the gap is 0.3 s instead of 0.5 s."""
    _pair, rec = run("---vy-s-Y" + "-" * 20 + "E")
    assert pauses(rec) == [(300, "P"), (600, "R")]
    assert backchannels(rec) == [(800, "Yeah.")]
    _pair, late = run("---vy-s" + "-" * 30 + "E")  # no final: the interim decides 1 s after the VAD stop
    assert pauses(late) == [(300, "P"), (600, "R")] and backchannels(late) == [(1600, "yeah")]


def test_held_speech_that_goes_on_after_an_early_resume_pauses_the_bot_again() -> None:
    """ "yeah" resumes the bot at 0.6 s; the user goes on at 0.8 s (paused again) with "yeah but": cut at 0.9 s."""
    _pair, rec = run("---vy-s-vb---s-W" + "-" * 20 + "E")
    assert pauses(rec) == [(300, "P"), (600, "R"), (800, "P"), (900, "I")]


def test_interim_words_the_final_contradicts_interrupt_after_an_early_resume() -> None:
    """ "yeah" resumes the bot at the VAD stop (0.6 s); the final says "No." (0.8 s): interrupted then."""
    _pair, rec = run("---vy-s-n" + "-" * 20 + "E")
    assert pauses(rec) == [(300, "P"), (600, "R"), (800, "I")]


def test_speech_with_no_words_resumes_the_bot() -> None:
    """A cough (VAD 0.3-0.6 s, no words): paused at 0.3 s, resumed words_timeout after the VAD stop."""
    _pair, rec = run("---v--s" + "-" * 30 + "E")
    assert pauses(rec) == [(300, "P"), (1600, "R")]


def test_the_bot_finishing_while_paused_needs_no_resume() -> None:
    """The bot's speech ends at 0.5 s, inside the pause: the continuer is still a backchannel (0.8 s), no
    resume goes out and the bound, disarmed, never interrupts."""
    _pair, rec = run("---v--s-m" + "-" * 30 + "E", up="B----o")
    assert pauses(rec) == [(300, "P")]
    assert backchannels(rec) == [(800, "Mm-hmm.")]
    assert rec.events_named("on_user_turn_started") == []


def test_the_bot_finishing_while_paused_then_a_real_turn_starts_it() -> None:
    _pair, rec = run("---v--s-n" + "-" * 30 + "E", up="B----o")
    assert pauses(rec) == [(300, "P"), (800, "I")]
    assert [t for t, _ in rec.events_named("on_user_turn_started")] == [800]


def test_without_pause_the_bot_talks_on_until_the_words_decide() -> None:
    _pair, rec = run("---v-w-----s-W" + "-" * 20 + "E", pause=False)
    assert pauses(rec) == [(500, "I")]
    _pair, kept = run("---v--s-m" + "-" * 20 + "E", pause=False)
    assert pauses(kept) == [] and backchannels(kept) == [(800, "Mm-hmm.")]


def test_a_transcript_without_vad_speech_pauses_the_bot_too() -> None:
    _pair, rec = run("---y--Y" + "-" * 20 + "E")
    assert pauses(rec) == [(300, "P"), (600, "R")]


@pytest.mark.parametrize(("text", "kept"), [
    ("Mm-hmm.", True), ("uh huh", True), ("Yeah, yeah.", True), ("I see.", True), ("Oh okay right", True),
    ("okay so what about Friday", False), ("No.", False), ("Wait", False), ("", False),
])
def test_is_continuer(text: str, kept: bool) -> None:
    assert is_continuer(text) is kept


def test_may_be_continuer_is_true_only_for_a_continuer_s_beginning() -> None:
    assert may_be_continuer("") and may_be_continuer("i") and may_be_continuer("oh")
    assert not may_be_continuer("i need") and not may_be_continuer("yeah but")


def test_a_language_of_its_own() -> None:
    register_backchannels("nl", ["ja", "precies", "oké"])
    assert is_continuer("Precies.", "nl") and not is_continuer("Precies.", "en")
    with pytest.raises(ConfigurationError):
        register_backchannels("nl", [])


# -- the pause under random interleavings ---------------------------------------------------------------

ACTIONS = st.sampled_from(["speech", "speech", "continuer", "interim", "other", "bot", "wait"])
GAPS = st.sampled_from([0.0, 0.05, 0.1, 0.3, 0.6, 1.2, 2.5])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(actions=st.lists(st.tuples(ACTIONS, GAPS), min_size=1, max_size=25), max_pause=st.sampled_from([0.5, 2.0]))
def test_every_pause_ends_within_its_bound_and_only_a_pause_is_resumed(
    actions: list[tuple[str, float]], max_pause: float
) -> None:
    """Whatever the user, the words and the bot do: a pause is ended by a resume, an interruption or the bot
    stopping, at most ``max_pause`` after it began; a resume follows a pause; nothing pauses a quiet bot."""
    down: list[tuple[float, F.Frame]] = []
    up: list[tuple[float, F.Frame]] = [(0.0, F.BotStartedSpeakingFrame())]
    t, speaking, bot = 0.0, False, True
    for i, (action, gap) in enumerate(actions):
        t = round(t + gap, 3)
        if action == "speech":
            speaking = not speaking
            vad = F.VADUserStartedSpeakingFrame if speaking else F.VADUserStoppedSpeakingFrame
            down.append((t, vad(0.2, t)))
        elif action == "continuer":
            down.append((t, F.TranscriptionFrame(("Mm-hmm.", "Yeah.", "Right.")[i % 3], "u1", finalized=True)))
        elif action == "interim":
            down.append((t, F.InterimTranscriptionFrame(("yeah", "i", "wait")[i % 3], "u1")))
        elif action == "other":
            down.append((t, F.TranscriptionFrame(f"book it for day {i}", "u1", finalized=True)))
        elif action == "bot":
            bot = not bot
            # 13 ms off the user's grid, so that which came first at one instant is never in doubt
            up.append((t + 0.013, F.BotStartedSpeakingFrame() if bot else F.BotStoppedSpeakingFrame()))
    if speaking:
        down.append((t + 0.3, F.VADUserStoppedSpeakingFrame(0.2, t + 0.3)))
    down.append((t + 20.0, F.EndFrame()))
    turns = TurnsConfig(start=[BackchannelStart(max_pause=max_pause), VADStart(), TranscriptionStart()],
                        stop=[SpeechTimeoutStop()])
    pair = Pair(LLMContext(), turns=turns)
    rec = FrameMarbles().run(pair.user(), down=down, up=up)
    names = {F.BotSpeechPauseFrame: "P", F.BotSpeechResumeFrame: "R", F.InterruptionFrame: "I"}
    said = [(tt, names[type(f)]) for tt, f in rec.of_type(tuple(names))]  # in the order they went out
    bot_events = [(round(a * 1000), isinstance(f, F.BotStartedSpeakingFrame)) for a, f in up]
    stops = [at for at, on in bot_events if not on]

    def bot_heard_at(tt: int) -> bool:  # speaking just before, or a start at that very instant
        before = [on for at, on in bot_events if at < tt]
        return bool(before and before[-1]) or any(on for at, on in bot_events if at == tt)

    paused_at: int | None = None
    for tt, kind in said:
        if paused_at is not None and any(paused_at <= at <= tt for at in stops):
            paused_at = None  # the bot stopped while paused: nothing to resume
        if kind == "P":
            assert paused_at is None, "a pause while paused"
            assert bot_heard_at(tt), "a quiet bot was paused"
            paused_at = tt
        elif paused_at is not None:
            assert tt - paused_at <= max_pause * 1000 + 1, "a pause outlasted its bound"
            paused_at = None
        else:
            assert kind != "R", "a resume with nothing paused"
    if paused_at is not None:
        assert any(at >= paused_at for at in stops), "a pause never ended"
        assert min(at for at in stops if at >= paused_at) - paused_at <= max_pause * 1000 + 1
