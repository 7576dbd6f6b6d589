"""The bad-input catalogue: every kind of bad input rxvoice documents, each with its tested outcome.

``CATALOGUE`` is the list ``docs/errors.md`` is written from: each entry has
an id (the row's "test" column names ``test_bad_input.py::test_catalogue[<id>]``),
and a check that feeds the bad input through the public API and asserts the
outcome: a typed error with a clear message (refused), or a documented skip
(the stream goes on; ``on_error`` and an ``ErrorFrame`` upstream where said).
``test_the_docs_list_exactly_the_catalogue`` keeps the two in step.
"""

from __future__ import annotations

import io
import json
import math
import re
import wave
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rxvoice import LLMContext, pipeline
from rxvoice import frames as F
from rxvoice.aggregators import Pair
from rxvoice.audio.pcm import to_float32_mono
from rxvoice.audio.turn import SmartTurnAnalyzer
from rxvoice.audio.vad import SileroModel, VADParams
from rxvoice.audio.vad_processor import VADProcessor
from rxvoice.context import LLMSpecificMessage
from rxvoice.errors import (
    ConfigurationError,
    InvalidAudioError,
    InvalidFrameError,
    InvalidFrameFieldError,
    InvalidMessageError,
    InvalidToolCallError,
    InvalidTranscriptError,
    ModelNotFoundError,
    RxVoiceError,
    ServiceError,
    SummarizationError,
)
from rxvoice.events import EventRegistry
from rxvoice.pipeline import SchedulerOffload, inline_offload
from rxvoice.services.openai import OpenAILLM
from rxvoice.services.stt import OpenAITranscriptionSTT
from rxvoice.services.tts import OpenAISpeechTTS
from rxvoice.summarization import AutoSummarizationConfig, SummaryConfig
from rxvoice.testing import FrameMarbles, MarbleError, Recording, ScriptedLLM, load_transcript, replay_transcript
from rxvoice.text import PatternPairAggregator
from rxvoice.turns import ExternalStop, MinWordsStart, SpeechTimeoutStop, TurnsConfig
from tests.services._speech_server import SpeechServer, empty_body, mp3, sign_in_page, wav_without_samples

DOCS = Path(__file__).resolve().parents[2] / "docs" / "errors.md"


@dataclass(frozen=True)
class Case:
    """One kind of bad input: where it enters, and the check that proves its outcome."""

    id: str
    check: Callable[[Path], None]


@dataclass
class Run:
    """A conversation run on the stream inputs of a case."""

    pair: Pair
    rec: Recording
    errors: list[BaseException]
    llm: ScriptedLLM

    @property
    def error_frames(self) -> list[Any]:
        return [f.error for f in self.rec.up_frames() if isinstance(f, F.ErrorFrame)]

    def said(self) -> list[str]:
        return [m["content"] for m in self.pair.context().messages if m["role"] == "user"]


def converse(down: list[tuple[float, Any]], up: list[tuple[float, Any]] = (), **pair_kwargs: Any) -> Run:  # type: ignore[assignment]
    """``pipeline(pair.user(), ScriptedLLM, pair.assistant())`` fed ``down``/``up``; errors and ErrorFrames kept."""
    pair = Pair(LLMContext(), **pair_kwargs)
    errors: list[BaseException] = []
    for source in (pair.user(), pair.assistant(), pair.assistant().summarizer()):
        source.events.on("on_error", lambda _s, e: errors.append(e))
    llm = ScriptedLLM(["Sure."] * 5, summary="sum")
    rec = FrameMarbles().run(pipeline(pair.user(), llm, pair.assistant()), down=down, up=list(up),
                             watch=[pair.user()])
    return Run(pair, rec, errors, llm)


HI = F.TranscriptionFrame("hello there", finalized=True)
CATALOGUE: list[Case] = []


def case(fn: Callable[[Path], None]) -> Callable[[Path], None]:
    """Add ``fn`` to the catalogue under its name (underscores become dashes)."""
    CATALOGUE.append(Case(fn.__name__.replace("_", "-"), fn))
    return fn


# -- frames on a stream ----------------------------------------------------------------------------


@case
def non_frame_on_stream(_tmp: Path) -> None:
    run = converse([(0.1, "not a frame"), (0.2, HI)])
    assert [type(e) for e in run.errors] == [InvalidFrameError]
    assert "UserContextAggregator received str 'not a frame', not a Frame; skipped" in str(run.errors[0])
    assert run.error_frames == run.errors and run.said() == ["hello there"]


