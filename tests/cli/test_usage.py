"""Usage errors: one line and exit status 2, found before any work is done; help texts that say what is true."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

import rxvoice.cli.eval
import rxvoice.cli.serve  # imported before any patch: it copies turns.make_setup at import
import rxvoice.cli.turns
from rxvoice.audio.turn import cached_model_path

from .conftest import run_cli
from .test_bad_input import one_line_error


@pytest.fixture
def no_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any analysis, evaluation or server start fails the test: the checks must come first."""
    def started(*_a: object, **_k: object) -> None:
        raise AssertionError("work started before the command line was checked")

    for module, name in ((rxvoice.cli.turns, "analyze"), (rxvoice.cli.turns, "make_setup"),
                         (rxvoice.cli.eval, "evaluate"), (rxvoice.cli.eval, "find_items"),
                         (rxvoice.cli.serve, "make_setup")):
        monkeypatch.setattr(module, name, started)


@pytest.mark.parametrize(("argv", "message"), [
    (["eval", "x.wav", "--jobs", "0"], "argument --jobs: 0 is not 1 or more"),
    (["eval", "x.wav", "--jobs", "two"], "argument --jobs: 'two' is not a whole number"),
    (["serve", "--port", "99999"], "argument --port: 99999 is outside 0..65535"),
    (["serve", "--port", "-1"], "argument --port: -1 is outside 0..65535"),
    (["serve", "--host", ""], "argument --host: give an address"),
    (["serve", "--speech-timeout", "-1"], "argument --speech-timeout: -1 is outside 0..10 seconds"),
    (["eval", "x.wav", "--plot", "out.jpg"], "--plot out.jpg: give a .png file name"),
    (["eval", "x.wav", "--plot", "no/such/folder/out.png"], "no such folder no/such/folder (create it first)"),
    (["eval", "x.wav", "--sweep", "stop_secs=0.1", "--sweep", "stop_secs=0.2"], "--sweep: give each parameter once"),
    (["turns", "x.wav", "--plot", "out.pdf"], "--plot out.pdf: give a .png file name"),
    (["turns", "x.wav", "--plot", "missing/out.png"], "--plot missing/out.png: no such folder missing"),
    (["turns", "x.wav", "--stop", "sometimes"], "invalid choice: 'sometimes'"),
])
def test_every_usage_error_exits_2_before_any_work(no_work: None, argv: list[str], message: str,
                                                   monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    assert message in one_line_error(run_cli(*argv), code=2)


def test_folder_usage_errors_exit_2(no_work: None, tmp_path: Path) -> None:
    """--transcript with a folder, --plot naming a file or a missing folder for a folder's PNGs."""
    (tmp_path / "a.wav").write_bytes(b"")
    (tmp_path / "file.png").write_bytes(b"")
    assert "beside its WAV" in one_line_error(run_cli("turns", str(tmp_path), "--transcript", "t.json"), code=2)
    line = one_line_error(run_cli("turns", str(tmp_path), "--plot", str(tmp_path / "file.png")), code=2)
    assert "give a folder to write the PNGs into" in line
    line = one_line_error(run_cli("turns", str(tmp_path), "--plot", str(tmp_path / "plots")), code=2)
    assert "no such folder (create it first)" in line and not (tmp_path / "plots").exists()


def test_setup_parameters_are_usage_errors(with_model: Path, booking_wav: Path, no_work: None) -> None:
    """--set with a parameter the setup lacks, or a value it refuses: exit 2, before the recordings are read."""
    assert "has no parameter 'bogus'" in one_line_error(run_cli("eval", str(booking_wav), "--set", "bogus=1"),
                                                        code=2)
    assert "patience" in one_line_error(run_cli("eval", str(booking_wav), "--set", "patience=-1"), code=2)


def _without(monkeypatch: pytest.MonkeyPatch, *modules: str) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, *args: Any, **kwargs: Any) -> Any:
        return None if name in modules else real(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)


def test_plot_without_matplotlib_fails_first(no_work: None, booking_wav: Path, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Named with its extra, before the analysis runs (exit 1: a package to install, not a typo)."""
    _without(monkeypatch, "matplotlib")
    for argv in (["turns", str(booking_wav)], ["eval", str(booking_wav)]):
        line = one_line_error(run_cli(*argv, "--plot", str(tmp_path / "out.png")))
        assert "--plot needs the matplotlib package: pip install 'rxvoice[plot]'" in line
        assert not (tmp_path / "out.png").exists()


def test_each_feature_names_the_extra_it_needs(no_work: None, booking_wav: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """serve without aiohttp (serve), PocketSphinx without its package (stt), an OpenAI model without httpx (openai)."""
    _without(monkeypatch, "aiohttp", "pocketsphinx")
    assert "pip install 'rxvoice[serve]'" in one_line_error(run_cli("serve"))
    line = one_line_error(run_cli("turns", str(booking_wav), "--stt", "pocketsphinx"))
    assert "pip install 'rxvoice[stt]'" in line


def test_an_openai_model_without_httpx_names_the_openai_extra(with_model: Path, monkeypatch: pytest.MonkeyPatch,
                                                              ) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setattr("rxvoice.cli.serve._has_httpx", lambda: False)
    line = one_line_error(run_cli("serve", "--stt", "none", "--tts", "paced"))
    assert "OPENAI_BASE_URL is set" in line and "pip install 'rxvoice[openai]'" in line


def test_help_texts(capsys: pytest.CaptureFixture[str]) -> None:
    """--model names the user cache everywhere; serve's help has no stray markup and no ellipsis."""
    for command in ("turns", "eval", "serve", "demo"):
        text = " ".join(run_cli(command, "--help").out.split())
        assert "$RXVOICE_SMART_TURN_MODEL, then the user cache" in text, command
        assert str(cached_model_path()) in text and "`rxvoice model install`" in text, command
        assert "``" not in text and ", ...)" not in text, command
    serve = " ".join(run_cli("serve", "--help").out.split())
    assert "0.0.0.0 or :: for all" in serve and "rxvoice[serve]" in serve
    assert ":: " not in serve.replace("0.0.0.0 or :: for all", "")  # no reST markup left in the description
