"""The testing kit itself: marble grammar, recordings, the replayed STT, the scripted model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rxvoice import frames as F
from rxvoice import pipeline
from rxvoice.errors import InvalidTranscriptError
from rxvoice.testing import (
    COMPLETED,
    ERROR,
    FrameMarbles,
    MarbleError,
    Reply,
    ScriptedLLM,
    ToolCall,
    load_transcript,
    parse_marbles,
    replay_transcript,
)

A, B, C = F.TextFrame("a"), F.TextFrame("b"), F.TextFrame("c")


def test_marble_grammar() -> None:
    """Dashes advance time, groups share an instant, | and # end the stream, spaces align."""
    items = parse_marbles("a-(bc)- -|", {"a": A, "b": B, "c": C}, timespan=0.1)
    assert [(round(t, 3), x) for t, x in items] == [(0.0, A), (0.2, B), (0.2, C), (0.5, COMPLETED)]
    assert parse_marbles("-#", {}, 1.0) == [(1.0, ERROR)]


def test_marble_errors_are_clear() -> None:
    """Unknown symbols and bad groups name the problem."""
    with pytest.raises(MarbleError, match=r"'z'.*legend"):
        parse_marbles("a-z", {"a": A})
    with pytest.raises(MarbleError, match="unclosed"):
        parse_marbles("(a", {"a": A})
    with pytest.raises(MarbleError, match="nested"):
        parse_marbles("((a))", {"a": A})


def test_expect_matches_a_recording(marbles: FrameMarbles) -> None:
    """The pytest fixture gives a bench whose expect() reads like the recording."""
    marbles.legend.update({"a": A, "b": B})
    rec = marbles.run(lambda src: src, down="a--b|")
    assert rec.down == marbles.expect("a--b|")


def test_replay_transcript_times(booking_wav: Path) -> None:
    """Each segment's text arrives finalized at its end plus the STT delay."""
    transcript = load_transcript(booking_wav.with_name("booking.transcript.json"))
    assert len(transcript.segments) == 5 and transcript.turn_ends == [5.396, 11.444, 15.304]
    rec = FrameMarbles().run(lambda src: src, down=replay_transcript(transcript, delay=0.3))
    assert [(t, f.text) for t, f in rec.down] == [
        (3071, "Hi, I would like to book a flight to"), (5696, "Boston, next Friday."),
        (9839, "Actually, could we, uh"), (11744, "leave on Saturday."), (15604, "Thanks, that is all."),
    ]
    assert all(f.finalized for f in rec.down_frames())


def test_bad_transcripts_are_refused(tmp_path: Path) -> None:
    """A transcript that cannot be replayed is a typed error with the reason."""
    with pytest.raises(InvalidTranscriptError, match="no transcript"):
        load_transcript(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("not json")
    with pytest.raises(InvalidTranscriptError, match="not a JSON"):
        load_transcript(bad)
    bad.write_text(json.dumps({"segments": [{"text": "x", "start": 2, "end": 1}]}))
    with pytest.raises(InvalidTranscriptError, match="before it starts"):
        load_transcript(bad)
    with pytest.raises(InvalidTranscriptError, match="segments"):
        load_transcript({"words": []})
    with pytest.raises(InvalidTranscriptError, match="overlap"):
        load_transcript({"segments": [{"text": "a", "start": 0, "end": 2}, {"text": "b", "start": 1, "end": 3}]})


def test_scripted_model_streams_tokens_and_tools() -> None:
    """A reply streams its tokens on the scheduler; a tool call is announced both ways and answered."""
    llm = ScriptedLLM([Reply("Hi there", tool_calls=[ToolCall("f", {"x": 1}, "ok", delay=0.5)])], token_delay=0.1)
    from rxvoice import LLMContext

    rec = FrameMarbles({"c": F.LLMContextFrame(LLMContext())}).run(pipeline(llm), down="c")
    assert [(t, type(f).__name__) for t, f in rec.down] == [
        (0, "LLMFullResponseStartFrame"), (0, "LLMTextFrame"), (100, "LLMTextFrame"),
        (100, "LLMFullResponseEndFrame"), (100, "FunctionCallsStartedFrame"), (100, "FunctionCallInProgressFrame"),
        (600, "FunctionCallResultFrame"),
    ]
    assert rec.up_types() == ["FunctionCallsStartedFrame", "FunctionCallResultFrame"]
    assert len(llm.runs) == 1


def test_scripted_model_is_cut_off_by_an_interruption() -> None:
    """An interruption stops the reply where it is and cancels its tool calls."""
    from rxvoice import LLMContext

    llm = ScriptedLLM([Reply("one two three four", tool_calls=[ToolCall("f", delay=5)])], token_delay=0.1)
    rec = FrameMarbles({"c": F.LLMContextFrame(LLMContext()), "i": F.InterruptionFrame()}).run(
        pipeline(llm), down="c-i"
    )
    assert [type(f).__name__ for f in rec.down_frames()] == [
        "LLMFullResponseStartFrame", "LLMTextFrame", "LLMTextFrame", "InterruptionFrame",
    ]
    assert rec.up_types() == []