@case
def transcript_text_not_str(_tmp: Path) -> None:
    with pytest.raises(InvalidTranscriptError, match=r"TranscriptionFrame.text must be a str, got int"):
        F.TranscriptionFrame(42)  # type: ignore[arg-type]


@case
def whitespace_transcript(_tmp: Path) -> None:
    run = converse([(0.1, F.TranscriptionFrame("   ", finalized=True)), (0.2, F.TranscriptionFrame(""))])
    assert run.said() == [] and run.rec.event_names() == [] and run.errors == []


@case
def thought_without_provider(_tmp: Path) -> None:
    with pytest.raises(ValueError, match="needs llm="):
        F.LLMThoughtStartFrame(append_to_context=True)


@case
def turn_metrics_not_finite(_tmp: Path) -> None:
    with pytest.raises(ValueError, match="probability must be finite"):
        F.TurnMetricsData("SmartTurn", True, math.nan)


@case
def bad_context_frame_on_stream(_tmp: Path) -> None:
    run = converse([(0.1, F.LLMMessagesAppendFrame([{"role": "user", "content": "ok"}, {"role": "wizard"}],
                                                   run_llm=True)), (0.5, HI)])
    assert [type(e) for e in run.errors] == [InvalidMessageError]
    assert run.said() == ["hello there"]  # nothing of the bad batch; the later turn as usual
    assert len(run.llm.runs) == 1  # the bad frame's model run was skipped with its write


@case
def tool_result_for_unknown_call(_tmp: Path) -> None:
    run = converse([(0.1, HI)], up=[(2.0, F.FunctionCallResultFrame("lookup", "call_nobody", {}, "x"))])
    assert run.errors == [] and not any(m["role"] == "tool" for m in run.pair.context().messages)


@case
def tool_call_in_progress_twice(_tmp: Path) -> None:
    progress = F.FunctionCallInProgressFrame("lookup", "c1", {"q": 1})
    run = converse([(0.1, HI), (2.0, progress), (2.1, progress)])
    calls = [m for m in run.pair.context().messages if m.get("tool_calls")]
    assert len(calls) == 1 and run.errors == []


@case
def tool_call_arguments_not_json(_tmp: Path) -> None:
    with pytest.raises(InvalidToolCallError, match="arguments must be JSON data"):
        F.FunctionCallInProgressFrame("lookup", "c1", {"when": object()})
    ctx = LLMContext()
    with pytest.raises(InvalidToolCallError, match="not JSON-serializable"):
        ctx.add_assistant_tool_call("c1", "lookup", {"when": object()})
    assert len(ctx.messages) == 0


@case
def set_tool_choice_unknown_on_stream(_tmp: Path) -> None:
    run = converse([(0.1, F.LLMSetToolChoiceFrame("sometimes"))])
    assert [type(e) for e in run.errors] == [InvalidToolCallError]
    assert run.pair.context().tool_choice is None


