"""Values that used to get in unchecked: numbers in control frames, junk in tool-call frames, malformed messages,
text that is not text, and the system prompt lost by a messages update.

Each test feeds the bad value through the public API and asserts where it is stopped (a typed error naming
the field) or what it becomes (a documented conversion), and that the conversation stays strict JSON.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from rxvoice import LLMContext, pipeline
from rxvoice import frames as F
from rxvoice.aggregators import Pair
from rxvoice.context import LLMSpecificMessage
from rxvoice.errors import InvalidFrameFieldError, InvalidMessageError, InvalidToolCallError
from rxvoice.testing import FrameMarbles, Recording, Reply, ScriptedLLM, ToolCall
from rxvoice.text import is_blank, repair_surrogates, visible_words
from rxvoice.turns import MinWordsStart, TurnsConfig, VADStart

JUNK_NUMBERS = (math.inf, -math.inf, math.nan, 1e308, -1.0, "0.5", None, True, [1.0])


def strict_json(context: LLMContext) -> None:
    """Every universal message, and the request body, serialize as strict JSON and encode as UTF-8."""
    for m in context.messages:
        if not isinstance(m, LLMSpecificMessage):
            json.dumps(m, allow_nan=False, ensure_ascii=False).encode("utf-8")
    json.dumps(context.to_openai(), allow_nan=False, ensure_ascii=False).encode("utf-8")


def converse(down: list[tuple[float, Any]], llm: ScriptedLLM | None = None, **pair_kwargs: Any) -> tuple[
        Pair, ScriptedLLM, Recording]:
    pair = Pair(LLMContext([{"role": "system", "content": "Be brief."}]), **pair_kwargs)
    llm = llm or ScriptedLLM(["Sure."] * 4)
    rec = FrameMarbles().run(pipeline(pair.user(), llm, pair.assistant()), down=down, watch=[pair.user()])
    return pair, llm, rec


# -- numbers in control and system frames -------------------------------------------------------------


NUMERIC_FIELDS: list[tuple[str, Callable[[Any], F.Frame]]] = [
    ("UserIdleTimeoutUpdateFrame.timeout", lambda v: F.UserIdleTimeoutUpdateFrame(v)),
    ("STTMetadataFrame.ttfs_p99_latency", lambda v: F.STTMetadataFrame("stt", v)),
    ("VADUserStartedSpeakingFrame.start_secs", lambda v: F.VADUserStartedSpeakingFrame(v, 0.0)),
    ("VADUserStartedSpeakingFrame.timestamp", lambda v: F.VADUserStartedSpeakingFrame(0.2, v)),
    ("VADUserStoppedSpeakingFrame.stop_secs", lambda v: F.VADUserStoppedSpeakingFrame(v, 0.0)),
    ("VADUserStoppedSpeakingFrame.timestamp", lambda v: F.VADUserStoppedSpeakingFrame(0.2, v)),
    ("LLMContextSummaryRequestFrame.summarization_timeout",
     lambda v: F.LLMContextSummaryRequestFrame("r", LLMContext(), 1, 100, "p", v)),
    ("LLMContextSummaryRequestFrame.min_messages_to_keep",
     lambda v: F.LLMContextSummaryRequestFrame("r", LLMContext(), v, 100, "p", 5.0)),
    ("LLMContextSummaryRequestFrame.target_context_tokens",
     lambda v: F.LLMContextSummaryRequestFrame("r", LLMContext(), 1, v, "p", 5.0)),
    ("LLMContextSummaryResultFrame.last_summarized_index", lambda v: F.LLMContextSummaryResultFrame("r", "s", v)),
    ("StartFrame.audio_in_sample_rate", lambda v: F.StartFrame(audio_in_sample_rate=v)),
    ("StartFrame.audio_out_sample_rate", lambda v: F.StartFrame(audio_out_sample_rate=v)),
]


@pytest.mark.parametrize("where, make", NUMERIC_FIELDS, ids=[w for w, _ in NUMERIC_FIELDS])
def test_numbers_in_control_frames_are_checked_when_the_frame_is_made(
        where: str, make: Callable[[Any], F.Frame]) -> None:
    """inf, NaN, 1e308, negatives, strings, None, bools, lists: refused at construction, naming the field."""
    for junk in JUNK_NUMBERS:
        if where.endswith("last_summarized_index") and junk == -1.0:
            continue  # -1 is this field's "nothing summarized"; the float is refused below all the same
        with pytest.raises(InvalidFrameFieldError, match=where.replace(".", r"\.")):
            make(junk)
    assert make(16000 if "sample_rate" in where else 1) is not None  # a sensible value is accepted


def test_the_idle_update_and_the_stt_latency_accept_what_they_mean() -> None:
    """0 turns idle off; fractional seconds; a day at most (one more second is refused); ints are fine."""
    assert F.UserIdleTimeoutUpdateFrame(0).timeout == 0
    assert F.STTMetadataFrame("stt", 0.35).ttfs_p99_latency == 0.35
    assert F.UserIdleTimeoutUpdateFrame(F.MAX_SECONDS).timeout == 86_400.0
    with pytest.raises(InvalidFrameFieldError):
        F.UserIdleTimeoutUpdateFrame(F.MAX_SECONDS + 1)
    with pytest.raises(ValueError):  # the typed error is a ValueError and a TypeError, for code catching builtins
        F.UserIdleTimeoutUpdateFrame(math.inf)
    with pytest.raises(TypeError):
        F.STTMetadataFrame("stt", "1.0")  # type: ignore[arg-type]


@pytest.mark.parametrize("make", [
    lambda: F.STTMuteFrame("yes"),  # type: ignore[arg-type]
    lambda: F.LLMServiceMetadataFrame("llm", is_realtime_service=1),  # type: ignore[arg-type]
    lambda: F.FunctionCallInProgressFrame("f", "c1", {}, cancel_on_interruption=None),  # type: ignore[arg-type]
    lambda: F.FunctionCallCancelFrame("f", "c1", run_llm="no"),  # type: ignore[arg-type]
    lambda: F.LLMMessagesUpdateFrame([], run_llm=0),  # type: ignore[arg-type]
    lambda: F.ErrorFrame("x", fatal=None),  # type: ignore[arg-type]
])
def test_flags_of_control_frames_must_be_bools(make: Callable[[], F.Frame]) -> None:
    """A flag given as a string or a number ("yes" is truthy) is refused rather than read as True."""
    with pytest.raises(InvalidFrameFieldError, match="must be True"):
        make()


# -- tool-call frames with junk inside ------------------------------------------------------------------


@pytest.mark.parametrize("calls", [None, ["lookup"], "lookup", 42, [None]])
def test_function_calls_started_with_junk_is_refused(calls: Any) -> None:
    with pytest.raises(InvalidToolCallError, match=r"FunctionCallsStartedFrame\.function_calls"):
        F.FunctionCallsStartedFrame(calls)


def test_function_calls_started_keeps_its_calls_as_a_tuple() -> None:
    frame = F.FunctionCallsStartedFrame([F.FunctionCallFromLLM("f", "c1", {})])
    assert isinstance(frame.function_calls, tuple) and frame.function_calls[0].tool_call_id == "c1"


@pytest.mark.parametrize("arguments", [None, [1, 2], "[1, 2]", "{not json", 3, {"when": object()},
                                       {"x": math.nan}, {"x": {1, 2}}])
def test_tool_call_arguments_must_be_a_mapping_of_json(arguments: Any) -> None:
    """Arguments that would have been written as 'null', '[1, 2]' or an invalid JSON string are refused."""
    for make in (lambda: F.FunctionCallInProgressFrame("lookup", "c1", arguments),
                 lambda: F.FunctionCallFromLLM("lookup", "c1", arguments),
                 lambda: F.FunctionCallResultFrame("lookup", "c1", arguments, "ok")):
        with pytest.raises(InvalidToolCallError, match="arguments"):
            make()


def test_tool_call_arguments_as_a_json_object_string_are_parsed() -> None:
    """The documented conversion: a string holding a JSON object becomes that mapping; "" means none."""
    assert F.FunctionCallInProgressFrame("f", "c1", '{"city": "Paris"}').arguments == {"city": "Paris"}
    assert F.FunctionCallFromLLM("f", "c1", "").arguments == {}


@pytest.mark.parametrize("result", [object(), {1, 2}, b"bytes", math.nan, {"t": math.inf}, [1, {2}]])
def test_tool_results_that_are_not_json_are_refused(result: Any) -> None:
    with pytest.raises(InvalidToolCallError, match=r"FunctionCallResultFrame\.result must be JSON data"):
        F.FunctionCallResultFrame("lookup", "c1", {}, result)


def test_tool_call_ids_and_names_must_be_strings() -> None:
    for make in (lambda: F.FunctionCallInProgressFrame("f", "", {}), lambda: F.FunctionCallInProgressFrame("", "c", {}),
                 lambda: F.FunctionCallResultFrame("f", None, {}, "x"),  # type: ignore[arg-type]
                 lambda: F.FunctionCallCancelFrame("f", 7)):  # type: ignore[arg-type]
        with pytest.raises(InvalidToolCallError):
            make()


def test_a_tool_that_returns_a_set_leaves_valid_json_in_the_conversation() -> None:
    """Through the pair: the scripted model's tool returns a set; the call is answered with an error, never with
    the set's repr, and every message stays strict JSON."""
    llm = ScriptedLLM([Reply("", tool_calls=[ToolCall("tags", result={"a", "b"})]), "Done."])
    pair, _, _ = converse([(0.1, F.TranscriptionFrame("tag it", finalized=True))], llm)
    tool = [m for m in pair.context().messages if m["role"] == "tool"]
    assert len(tool) == 1 and tool[0]["content"].startswith("ERROR:") and "not JSON serializable" in tool[0]["content"]
    strict_json(pair.context())


