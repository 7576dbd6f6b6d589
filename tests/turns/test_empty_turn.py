"""Empty user turns (the VAD fired, the STT heard nothing): recovery only after an interruption."""

from __future__ import annotations

from rxvoice import frames as F
from rxvoice import pipeline
from rxvoice.aggregators import Pair
from rxvoice.testing import ScriptedLLM
from rxvoice.turns import (
    DEFAULT_INTERRUPTED_PROMPT,
    AlwaysUserMute,
    EmptyUserTurnConfig,
    FunctionCallUserMute,
    TurnsConfig,
    VADStart,
)

from .helpers import contents, marbles, run, times

FAST = TurnsConfig(stop_timeout=0.3)
CALL = F.FunctionCallsStartedFrame([F.FunctionCallFromLLM("f", "c1", {})])


def test_an_empty_turn_that_cut_the_bot_off_asks_the_user_to_repeat() -> None:
    """Bot speaking, VS/VE, no words: the watchdog closes the turn, a developer prompt runs the model once."""
    pair = Pair(turns=FAST)
    rec = run(pair, "B-v-s")
    assert rec.down_types()[-2:] == ["UserStoppedSpeakingFrame", "LLMContextFrame"]
    assert contents(pair) == [("developer", DEFAULT_INTERRUPTED_PROMPT)]
    [(_, stopped)] = rec.events_named("on_user_turn_stopped")
    assert stopped.content == "" and stopped.strategy is None


def test_an_empty_turn_that_interrupted_nothing_runs_nothing() -> None:
    """Bot quiet (or never spoke): a cough is not answered (a deliberate difference from pipecat §8.20)."""
    for down in ("v-s", "B-b-v-s"):
        pair = Pair(turns=FAST)
        rec = run(pair, down)
        assert times(rec, F.LLMContextFrame) == [] and contents(pair) == []


def test_only_one_recovery_in_a_row() -> None:
    """Two consecutive empty interrupting turns: only the first runs the model (pipecat §8.22)."""
    pair = Pair(turns=FAST)
    rec = run(pair, "B-v-s------v-s")
    assert len(times(rec, F.LLMContextFrame)) == 1


def test_a_turn_with_words_resets_the_recovery_budget() -> None:
    """After a real turn, the next empty interrupting turn is recovered again."""
    pair = Pair(turns=FAST)
    rec = run(pair, "B-v-s------v-h-s--------B-v-s")
    assert [r for r, _ in contents(pair)] == ["developer", "user", "developer"]
    assert len(times(rec, F.LLMContextFrame)) == 3


def test_recovery_can_be_turned_off() -> None:
    """empty_turn=None: an empty turn never runs the model (pipecat §8.23)."""
    pair = Pair(turns=TurnsConfig(stop_timeout=0.3, empty_turn=None))
    rec = run(pair, "B-v-s")
    assert times(rec, F.LLMContextFrame) == [] and contents(pair) == []


def test_an_idle_prompt_recovers_quiet_empty_turns() -> None:
    """With idle_prompt set, an empty turn that interrupted nothing runs that prompt."""
    cfg = TurnsConfig(stop_timeout=0.3, empty_turn=EmptyUserTurnConfig(idle_prompt="Say something short."))
    pair = Pair(turns=cfg)
    run(pair, "v-s")
    assert contents(pair) == [("developer", "Say something short.")]


def test_no_recovery_without_an_interruption() -> None:
    """A start strategy that does not interrupt: the bot was not cut off, nothing to recover."""
    pair = Pair(turns=TurnsConfig(start=[VADStart(enable_interruptions=False)], stop_timeout=0.3))
    run(pair, "B-v-s")
    assert contents(pair) == []


def test_no_recovery_while_muted_or_a_call_runs() -> None:
    """A muted user or a tool call in flight: the recovery waits for nothing and runs nothing."""
    pair = Pair(turns=FAST, mute=[FunctionCallUserMute()])
    run(pair, "B-v-(sc)", legend={"c": CALL})
    assert contents(pair) == []
    pair = Pair(turns=FAST)
    run(pair, "B-v-c-s", legend={"c": CALL})
    assert contents(pair) == []


def test_an_empty_turn_at_session_end_is_reported_not_recovered() -> None:
    """The session ends mid-turn with no words: the turn is reported stopped, no model run."""
    pair = Pair(turns=FAST, mute=[AlwaysUserMute()])
    rec = run(pair, "B-(bv)-E")
    assert len(rec.events_named("on_user_turn_stopped")) == 1
    assert times(rec, F.LLMContextFrame) == []


def test_recovery_with_the_model() -> None:
    """Through a scripted model: the model runs once, on the conversation ending with the prompt."""
    pair = Pair(turns=FAST)
    llm = ScriptedLLM(["Sorry, could you repeat that?"])
    marbles().run(pipeline(pair.user(), llm, pair.assistant()), down="v-s", up="B", watch=[pair.user()])
    assert len(llm.runs) == 1
    assert llm.runs[0].snapshot.messages[-1]["role"] == "developer"
    assert contents(pair)[-1] == ("assistant", "Sorry, could you repeat that?")
