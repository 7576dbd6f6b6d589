"""The suite carries its own fixtures: nothing outside the checkout or the user's cache, one-line failures."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests import support
from tests.support import REPO, booking_paths, data_dir, require_program, smart_turn_model_path


def test_the_fixtures_are_in_the_checkout_and_small() -> None:
    """tests/data holds what the suite reads (16 kHz WAVs, transcripts, labels), under 10 MB, with its README."""
    wav, transcript = booking_paths()
    assert wav.is_file() and transcript.is_file() and (data_dir() / "README.md").is_file()
    assert data_dir().is_relative_to(REPO)
    files = [p for p in data_dir().rglob("*") if p.is_file()]
    assert sum(p.stat().st_size for p in files) < 10_000_000
    assert not [p for p in files if p.suffix == ".onnx"], "model files are never committed"
    assert len(list((data_dir() / "turns").glob("*.wav"))) == 32


def test_no_test_looks_outside_the_checkout() -> None:
    """No absolute machine path, sibling folder or fixture variable in the tests, the package or CI."""
    pattern = re.compile(r"\.\./" + "shared|/wor" + "k/|RXVOICE_" + "SHARED")
    hits = [f"{path.relative_to(REPO)}:{n}" for folder in ("tests", "rxvoice", ".ci")
            for path in sorted((REPO / folder).rglob("*")) if path.is_file() and path.suffix in {".py", ".md", ""}
            for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
            if pattern.search(line)]
    assert hits == []


def test_a_missing_model_fails_in_one_line_naming_the_install_command(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(support, "_model", None)
    monkeypatch.delenv("RXVOICE_SMART_TURN_MODEL", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    with pytest.raises(pytest.fail.Exception) as failed:
        smart_turn_model_path()
    message = str(failed.value)
    assert "\n" not in message and "rxvoice model install" in message and str(tmp_path) in message
    assert failed.value.pytrace is False


def test_the_model_comes_from_the_cli_lookup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same lookup as the CLI: the file installed in the user cache is the one the tests use."""
    cached = tmp_path / "rxvoice" / "smart-turn-v3.2-cpu.onnx"
    cached.parent.mkdir()
    cached.write_bytes(b"stand-in")
    monkeypatch.setattr(support, "_model", None)
    monkeypatch.delenv("RXVOICE_SMART_TURN_MODEL", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert smart_turn_model_path() == cached


def test_a_missing_program_fails_in_one_line_naming_the_debian_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "")
    for program, package in (("espeak-ng", "espeak-ng"), ("chromium", "chromium"),
                             ("chromedriver", "chromium-driver")):
        with pytest.raises(pytest.fail.Exception) as failed:
            require_program(program)
        assert str(failed.value) == f"{program} is not installed: sudo apt-get install {package} (see README.md)"


def test_readme_ci_and_the_tests_name_the_same_system_packages() -> None:
    """README's command 2 line, .ci/run's install and the tests' one-line failures agree on the Debian packages."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    line = next(x for x in readme.splitlines() if x.startswith("# 2. run the tests"))
    listed = set(line.split("apt-get install", 1)[1].strip(" )").split())
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert listed == set(re.findall(r"missing\+=\(([\w-]+)\)", ci)) == set(support.PROGRAM_PACKAGES.values())


def test_ci_runs_the_readme_commands_in_a_fresh_clone() -> None:
    """.ci/run clones HEAD into an empty folder, drops RXVOICE_* and runs README's first shell block as written."""
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert 'git clone -q "$source_repo" "$work/rxvoice"' in ci and "mktemp -d" in ci
    assert "grep '^RXVOICE_'" in ci and 'bash -c "${commands[$i]}"' in ci and "README.md)" in ci
