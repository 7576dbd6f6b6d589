"""One test per ordering pair, in each order.

The seven things whose relative order matters to a turn: the transcript (T),
the VAD stop (VE), the end-of-turn analyzer's verdict (V), a timeout (TO:
the speech timeout, the transcript grace, the watchdog or the idle timer),
an interruption arriving at the aggregator (INT), the bot speaking (BOT) and
a mute change (MUTE). Each test below runs one pair both ways round and
states what must hold in each. Times are virtual: ``-`` is 0.1 s.
"""

from __future__ import annotations

from typing import Any

import pytest

from rxvoice import frames as F
from rxvoice.aggregators import Pair
from rxvoice.pipeline import SchedulerOffload
from rxvoice.testing import Recording
from rxvoice.turns import (
    AlwaysUserMute,
    ExternalStrategies,
    FunctionCallUserMute,
    MinWordsStart,
    SpeechTimeoutStop,
    TurnAnalyzerStop,
    TurnsConfig,
)

from .helpers import FakeAnalyzer, contents, event_times, marbles, run, times, users

BOTH = pytest.mark.parametrize("order", ["first", "second"])
CALL = F.FunctionCallsStartedFrame([F.FunctionCallFromLLM("f", "c1", {})])
RESULT = F.FunctionCallResultFrame("f", "c1", {}, "ok")
WORDS = {"x": F.TranscriptionFrame("okay"), "w": F.TranscriptionFrame("world", finalized=True), "c": CALL, "r": RESULT}


def analyzer_pair(verdicts: list[Any], latency: float, mute: Any = (), **turns: Any) -> tuple[Pair, Any]:
    """A pair stopping on a scripted analyzer whose verdicts arrive ``latency`` s after each VAD stop."""
    pair = Pair(turns=TurnsConfig(stop=[TurnAnalyzerStop(FakeAnalyzer(verdicts))], **turns), mute=mute)
    m = marbles(WORDS)
    pair.user().offload = SchedulerOffload(m.scheduler, latency)
    return pair, m


def ctx_times(rec: Recording) -> list[int]:
    return times(rec, F.LLMContextFrame)


# -- 1. transcript / VAD stop ----------------------------------------------------------------------


@BOTH
def test_transcript_and_vad_stop(order: str) -> None:
    """T before VE or after it (within the wait): answered 0.6 s after VE either way, with T in the message."""
    pair = Pair()
    rec = run(pair, "v-h-s" if order == "first" else "v---s--h")
    assert ctx_times(rec) == [400 + 600]
    assert users(pair) == ["hello there"]


# -- 2. transcript / analyzer verdict --------------------------------------------------------------


@BOTH
def test_transcript_and_verdict(order: str) -> None:
    """T before the verdict: answered on the verdict. Verdict first: answered when T arrives, with it."""
    pair, m = analyzer_pair([(True, 0.9)], 0.1)
    rec = run(pair, "v-h-s" if order == "first" else "v-s---h", m=m)
    assert ctx_times(rec) == ([400 + 100] if order == "first" else [600])
    assert users(pair) == ["hello there"]


# -- 3. transcript / timeout -----------------------------------------------------------------------


@BOTH
def test_transcript_and_grace_timeout(order: str) -> None:
    """A second phrase's transcript before the grace ends is in the answer; after it, it is held, never
    answered twice, and written with the next turn (here: at session end)."""
    pair = Pair()
    down = "v-H-s-v-s-W------E" if order == "first" else "v-H-s-v-s----------W--E"
    rec = run(pair, down, legend={"W": F.TranscriptionFrame("world.")})
    if order == "first":
        assert users(pair) == ["Hello world."]
        assert len(ctx_times(rec)) == 1
    else:
        assert users(pair) == ["Hello", "world."]
        assert ctx_times(rec)[0] == 800 + 800  # the grace bounded the wait for the missing words
        assert len(rec.events_named("on_user_turn_started")) == 1


