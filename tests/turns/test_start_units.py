"""Start strategies as pure functions: plain asserts, no streams."""

from __future__ import annotations

import pytest

from rxvoice import frames as F
from rxvoice.errors import ConfigurationError
from rxvoice.turns import ExternalStart, MinWordsStart, TranscriptionStart, VADStart, WakePhraseStart
from rxvoice.turns.strategy import HALT, RESET_AGGREGATION, Start

from .helpers import StrategyBench


def test_vad_start_opens_on_vad_started_only() -> None:
    """VADStart reacts to a VAD start (start, halt the chain) and to nothing else (pipecat §8.44)."""
    s = VADStart()
    assert s.on_frame(None, F.VADUserStartedSpeakingFrame(0.2), 0.0)[1] == (Start(), HALT)
    assert s.handles == frozenset({F.VADUserStartedSpeakingFrame})


def test_transcription_start_opens_on_final_and_interim() -> None:
    """A final or an interim transcript opens the turn; with use_interim=False only a final does."""
    s = TranscriptionStart()
    assert s.on_frame(None, F.TranscriptionFrame("hi"), 0.0)[1] == (Start(), HALT)
    assert s.on_frame(None, F.InterimTranscriptionFrame("hi"), 0.0)[1] == (Start(), HALT)
    finals_only = TranscriptionStart(use_interim=False)
    assert finals_only.on_frame(None, F.InterimTranscriptionFrame("hi"), 0.0)[1] == ()
    assert finals_only.on_frame(None, F.TranscriptionFrame("hi"), 0.0)[1] == (Start(), HALT)


def test_transcription_start_ignores_whitespace() -> None:
    """A whitespace-only transcript opens nothing (a deliberate difference from pipecat §8.11)."""
    s = TranscriptionStart()
    assert s.on_frame(None, F.TranscriptionFrame("   "), 0.0)[1] == ()
    assert s.on_frame(None, F.InterimTranscriptionFrame(""), 0.0)[1] == ()


def test_min_words_threshold_while_the_bot_speaks() -> None:
    """MinWords(2) while the bot speaks: one word resets, two open; after a turn one word is enough (pipecat §8.40)."""
    s = MinWordsStart(min_words=2)
    state = s.initial()
    state, _ = s.on_frame(state, F.BotStartedSpeakingFrame(), 0.0)
    state, e = s.on_frame(state, F.TranscriptionFrame("Hello"), 0.0)
    assert e == (RESET_AGGREGATION,)
    state, e = s.on_frame(state, F.TranscriptionFrame("Hello there!"), 0.0)
    assert e == (Start(), HALT)
    state, _ = s.on_turn_started(state, 0.0)
    state, e = s.on_frame(state, F.TranscriptionFrame("Hello!"), 0.0)
    assert e == (Start(), HALT)
    state, _ = s.on_frame(state, F.BotStartedSpeakingFrame(), 0.0)
    state, e = s.on_frame(state, F.TranscriptionFrame("Hello!"), 0.0)
    assert e == (RESET_AGGREGATION,)
    state, e = s.on_frame(state, F.TranscriptionFrame("How are you?"), 0.0)
    assert e == (Start(), HALT)


def test_min_words_counts_words_per_transcript() -> None:
    """MinWords(3) while the bot speaks: three one-word transcripts never open a turn (pipecat §8.41)."""
    bench = StrategyBench(MinWordsStart(min_words=3))
    bench.at(0.0, F.BotStartedSpeakingFrame())
    for i, word in enumerate(["One", "Two", "Three"]):
        bench.at(0.1 * (i + 1), F.TranscriptionFrame(word))
    assert [kind for _, kind in bench.fired] == ["reset", "reset", "reset"]