@case
def summary_result_out_of_range(_tmp: Path) -> None:
    pair = Pair(LLMContext([{"role": "system", "content": "s"}] + [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i}"} for i in range(8)]))
    errors: list[BaseException] = []
    pair.assistant().summarizer().events.on("on_error", lambda _s, e: errors.append(e))
    before = list(pair.context().messages)

    def bad_summary(_request: Any) -> tuple[str, int]:
        return "a summary", 99

    llm = ScriptedLLM([], summary=bad_summary)
    FrameMarbles().run(pipeline(pair.user(), llm, pair.assistant()), down=[(0.1, F.LLMSummarizeContextFrame())])
    assert [type(e) for e in errors] == [SummarizationError]
    assert list(pair.context().messages) == before


@case
def summary_result_empty_or_failed(_tmp: Path) -> None:
    for answer in (lambda _r: ("", 3), lambda _r: 1 / 0):
        pair = Pair(LLMContext([{"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i}"}
                                for i in range(8)]))
        errors: list[BaseException] = []
        pair.assistant().summarizer().events.on("on_error", lambda _s, e, errors=errors: errors.append(e))
        FrameMarbles().run(pipeline(pair.user(), ScriptedLLM([], summary=answer), pair.assistant()),
                           down=[(0.1, F.LLMSummarizeContextFrame())])
        assert [type(e) for e in errors] == [SummarizationError]
        assert len(pair.context().messages) == 8


# -- audio -------------------------------------------------------------------------------------------


@case
def audio_odd_byte_count(_tmp: Path) -> None:
    with pytest.raises(InvalidAudioError, match="not a whole number of 16-bit 1-channel samples"):
        F.InputAudioRawFrame(b"\x00\x01\x02")
    with pytest.raises(InvalidAudioError, match="2-channel samples"):
        F.InputAudioRawFrame(b"\x00" * 6, num_channels=2)


@case
def audio_not_bytes(_tmp: Path) -> None:
    with pytest.raises(InvalidAudioError, match=r"not list; convert numpy arrays with array.astype\('<i2'\).tobytes"):
        F.InputAudioRawFrame([0, 1, 2])  # type: ignore[arg-type]


@case
def audio_rate_or_channels_out_of_range(_tmp: Path) -> None:
    for kwargs in ({"sample_rate": 0}, {"sample_rate": "16000"}, {"sample_rate": True}, {"num_channels": 0},
                   {"num_channels": 33}):
        with pytest.raises(InvalidAudioError, match=r"sample_rate|num_channels"):
            F.InputAudioRawFrame(b"\x00\x00" * 4, **kwargs)  # type: ignore[arg-type]


@case
def samples_nan_inf_or_too_loud(_tmp: Path) -> None:
    for bad in (np.array([0.1, np.nan]), np.array([np.inf]), np.array([3.0, 0.0])):
        with pytest.raises(InvalidAudioError):
            to_float32_mono(bad)


@case
def samples_wrong_dtype_or_shape(_tmp: Path) -> None:
    with pytest.raises(InvalidAudioError, match="int32"):
        to_float32_mono(np.zeros(8, dtype=np.int32))
    with pytest.raises(InvalidAudioError, match="3"):
        to_float32_mono(np.zeros((2, 2, 2), dtype=np.float32))


@case
def audio_at_another_rate_or_stereo(_tmp: Path) -> None:
    stereo_44k = (np.sin(np.arange(882 * 2) / 5.0) * 3000).astype("<i2").tobytes()
    frames = [(0.02 * (k + 1), F.InputAudioRawFrame(stereo_44k, 44100, 2)) for k in range(10)]
    errors: list[BaseException] = []
    vad = VADProcessor()
    vad.events.on("on_error", lambda _s, e: errors.append(e))
    rec = FrameMarbles().run(vad, down=frames)
    assert errors == [] and rec.down_types().count("InputAudioRawFrame") == 10  # resampled and mixed down


@case
def silero_window_of_wrong_length(_tmp: Path) -> None:
    with pytest.raises(InvalidAudioError):
        SileroModel.shared().stream(16000).confidence(np.zeros(100, dtype=np.float32))
    with pytest.raises(ConfigurationError, match="8000 or 16000"):
        SileroModel.shared().stream(44100)


@case
def vad_params_update_not_params(_tmp: Path) -> None:
    errors: list[BaseException] = []
    vad = VADProcessor()
    vad.events.on("on_error", lambda _s, e: errors.append(e))
    rec = FrameMarbles().run(vad, down=[(0.1, F.VADParamsUpdateFrame("loud please"))])
    assert [type(e) for e in errors] == [ConfigurationError]
    assert rec.down_types() == ["VADParamsUpdateFrame"]


@case
def vad_params_out_of_range(_tmp: Path) -> None:
    for kwargs in ({"confidence": 1.5}, {"start_secs": -1.0}, {"stop_secs": math.nan}, {"min_volume": "0.5"}):
        with pytest.raises(ConfigurationError):
            VADParams(**kwargs)  # type: ignore[arg-type]


@case
def smart_turn_model_missing(tmp: Path) -> None:
    with pytest.raises(ModelNotFoundError) as info:
        SmartTurnAnalyzer(tmp / "nowhere.onnx")
    assert "nowhere.onnx" in str(info.value)


@case
def smart_turn_bad_threads(_tmp: Path) -> None:
    with pytest.raises(ConfigurationError, match="threads must be an int from 1 to 64"):
        SmartTurnAnalyzer(threads=0)


# -- configuration ------------------------------------------------------------------------------------


@case
def pair_wrong_types(_tmp: Path) -> None:
    with pytest.raises(ConfigurationError, match="Pair needs an LLMContext, got list"):
        Pair([{"role": "user", "content": "hi"}])  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="turns must be a TurnsConfig"):
        Pair(turns={"stop": []})  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="is not a mute strategy"):
        Pair(mute=["always"])  # type: ignore[list-item]


@case
def turns_empty_chain(_tmp: Path) -> None:
    with pytest.raises(ConfigurationError, match="no stop strategy"):
        TurnsConfig(stop=[])
    with pytest.raises(ConfigurationError, match="no start strategy"):
        TurnsConfig(start=[])


