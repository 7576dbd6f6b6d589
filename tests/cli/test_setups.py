"""The registry of named setups: every command, the report and the plot read it; a new setup is one registration."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rxvoice.cli import setups
from rxvoice.cli._common import CLIError
from rxvoice.cli.setups import (
    DEFAULT_SETUP,
    FALLBACK_SETUP,
    NamedSetup,
    Setup,
    named_setup,
    register_setup,
    setup_names,
    stop_strategy,
)
from rxvoice.turns import FusedTurnStop, SpeechTimeoutStop, TurnAnalyzerStop

from .conftest import run_cli

QUICK = NamedSetup(
    "quick-test", "a quick test timeout", "0.1 s of silence (a test setup)", needs_model=False,
    parameters=frozenset({"user_speech_timeout"}),
    build=lambda s: SpeechTimeoutStop(**{"user_speech_timeout": 0.1, **s.stop_overrides()}),
)


@pytest.fixture
def quick(monkeypatch: pytest.MonkeyPatch) -> NamedSetup:
    """A setup registered for one test only."""
    monkeypatch.setitem(setups._SETUPS, QUICK.name, QUICK)
    return QUICK


def test_the_built_in_setups(smart_turn_model: Path) -> None:
    """Three names, each building its own stop strategy; smart-turn is the default, speech-timeout the fallback."""
    assert setup_names()[:3] == ("smart-turn", "speech-timeout", "smart-turn-only")
    assert (DEFAULT_SETUP, FALLBACK_SETUP) == ("smart-turn", "speech-timeout")
    built = {name: type(stop_strategy(Setup(stop=name, model=smart_turn_model))) for name in setup_names()[:3]}
    assert built == {"smart-turn": FusedTurnStop, "speech-timeout": SpeechTimeoutStop,
                     "smart-turn-only": TurnAnalyzerStop}
    assert [named_setup(n).needs_model for n in setup_names()[:3]] == [True, False, True]
    # Both Smart Turn setups use the VAD the recommended setup was measured with, the timeout the VAD's default.
    assert Setup(stop="smart-turn-only").vad_params == Setup(stop="smart-turn").vad_params
    assert Setup(stop="smart-turn").vad_params != Setup(stop="speech-timeout").vad_params


def test_unknown_names_and_parameters_are_refused() -> None:
    with pytest.raises(CLIError, match=r"no such setup .*smart-turn, speech-timeout, smart-turn-only"):
        Setup(stop="sometimes")
    with pytest.raises(CLIError, match="--stop speech-timeout has no parameter 'patience'"):
        Setup(stop="speech-timeout", overrides=(("patience", 1.0),))
    with pytest.raises(CLIError, match="needs the Smart Turn model"):
        stop_strategy(Setup(stop="smart-turn-only"))
    with pytest.raises(ValueError, match="registered already"):
        register_setup(named_setup("smart-turn"))


def test_a_registered_setup_is_offered_by_every_command(quick: NamedSetup, without_model: Path,
                                                        booking_wav: Path) -> None:
    """turns, eval and serve list it in --help and run it; the report describes it by its title."""
    for command in ("turns", "eval", "serve"):
        r = run_cli(command, "--help")
        assert "quick-test: 0.1 s of silence (a test setup)" in " ".join(r.out.split()), command
    r = run_cli("turns", str(booking_wav), "--stop", "quick-test")
    assert r.code == 0, r.err
    assert "turn end: a quick test timeout ·" in r.out
    assert r.out.count("decided by SpeechTimeoutStop: 0.3 s of silence") == 5  # 0.16 s VAD stop + 0.1 s, rounded
    r = run_cli("eval", str(booking_wav), "--stop", "quick-test", "--set", "user_speech_timeout=0.05", "--json")
    assert r.code == 0, r.err
    data = json.loads(r.out)
    assert data["settings"]["stop"] == "quick-test" and data["runs"][0]["params"] == {"user_speech_timeout": 0.05}


def test_smart_turn_only_is_described_and_drawn_as_smart_turn(smart_turn_model: Path, booking_wav: Path) -> None:
    """The report's setup line and the plot's Smart Turn row follow the setup's needs, not one name."""
    import dataclasses

    import matplotlib.pyplot as plt

    from rxvoice.cli.analysis import analyze
    from rxvoice.cli.plot import timeline_figure
    from rxvoice.cli.report import describe_setup
    from rxvoice.cli.wav import read_wav

    line = describe_setup(Setup(stop="smart-turn-only", model=smart_turn_model))
    assert "turn end: Smart Turn's verdicts alone (smart-turn-v3.2-cpu.onnx; verdicts take 50 ms)" in line
    assert "turn end: a speech timeout (0.8 s of silence)" in describe_setup(Setup(stop="speech-timeout"))
    whole = read_wav(booking_wav)
    hi = dataclasses.replace(whole, samples=whole.samples[:16000])
    for name, panels in (("smart-turn-only", 3), ("speech-timeout", 2)):
        fig = timeline_figure(analyze(hi, Setup(stop=name, model=smart_turn_model, tail=1.0)))
        assert len(fig.axes) == panels, name
        plt.close(fig)