def test_min_words_interim_can_be_ignored() -> None:
    """With use_interim=False an interim neither opens nor resets."""
    s = MinWordsStart(min_words=2, use_interim=False)
    state, _ = s.on_frame(s.initial(), F.BotStartedSpeakingFrame(), 0.0)
    assert s.on_frame(state, F.InterimTranscriptionFrame("uh"), 0.0)[1] == ()


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "3"])
def test_min_words_below_one_is_a_configuration_error(bad: object) -> None:
    """MinWords needs a whole number >= 1, refused at construction."""
    with pytest.raises(ConfigurationError, match="min_words"):
        MinWordsStart(min_words=bad)  # type: ignore[arg-type]


def test_external_start_resolves_proposals_and_adopts_announced_starts() -> None:
    """A proposal opens a turn with the configured flags; an announced start is adopted silently (pipecat §8.46)."""
    s = ExternalStart()
    assert s.resolves_proposals
    assert F.VADUserStartedSpeakingFrame not in s.handles
    assert s.on_frame(None, F.ProposedUserStartedSpeakingFrame(), 0.0)[1] == (Start(), HALT)
    assert s.on_frame(None, F.UserStartedSpeakingFrame(), 0.0)[1] == (Start(False, False), HALT)


def test_external_start_without_interruptions() -> None:
    """ExternalStart(enable_interruptions=False) carries the flag the controller reads for proposals."""
    s = ExternalStart(enable_interruptions=False)
    assert s.on_frame(None, F.ProposedUserStartedSpeakingFrame(), 0.0)[1] == (Start(), HALT)
    assert s.enable_interruptions is False and s.enable_user_speaking_frames is True


def test_wake_phrase_asleep_blocks_and_resets() -> None:
    """Asleep: a non-matching final halts the chain and resets; an interim is ignored; the phrase (any case,
    punctuation) wakes it and opens the turn (pipecat §8.47)."""
    s = WakePhraseStart(phrases=["hey pipecat"])
    state = s.initial()
    state, e = s.on_frame(state, F.TranscriptionFrame("hello world"), 0.0)
    assert e == (RESET_AGGREGATION, HALT) and not state.awake
    state, e = s.on_frame(state, F.InterimTranscriptionFrame("hey pipecat"), 0.0)
    assert e == (HALT,) and not state.awake
    state, e = s.on_frame(state, F.VADUserStartedSpeakingFrame(0.2), 0.0)
    assert e == (HALT,)
    state, e = s.on_frame(state, F.TranscriptionFrame("Hey, Pipecat!"), 0.0)
    assert state.awake and Start() in e and HALT in e


def test_wake_phrase_across_transcripts_and_timeout() -> None:
    """The phrase may span two transcripts; awake, activity keeps it awake; silence puts it back to sleep."""
    b = StrategyBench(WakePhraseStart(phrases=["hey pipecat"], timeout=1.0))
    b.at(0.0, F.TranscriptionFrame("hey")).at(0.1, F.TranscriptionFrame("pipecat"))
    assert b.fired == [(0.0, "reset"), (0.1, "start")]
    b.at(0.9, F.VADUserStartedSpeakingFrame(0.2)).at(1.5)
    assert b.state.awake
    b.at(2.0)
    assert not b.state.awake


def test_wake_phrase_single_activation_is_a_fixed_window() -> None:
    """single_activation: awake for ``timeout`` after the phrase, activity or not."""
    b = StrategyBench(WakePhraseStart(phrases=["computer"], timeout=1.0, single_activation=True))
    b.at(0.0, F.TranscriptionFrame("Computer")).at(0.9, F.TranscriptionFrame("lights on")).at(1.0)
    assert not b.state.awake


@pytest.mark.parametrize("kwargs", [{"phrases": []}, {"phrases": ["  "]}, {"phrases": ["hi"], "timeout": 0}])
def test_wake_phrase_misconfiguration(kwargs: dict[str, object]) -> None:
    """No phrase, an empty phrase or a non-positive timeout is refused at construction."""
    with pytest.raises(ConfigurationError, match="WakePhraseStart"):
        WakePhraseStart(**kwargs)  # type: ignore[arg-type]