@case
def turns_bad_timeouts(_tmp: Path) -> None:
    for kwargs in ({"stop_timeout": -1.0}, {"stop_timeout": 0}, {"stop_timeout": math.inf},
                   {"idle_timeout": math.nan}, {"late_transcript_window": -0.5}):
        with pytest.raises(ConfigurationError, match="seconds"):
            TurnsConfig(**kwargs)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        MinWordsStart(min_words=0)
    with pytest.raises(ConfigurationError):
        SchedulerOffload(FrameMarbles().scheduler, -0.1)
    for make in (lambda: SpeechTimeoutStop(math.inf), lambda: SpeechTimeoutStop(1e308),
                 lambda: ExternalStop(timeout=math.inf), lambda: ExternalStop(settle=1e308),
                 lambda: TurnsConfig(recovery_window=86_401.0)):
        with pytest.raises(ConfigurationError, match="at most 86400"):
            make()


@case
def summarization_config_unusable(_tmp: Path) -> None:
    with pytest.raises(ConfigurationError, match="both are None"):
        AutoSummarizationConfig(max_context_tokens=None, max_unsummarized_messages=None)
    with pytest.raises(ConfigurationError, match=r"\{summary\}"):
        SummaryConfig(summary_message_template="Summary:")
    with pytest.raises(ConfigurationError, match="summarization_timeout"):
        SummaryConfig(summarization_timeout=0)


@case
def unknown_event_name(_tmp: Path) -> None:
    with pytest.raises(ConfigurationError, match="unknown event 'on_user_turn_stoped'"):
        Pair().user().events.on("on_user_turn_stoped", print)
    with pytest.raises(ConfigurationError, match="must be callable"):
        EventRegistry(None, ("on_x",)).on("on_x", 42)  # type: ignore[call-overload]


@case
def vad_processor_bad_arguments(_tmp: Path) -> None:
    with pytest.raises(ConfigurationError, match="needs a VAD analyzer or a factory"):
        VADProcessor(analyzer=3)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        VADProcessor(audio_idle_timeout=-1.0)


@case
def text_pattern_clash(_tmp: Path) -> None:
    aggregator = PatternPairAggregator()
    aggregator.add_pattern("a", "<x>", "</x>")
    with pytest.raises(ConfigurationError):
        aggregator.add_pattern("b", "<x>", "</y>")
    with pytest.raises(ConfigurationError):
        aggregator.add_pattern("sentence", "<s>", "</s>")


# -- the conversation (LLMContext) -------------------------------------------------------------------


@case
def message_unknown_role(_tmp: Path) -> None:
    ctx = LLMContext()
    with pytest.raises(InvalidMessageError, match="wizard"):
        ctx.add_message({"role": "wizard", "content": "x"})
    assert len(ctx.messages) == 0


@case
def message_without_or_with_wrong_content(_tmp: Path) -> None:
    ctx = LLMContext()
    for bad in ({"role": "user"}, {"role": "user", "content": 42}, "hello", {"content": "x"}):
        with pytest.raises(InvalidMessageError):
            ctx.add_message(bad)  # type: ignore[arg-type]
    assert len(ctx.messages) == 0


@case
def batch_with_one_bad_message(_tmp: Path) -> None:
    ctx = LLMContext()
    with pytest.raises(InvalidMessageError):
        ctx.add_messages([{"role": "user", "content": "fine"}, {"role": "user", "content": None}])
    assert len(ctx.messages) == 0


@case
def transform_raises_or_returns_junk(_tmp: Path) -> None:
    ctx = LLMContext([{"role": "user", "content": "keep me"}])
    with pytest.raises(InvalidMessageError, match="raised"):
        ctx.transform_messages(lambda ms: 1 / 0)
    with pytest.raises(InvalidMessageError, match="must return a list"):
        ctx.transform_messages(lambda ms: "nope")  # type: ignore[arg-type, return-value]
    assert ctx.messages == [{"role": "user", "content": "keep me"}]


@case
def snapshot_mutation(_tmp: Path) -> None:
    ctx = LLMContext([{"role": "user", "content": "hi"}])
    with pytest.raises(TypeError, match="immutable"):
        ctx.messages[0]["content"] = "changed"  # type: ignore[index]
    assert ctx.messages[0]["content"] == "hi"


@case
def tool_call_malformed(_tmp: Path) -> None:
    ctx = LLMContext()
    with pytest.raises(InvalidToolCallError):
        ctx.add_assistant_tool_call("", "lookup", {})
    with pytest.raises(InvalidToolCallError):
        ctx.add_assistant_tool_call("c1", "", {})
    with pytest.raises(InvalidToolCallError):
        ctx.add_message({"role": "tool", "content": "x"})
    with pytest.raises(InvalidToolCallError):
        ctx.add_message({"role": "user", "content": "x", "tool_calls": []})
    assert len(ctx.messages) == 0


