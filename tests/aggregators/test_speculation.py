"""Speculative replies: asked while the end is likely, held, released at once, dropped, refused for a tool.

Marble tests in virtual time through the whole pair with a scripted model
between its halves (100 ms a dash). The user says "I'd like a table for
two." (its final at 0.3 s); the VAD stops at 0.5 s (speech ended at 0.3 s):
the words are in, and the 0.6 s speech timeout is all that is left, so the
stop strategy raises ``Likely`` at 0.5 s and the turn ends at 1.1 s. The
model takes 0.5 s to its first token.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rxvoice import LLMContext, pipeline
from rxvoice import frames as F
from rxvoice.aggregators import Pair
from rxvoice.errors import ConfigurationError
from rxvoice.testing import FrameMarbles, Recording, Reply, ScriptedLLM, ToolCall
from rxvoice.turns import SpeechTimeoutStop, TurnsConfig
from rxvoice.turns.speculation import Speculation, SpeculationReport, Speculator, normalized_words

WHOLE = "I'd like a table for two."
L: dict[str, F.Frame] = {
    "v": F.VADUserStartedSpeakingFrame(0.2),
    "s": F.VADUserStoppedSpeakingFrame(0.2),
    "a": F.TranscriptionFrame(WHOLE, "u1", finalized=True),
    "p": F.TranscriptionFrame("I'd like a table", "u1", finalized=True),
    "q": F.TranscriptionFrame("for two.", "u1", finalized=True),
    "i": F.InterimTranscriptionFrame("i'd like a table for two", "u1"),
    "B": F.BotStartedSpeakingFrame(),
    "E": F.EndFrame(),
}
SAYS = "v--a-s" + "-" * 30 + "E"


def talk(down: str, *, speculate: Any = True, script: Any = None, first_token_delay: float = 0.5,
         token_delay: float = 0.0, stop: Any = None) -> tuple[Pair, ScriptedLLM, Recording]:
    turns = TurnsConfig(stop=[stop or SpeechTimeoutStop(user_speech_timeout=0.6)], speculate=speculate)
    pair = Pair(LLMContext(), turns=turns)
    llm = ScriptedLLM(script or ["A table for two, booked.", "Anything else?"],
                      first_token_delay=first_token_delay, token_delay=token_delay)
    rec = FrameMarbles(L).run(pipeline(pair.user(), llm, pair.assistant()), down=down,
                              watch=[pair.user(), pair.assistant()])
    return pair, llm, rec


def reports(rec: Recording) -> list[tuple[int, str, str]]:
    out = []
    for t, p in rec.events_named("on_user_turn_speculation"):
        assert isinstance(p, SpeculationReport)
        out.append((t, p.outcome, p.reason))
    return out


def conversation(pair: Pair) -> list[tuple[str, Any]]:
    return [(m["role"], m["content"]) for m in pair.context().messages]


def first_token(rec: Recording) -> int:
    return rec.of_type(F.LLMTextFrame)[0][0]


def test_without_speculation_the_answer_starts_a_first_token_delay_after_the_end() -> None:
    _pair, llm, rec = talk(SAYS, speculate=None)
    assert [t for t, _ in rec.events_named("on_user_turn_stopped")] == [1100]
    assert first_token(rec) == 1600
    assert llm.speculative_runs == [] and reports(rec) == []


def test_the_held_answer_is_released_at_once_when_the_turn_ends_with_the_same_words() -> None:
    pair, llm, rec = talk(SAYS)
    # Asked at the likely end (0.5 s) on a copy of the conversation: nothing was written then.
    [(asked_at, asked)] = rec.events_named("on_user_turn_speculation")[:1]
    assert asked_at == 500 and asked.outcome == "asked" and asked.words == WHOLE
    [spec] = llm.speculative_runs
    assert spec.snapshot.messages[-1] == {"role": "user", "content": WHOLE}
    assert pair.context().messages[0]["content"] == WHOLE and len(rec.contexts) <= 3
    # Held: the first token was ready at 1.0 s, nothing went out before the turn ended at 1.1 s.
    assert first_token(rec) == 1100
    assert [t for t, _ in rec.events_named("on_user_turn_stopped")] == [1100]
    # One request released (not asked again), one answer written after the user's words.
    assert len(llm.runs) == 1 and len(llm.speculative_runs) == 1
    assert conversation(pair) == [("user", WHOLE), ("assistant", "A table for two, booked.")]
    assert [(t, o) for t, o, _ in reports(rec)] == [(500, "asked"), (1100, "released")]


def test_a_held_answer_still_streaming_goes_on_live_after_the_release() -> None:
    """A slow first token (0.8 s: 1.3 s): released at 1.1 s with nothing in it yet, it streams live."""
    pair, llm, rec = talk(SAYS, first_token_delay=0.8, token_delay=0.1)
    assert first_token(rec) == 1300
    assert conversation(pair)[-1] == ("assistant", "A table for two, booked.")
    assert len(llm.runs) == 1


def test_the_user_going_on_drops_the_held_answer_silently() -> None:
    """Speech resumes at 0.8 s: the held answer is withdrawn; the whole turn is answered once, later."""
    down = "v--p-s--v-q-s" + "-" * 30 + "E"
    pair, llm, rec = talk(down)
    outcomes = reports(rec)
    assert outcomes[0][:2] == (500, "asked")
    assert (800, "dropped", "the user went on") in outcomes
    # Nothing of the dropped answer was said or written: one answer, to the whole turn.
    assert conversation(pair) == [("user", "I'd like a table for two."), ("assistant", "A table for two, booked.")]
    assert [r.snapshot.messages[-1]["content"] for r in llm.speculative_runs] == ["I'd like a table",
                                                                                 "I'd like a table for two."]
    assert [o for _, o, _ in outcomes] == ["asked", "dropped", "asked", "released"]
    stops = [p for _, p in rec.events_named("on_assistant_turn_stopped")]
    assert [p.content for p in stops] == ["A table for two, booked."]


def test_words_that_change_after_the_ask_drop_it_and_a_later_likely_end_asks_again() -> None:
    """Asked on the interim guess at the VAD stop (0.4 s); the final at 0.6 s says more: dropped, asked again."""
    legend = {"x": F.TranscriptionFrame("I'd like a table for two please.", "u1", finalized=True)}
    stop = SpeechTimeoutStop(user_speech_timeout=0.6)
    turns = TurnsConfig(stop=[stop], speculate=True)
    pair = Pair(LLMContext(), turns=turns)
    llm = ScriptedLLM(["Done."], first_token_delay=0.5)
    # v, interim at 0.2, VAD stop at 0.4 (likely: the interim stands for the words), final at 0.6, end at 1.0.
    rec = FrameMarbles({**L, **legend}).run(pipeline(pair.user(), llm, pair.assistant()),
                                             down="v-i-s-x" + "-" * 30 + "E", watch=[pair.user()])
    assert sorted((t, o) for t, o, _ in reports(rec)) == [(400, "asked"), (600, "asked"), (600, "dropped"),
                                                           (1000, "released")]
    assert [r.snapshot.messages[-1]["content"] for r in llm.speculative_runs] == [
        "i'd like a table for two", "I'd like a table for two please."]


def test_an_interim_guess_that_matches_the_final_releases_under_the_normalized_match() -> None:
    """The model said complete before the final: asked on the interim, released for the final words."""
    speculator = Speculator(Speculation())
    sid, _ = speculator.ask("i'd like a table for two", 3, 0.0)
    assert sid == 1
    assert speculator.commit(WHOLE, 3, 0.2) == (1, None)
    exact = Speculator(Speculation(match="exact"))
    exact.ask("i'd like a table for two", 3, 0.0)
    assert exact.commit(WHOLE, 3, 0.2) == (None, 1)


def test_a_conversation_changed_since_the_ask_is_not_released() -> None:
    speculator = Speculator(Speculation())
    speculator.ask(WHOLE, 3, 0.0)
    assert speculator.commit(WHOLE, 4, 0.2) == (None, 1)  # something was written in between


def test_an_answer_held_too_long_is_not_released() -> None:
    speculator = Speculator(Speculation(max_age=1.0))
    speculator.ask(WHOLE, 3, 0.0)
    assert speculator.commit(WHOLE, 3, 1.5) == (None, 1)


def test_a_held_answer_that_asks_for_a_tool_is_refused_and_the_turn_end_asks_again() -> None:
    ran: list[Any] = []
    script = [Reply("Let me check.", tool_calls=[ToolCall("tables", {"n": 2}, handler=ran.append)]), "Booked."]
    _pair, llm, rec = talk(SAYS, script=script)
    outcomes = reports(rec)
    assert [(t, o) for t, o, _ in outcomes][:2] == [(500, "asked"), (500, "refused")]
    # The speculative answer started no tool: the handler ran once, for the request made at the turn's end.
    assert len(ran) == 1
    assert llm.runs[0].snapshot.messages[-1]["content"] == WHOLE
    starts = [t for t, _ in rec.of_type(F.FunctionCallsStartedFrame, "up")]
    assert starts and min(starts) >= 1100
    # Refused once, not asked again in the same turn.
    assert [o for _, o, _ in outcomes].count("asked") == 1


def test_a_turn_ending_without_words_withdraws_the_request() -> None:
    speculator = Speculator(Speculation())
    speculator.ask(WHOLE, 0, 0.0)
    assert speculator.withdraw() == 1 and speculator.withdraw() is None


def test_a_late_answer_to_a_withdrawn_request_is_dropped() -> None:
    """The model reports on a request the user side let go: counted, nothing else."""
    speculator = Speculator(Speculation())
    speculator.ask(WHOLE, 0, 0.0)
    speculator.withdraw()
    report = speculator.ended(1, "dropped", "withdrawn", 7)
    assert report.outcome == "dropped" and speculator.stats.wasted_tokens == 7 and speculator.current is None


def test_at_most_max_per_turn_requests_and_one_in_flight() -> None:
    speculator = Speculator(Speculation(max_per_turn=2))
    assert speculator.ask("a", 0, 0.0) == (1, None)
    assert speculator.ask("a", 0, 0.1) == (None, None)  # the same words are in flight
    assert speculator.ask("a b", 0, 0.2) == (2, 1)  # other words: the one in flight is withdrawn first
    assert speculator.ask("a b c", 0, 0.3) == (None, None)  # the cap
    speculator.turn_started()
    assert speculator.ask("x", 0, 0.4) == (3, 2)


@pytest.mark.parametrize("bad", [{"max_per_turn": 0}, {"max_per_turn": True}, {"max_per_turn": 11},
                                 {"match": "fuzzy"}, {"max_age": 0}, {"max_age": float("nan")}])
def test_speculation_settings_out_of_range_fail_at_construction(bad: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        Speculation(**bad)


def test_speculate_must_be_a_speculation() -> None:
    with pytest.raises(ConfigurationError):
        TurnsConfig(speculate="yes")  # type: ignore[arg-type]
    assert TurnsConfig(speculate=True).speculation == Speculation()
    assert TurnsConfig(speculate=False).speculation is None


def test_normalized_words() -> None:
    assert normalized_words("I'd like  a TABLE, for two!") == normalized_words("id like a table for two")


def test_a_model_that_does_not_speculate_answers_as_usual() -> None:
    """A stage that ignores the speculative frame: the turn's end still gets its answer (asked once)."""
    from rxvoice.pipeline.processor import Port, Processor

    class Plain(Processor):
        name = "Plain"

        def __init__(self) -> None:
            self.asked: list[Any] = []

        def open(self, port: Port) -> Any:
            outer = self

            class S:
                def on_frame(self, frame: F.Frame, direction: F.Direction) -> None:
                    if type(frame) is F.LLMContextFrame:
                        outer.asked.append(frame)
                        return
                    port.push(frame, direction)

                def on_input_end(self, direction: F.Direction) -> None:
                    return None

                def close(self) -> None:
                    return None

            return S()

    pair = Pair(LLMContext(), turns=TurnsConfig(stop=[SpeechTimeoutStop()], speculate=True))
    plain = Plain()
    FrameMarbles(L).run(pipeline(pair.user(), plain), down=SAYS, watch=[pair.user()])
    assert len(plain.asked) == 1


