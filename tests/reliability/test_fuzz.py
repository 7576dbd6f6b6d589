"""Fuzzing the whole pair: any frame type, in any order, at any timing, both ways.

Hypothesis builds frame streams from every frame type rxvoice defines (and
things that are not frames), with gaps from 0 to 6 s, some sent upstream, and
runs them through ``pipeline(pair.user(), ScriptedLLM, pair.assistant())``
with turn strategies (a speech timeout, or an end-of-turn model whose verdicts
take 0.1 s), mute strategies and automatic summaries switched on or off. The
stream always ends with an ``EndFrame``. The invariants:

* never an unhandled exception (nothing rxvoice logs with a traceback), and
  every ``on_error`` is a typed :class:`~rxvoice.errors.RxVoiceError`;
* every final transcription is written exactly once (counted over every user
  message written, so summaries and rewrites do not hide it), unless it
  arrived while the user was muted, when it may be dropped but never doubled;
* every tool call the model made is answered exactly once, right after it
  (its result, or CANCELLED), never left in progress;
* the model runs at most once per user message written (an early inference
  answers each new piece once), plus the runs the stream itself asked for;
* the conversation is strict JSON at every write: every message passes
  ``json.dumps(..., allow_nan=False)`` and encodes as UTF-8.

Mixed in are frames with junk inside (:func:`junk_makers`): numbers that are
infinite, huge, strings, ``None`` or ``bool``; tool-call frames holding
``None``, strings, lists, unserializable arguments and results; transcripts of
invisible characters or with lone surrogates; messages with malformed parts,
non-JSON fields or tool results for calls nobody made. A frame that refuses its
junk when it is made must do so with a typed :class:`~rxvoice.errors.RxVoiceError`
(it then never enters the stream, as in an app); one that accepts it (a
documented conversion) goes in.

``RXVOICE_STRESS=full`` runs 20 times more examples.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rxvoice import LLMContext, pipeline
from rxvoice import frames as F
from rxvoice.aggregators import Pair
from rxvoice.audio.vad import VADParams
from rxvoice.context import IN_PROGRESS, LLMSpecificMessage
from rxvoice.errors import RxVoiceError
from rxvoice.pipeline import DOWN, UP, Direction, SchedulerOffload
from rxvoice.summarization import AutoSummarizationConfig, SummaryConfig
from rxvoice.testing import FrameMarbles, Reply, ScriptedLLM, ToolCall
from rxvoice.text import is_blank
from rxvoice.turns import (
    AlwaysUserMute,
    FunctionCallUserMute,
    SpeechTimeoutStop,
    TurnAnalyzerStop,
    TurnsConfig,
)
from tests.turns.helpers import FakeAnalyzer

from .conftest import Crashes, full_stress

EXAMPLES = 6000 if full_stress() else 300
RUN_TRIGGERS = frozenset({"run", "context"})
"""Frames that ask for a model run by themselves (besides appends and updates with ``run_llm``)."""


def frame_makers(ctx: LLMContext, i: int) -> dict[str, Callable[[], Any]]:
    """A maker for every kind of frame (and a non-frame), the ``i``-th of the stream."""
    tool = f"fz{i % 3}"
    return {
        "transcription": lambda: F.TranscriptionFrame(f"w{i}", finalized=i % 2 == 0),
        "interim": lambda: F.InterimTranscriptionFrame(f"g{i}"),
        "translation": lambda: F.TranslationFrame(f"tr{i}"),
        "vad_start": lambda: F.VADUserStartedSpeakingFrame(0.2, 0.0),
        "vad_stop": lambda: F.VADUserStoppedSpeakingFrame(0.2, 0.0),
        "user_start": F.UserStartedSpeakingFrame,
        "user_stop": F.UserStoppedSpeakingFrame,
        "user_speaking": F.UserSpeakingFrame,
        "proposed_start": F.ProposedUserStartedSpeakingFrame,
        "proposed_stop": F.ProposedUserStoppedSpeakingFrame,
        "inference_completed": F.UserTurnInferenceCompletedFrame,
        "mute_started": F.UserMuteStartedFrame,
        "mute_stopped": F.UserMuteStoppedFrame,
        "idle_update": lambda: F.UserIdleTimeoutUpdateFrame((0.0, 0.5, 2.0)[i % 3]),
        "speech_params": F.SpeechControlParamsFrame,
        "vad_params": lambda: F.VADParamsUpdateFrame(VADParams() if i % 2 else "junk"),
        "stt_mute": lambda: F.STTMuteFrame(i % 2 == 0),
        "stt_meta": lambda: F.STTMetadataFrame("stt", 0.3),
        "llm_meta": lambda: F.LLMServiceMetadataFrame("llm"),
        "bot_start": F.BotStartedSpeakingFrame,
        "bot_stop": F.BotStoppedSpeakingFrame,
        "bot_speaking": F.BotSpeakingFrame,
        "bot_pause": F.BotSpeechPauseFrame,
        "bot_resume": F.BotSpeechResumeFrame,
        "audio_in": lambda: F.InputAudioRawFrame(b"\x10\x00" * 160),
        "audio_out": lambda: F.OutputAudioRawFrame(b"\x00\x00" * 240),
        "text": lambda: F.TextFrame(f" x{i}"),
        "llm_text": lambda: F.LLMTextFrame(f" t{i}"),
        "aggregated": lambda: F.AggregatedTextFrame(f"a{i}."),
        "tts_text": lambda: F.TTSTextFrame(f"s{i}."),
        "tts_speak": lambda: F.TTSSpeakFrame(f"say{i}"),
        "tts_started": F.TTSStartedFrame,
        "tts_stopped": F.TTSStoppedFrame,
        "response_start": F.LLMFullResponseStartFrame,
        "response_end": F.LLMFullResponseEndFrame,
        "thought_start": F.LLMThoughtStartFrame,
        "thought_text": lambda: F.LLMThoughtTextFrame(f"th{i}"),
        "thought_end": F.LLMThoughtEndFrame,
        "push_aggregation": F.LLMAssistantPushAggregationFrame,
        "marker": lambda: F.LLMMarkerFrame("●"),
        "context": lambda: F.LLMContextFrame(ctx),
        "speculative": lambda: F.LLMSpeculativeContextFrame(ctx.snapshot, 1000 + i),
        "speculation_cancel": lambda: F.EagerEndOfTurnCancelFrame(None if i % 2 else 1000 + i, "fuzz"),
        "speculation_ended": lambda: F.LLMSpeculationEndedFrame(1000 + i, ("released", "dropped", "refused")[i % 3]),
        "user_backchannel": lambda: F.UserBackchannelFrame(f"mm{i}"),
        "bot_backchannel": lambda: F.BotBackchannelFrame(f"mhm{i}"),
        "run": F.LLMRunFrame,
        "append": lambda: F.LLMMessagesAppendFrame(
            [{"role": "user", "content": f"m{i}"}] if i % 3 else [{"role": "bogus"}], run_llm=i % 2 == 0),
        "update": lambda: F.LLMMessagesUpdateFrame(
            [{"role": "system", "content": "reset"}, {"role": "user", "content": f"u{i}"}], run_llm=i % 2 == 0),
        "transform": lambda: F.LLMMessagesTransformFrame((lambda ms: ms) if i % 2 else (lambda ms: 1 / 0)),
        "set_tools": lambda: F.LLMSetToolsFrame(
            [{"type": "function", "function": {"name": "lookup", "parameters": {}}}] if i % 2 else "junk"),
        "tool_choice": lambda: F.LLMSetToolChoiceFrame("auto" if i % 2 else "sometimes"),
        "ctx_assistant_turn": lambda: F.LLMContextAssistantTurnFrame("x", "ts"),
        "ctx_timestamp": lambda: F.LLMContextAssistantTimestampFrame("ts"),
        "calls_started": lambda: F.FunctionCallsStartedFrame((F.FunctionCallFromLLM("f", tool, {}),)),
        "call_progress": lambda: F.FunctionCallInProgressFrame("f", tool, {"a": i}, cancel_on_interruption=i % 2 == 0),
        "call_result": lambda: F.FunctionCallResultFrame("f", tool, {}, {"r": i}),
        "call_cancel": lambda: F.FunctionCallCancelFrame("f", tool),
        "summarize": F.LLMSummarizeContextFrame,
        "summary_request": lambda: F.LLMContextSummaryRequestFrame(f"rq{i}", ctx, 1, 100, "p", 5.0),
        "summary_result": lambda: F.LLMContextSummaryResultFrame(f"rq{i}", "sum", i % 5 - 1),
        "metrics": lambda: F.MetricsFrame(()),
        "error": lambda: F.ErrorFrame(RuntimeError("e")),
        "fatal": lambda: F.FatalErrorFrame("f"),
        "interruption": F.InterruptionFrame,
        "start": F.StartFrame,
        "stop": F.StopFrame,
        "end": F.EndFrame,
        "cancel": F.CancelFrame,
        "frame": F.Frame,
        "data": F.DataFrame,
        "system": F.SystemFrame,
        "control": F.ControlFrame,
        "junk": lambda: "not a frame",
    }


JUNK_NUMBERS = (math.inf, 1e308, "0.5", None, True, math.nan, -1.0, 0.5)
JUNK_TEXT = ("\u200b", "\ufeff\u200d", " \u2060\n", "\x00", "caf\ud800", "\ud83d\ude00 ok")


def junk_makers(ctx: LLMContext, i: int) -> dict[str, Callable[[], Any]]:
    """Frames with junk inside, the ``i``-th of the stream (some refuse it when made, some convert it)."""
    tool = f"fz{i % 3}"
    number = JUNK_NUMBERS[i % len(JUNK_NUMBERS)]
    bad_messages: list[Any] = [
        {"role": "user", "content": [None]}, {"role": "user", "content": [{"type": "text", "text": None}]},
        {"role": "user", "content": [{"type": "image_url"}]},
        {"role": "tool", "tool_call_id": "nobody", "content": "x"},
        {"role": "user", "content": "x", "score": math.nan}, {"role": "user", "content": "x", "tags": {1, 2}},
        {"role": "user", "content": "caf\ud800"},
        {"role": "assistant", "tool_calls": [{"id": "zz", "function": {"name": "f", "arguments": "[1, 2]"}}]},
    ]
    return {
        "junk_idle": lambda: F.UserIdleTimeoutUpdateFrame(number),
        "junk_stt_meta": lambda: F.STTMetadataFrame("stt", number),
        "junk_vad_stop": lambda: F.VADUserStoppedSpeakingFrame(number, 0.0),
        "junk_vad_start": lambda: F.VADUserStartedSpeakingFrame(0.2, number),
        "junk_stt_mute": lambda: F.STTMuteFrame(("yes", 1, None, True)[i % 4]),
        "junk_calls_started": lambda: F.FunctionCallsStartedFrame(
            (None, ["lookup"], "lookup", [F.FunctionCallFromLLM("f", tool, '{"a": 1}')])[i % 4]),
        "junk_call_progress": lambda: F.FunctionCallInProgressFrame(
            "f", tool, (None, [1, 2], "[1, 2]", "{bad", '{"a": 1}', {"x": math.nan}, "")[i % 7]),
        "junk_call_result": lambda: F.FunctionCallResultFrame(
            "f", tool, {}, (object(), {1, 2}, b"x", math.nan, {"ok": i}, "caf\ud800", [1, {2}])[i % 7]),
        "junk_transcript": lambda: F.TranscriptionFrame(JUNK_TEXT[i % len(JUNK_TEXT)], finalized=i % 2 == 0),
        "junk_interim": lambda: F.InterimTranscriptionFrame(JUNK_TEXT[i % len(JUNK_TEXT)]),
        "junk_llm_text": lambda: F.LLMTextFrame(JUNK_TEXT[i % len(JUNK_TEXT)]),
        "junk_append": lambda: F.LLMMessagesAppendFrame([bad_messages[i % len(bad_messages)]]),
        "junk_update": lambda: F.LLMMessagesUpdateFrame(
            [{"role": "user", "content": f"kept{i}"}], keep_system_prompt=i % 2 == 0),
        "junk_summarize": lambda: F.LLMSummarizeContextFrame({"keep": i}),
    }


KINDS = sorted(frame_makers(LLMContext(), 0))
JUNK = sorted(junk_makers(LLMContext(), 0))
# The conversation's own frames come more often, so turns really happen among the noise (and the junk).
WEIGHTED = KINDS + JUNK + ["transcription"] * 6 + ["vad_start", "vad_stop"] * 3 + ["bot_start", "bot_stop"] * 2


def _replies() -> st.SearchStrategy[Reply]:
    tool = st.builds(ToolCall, name=st.just("lookup"), result=st.sampled_from(["ok", None]),
                     delay=st.sampled_from([0.0, 0.3, 1.5]), cancel_on_interruption=st.booleans())
    return st.builds(Reply, text=st.sampled_from(["", "Sure.", "Let me see."]), tool_calls=st.lists(tool, max_size=2),
                     token_delay=st.sampled_from([0.0, 0.05]))


def test_every_frame_type_is_fuzzed() -> None:
    """The fuzzer makes every concrete frame type rxvoice defines."""
    made = {type(make()) for make in frame_makers(LLMContext(), 1).values()}
    defined = {c for name in F.__all__ if isinstance(c := getattr(F, name), type) and issubclass(c, F.Frame)
               and dataclasses.is_dataclass(c)}
    assert defined <= made, sorted(c.__name__ for c in defined - made)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    actions=st.lists(st.tuples(st.sampled_from(WEIGHTED), st.sampled_from([DOWN, DOWN, DOWN, UP]),
                               st.sampled_from([0.0, 0.01, 0.05, 0.2, 0.7, 1.5, 6.0])), min_size=1, max_size=60),
    script=st.lists(_replies(), max_size=10),
    analyzer=st.booleans(),
    muted=st.booleans(),
    summarize=st.booleans(),
)
def test_any_frame_stream_keeps_the_invariants(
    actions: list[tuple[str, Direction, float]], script: list[Reply], analyzer: bool, muted: bool, summarize: bool
) -> None:
    """Any stream through the full pair: no crash, typed errors, nothing said lost or doubled, every tool call
    answered once in place, at most one model run per user message written."""
    crashes = Crashes()
    logging.getLogger("rxvoice").addHandler(crashes)
    try:
        _check(actions, script, analyzer=analyzer, muted=muted, summarize=summarize)
        assert crashes.messages() == []
    finally:
        logging.getLogger("rxvoice").removeHandler(crashes)


def _check(actions: list[tuple[str, Direction, float]], script: list[Reply], *, analyzer: bool, muted: bool,
           summarize: bool) -> None:
    bench = FrameMarbles()
    ctx = LLMContext([{"role": "system", "content": "sys"}])
    stop = ([TurnAnalyzerStop(FakeAnalyzer(script=[(False, 0.2), (True, 0.9)] * 20))] if analyzer
            else [SpeechTimeoutStop()])
    pair = Pair(
        ctx, turns=TurnsConfig(stop=stop, idle_timeout=3.0, speculate=True),
        mute=[AlwaysUserMute(), FunctionCallUserMute()] if muted else [],
        summarization=AutoSummarizationConfig(max_context_tokens=None, max_unsummarized_messages=6,
                                              summary_config=SummaryConfig(min_messages_after_summary=2))
        if summarize else None,
    )
    pair.user().offload = SchedulerOffload(bench.scheduler, 0.1)
    llm = ScriptedLLM(script, token_delay=0.05, summary="sum", summary_delay=0.3)
    down: list[tuple[float, Any]] = []
    up: list[tuple[float, Any]] = []
    t = 0.0
    for i, (kind, direction, gap) in enumerate(actions):
        t += gap
        if kind in JUNK:
            try:
                frame = junk_makers(ctx, i)[kind]()
            except RxVoiceError:
                continue  # refused where it was made, with a typed error: it never enters the stream
        else:
            frame = frame_makers(ctx, i)[kind]()
        (down if direction is DOWN else up).append((t, frame))
    down.append((t + 5.0, F.EndFrame()))
    unencodable: list[str] = []
    developer = [0, 0]  # developer (recovery) messages ever added, and how many the context holds now

    def strict_json(snapshot: Any) -> None:
        held = sum(1 for m in snapshot.messages if not isinstance(m, LLMSpecificMessage) and m["role"] == "developer")
        developer[0] += max(0, held - developer[1])  # counted as added: a reset that drops them does not undo the run
        developer[1] = held
        for m in snapshot.messages:
            if not isinstance(m, LLMSpecificMessage):
                try:
                    json.dumps(m, allow_nan=False, ensure_ascii=False).encode("utf-8")
                except (TypeError, ValueError) as exc:
                    unencodable.append(f"{m!r}: {exc}")

    ctx.subscribe(strict_json)

    heard: list[tuple[str, bool]] = []  # (words, whether the user was muted when they arrived)
    machine = pair.user().machine
    on_frame = machine.on_frame

    def spy(state: Any, frame: F.Frame, direction: Direction, now: float) -> Any:
        if type(frame) is F.TranscriptionFrame:
            heard.append((frame.text, state.muted))
        return on_frame(state, frame, direction, now)

    machine.on_frame = spy  # type: ignore[method-assign]
    written: list[str] = []
    pair.user().events.on("on_user_turn_message_added", lambda _a, added: written.append(added.content))
    reopened: list[Any] = []  # a reopened turn retracts the reply in progress and is answered again, once
    pair.user().events.on("on_user_turn_recovered", lambda _a, turn: reopened.append(turn))
    untyped: list[BaseException] = []
    for source in (pair.user(), pair.assistant(), pair.assistant().summarizer()):
        source.events.on("on_error", lambda _s, e: None if isinstance(e, RxVoiceError) else untyped.append(e))
    bench.run(pipeline(pair.user(), llm, pair.assistant()), down=down, up=up, until=t + 30.0)
    assert untyped == []
    assert unencodable == []

    # Nothing said is lost or doubled (dropped only while muted).
    words = " ".join(written).split()
    for text, was_muted in heard:
        if is_blank(text):
            continue  # nothing visible was said (an invisible transcript carries "")
        said = text.split()
        count = sum(words[k:k + len(said)] == said for k in range(len(words) - len(said) + 1))
        assert count <= 1, f"{text!r} written twice"
        if not was_muted:
            assert count == 1, f"{text!r} lost"

    # Every tool call of the model answered exactly once, right after it.
    messages = [m for m in ctx.messages if not isinstance(m, LLMSpecificMessage)]
    for j, m in enumerate(messages):
        for call in (m.get("tool_calls") or ()) if m["role"] == "assistant" else ():
            if not call["id"].startswith("call_"):
                continue  # a call the fuzzer made up (its id, its fate)
            assert j + 1 < len(messages), f"{call['id']} has no result"
            result = messages[j + 1]
            assert result["role"] == "tool" and result["tool_call_id"] == call["id"], (call, result)
            assert result["content"] != IN_PROGRESS, f"{call['id']} left in progress"
            assert sum(1 for x in messages if x["role"] == "tool" and x.get("tool_call_id") == call["id"]) == 1

    # At most one model run per user message written, plus what the stream asked for itself.
    asked = sum(1 for i, (kind, direction, _) in enumerate(actions) if direction is DOWN and (
        kind in RUN_TRIGGERS or (kind in ("append", "update") and i % 2 == 0)))
    recoveries = developer[0]  # every recovery prompt added, even one a later update of the context dropped
    runs = sum(1 for r in llm.runs if r.direction is DOWN)
    assert runs <= len(written) + recoveries + len(reopened) + asked, (
        runs, len(written), recoveries, len(reopened), asked)


def test_words_after_an_end_frame_are_written_by_the_next_end() -> None:
    """Regression (found by the fuzzer): words arriving after an ``EndFrame`` or ``CancelFrame`` were gathered
    but never written when the next end came; nothing the user says may be lost."""
    for first_end in (F.EndFrame(), F.CancelFrame()):
        pair = Pair(LLMContext())
        down = [(0.0, first_end), (0.1, F.TranscriptionFrame("still here", finalized=True)),
                (0.1, F.VADUserStartedSpeakingFrame(0.2, 0.1)), (5.0, F.EndFrame())]
        FrameMarbles().run(pipeline(pair.user(), ScriptedLLM([]), pair.assistant()), down=down)
        assert [m["content"] for m in pair.context().messages] == ["still here"]