@case
def tools_duplicate_or_unknown_choice(_tmp: Path) -> None:
    ctx = LLMContext()
    tool = {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}
    with pytest.raises(InvalidToolCallError):
        ctx.set_tools([tool, tool])
    with pytest.raises(InvalidToolCallError):
        ctx.set_tool_choice("sometimes")
    assert ctx.tools is None and ctx.tool_choice is None


@case
def tools_and_provider_messages_not_strict_json(_tmp: Path) -> None:
    ctx = LLMContext()
    for bad in (math.nan, "caf\ud800", {1, 2}, b"x", object()):
        with pytest.raises(InvalidToolCallError, match="strict JSON"):
            ctx.set_tools([{"type": "function", "function": {"name": "f", "parameters": {"default": bad}}}])
        with pytest.raises(InvalidToolCallError, match="strict JSON"):
            ctx.set_tool_choice({"type": "function", "function": {"name": "f"}, "x": bad})
        with pytest.raises(InvalidMessageError, match="strict JSON"):
            LLMSpecificMessage("openai", {"role": "assistant", "thought": bad})
    for choice in ({"type": "function"}, ["auto"], 3):
        with pytest.raises(InvalidToolCallError, match="tool_choice"):
            ctx.set_tool_choice(choice)
    assert ctx.tools is None and ctx.tool_choice is None
    ctx.set_tool_choice({"type": "function", "function": {"name": "f"}})  # a dict naming a tool is a choice
    assert ctx.tool_choice == {"type": "function", "function": {"name": "f"}}


# -- values inside frames and messages ---------------------------------------------------------------------


@case
def control_frame_number_out_of_range(_tmp: Path) -> None:
    for make in (lambda: F.UserIdleTimeoutUpdateFrame(math.inf), lambda: F.UserIdleTimeoutUpdateFrame(1e308),
                 lambda: F.STTMetadataFrame("stt", "0.3"), lambda: F.STTMetadataFrame("stt", None),  # type: ignore[arg-type]
                 lambda: F.VADUserStoppedSpeakingFrame(math.nan, 0.0), lambda: F.UserIdleTimeoutUpdateFrame(True),
                 lambda: F.LLMContextSummaryRequestFrame("r", LLMContext(), -1, 100, "p", 5.0)):
        with pytest.raises(InvalidFrameFieldError, match="must be"):
            make()


@case
def control_frame_flag_not_bool(_tmp: Path) -> None:
    with pytest.raises(InvalidFrameFieldError, match=r"STTMuteFrame\.mute must be True or False, got 'no'"):
        F.STTMuteFrame("no")  # type: ignore[arg-type]
    for make in (lambda: F.TranscriptionFrame("hi", finalized="no"),  # type: ignore[arg-type]
                 lambda: F.LLMMessagesAppendFrame([], run_llm="no"),  # type: ignore[arg-type]
                 lambda: F.TTSSpeakFrame("hi", append_to_context="no"),  # type: ignore[arg-type]
                 lambda: F.LLMTextFrame("hi", skip_tts="no"),  # type: ignore[arg-type]
                 lambda: F.TTSTextFrame("hi", append_to_context=np.bool_(False))):  # type: ignore[arg-type]
        with pytest.raises(InvalidFrameFieldError, match="must be True"):
            make()


@case
def invisible_transcript(_tmp: Path) -> None:
    assert F.TranscriptionFrame("\u200b\ufeff").text == ""
    run = converse([(0.1, F.TranscriptionFrame("\u200b", finalized=True)),
                    (0.2, F.InterimTranscriptionFrame("\u200d"))])
    assert run.said() == [] and run.rec.event_names() == [] and run.errors == [] and run.llm.runs == []


@case
def lone_surrogate_in_text(_tmp: Path) -> None:
    assert F.TranscriptionFrame("caf\ud800").text == "caf\ufffd"
    run = converse([(0.1, F.TranscriptionFrame("caf\ud800", finalized=True))])
    assert run.said() == ["caf\ufffd"]
    json.dumps(run.pair.context().to_openai(), ensure_ascii=False).encode("utf-8")


@case
def function_calls_started_junk(_tmp: Path) -> None:
    for junk in (None, ["lookup"], "lookup"):
        with pytest.raises(InvalidToolCallError, match="function_calls"):
            F.FunctionCallsStartedFrame(junk)  # type: ignore[arg-type]