# -- the context refuses malformed messages ------------------------------------------------------------


@pytest.mark.parametrize("message, field", [
    ({"role": "user", "content": [None]}, r"content\[0\] must be a mapping part"),
    ({"role": "user", "content": [{"type": "text", "text": None}]}, r"content\[0\]\.text must be a string"),
    ({"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "image_url"}]},
     r"content\[1\]\.image_url\.url"),
    ({"role": "user", "content": [{"type": "image_url", "image_url": {"url": ""}}]}, r"content\[0\]\.image_url\.url"),
    ({"role": "user", "content": "hi", "name": {1, 2}}, r"message\.name is a set"),
    ({"role": "user", "content": "hi", "metadata": {"score": math.nan}}, r"message\.metadata\.score is nan"),
    ({"role": "user", "content": "hi", "raw": b"\x00"}, r"message\.raw is a bytes"),
    ({"role": "user", "content": "caf\ud800"}, r"message\.content holds a lone surrogate"),
    ({"role": "user", "content": [{"type": "text", "text": "x"}], "extra": object()}, r"message\.extra is a object"),
])
def test_the_context_refuses_malformed_messages_naming_the_field(message: dict[str, Any], field: str) -> None:
    ctx = LLMContext([{"role": "system", "content": "s"}])
    with pytest.raises(InvalidMessageError, match=field):
        ctx.add_message(message)
    with pytest.raises(InvalidMessageError, match=r"message 1 of 2: .*" + field):
        ctx.add_messages([{"role": "user", "content": "fine"}, message])
    with pytest.raises(InvalidMessageError, match=field):
        LLMContext([message])
    assert len(ctx.messages) == 1 and ctx.snapshot.version == 0


def test_a_tool_result_for_a_call_nobody_made_is_refused() -> None:
    ctx = LLMContext([{"role": "user", "content": "weather?"}])
    with pytest.raises(InvalidToolCallError, match="'c9' answers no tool call"):
        ctx.add_message({"role": "tool", "tool_call_id": "c9", "content": "sunny"})
    with pytest.raises(InvalidToolCallError, match="'c9' answers no tool call"):
        ctx.add_tool_result("c9", "sunny")
    with pytest.raises(InvalidToolCallError, match="answers no tool call"):
        ctx.set_messages([{"role": "tool", "tool_call_id": "c9", "content": "sunny"}])
    assert len(ctx.messages) == 1
    # A call made earlier, or earlier in the same batch, is answered fine.
    ctx.add_assistant_tool_call("c1", "weather", {"city": "Paris"})
    ctx.add_tool_result("c1", "sunny")
    ctx.add_messages([
        {"role": "assistant", "tool_calls": [{"id": "c2", "function": {"name": "w", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c2", "content": "rain"},
    ])
    assert [m["role"] for m in ctx.messages] == ["user", "assistant", "tool", "assistant", "tool"]
    strict_json(ctx)


@pytest.mark.parametrize("arguments", [None, [1, 2], "[1, 2]", "{oops", "null"])
def test_tool_call_arguments_in_a_message_must_be_a_json_object(arguments: Any) -> None:
    ctx = LLMContext()
    with pytest.raises(InvalidToolCallError, match="arguments"):
        ctx.add_assistant_tool_call("c1", "lookup", arguments)
    assert len(ctx.messages) == 0


def test_a_transform_that_returns_junk_parts_changes_nothing() -> None:
    ctx = LLMContext([{"role": "user", "content": "keep me"}])
    with pytest.raises(InvalidMessageError, match="content"):
        ctx.transform_messages(lambda ms: [{"role": "user", "content": [None]}])
    assert ctx.messages == [{"role": "user", "content": "keep me"}]


# -- text that is not text ------------------------------------------------------------------------------------

INVISIBLE = ["\u200b", "\ufeff", "\u200d", "\u200b\u200c\u2060", " \u200b \ufeff\n", "\u00ad", "\u2066\u2069",
             "\x00", "\ufe0f", "\u3164"]


@pytest.mark.parametrize("text", INVISIBLE, ids=[t.encode("unicode_escape").decode() for t in INVISIBLE])
def test_an_invisible_transcript_opens_no_turn_and_runs_no_model(text: str) -> None:
    """Like a whitespace-only transcript: nothing aggregated, no turn, no event, no model run, nothing written;
    with the VAD opening the turn around it, still nothing written."""
    pair, llm, rec = converse([(0.1, F.TranscriptionFrame(text, finalized=True)),
                               (0.2, F.InterimTranscriptionFrame(text))])
    assert [m["role"] for m in pair.context().messages] == ["system"]
    assert llm.runs == [] and rec.event_names() == []
    pair, llm, _ = converse([(0.1, F.VADUserStartedSpeakingFrame(0.2, 0.1)),
                             (0.3, F.TranscriptionFrame(text, finalized=True)),
                             (0.5, F.VADUserStoppedSpeakingFrame(0.2, 0.5))],
                            turns=TurnsConfig(start=[VADStart()]))
    assert [m["role"] for m in pair.context().messages] == ["system"] and llm.runs == []


def test_invisible_characters_inside_words_are_kept() -> None:
    """Only text with nothing visible is blank: an emoji sequence with joiners, a word with a soft hyphen stay."""
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467"
    pair, _, _ = converse([(0.1, F.TranscriptionFrame(f"my {family} and co\u00adop", finalized=True))])
    assert [m["content"] for m in pair.context().messages if m["role"] == "user"] == [f"my {family} and co\u00adop"]
    assert not is_blank(family) and visible_words(f"uh \u200b {family}") == ["uh", family]


def test_invisible_characters_are_not_words_for_min_words() -> None:
    """While the bot speaks, "uh \\u200b \\ufeff" is one word, not three: it does not interrupt."""
    state = MinWordsStart(min_words=3).initial()._replace(bot_speaking=True)
    _, effects = MinWordsStart(min_words=3).on_frame(state, F.TranscriptionFrame("uh \u200b \ufeff ok"), 0.0)
    assert all(type(e).__name__ != "Start" for e in effects)


def test_a_lone_surrogate_is_repaired_at_the_frame_and_the_request_encodes() -> None:
    """"caf\\ud800" becomes "caf\\ufffd" (a surrogate pair becomes its character): the user message and the
    request body encode as UTF-8."""
    assert F.TranscriptionFrame("caf\ud800").text == "caf\ufffd"
    assert F.LLMTextFrame("\ud83d\ude00").text == "\U0001f600"
    assert repair_surrogates("plain") == "plain"
    pair, llm, _ = converse([(0.1, F.TranscriptionFrame("caf\ud800 au lait", finalized=True))])
    assert [m["content"] for m in pair.context().messages if m["role"] == "user"] == ["caf\ufffd au lait"]
    assert len(llm.runs) == 1
    strict_json(pair.context())
    with pytest.raises(InvalidMessageError, match="lone surrogate"):
        pair.context().add_user_message("caf\udc00")


# -- LLMMessagesUpdateFrame keeps the system prompt ----------------------------------------------------------

TOOL = {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object", "properties": {}}}}


def _updated(frame: F.LLMMessagesUpdateFrame, direction: str = "down") -> LLMContext:
    ctx = LLMContext([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "old"}],
                     tools=[TOOL], tool_choice="auto")
    pair = Pair(ctx)
    kwargs = {"down": [(0.1, frame)]} if direction == "down" else {"up": [(0.1, frame)]}
    FrameMarbles().run(pipeline(pair.user(), ScriptedLLM([]), pair.assistant()), **kwargs)  # type: ignore[arg-type]
    return ctx


@pytest.mark.parametrize("direction", ["down", "up"])
def test_a_messages_update_keeps_the_system_prompt_and_the_tools(direction: str) -> None:
    """As in jargo: the update replaces the conversation, the system prompt and the tools stay (from either half)."""
    ctx = _updated(F.LLMMessagesUpdateFrame([{"role": "user", "content": "new"}]), direction)
    assert ctx.messages == [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "new"}]
    assert ctx.snapshot.tool_names == frozenset({"lookup"}) and ctx.tool_choice == "auto"


def test_a_messages_update_with_its_own_system_prompt_replaces_it() -> None:
    update = [{"role": "system", "content": "Be kind."}, {"role": "user", "content": "n"}]
    ctx = _updated(F.LLMMessagesUpdateFrame(update))
    assert ctx.messages == [{"role": "system", "content": "Be kind."}, {"role": "user", "content": "n"}]


def test_a_full_replacement_is_asked_for_with_keep_system_prompt_false() -> None:
    ctx = _updated(F.LLMMessagesUpdateFrame([{"role": "user", "content": "new"}], keep_system_prompt=False))
    assert ctx.messages == [{"role": "user", "content": "new"}]
    assert ctx.snapshot.tool_names == frozenset({"lookup"})  # tools are never part of a messages update


def test_set_messages_replaces_everything_unless_asked_to_keep_the_prompt() -> None:
    ctx = LLMContext([{"role": "system", "content": "s"}, {"role": "user", "content": "a"}])
    ctx.set_messages([{"role": "user", "content": "b"}], keep_system_prompt=True)
    assert ctx.messages == [{"role": "system", "content": "s"}, {"role": "user", "content": "b"}]
    ctx.set_messages([{"role": "user", "content": "c"}])
    assert ctx.messages == [{"role": "user", "content": "c"}]
    ctx.set_messages([{"role": "user", "content": "d"}], keep_system_prompt=True)  # no prompt to keep
    assert ctx.messages == [{"role": "user", "content": "d"}]


# -- the frames module sits at the bottom ------------------------------------------------------------------------


def test_frames_and_summarization_import_nothing_above_them() -> None:
    """frames imports only errors, text and the seconds check; summarization imports no pipeline (no cycle through
    them, even a late or TYPE_CHECKING one)."""
    import ast
    from pathlib import Path

    import rxvoice

    root = Path(rxvoice.__file__).parent

    def imported(module: str) -> set[str]:
        found: set[str] = set()
        for node in ast.walk(ast.parse((root / module).read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level:
                found.add((node.module or "").split(".")[0])
            elif isinstance(node, ast.Import):
                found |= {a.name.split(".")[1] for a in node.names if a.name.startswith("rxvoice.")}
        return found

    assert imported("frames.py") <= {"errors", "text", "_seconds"}
    assert imported("summarization.py") <= {"context", "errors", "_seconds"}
    assert imported("_seconds.py") <= {"errors"}


def test_streamed_tool_arguments_with_nan_are_an_error_of_the_call() -> None:
    """Python's json reads NaN and Infinity; a model that streams them gets its call answered with an error
    (as for any invalid arguments), instead of a frame that cannot be made."""
    from rxvoice.services.chat_stream import parse_arguments

    for raw in ('{"x": NaN}', '{"x": Infinity}', '{"x": -Infinity}'):
        with pytest.raises(InvalidToolCallError, match="not valid JSON"):
            parse_arguments(raw)
    assert parse_arguments('{"x": 1.5}') == {"x": 1.5}


# -- every flag of the frame catalogue ----------------------------------------------------------------------

_NEEDS: dict[str, Any] = {  # what a frame needs besides its flags, by field name
    "text": "hi", "error": "x", "function_name": "f", "tool_call_id": "c1", "marker": "\u25cf", "messages": [],
    "transform": list, "mute": True, "processor": "p", "is_complete": True, "probability": 0.5,
}


def _flag_fields() -> list[tuple[type, str, bool]]:
    """Every ``bool`` (or ``bool | None``) field of every frame and frame payload rxvoice.frames exports."""
    found = []
    for name in F.__all__:
        cls = getattr(F, name)
        if isinstance(cls, type) and dataclasses.is_dataclass(cls):
            found += [(cls, f.name, f.type == "bool | None") for f in dataclasses.fields(cls)
                      if f.init and f.type in ("bool", "bool | None")]
    return found


FLAGS = _flag_fields()


def test_the_flag_catalogue_covers_the_flags_the_issue_named() -> None:
    named = {("TranscriptionFrame", "finalized"), ("LLMMessagesAppendFrame", "run_llm"),
             ("TTSSpeakFrame", "append_to_context"), ("LLMTextFrame", "skip_tts")}
    assert named <= {(cls.__name__, name) for cls, name, _ in FLAGS} and len(FLAGS) >= 40


@pytest.mark.parametrize(("cls", "flag", "optional"), FLAGS, ids=[f"{c.__name__}.{n}" for c, n, _ in FLAGS])
def test_every_flag_of_every_frame_takes_only_a_real_bool(cls: type, flag: str, optional: bool) -> None:
    """``"no"`` is truthy, ``0``/``1`` and numpy's bools are not ``bool``: refused, naming the field."""
    needs = {f.name: _NEEDS[f.name] for f in dataclasses.fields(cls)
             if f.init and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}
    for good in (True, False, *((None,) if optional else ())):
        if cls is F.LLMThoughtStartFrame and flag == "append_to_context" and good:
            needs = {**needs, "llm": "openai"}
        assert getattr(cls(**{**needs, flag: good}), flag) is good
    for junk in ("no", "", 0, 1, np.bool_(True), *(() if optional else (None,))):
        with pytest.raises(InvalidFrameFieldError, match=rf"{cls.__name__}\.{flag} must be True"):
            cls(**{**needs, flag: junk})
