"""The bot's backchannel: spoken during the user's turn without a bot turn, and not cut off by an interruption."""

from __future__ import annotations

from rxvoice import LLMContext, pipeline
from rxvoice import frames as F
from rxvoice.aggregators import Pair
from rxvoice.services.tts import PacedTextTTS
from rxvoice.testing import FrameMarbles, Recording


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


# -- the user's backchannel, through the whole chain: the bot pauses, then resumes or is cut -----------------

def _voice(user_says: list[tuple[float, F.Frame]]) -> tuple[Pair, FrameMarbles, Recording]:
    from rxvoice.services.tts import PacedTextTTS
    from rxvoice.testing import ScriptedLLM
    from rxvoice.turns import SpeechTimeoutStop, TranscriptionStart, TurnsConfig, VADStart
    from rxvoice.turns.backchannel import BackchannelStart

    turns = TurnsConfig(start=[BackchannelStart(), VADStart(), TranscriptionStart()], stop=[SpeechTimeoutStop()])
    pair = Pair(LLMContext(), turns=turns)
    voice = pipeline(pair.user(), ScriptedLLM(["One two three four five six."]), PacedTextTTS(words_per_minute=120),
                     pair.assistant())
    question = [(0.0, F.VADUserStartedSpeakingFrame(0.2)), (0.5, F.VADUserStoppedSpeakingFrame(0.2)),
                (0.6, F.TranscriptionFrame("Count to six.", "u1", finalized=True))]
    m = FrameMarbles()
    rec = m.run(voice, [*question, *user_says], until=8, watch=[pair.user()])
    return pair, m, rec


def test_a_continuer_over_the_bot_pauses_its_voice_and_it_goes_on_from_there() -> None:
    """The reply starts at 1.1 s (0.6 s after the speech), a word every 0.5 s; "mm-hmm" heard at 1.7-1.9 s
    (VAD), its final at 2.1 s: the voice pauses at 1.7 s, resumes at 2.1 s, the reply is written whole."""
    pair, _m, rec = _voice([(1.7, F.VADUserStartedSpeakingFrame(0.2)), (1.9, F.VADUserStoppedSpeakingFrame(0.2)),
                            (2.1, F.TranscriptionFrame("Mm-hmm.", "u1", finalized=True))])
    words = [(t, f.text) for t, f in rec.of_type(F.TTSTextFrame)]
    assert [w for _, w in words] == ["One", "two", "three", "four", "five", "six."]
    assert not any(1700 < t < 2100 for t, _ in words), "silent while paused"
    assert words[2][0] - words[1][0] > 500, "the words after the pause come later by the gap"
    assert [t for t, _ in rec.of_type(F.InterruptionFrame)] == [0]  # the question's own turn start only
    assert [m["content"] for m in pair.context().messages] == ["Count to six.", "One two three four five six."]


def test_a_barge_in_over_the_bot_silences_it_at_the_vad_start_and_keeps_what_was_said() -> None:
    """ "wait" over the bot: the voice stops at the VAD start (1.7 s), the reply is cut at the interim (1.9 s);
    the conversation holds the words spoken before the pause."""
    pair, _m, rec = _voice([(1.7, F.VADUserStartedSpeakingFrame(0.2)), (1.9, F.InterimTranscriptionFrame("wait")),
                            (2.4, F.VADUserStoppedSpeakingFrame(0.2)),
                            (2.6, F.TranscriptionFrame("Wait, stop.", "u1", finalized=True))])
    words = [(t, f.text) for t, f in rec.of_type(F.TTSTextFrame)]
    assert words and all(t <= 1700 for t, _ in words)
    assert [t for t, _ in rec.of_type(F.InterruptionFrame)] == [0, 1900]  # the question's turn, then "wait"
    spoken = " ".join(w for _, w in words)
    assert [m["content"] for m in pair.context().messages][:2] == ["Count to six.", spoken]