@case
def tool_call_arguments_not_a_mapping(_tmp: Path) -> None:
    for junk in (None, [1, 2], "[1, 2]", "{broken"):
        with pytest.raises(InvalidToolCallError, match="arguments"):
            F.FunctionCallInProgressFrame("lookup", "c1", junk)  # type: ignore[arg-type]
    assert F.FunctionCallInProgressFrame("lookup", "c1", '{"q": 1}').arguments == {"q": 1}


@case
def tool_result_not_json(_tmp: Path) -> None:
    for junk in (object(), {1, 2}, b"x", math.nan):
        with pytest.raises(InvalidToolCallError, match="result must be JSON data"):
            F.FunctionCallResultFrame("lookup", "c1", {}, junk)


@case
def summarize_frame_config_not_a_summary_config(_tmp: Path) -> None:
    pair = Pair(LLMContext([{"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i}"} for i in range(8)]))
    errors: list[BaseException] = []
    pair.assistant().summarizer().events.on("on_error", lambda _s, e: errors.append(e))
    llm = ScriptedLLM([], summary="sum")
    FrameMarbles().run(pipeline(pair.user(), llm, pair.assistant()),
                       down=[(0.1, F.LLMSummarizeContextFrame({"keep": 2}))])
    assert [type(e) for e in errors] == [SummarizationError] and "must be a SummaryConfig" in str(errors[0])
    assert len(pair.context().messages) == 8


@case
def message_part_malformed(_tmp: Path) -> None:
    ctx = LLMContext()
    for content, field in (([None], r"content\[0\] must be a mapping part"),
                           ([{"type": "text", "text": None}], r"content\[0\]\.text must be a string"),
                           ([{"type": "image_url", "image_url": {}}], r"content\[0\]\.image_url\.url")):
        with pytest.raises(InvalidMessageError, match=field):
            ctx.add_message({"role": "user", "content": content})
    assert len(ctx.messages) == 0


@case
def message_field_not_json(_tmp: Path) -> None:
    ctx = LLMContext()
    for extra, field in (({"tags": {1, 2}}, r"message\.tags is a set"), ({"score": math.nan}, r"message\.score is nan"),
                         ({"raw": b"x"}, r"message\.raw is a bytes"), ({"content": "caf\ud800"}, "lone surrogate")):
        with pytest.raises(InvalidMessageError, match=field):
            ctx.add_message({"role": "user", "content": "hi", **extra})
    assert len(ctx.messages) == 0


@case
def tool_result_for_a_call_nobody_made(_tmp: Path) -> None:
    ctx = LLMContext([{"role": "user", "content": "weather?"}])
    with pytest.raises(InvalidToolCallError, match="answers no tool call"):
        ctx.add_message({"role": "tool", "tool_call_id": "c9", "content": "sunny"})
    with pytest.raises(InvalidToolCallError, match="answers no tool call"):
        ctx.add_tool_result("c9", "sunny")
    assert len(ctx.messages) == 1


@case
def messages_update_without_a_system_prompt(_tmp: Path) -> None:
    pair = Pair(LLMContext([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "old"}]))
    FrameMarbles().run(pipeline(pair.user(), ScriptedLLM([]), pair.assistant()),
                       down=[(0.1, F.LLMMessagesUpdateFrame([{"role": "user", "content": "new"}]))])
    assert pair.context().messages == [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "new"}]


# -- transcripts and marbles (testing kit) ----------------------------------------------------------


@case
def transcript_file_unusable(tmp: Path) -> None:
    with pytest.raises(InvalidTranscriptError, match="no transcript at"):
        load_transcript(tmp / "missing.json")
    (tmp / "broken.json").write_text("{not json")
    with pytest.raises(InvalidTranscriptError, match="is not a JSON transcript"):
        load_transcript(tmp / "broken.json")
    with pytest.raises(InvalidTranscriptError, match="overlap"):
        load_transcript({"segments": [{"text": "a", "start": 0, "end": 2}, {"text": "b", "start": 1, "end": 3}]})
    with pytest.raises(InvalidTranscriptError, match="ends"):
        load_transcript({"segments": [{"text": "a", "start": 2, "end": 1}]})
    with pytest.raises(InvalidTranscriptError, match="delays for"):
        replay_transcript({"segments": [{"text": "a", "start": 0, "end": 1}]}, delay=[0.1, 0.2])


