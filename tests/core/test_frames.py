"""Frames: immutable values in three kinds, validated where the input can be wrong."""

from __future__ import annotations

import dataclasses

import pytest

from rxvoice import LLMContext
from rxvoice import frames as F
from rxvoice.errors import InvalidAudioError, InvalidTranscriptError


def test_frames_are_immutable() -> None:
    """A frame handed to one stage cannot be changed under another."""
    f = F.TranscriptionFrame("hello", "u1", "2026-01-01T00:00:00Z", finalized=True)
    with pytest.raises(dataclasses.FrozenInstanceError):
        f.text = "changed"  # type: ignore[misc]


def test_frames_compare_by_value() -> None:
    """Two frames with the same fields are equal; different types never are."""
    assert F.LLMTextFrame("a") == F.LLMTextFrame("a")
    assert F.LLMTextFrame("a") != F.TextFrame("a")
    assert F.InterruptionFrame() == F.InterruptionFrame()


@pytest.mark.parametrize(
    ("frame", "kind"),
    [
        (F.InterruptionFrame(), F.FrameKind.SYSTEM),
        (F.UserStartedSpeakingFrame(), F.FrameKind.SYSTEM),
        (F.VADUserStoppedSpeakingFrame(0.2, 1.0), F.FrameKind.SYSTEM),
        (F.CancelFrame(), F.FrameKind.SYSTEM),
        (F.FunctionCallsStartedFrame(()), F.FrameKind.SYSTEM),
        (F.TranscriptionFrame("x"), F.FrameKind.DATA),
        (F.LLMTextFrame("x"), F.FrameKind.DATA),
        (F.LLMContextFrame(LLMContext()), F.FrameKind.DATA),
        (F.EndFrame(), F.FrameKind.CONTROL),
        (F.LLMFullResponseStartFrame(), F.FrameKind.CONTROL),
        (F.FunctionCallInProgressFrame("f", "c1"), F.FrameKind.CONTROL),
        (F.ProposedUserStoppedSpeakingFrame(), F.FrameKind.CONTROL),
    ],
)
def test_frame_kinds(frame: F.Frame, kind: F.FrameKind) -> None:
    """Each frame belongs to the kind Pipecat gives it (the seed's where they differ)."""
    assert frame.kind is kind
    assert F.is_system(frame) == (kind is F.FrameKind.SYSTEM)


def test_pipecat_field_names_and_defaults() -> None:
    """Pipecat users find the fields they know, with the same defaults."""
    t = F.TranscriptionFrame("hi", "user-1", "ts")
    fields = (t.text, t.user_id, t.timestamp, t.finalized, t.includes_inter_frame_spaces)
    assert fields == ("hi", "user-1", "ts", False, False)
    assert F.LLMTextFrame("x").includes_inter_frame_spaces is True
    assert F.StartFrame().audio_in_sample_rate == 16000
    assert F.FunctionCallInProgressFrame("f", "c").cancel_on_interruption is True
    assert F.AggregatedTextFrame("x", aggregated_by="code").text_type == "code"


def test_llm_context_frame_carries_a_snapshot() -> None:
    """The frame keeps the conversation as it stood when it was made."""
    ctx = LLMContext()
    ctx.add_user_message("one")
    frame = F.LLMContextFrame(ctx)
    ctx.add_user_message("two")
    assert len(frame.snapshot.messages) == 1
    assert frame.context is ctx


def test_audio_frame_validation() -> None:
    """Audio of the wrong width, rate, channel count or type is refused with a typed error."""
    good = F.InputAudioRawFrame(b"\x00\x00" * 160, 16000, 1)
    assert good.num_frames == 160 and good.duration == pytest.approx(0.01)
    assert F.InputAudioRawFrame(bytearray(4), 8000).audio == b"\x00" * 4
    with pytest.raises(InvalidAudioError, match="not a whole number"):
        F.InputAudioRawFrame(b"\x00" * 3, 16000)
    with pytest.raises(InvalidAudioError, match="4 bytes each"):
        F.InputAudioRawFrame(b"\x00" * 6, 16000, 2)
    with pytest.raises(InvalidAudioError, match="sample_rate"):
        F.InputAudioRawFrame(b"\x00\x00", 0)
    with pytest.raises(InvalidAudioError, match="num_channels"):
        F.InputAudioRawFrame(b"\x00\x00", 16000, 0)
    with pytest.raises(InvalidAudioError, match="PCM bytes"):
        F.InputAudioRawFrame([0, 1], 16000)  # type: ignore[arg-type]


def test_text_must_be_a_string() -> None:
    """A transcription whose text is not a string is refused at construction."""
    with pytest.raises(InvalidTranscriptError, match="must be a str"):
        F.TranscriptionFrame(42)  # type: ignore[arg-type]
    with pytest.raises(InvalidTranscriptError):
        F.LLMTextFrame(None)  # type: ignore[arg-type]


def test_thought_that_is_kept_needs_a_provider() -> None:
    """A thought written into the context must say which provider understands it."""
    with pytest.raises(ValueError, match="llm="):
        F.LLMThoughtStartFrame(append_to_context=True)
    assert F.LLMThoughtStartFrame(append_to_context=True, llm="anthropic").llm == "anthropic"
