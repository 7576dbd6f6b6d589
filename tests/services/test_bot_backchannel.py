"""The bot's backchannel: spoken during the user's turn without a bot turn, and not cut off by an interruption."""

from __future__ import annotations

from rxvoice import LLMContext, pipeline
from rxvoice import frames as F
from rxvoice.aggregators import Pair
from rxvoice.services.tts import PacedTextTTS
from rxvoice.testing import FrameMarbles


def test_a_bot_backchannel_is_spoken_with_no_bot_turn_and_nothing_written() -> None:
    pair = Pair(LLMContext())
    m = FrameMarbles()
    rec = m.run(pipeline(PacedTextTTS(words_per_minute=120), pair.assistant()),
                [(0.0, F.BotBackchannelFrame("mm-hmm"))], until=2, watch=[pair.assistant()])
    words = rec.of_type(F.TTSTextFrame)
    assert [(t, f.text, f.append_to_context) for t, f in words] == [(0, "mm-hmm", False)]
    names = {type(f).__name__ for f in rec.down_frames()}
    assert not names & {"BotStartedSpeakingFrame", "BotStoppedSpeakingFrame", "TTSStartedFrame"}
    assert rec.up_frames() == []  # the user side does not hear the bot start a turn
    assert pair.context().messages == []
    assert [p.text for _, p in rec.events_named("on_assistant_backchannel")] == ["mm-hmm"]
    assert rec.events_named("on_assistant_turn_started") == []


def test_an_interruption_does_not_cut_a_bot_backchannel_off_but_cuts_the_reply_behind_it() -> None:
    """A two-word continuer (1 s at 120 wpm) then a reply; an interruption at 0.3 s: the continuer finishes."""
    m = FrameMarbles()
    items = [(0.0, F.BotBackchannelFrame("I see")), (0.01, F.TTSSpeakFrame("Let me explain that again")),
             (0.3, F.InterruptionFrame())]
    rec = m.run(PacedTextTTS(words_per_minute=120), items, until=5)
    assert [(t, f.text) for t, f in rec.of_type(F.TTSTextFrame)] == [(0, "I"), (500, "see")]
    assert F.BotBackchannelFrame.interruptible is False


def test_a_bot_backchannel_is_not_written_to_the_context_even_with_text_around() -> None:
    frame = F.BotBackchannelFrame("right")
    assert frame.append_to_context is False and isinstance(frame, F.TTSSpeakFrame)