@case
def marble_unreadable(_tmp: Path) -> None:
    bench = FrameMarbles({"a": HI})
    with pytest.raises(MarbleError, match=r"symbol 'z' at 2 .* is not in the legend"):
        bench.timeline("a-z")
    with pytest.raises(MarbleError, match="unclosed group"):
        bench.timeline("(aa")
    with pytest.raises(RxVoiceError):  # MarbleError is an rxvoice error like the others
        bench.timeline("?")


# -- services -----------------------------------------------------------------------------------------


@case
def openai_config_unusable(_tmp: Path) -> None:
    with pytest.raises(ConfigurationError, match="model name"):
        OpenAILLM("")
    with pytest.raises(ConfigurationError, match="base_url"):
        OpenAILLM("m", base_url="ftp://example.com")
    with pytest.raises(ConfigurationError, match="params may not set"):
        OpenAILLM("m", base_url="http://localhost:1/v1", params={"stream": False})
    with pytest.raises(ConfigurationError, match="timeout"):
        OpenAILLM("m", base_url="http://localhost:1/v1", timeout=-1)


@case
def openai_without_event_loop(_tmp: Path) -> None:
    llm = OpenAILLM("m", base_url="http://localhost:1/v1")
    errors: list[BaseException] = []
    llm.events.on("on_error", lambda _s, e: errors.append(e))
    FrameMarbles().run(llm, down=[(0.1, F.LLMContextFrame(LLMContext([{"role": "user", "content": "hi"}])))])
    assert [type(e) for e in errors] == [ConfigurationError] and "event loop" in str(errors[0])


# -- speech services over HTTP (a loopback server answers badly) ----------------------------------------------


def _speech_errors(stage: Any) -> list[BaseException]:
    errors: list[BaseException] = []
    stage.events.on("on_error", lambda _s, e: errors.append(e))
    return errors


def _utterance(start: float) -> list[tuple[float, Any]]:
    items: list[tuple[float, Any]] = [(start, F.VADUserStartedSpeakingFrame(start_secs=0.0))]
    items += [(start + 0.02 * (i + 1), F.InputAudioRawFrame(b"\x02\x00" * 320)) for i in range(25)]
    return [*items, (start + 0.51, F.VADUserStoppedSpeakingFrame(stop_secs=0.0))]


@case
def transcription_answer_not_a_transcription(_tmp: Path) -> None:
    server = SpeechServer().start()
    try:
        server.transcribe_with = sign_in_page
        stt = OpenAITranscriptionSTT(base_url=server.base_url, offload=inline_offload, pre_roll=0.0)
        errors = _speech_errors(stt)
        rec = FrameMarbles().run(stt, _utterance(0.0), until=1)
        server.transcribe_with = None
        after = FrameMarbles().run(stt, _utterance(0.0), until=1)
    finally:
        server.stop()
    assert rec.of_type(F.TranscriptionFrame) == [], "a page is never the user's words"
    assert [type(e) for e in errors] == [ServiceError] and "text/html, not a transcription" in str(errors[0])
    assert [type(f.error) for f in rec.up_frames() if isinstance(f, F.ErrorFrame)] == [ServiceError]
    assert [f.text for _, f in after.of_type(F.TranscriptionFrame)] == ["heard 8000 samples"]


@case
def speech_answer_with_nothing_to_play(_tmp: Path) -> None:
    server = SpeechServer().start()
    try:
        for answer in (empty_body, wav_without_samples, mp3):
            server.speak_with = answer
            tts = OpenAISpeechTTS(base_url=server.base_url, offload=inline_offload)
            errors = _speech_errors(tts)
            pair = Pair(LLMContext())
            rec = FrameMarbles().run(pipeline(tts, pair.assistant()), [
                (0.0, F.LLMFullResponseStartFrame()), (0.01, F.LLMTextFrame("Your table is booked.")),
                (0.02, F.LLMFullResponseEndFrame())], until=2)
            tts.close()
            assert rec.of_type(F.TTSTextFrame) == [] and rec.of_type(F.OutputAudioRawFrame) == [], answer
            assert [m for m in pair.context().messages if m["content"]] == [], "nothing counts as spoken"
            assert [type(e) for e in errors] == [ServiceError], answer
    finally:
        server.stop()


@case
def credentials_in_the_base_url(_tmp: Path) -> None:
    url = "https://ana:s3cret@speech.example/v1"
    for stage in (OpenAITranscriptionSTT(base_url=url), OpenAISpeechTTS(base_url=url), OpenAILLM("m", base_url=url)):
        assert "s3cret" not in repr(stage) and "s3cret" not in stage.url  # type: ignore[attr-defined]
        assert stage.url.startswith("https://speech.example/v1/")  # type: ignore[attr-defined]
    with pytest.raises(ConfigurationError) as refused:
        OpenAISpeechTTS(base_url="ftp://ana:s3cret@speech.example/v1")
    assert "s3cret" not in str(refused.value)