@BOTH
def test_transcript_and_watchdog(order: str) -> None:
    """T before the watchdog: the turn ends normally, no timeout. Watchdog first (empty turn): T opens a new
    turn that is answered; nothing lost."""
    pair = Pair(turns=TurnsConfig(stop_timeout=1.0))
    rec = run(pair, "v-s-h" if order == "first" else "v-s----------h")
    assert users(pair) == ["hello there"]
    timeouts = event_times(rec, "on_user_turn_stop_timeout")
    assert timeouts == ([] if order == "first" else [1200])
    assert len(rec.events_named("on_user_turn_started")) == (1 if order == "first" else 2)


# -- 4. transcript / interruption -------------------------------------------------------------------


@BOTH
def test_transcript_and_interruption(order: str) -> None:
    """An interruption reaching the aggregator just before or after a transcript drops nothing."""
    pair = Pair()
    rec = run(pair, "v-(hI)-s" if order == "first" else "v-(Ih)-s")
    assert users(pair) == ["hello there"]
    assert rec.down_types().count("InterruptionFrame") == 2


# -- 5. transcript / bot speaking -------------------------------------------------------------------


@BOTH
def test_transcript_and_bot_speaking(order: str) -> None:
    """MinWords(2): a one-word answer before the bot speaks opens the turn; once the bot speaks it is a
    backchannel, dropped without interrupting."""
    pair = Pair(turns=TurnsConfig(start=[MinWordsStart(min_words=2)]))
    rec = run(pair, "(xB)" if order == "first" else "(Bx)", legend=WORDS)
    if order == "first":
        assert users(pair) == ["okay"] and times(rec, F.InterruptionFrame) == [0]
    else:
        assert users(pair) == [] and times(rec, F.InterruptionFrame) == []


# -- 6. transcript / mute change ---------------------------------------------------------------------


@BOTH
def test_transcript_and_mute_change(order: str) -> None:
    """Judged by the state before it: a transcript just before the mute is kept, just after it dropped; just
    before the unmute dropped, just after it kept."""
    pair = Pair(mute=[AlwaysUserMute()])
    run(pair, "(xB)-(wb)" if order == "first" else "(Bx)-(bw)", legend=WORDS)
    assert users(pair) == (["okay"] if order == "first" else ["world"])


# -- 7. VAD stop / verdict ---------------------------------------------------------------------------


@BOTH
def test_vad_stop_and_verdict(order: str) -> None:
    """The verdict of the latest pause decides; a slow verdict for an earlier pause that lands after a newer
    VAD stop is stale and ignored."""
    if order == "first":
        pair, m = analyzer_pair([(True, 0.9)], 0.1)
        rec = run(pair, "v-h-s", m=m)
        assert ctx_times(rec) == [500]
    else:
        pair, m = analyzer_pair([(True, 0.9), (False, 0.2)], 0.5, stop_timeout=2.0)
        rec = run(pair, "v-h-s-v-w-s", m=m)
        # Verdict 1 (complete) is asked at 0.4 and lands at 0.9, after the new VAD start at 0.6: stale. Verdict 2
        # (incomplete) keeps the turn open; the watchdog closes it 2 s after the last VAD stop.
        assert event_times(rec, "on_user_turn_stop_timeout") == [1000 + 2000]
        assert users(pair) == ["hello there world"]


# -- 8. VAD stop / timeout -----------------------------------------------------------------------------


@BOTH
def test_vad_stop_and_speech_timeout(order: str) -> None:
    """The speech timeout elapses after VE: the turn ends. New speech before it elapses: the turn goes on and
    ends 0.6 s after the later VE, with both phrases. (After the end, speech 0.2 s later reopens the turn, since
    no answer was heard: ``test_recovery``; with recovery off it is a turn of its own.)"""
    down = "v-H-s-------v-W-s" if order == "first" else "v-H-s--v-W-s"
    if order == "first":
        pair = Pair(turns=TurnsConfig(recovery_window=0))
        run(pair, down, legend={"W": F.TranscriptionFrame("world.")})
        assert users(pair) == ["Hello", "world."]
        pair = Pair()
        rec = run(pair, down, legend={"W": F.TranscriptionFrame("world.")})
        assert users(pair) == ["Hello world."] and len(rec.events_named("on_user_turn_recovered")) == 1
    else:
        pair = Pair()
        rec = run(pair, down, legend={"W": F.TranscriptionFrame("world.")})
        assert users(pair) == ["Hello world."] and ctx_times(rec) == [1100 + 600]


