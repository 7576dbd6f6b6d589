"""Recovery from a false end: the user resumes before the bot said anything, and the turn is answered once, whole.

Marble tests in virtual time through the whole pair, a scripted model between
its halves. In each, the user says "I'd like a table for", pauses (a VAD stop
and the 0.6 s speech timeout end the turn at 1.1 s: a false end), then goes on
with "two people." The bot's speech, when there is any, comes upstream as
``BotStartedSpeakingFrame``.
"""

from __future__ import annotations

from typing import Any

import pytest

from rxvoice import LLMContext, pipeline
from rxvoice import frames as F
from rxvoice.aggregators import Pair, UserTurnRecovered
from rxvoice.context import LLMSpecificMessage
from rxvoice.errors import ConfigurationError
from rxvoice.testing import FrameMarbles, Recording, ScriptedLLM
from rxvoice.turns import RECOVERY_WINDOW, FusedTurnStop, SpeechTimeoutStop, TurnsConfig

L: dict[str, F.Frame] = {
    "v": F.VADUserStartedSpeakingFrame(0.2),
    "s": F.VADUserStoppedSpeakingFrame(0.2),
    "a": F.TranscriptionFrame("I'd like a table for", "u1"),
    "b": F.TranscriptionFrame("two people.", "u1"),
    "B": F.BotStartedSpeakingFrame(),
    "b-": F.BotStoppedSpeakingFrame(),
    "E": F.EndFrame(),
}
FIRST = "I'd like a table for"
WHOLE = "I'd like a table for two people."


def talk(down: str, up: str = "", *, turns: TurnsConfig | None = None, first_token_delay: float = 0.0,
         token_delay: float = 0.0) -> tuple[Pair, ScriptedLLM, Recording]:
    pair = Pair(LLMContext(), turns=turns)
    llm = ScriptedLLM(["Sure, for how many people would that be?", "A table for two, booked."],
                      first_token_delay=first_token_delay, token_delay=token_delay)
    rec = FrameMarbles(L).run(pipeline(pair.user(), llm, pair.assistant()), down=down, up=up,
                              watch=[pair.user(), pair.assistant()])
    return pair, llm, rec


def conversation(pair: Pair) -> list[tuple[str, Any]]:
    return [(m["role"], m["content"]) for m in pair.context().messages if not isinstance(m, LLMSpecificMessage)]


#           0.0  0.3   0.5    1.1 false end      1.6 resumes   1.8 words 2.0 stop   2.6 the real end
RESUMES = "v--a-s----------v-b-s" + "-" * 50 + "E"


def test_resuming_before_the_first_token_cancels_the_request_and_answers_the_whole_turn() -> None:
    """The model had not begun (1 s to first token): its run is cut off, the words join, one answer."""
    pair, llm, rec = talk(RESUMES, first_token_delay=1.0)
    assert conversation(pair) == [("user", WHOLE), ("assistant", "A table for two, booked.")]
    [(at, recovered)] = rec.events_named("on_user_turn_recovered")
    assert at == 1600
    assert isinstance(recovered, UserTurnRecovered)
    assert recovered.content == FIRST and recovered.after == pytest.approx(0.5)
    # Asked twice (the false end, then the whole turn); the first run never answered.
    assert [r.snapshot.messages[-1]["content"] for r in llm.runs] == [FIRST, WHOLE]
    # The cut-off run opened the assistant's turn and closed it, interrupted, with nothing said.
    stops = [p for _, p in rec.events_named("on_assistant_turn_stopped")]
    assert [(p.interrupted, p.content) for p in stops] == [(True, ""), (False, "A table for two, booked.")]
    # The reopened turn cut the request off: an interruption went down to the model when the user resumed.
    assert 1600 in [t for t, _ in rec.of_type(F.InterruptionFrame)]
    stopped = [p.content for _, p in rec.events_named("on_user_turn_stopped")]
    assert stopped == [FIRST, WHOLE]