@case
def speech_stage_bad_seconds(_tmp: Path) -> None:
    for kwargs in ({"timeout": 0}, {"timeout": math.inf}, {"end_grace": -1}, {"end_grace": "10"},
                   {"end_grace": math.nan}):
        with pytest.raises(ConfigurationError, match="must be a number of seconds"):
            OpenAITranscriptionSTT(base_url="http://127.0.0.1:9/v1", **kwargs)  # type: ignore[arg-type]
        with pytest.raises(ConfigurationError, match="must be a number of seconds"):
            OpenAISpeechTTS(base_url="http://127.0.0.1:9/v1", **kwargs)  # type: ignore[arg-type]


# -- the command line ------------------------------------------------------------------------------------


def _cli(argv: list[str]) -> tuple[int, str]:
    from rxvoice.cli import main

    out, err = io.StringIO(), io.StringIO()
    status = main(argv, out=out, err=err)
    return status, err.getvalue()


@case
def cli_bad_command_line(_tmp: Path) -> None:
    for argv in (["dance"], ["turns"], ["turns", "x.wav", "--stop", "sometimes"], ["turns", "x.wav", "--tail", "-3"]):
        status, err = _cli(argv)
        assert status == 2, argv
        assert err.startswith("rxvoice: error: ") and err.count("\n") == 1 and "Traceback" not in err, err


@case
def cli_unusable_files(tmp: Path) -> None:
    (tmp / "notes.wav").write_text("these are not samples")
    (tmp / "empty.wav").write_bytes(b"")
    silent = tmp / "silent.wav"
    with wave.open(str(silent), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(b"\x00\x00" * 1600)
    for argv, fragment, code in (
        (["turns", str(tmp / "missing.wav"), "--stop", "speech-timeout"], "missing.wav", 1),
        (["turns", str(tmp / "notes.wav"), "--stop", "speech-timeout"], "notes.wav", 1),
        (["turns", str(tmp / "empty.wav"), "--stop", "speech-timeout"], "empty.wav", 1),
        (["turns", str(silent), "--stop", "speech-timeout", "--transcript", str(tmp / "none.json")], "none.json", 1),
        # A plot name that is not a .png is a usage error, found before any work (exit 2).
        (["turns", str(silent), "--stop", "speech-timeout", "--plot", str(tmp / "out.txt")], "out.txt", 2),
    ):
        status, err = _cli(argv)
        assert status == code, (argv, err)
        assert err.startswith("rxvoice: error: ") and fragment in err and "Traceback" not in err, err


# -- the catalogue itself -----------------------------------------------------------------------------------


@pytest.mark.parametrize("entry", CATALOGUE, ids=[c.id for c in CATALOGUE])
def test_catalogue(entry: Case, tmp_path: Path) -> None:
    """Each kind of bad input has the outcome docs/errors.md gives it."""
    entry.check(tmp_path)


def test_the_catalogue_is_large_enough_and_unique() -> None:
    """At least 25 kinds of bad input, each with its own id."""
    ids = [c.id for c in CATALOGUE]
    assert len(ids) >= 25 and len(set(ids)) == len(ids)


def test_the_docs_list_exactly_the_catalogue() -> None:
    """Every catalogue entry has its row in docs/errors.md, and every row there names a catalogue entry."""
    documented = re.findall(r"test_catalogue\[([a-z0-9-]+)\]", DOCS.read_text(encoding="utf-8"))
    assert sorted(set(documented)) == sorted(c.id for c in CATALOGUE)
    assert len(documented) == len(set(documented))


def test_a_case_checks_what_it_claims() -> None:
    """The catalogue's runner sees errors: a stream case that raised nothing would fail its own asserts."""
    run = converse([(0.1, HI)])
    assert run.errors == [] and run.said() == ["hello there"] and json.dumps(run.said())


def test_every_test_the_docs_name_exists() -> None:
    """The faults, disposal and threads tests docs/errors.md names are real tests of this suite."""
    named = set(re.findall(r"`(test_[a-z0-9_]+)`", DOCS.read_text(encoding="utf-8")))
    here = Path(__file__).parent
    defined = set()
    for source in here.glob("test_*.py"):
        defined |= set(re.findall(r"^def (test_[a-z0-9_]+)\(", source.read_text(encoding="utf-8"), re.MULTILINE))
    assert named and named <= defined, sorted(named - defined)