@BOTH
def test_vad_stop_and_watchdog(order: str) -> None:
    """The watchdog's deadline before VE (user still speaking) closes nothing; after VE it closes the turn."""
    pair = Pair(turns=TurnsConfig(stop=[SpeechTimeoutStop(9.0)], stop_timeout=1.0))
    rec = run(pair, "v-h" + "-" * 15 + "s" if order == "first" else "v-h-s")
    stop = 1800 if order == "first" else 400
    assert times(rec, F.UserStoppedSpeakingFrame) == [stop + 1000]


# -- 9. VAD stop / interruption --------------------------------------------------------------------------


@BOTH
def test_vad_stop_and_interruption(order: str) -> None:
    """An interruption just before or after the VAD stop changes neither the answer nor its time."""
    pair = Pair()
    rec = run(pair, "v-h-(Is)" if order == "first" else "v-h-(sI)")
    assert ctx_times(rec) == [1000] and users(pair) == ["hello there"]


# -- 10. VAD stop / bot speaking ----------------------------------------------------------------------------


@BOTH
def test_vad_stop_and_bot_stopping(order: str) -> None:
    """An empty turn that cut the bot off is recovered whether the bot stopped before or after the VAD stop:
    what counts is that it was speaking when the turn began."""
    pair = Pair(turns=TurnsConfig(stop_timeout=0.5))
    run(pair, "B-v-(bs)" if order == "first" else "B-v-(sb)")
    assert [role for role, _ in contents(pair)] == ["developer"]


# -- 11. VAD stop / mute change -------------------------------------------------------------------------------


@BOTH
def test_vad_stop_and_mute_change(order: str) -> None:
    """VE just before the mute, or dropped just after it: the turn ends either way, never hangs.

    VE first: the speech ended 0.2 s before it (its stop_secs), the words came then, 0.6 s later it ends.
    Dropped: the speech counts as over at the mute, after the words, so the STT's latency (1 s) is waited.
    """
    pair = Pair(mute=[AlwaysUserMute()])
    rec = run(pair, "v-h-(sB)" if order == "first" else "v-h-(Bs)")
    assert ctx_times(rec) == ([1000] if order == "first" else [1400]) and users(pair) == ["hello there"]


# -- 12. verdict / timeout --------------------------------------------------------------------------------------


@BOTH
def test_verdict_and_stt_deadline(order: str) -> None:
    """p99 0.6, stop window 0.2, unfinalized transcript: a verdict before the STT deadline waits for it; a
    verdict after it answers at once."""
    latency = 0.1 if order == "first" else 0.6
    pair, m = analyzer_pair([(True, 0.9)], latency)
    rec = run(pair, "m-v-t-s", m=m, legend={"m": F.STTMetadataFrame("stt", ttfs_p99_latency=0.6)})
    assert ctx_times(rec) == ([600 + 400] if order == "first" else [600 + 600])


@BOTH
def test_verdict_and_watchdog(order: str) -> None:
    """A complete verdict before the watchdog ends the turn with no timeout; a verdict slower than the
    watchdog comes after the turn was closed and changes nothing."""
    latency = 0.2 if order == "first" else 3.0
    pair, m = analyzer_pair([(True, 0.9)], latency, stop_timeout=1.0)
    rec = run(pair, "v-h-s", m=m)
    assert event_times(rec, "on_user_turn_stop_timeout") == ([] if order == "first" else [1400])
    assert len(rec.events_named("on_user_turn_stopped")) == 1 and len(ctx_times(rec)) == 1


# -- 13. verdict / interruption -------------------------------------------------------------------------------


@BOTH
def test_verdict_and_interruption(order: str) -> None:
    """An interruption arriving before or after the verdict does not stop it from ending the turn."""
    pair, m = analyzer_pair([(True, 0.9)], 0.2)
    rec = run(pair, "v-h-s-I" if order == "first" else "v-h-s--I", m=m)
    assert ctx_times(rec) == [600]


# -- 14. verdict / bot speaking ---------------------------------------------------------------------------------


