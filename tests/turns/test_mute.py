"""Mute strategies through the user aggregator: dropped, not queued; judged by the state before each frame."""

from __future__ import annotations

from rxvoice import frames as F
from rxvoice.aggregators import Pair
from rxvoice.turns import (
    AlwaysUserMute,
    ExternalStrategies,
    FirstSpeechUserMute,
    FunctionCallUserMute,
    MuteUntilFirstBotComplete,
    TurnsConfig,
)

from .helpers import contents, event_times, run, times, users

MS, MX = "UserMuteStartedFrame", "UserMuteStoppedFrame"
X = {"x": F.TranscriptionFrame("ignored"), "y": F.TranscriptionFrame("kept")}
CALL = F.FunctionCallsStartedFrame([F.FunctionCallFromLLM("f", "c1", {})])
RESULT = F.FunctionCallResultFrame("f", "c1", {}, "ok")


def test_always_mute_drops_input_while_the_bot_speaks() -> None:
    """AlwaysUserMute: the transcript while the bot speaks is dropped, the one after kept (seed §4.1)."""
    pair = Pair(mute=[AlwaysUserMute()])
    rec = run(pair, "B-x-b-y", legend=X)
    assert users(pair) == ["kept"]
    assert rec.down_types().count(MS) == 1 and rec.down_types().count(MX) == 1


def test_mute_frames_go_both_ways_and_events_fire() -> None:
    """A mute change is announced downstream and upstream, before the frame that caused it, with its event."""
    pair = Pair(mute=[AlwaysUserMute()])
    rec = run(pair, "B-b")
    assert rec.down_types() == [MS, "BotStartedSpeakingFrame", MX, "BotStoppedSpeakingFrame"]
    assert rec.up_types() == [MS, MX]
    assert rec.event_names() == ["on_user_mute_started", "on_user_mute_stopped"]


def test_a_frame_is_judged_by_the_mute_state_before_it() -> None:
    """At the same instant, a transcript before the bot's start is kept, one after it is dropped."""
    pair = Pair(mute=[AlwaysUserMute()])
    run(pair, "(yB)", legend=X)
    assert users(pair) == ["kept"]
    pair = Pair(mute=[AlwaysUserMute()])
    run(pair, "(By)--b", legend=X)
    assert users(pair) == []


def test_muted_input_is_dropped_not_queued() -> None:
    """Nothing said while muted comes back when the user is unmuted."""
    pair = Pair(mute=[AlwaysUserMute()])
    rec = run(pair, "B-v-x-s-b", legend=X)
    assert contents(pair) == []
    assert "VADUserStartedSpeakingFrame" not in rec.down_types()
    assert event_times(rec, "on_user_turn_started") == []


def test_first_speech_mute_only_covers_the_greeting() -> None:
    """FirstSpeechUserMute: dropped during the first utterance; the second one can be interrupted."""
    pair = Pair(mute=[FirstSpeechUserMute()])
    rec = run(pair, "B-x-b-B-y", legend=X)
    assert users(pair) == ["kept"]
    assert times(rec, F.InterruptionFrame) == [800]


def test_mute_until_first_bot_complete_announces_at_start() -> None:
    """MuteUntilFirstBotComplete: the session starts muted, announced right after the StartFrame (pipecat §8.70)."""
    pair = Pair(mute=[MuteUntilFirstBotComplete()])
    rec = run(pair, "S")
    assert rec.down_types() == ["StartFrame", MS]


def test_mute_until_first_bot_complete_drops_until_the_bot_finished() -> None:
    """Input before the bot's first utterance ended is dropped; after it, kept."""
    pair = Pair(mute=[MuteUntilFirstBotComplete()])
    run(pair, "S-x-B-x-b-y", legend=X)
    assert users(pair) == ["kept"]


def test_mute_until_first_bot_complete_released_by_an_early_error() -> None:
    """A failed greeting (an error before the bot ever spoke) releases the mute."""
    pair = Pair(mute=[MuteUntilFirstBotComplete()])
    rec = run(pair, "S-e-y", legend={**X, "e": F.ErrorFrame(RuntimeError("tts down"))})
    assert users(pair) == ["kept"] and rec.down_types().count(MX) == 1


def test_function_call_mute_while_a_call_runs() -> None:
    """FunctionCallUserMute: muted from the call's start to its result."""
    pair = Pair(mute=[FunctionCallUserMute()])
    run(pair, "c-x-r-y", legend={**X, "c": CALL, "r": RESULT})
    assert users(pair) == ["kept"]


def test_first_speech_and_function_call_together() -> None:
    """FirstSpeech + FunctionCall: speech during the greeting and during the call never opens a turn (pipecat §8.68)."""
    pair = Pair(mute=[FirstSpeechUserMute(), FunctionCallUserMute()])
    rec = run(pair, "B-v-s-x-----b-c-v-s-x-r", legend={**X, "c": CALL, "r": RESULT})
    assert event_times(rec, "on_user_turn_started") == []
    assert contents(pair) == []


def test_a_muted_proposal_opens_nothing() -> None:
    """A proposal while muted (bot speaking its first utterance) gives no US, UE or INT (pipecat §8.31)."""
    pair = Pair(turns=TurnsConfig(strategies=ExternalStrategies()), mute=[FirstSpeechUserMute()])
    rec = run(pair, "B-P-h-p")
    assert not {"UserStartedSpeakingFrame", "UserStoppedSpeakingFrame", "InterruptionFrame"} & set(rec.down_types())


def test_session_frames_are_never_muted() -> None:
    """An EndFrame while muted still passes and still writes what was said before the mute."""
    pair = Pair(mute=[AlwaysUserMute()], turns=TurnsConfig(stop_timeout=30))
    rec = run(pair, "v-h-(Bs)-E")
    assert "EndFrame" in rec.down_types()
    assert users(pair) == ["hello there"]


def test_turns_config_mute_is_merged_with_pair_mute() -> None:
    """Mute strategies given in TurnsConfig and in Pair(mute=...) both apply."""
    pair = Pair(mute=[FunctionCallUserMute()], turns=TurnsConfig(mute=[AlwaysUserMute()]))
    run(pair, "B-x-b-c-x-r-y", legend={**X, "c": CALL, "r": RESULT})
    assert users(pair) == ["kept"]


def test_a_mute_mid_utterance_does_not_leave_the_turn_hanging() -> None:
    """The VAD stop is dropped while muted, so the speech counts as over at the mute: the turn still ends.

    The words came before that end of speech, so the stop waits the STT's latency for the last words
    (``TRANSCRIPT_GRACE``, 1 s, longer than the 0.6 s speech timeout) and then answers with what it has.
    """
    pair = Pair(mute=[AlwaysUserMute()])
    rec = run(pair, "v-h-B-s")
    assert times(rec, F.LLMContextFrame) == [400 + 1000]
    assert users(pair) == ["hello there"]


def test_speech_after_the_mute_opens_a_new_turn() -> None:
    """After the unmute the next speech is a turn of its own, answered normally."""
    pair = Pair(mute=[AlwaysUserMute()])
    legend = {"y": F.TranscriptionFrame("second")}
    rec = run(pair, "v-h-s-------B---b-v-y-s", legend=legend)
    assert users(pair) == ["hello there", "second"]
    assert len(rec.events_named("on_user_turn_stopped")) == 2