def test_resuming_while_the_reply_streams_but_before_speech_leaves_no_assistant_message() -> None:
    """Tokens were streaming (nothing spoken yet): the unheard reply is not written; the turn is answered once."""
    pair, llm, rec = talk(RESUMES, first_token_delay=0.1, token_delay=0.2)
    assert conversation(pair) == [("user", WHOLE), ("assistant", "A table for two, booked.")]
    assert len(rec.events_named("on_user_turn_recovered")) == 1
    # The first reply was cut off mid-stream (reported as interrupted), and left nothing in the conversation.
    stops = [p for _, p in rec.events_named("on_assistant_turn_stopped")]
    assert [p.interrupted for p in stops] == [True, False]
    assert stops[0].content and stops[0].content != stops[1].content
    assert [r.snapshot.messages[-1]["content"] for r in llm.runs] == [FIRST, WHOLE]


def test_once_the_bot_has_spoken_resuming_is_an_ordinary_barge_in() -> None:
    """The bot started speaking at 1.4 s: the user's 1.6 s words are a new turn, not a recovery."""
    pair, llm, rec = talk(RESUMES, up="--------------B", first_token_delay=0.1, token_delay=0.2)
    assert rec.events_named("on_user_turn_recovered") == []
    said = [c for role, c in conversation(pair) if role == "user"]
    assert said == [FIRST, "two people."]
    assert [r.snapshot.messages[-1]["content"] for r in llm.runs][-1] == "two people."


def test_once_the_reply_is_written_resuming_is_a_new_turn() -> None:
    """A text pipeline shows the reply as it is written (by 1.2 s here): the user's 1.6 s words are a new turn.

    The assistant's ``LLMContextAssistantTurnFrame`` (its reply written) closes the window as it comes back."""
    pair, llm, rec = talk(RESUMES, first_token_delay=0.1)
    assert next(t for t, _ in rec.of_type(F.LLMContextAssistantTurnFrame)) < 1600
    assert rec.events_named("on_user_turn_recovered") == []
    assert conversation(pair) == [
        ("user", FIRST), ("assistant", "Sure, for how many people would that be?"),
        ("user", "two people."), ("assistant", "A table for two, booked.")]
    assert [r.snapshot.messages[-1]["content"] for r in llm.runs] == [FIRST, "two people."]


def test_the_assistants_turn_frame_closes_the_window_as_it_comes_back() -> None:
    """The user's stage alone: an ``LLMContextAssistantTurnFrame`` from downstream (1.3 s) says a reply was
    written, though this conversation holds none; the 1.6 s words are then a new turn, not a recovery."""
    pair = Pair(LLMContext())
    turn = F.LLMContextAssistantTurnFrame("Sure.", "2026-01-01T00:00:01Z")
    rec = FrameMarbles({**L, "T": turn}).run(pipeline(pair.user()), down=RESUMES, up="-------------T",
                                             watch=[pair.user()])
    assert rec.events_named("on_user_turn_recovered") == []
    assert [c for role, c in conversation(pair) if role == "user"] == [FIRST, "two people."]


def test_resuming_after_the_window_is_a_new_turn() -> None:
    """The user goes on 2.0 s after the end (the window is 1.5 s): two turns, two answers."""
    pair, _, rec = talk("v--a-s----------------------v-b-s" + "-" * 50 + "E", first_token_delay=3.0)
    assert rec.events_named("on_user_turn_recovered") == []
    assert [c for role, c in conversation(pair) if role == "user"] == [FIRST, "two people."]


def test_a_continuation_without_words_asks_again_for_the_lost_answer() -> None:
    """A cough reopens the turn and cuts the request off; with nothing more said, the same turn is asked again."""
    pair, llm, rec = talk("v--a-s----------v-s" + "-" * 100 + "E", first_token_delay=1.0)
    assert len(rec.events_named("on_user_turn_recovered")) == 1
    assert conversation(pair) == [("user", FIRST), ("assistant", "A table for two, booked.")]
    assert len(llm.runs) == 2 and all(r.snapshot.messages[-1]["content"] == FIRST for r in llm.runs)