@BOTH
def test_verdict_and_bot_speaking(order: str) -> None:
    """The bot starting to speak before or after the verdict (an earlier reply) does not cancel the answer."""
    pair, m = analyzer_pair([(True, 0.9)], 0.2)
    rec = run(pair, "v-h-s-B" if order == "first" else "v-h-s--B", m=m)
    assert ctx_times(rec) == [600]


# -- 15. verdict / mute change ----------------------------------------------------------------------------------


@BOTH
def test_verdict_and_mute_change(order: str) -> None:
    """A verdict is not user input: muted before it lands or after, it still ends the turn."""
    pair, m = analyzer_pair([(True, 0.9)], 0.2, mute=[AlwaysUserMute()])
    rec = run(pair, "v-h-s-B" if order == "first" else "v-h-s--B", m=m)
    assert ctx_times(rec) == [600] and users(pair) == ["hello there"]


# -- 16. timeout / interruption ---------------------------------------------------------------------------------


@BOTH
def test_speech_timeout_and_interruption(order: str) -> None:
    """An interruption just before or just after the speech timeout elapses: the turn ends at the timeout."""
    pair = Pair()
    rec = run(pair, "v-h-s----I" if order == "first" else "v-h-s------I")
    assert ctx_times(rec) == [1000]
    assert times(rec, F.InterruptionFrame)[-1] == (900 if order == "first" else 1100)


# -- 17. timeout / bot speaking ------------------------------------------------------------------------------------


@BOTH
def test_idle_timeout_and_bot_speaking(order: str) -> None:
    """The bot starting to speak before the idle timeout cancels it; after it, the idle already fired."""
    rec = run(Pair(turns=TurnsConfig(idle_timeout=1.0)), up="b--------B" if order == "first" else "b-----------B",
              until=10)
    assert event_times(rec, "on_user_turn_idle") == ([] if order == "first" else [1000])


# -- 18. timeout / mute change ----------------------------------------------------------------------------------------


@BOTH
def test_watchdog_and_mute_change(order: str) -> None:
    """An empty interrupting turn closed by the watchdog is recovered if the user was not muted then, and not
    if a tool call had muted them."""
    pair = Pair(turns=TurnsConfig(stop_timeout=1.0), mute=[FunctionCallUserMute()])
    rec = run(pair, "B-v-s-----------c" if order == "first" else "B-v-s---c", legend=WORDS)
    assert [role for role, _ in contents(pair)] == (["developer"] if order == "first" else [])
    assert len(rec.events_named("on_user_turn_stopped")) == 1


# -- 19. interruption / bot speaking ---------------------------------------------------------------------------------


@BOTH
def test_interruption_and_bot_speaking(order: str) -> None:
    """An adopted turn's interruption counts as cutting the bot off only if the bot was speaking when it came."""
    pair = Pair(turns=TurnsConfig(strategies=ExternalStrategies(), stop_timeout=1.0))
    run(pair, "U-(BI)-u" if order == "first" else "U-(IB)-u")
    assert [role for role, _ in contents(pair)] == (["developer"] if order == "first" else [])


# -- 20. interruption / mute change ----------------------------------------------------------------------------------


@BOTH
def test_interruption_and_mute_change(order: str) -> None:
    """An interruption just before the mute goes on; just after it, it is dropped like all user input."""
    pair = Pair(mute=[AlwaysUserMute()])
    rec = run(pair, "(IB)" if order == "first" else "(BI)")
    assert rec.down_types().count("InterruptionFrame") == (1 if order == "first" else 0)


# -- 21. bot speaking / mute change -----------------------------------------------------------------------------------


@BOTH
def test_bot_speaking_and_mute_change(order: str) -> None:
    """Always + FunctionCall mutes: the user is heard again only once both the bot stopped and the call ended,
    whichever comes last."""
    pair = Pair(mute=[AlwaysUserMute(), FunctionCallUserMute()])
    down = "B-c-b-x-r-w" if order == "first" else "B-c-r-x-b-w"
    rec = run(pair, down, legend=WORDS)
    assert users(pair) == ["world"]
    unmuted = times(rec, F.UserMuteStoppedFrame)
    assert unmuted == [800]