# -- no tool call ever starts speculatively, whatever the interleaving -----------------------------

_SYMBOLS = ["v", "s", "p", "q", "a", "i", "B", "-", "-", "-", "-"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_SYMBOLS), min_size=3, max_size=40),
       st.sampled_from([0.0, 0.3, 0.5, 1.0]), st.integers(min_value=1, max_value=3))
def test_no_tool_call_starts_speculatively_under_any_interleaving(symbols: list[str], delay: float, cap: int) -> None:
    """Replies to words with "two" in them ask for a tool: its handler runs once per request made at a
    turn's end, never for a speculative one; replies without a tool may be released."""
    ran: list[Any] = []

    def script(snapshot: Any) -> Reply:
        if "two" in str(snapshot.messages[-1].get("content", "")):
            return Reply("One moment.", tool_calls=[ToolCall("look_up", {"q": "x"}, handler=ran.append)])
        return Reply("Go on.")

    turns = TurnsConfig(stop=[SpeechTimeoutStop(user_speech_timeout=0.4)], speculate=Speculation(max_per_turn=cap))
    pair = Pair(LLMContext(), turns=turns)
    llm = ScriptedLLM(script, first_token_delay=delay)
    down = "".join(symbols) + "-" * 20 + "E"
    rec = FrameMarbles(L).run(pipeline(pair.user(), llm, pair.assistant()), down=down, watch=[pair.user()])
    with_tools = [r for r in llm.runs if r.reply is not None and r.reply.tool_calls]
    assert len(ran) == len(with_tools) == llm.tool_calls_started
    outcomes = [o for _, o, _ in reports(rec)]
    assert outcomes.count("asked") == len(llm.speculative_runs)
    refused = [r for r in llm.speculative_runs if r.reply is not None and r.reply.tool_calls]
    assert outcomes.count("refused") == len(refused)
    for _, report in rec.events_named("on_user_turn_speculation"):
        if report.outcome == "released":  # ids count from 1 per session, in the order asked
            released = llm.speculative_runs[report.speculation_id - 1].reply
            assert released is not None and not released.tool_calls