@pytest.mark.parametrize("stop", [SpeechTimeoutStop(), FusedTurnStop()], ids=lambda s: type(s).__name__)
def test_a_continuation_without_words_is_bounded_like_any_pause(stop: Any) -> None:
    """The reopened turn keeps its words: a cough (VAD 1.3-1.5 s, no transcript) within the window after the end
    reopens the turn, which then ends once the wait for its words is over (about a second after the cough), not
    at the 5 s watchdog."""
    legend = dict(L, a=F.TranscriptionFrame("I'd like a table", "u1"))
    pair = Pair(LLMContext(), turns=TurnsConfig(stop=[stop]))
    llm = ScriptedLLM(["Sure, for how many people would that be?", "A table for two, booked."], first_token_delay=2.0)
    rec = FrameMarbles(legend).run(pipeline(pair.user(), llm, pair.assistant()),
                                   down="v--a-s-------v-s" + "-" * 100 + "E", watch=[pair.user(), pair.assistant()])
    assert [t for t, _ in rec.events_named("on_user_turn_recovered")] == [1300]
    first, second = (t for t, _ in rec.events_named("on_user_turn_stopped"))
    assert first <= 1100
    assert 1300 + 1000 <= second <= 1300 + 1300  # the cough's speech ended at 1.3 s: a pause's bounded wait
    assert rec.events_named("on_user_turn_stop_timeout") == []
    assert conversation(pair) == [("user", "I'd like a table"), ("assistant", "A table for two, booked.")]


def test_a_reopened_turn_the_session_end_closes_is_answered_without_the_cut_reply() -> None:
    """The user resumes (1.6 s) while the reply streams, and the session ends (1.8 s) before more is said: the
    unheard "Sure, for" is not kept, and the turn is answered once more before the end."""
    pair, llm, rec = talk("v--a-s----------v-E", first_token_delay=0.1, token_delay=0.2)
    assert len(rec.events_named("on_user_turn_recovered")) == 1
    assert conversation(pair) == [("user", FIRST), ("assistant", "A table for two, booked.")]
    assert [r.snapshot.messages[-1]["content"] for r in llm.runs] == [FIRST, FIRST]


def test_a_developer_note_after_the_users_message_keeps_recovery() -> None:
    """The app appends a note (1.3 s) after the false end: it is no answer, so the turn still reopens; the note
    stays, after the whole user message."""
    note = F.LLMMessagesAppendFrame([{"role": "developer", "content": "The user is a regular."}], run_llm=False)
    pair = Pair(LLMContext())
    llm = ScriptedLLM(["Sure, for how many people would that be?", "A table for two, booked."], first_token_delay=1.0)
    rec = FrameMarbles({**L, "n": note}).run(pipeline(pair.user(), llm, pair.assistant()),
                                            down="v--a-s-------n--v-b-s" + "-" * 50 + "E",
                                            watch=[pair.user(), pair.assistant()])
    assert len(rec.events_named("on_user_turn_recovered")) == 1
    assert conversation(pair) == [
        ("user", WHOLE), ("developer", "The user is a regular."), ("assistant", "A table for two, booked.")]


def test_a_recovery_window_of_zero_turns_recovery_off() -> None:
    pair, _, rec = talk(RESUMES, turns=TurnsConfig(recovery_window=0), first_token_delay=1.0)
    assert rec.events_named("on_user_turn_recovered") == []
    assert [c for role, c in conversation(pair) if role == "user"] == [FIRST, "two people."]


def test_a_tool_run_since_the_false_end_keeps_its_messages_and_the_continuation_its_own() -> None:
    """Something happened that cannot be unsaid (a tool ran): the continuation is written as a message of its own."""
    def reopened(messages: list[dict[str, Any]]) -> list[Any] | None:
        ctx = LLMContext(messages)
        return list(ctx.messages) if ctx.reopen_user_message(FIRST, WHOLE) else None

    messages = [{"role": "user", "content": FIRST},
                {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
                                                                      "function": {"name": "f", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "ok"}]
    assert reopened(messages) is None
    # Another user message since (or a summary replaced the turn): nothing to reopen in place either.
    assert reopened([{"role": "user", "content": FIRST}, {"role": "user", "content": "x"}]) is None
    assert reopened([{"role": "system", "content": "s"}]) is None
    # The unheard assistant text goes; a developer note stays.
    assert reopened([{"role": "user", "content": FIRST}, {"role": "assistant", "content": "Sure"},
                     {"role": "developer", "content": "n"}]) == [
        {"role": "user", "content": WHOLE}, {"role": "developer", "content": "n"}]


@pytest.mark.parametrize("bad", [-1.0, float("nan"), 86_401.0, "1"])
def test_a_recovery_window_out_of_range_is_refused(bad: Any) -> None:
    with pytest.raises(ConfigurationError, match="recovery_window"):
        TurnsConfig(recovery_window=bad)


def test_the_default_window() -> None:
    assert TurnsConfig().recovery_window == RECOVERY_WINDOW > 0
