"""The seconds around a turn end, measured from the command line: replies, speculation, backchannels, serve flags.

``rxvoice eval --first-token-delay`` on the booking call (its transcript
replayed as a streaming STT: interim words 0.1 s after each, finals 0.3 s
after each segment), with and without ``--speculate``; ``rxvoice eval`` on the
backchannel fixture; the talk options ``rxvoice serve`` builds.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from rxvoice.cli.serve import ServeOptions
from rxvoice.turns import BackchannelStart, ClassifierStop, SpeechTimeoutStop
from tests.support import data_dir

from .conftest import run_cli


def replies(*extra: str, booking: Path) -> dict[str, Any]:
    r = run_cli("eval", str(booking), "--stop", "speech-timeout", "--first-token-delay", "0.5",
                "--interim-lag", "0.1", "--json", *extra)
    assert r.code == 0, r.err
    data = json.loads(r.out)
    assert data["settings"]["first_token_delay"] == 0.5
    [run] = data["runs"]
    figures: dict[str, Any] = run["replies"]
    return figures


def test_eval_reports_the_end_of_speech_to_the_first_audio_and_what_speculation_saved(booking_wav: Path) -> None:
    plain = replies(booking=booking_wav)
    fast = replies("--speculate", booking=booking_wav)
    assert plain["speculative_asked"] == 0 and plain["first_audio_p50"] is not None
    assert fast["speculative_asked"] >= fast["released"] > 0
    # The speech timeout decides 0.6 s after the VAD stop: a held answer hides the 0.5 s to its first token.
    assert fast["first_audio_p50"] <= plain["first_audio_p50"] - 0.3
    assert fast["speculative_tool_calls"] == 0
    assert set(fast) >= {"first_audio_p50", "first_audio_p90", "wasted_per_turn", "wasted_tokens", "refused",
                         "tool_calls"}


def test_eval_text_names_the_reply_figures(booking_wav: Path) -> None:
    r = run_cli("eval", str(booking_wav), "--stop", "speech-timeout", "--first-token-delay", "0.5", "--speculate")
    assert r.code == 0, r.err
    assert "end of speech to the bot's first audio p50" in r.out
    assert "tool calls started speculatively: 0" in r.out


def test_without_the_new_flags_the_eval_json_is_as_before(booking_wav: Path) -> None:
    r = run_cli("eval", str(booking_wav), "--stop", "speech-timeout", "--json")
    data = json.loads(r.out)
    assert "replies" not in data["runs"][0]
    assert not {"first_token_delay", "speculate", "interim_lag", "backchannels"} & set(data["settings"])


def test_eval_scores_a_backchannel_set() -> None:
    folder = data_dir() / "backchannels"
    r = run_cli("eval", str(folder), "--stop", "speech-timeout", "--interim-lag", "0.2", "--json")
    assert r.code == 0, r.err
    scores = json.loads(r.out)["backchannels"]
    off, on = scores["off"], scores["on"]
    assert (off["continuers"], off["interruptions"]) == (4, 1)
    assert off["continuers_kept"] == 0 and off["interruptions_caught"] == 1  # every sound interrupts
    assert on["continuers_kept"] == 4 and on["interruptions_caught"] == 1
    # the bot's audio stops (paused) at the same VAD start that interrupts it without backchannels; the
    # interruption itself waits until the words show it is no continuer
    assert on["barge_in_p50"] == off["barge_in_p50"] == off["interruption_p50"]
    assert on["interruption_p50"] > on["barge_in_p50"]
    assert on["continuers_paused"] == 4 and on["gap_p50"] > 0
    text = run_cli("eval", str(folder), "--stop", "speech-timeout", "--interim-lag", "0.2")
    assert "with BackchannelStart: continuers kept 4/4 (100%)" in text.out


def test_serve_builds_the_talk_options() -> None:
    options = ServeOptions(stt="none", tts="paced", stop="speech-timeout", speculate=True, backchannels=True,
                           classifier="rules", first_token_delay=0.5)
    turns = options.turns(SpeechTimeoutStop())
    start, stop = turns.chains()
    assert isinstance(start[0], BackchannelStart) and isinstance(stop[0], ClassifierStop)
    assert turns.speculation is not None
    described = options.describe()
    assert described["speculate"] and described["backchannels"] and described["classifier"] == "rules"
    assert "speculate" not in ServeOptions(stt="none", tts="paced", stop="speech-timeout").describe()
    assert start[0].pause and "backchannel_pause" not in described  # the bot pauses for held speech by default
    talking = ServeOptions(stt="none", tts="paced", stop="speech-timeout", backchannels=True, backchannel_pause=False)
    assert not talking.turns(SpeechTimeoutStop()).chains()[0][0].pause  # type: ignore[attr-defined]
    assert talking.describe()["backchannel_pause"] is False


def test_serve_refuses_a_model_classifier_without_a_model(monkeypatch: pytest.MonkeyPatch) -> None:
    from rxvoice.cli._common import CLIError
    from rxvoice.cli.serve import options_from

    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    args = argparse.Namespace(model=None, stop="speech-timeout", speech_timeout=0.6, stt="none", tts="paced",
                              allow_origin=[], classifier="model", speculate=False, backchannels=False,
                              first_token_delay=0.2)
    with pytest.raises(CLIError, match="OPENAI_BASE_URL"):
        options_from(args, __import__("io").StringIO())


def test_demo_shows_when_the_bot_s_voice_starts() -> None:
    r = run_cli("demo", "--no-smart-turn", "--first-token-delay", "0.5", "--speculate")
    assert r.code == 0, r.err
    assert "(the bot's voice starts)" in r.out
    assert "The bot's voice started" in r.out and "with speculation" in r.out
