"""`rxvoice model where` and `rxvoice model install`: the Smart Turn model in the cache, nothing downloaded."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from rxvoice.audio.turn import ENV_VAR, MODEL_FILENAME, find_model
from rxvoice.audio.turn.model import PIPECAT_WHEEL_MEMBER

from .conftest import run_cli
from .test_bad_input import one_line_error


def test_where_without_a_model_says_how_to_get_it(without_model: Path) -> None:
    """Nothing found: the lookup order, each place's state, the install commands, exit 1."""
    r = run_cli("model", "where")
    assert r.code == 1
    assert f"2. ${ENV_VAR}: unset" in r.out
    assert f"3. the user cache: {without_model / 'rxvoice' / MODEL_FILENAME} (missing)" in r.out
    assert "pip download --no-deps pipecat-ai==1.14.0" in r.out and "rxvoice model install --from" in r.out


def test_where_with_the_variable(with_model: Path) -> None:
    """Found through the variable: which file is in use; --verify checks its sha256."""
    r = run_cli("model", "where", "--verify")
    assert r.code == 0, r.err
    assert f"${ENV_VAR}: {with_model} (found)" in r.out
    assert f"In use: {with_model}" in r.out and "sha256 ok" in r.out


def test_where_with_a_variable_naming_nothing(without_model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A variable pointing nowhere is shown as such (and nothing is found)."""
    monkeypatch.setenv(ENV_VAR, "/nowhere/model.onnx")
    r = run_cli("model", "where")
    assert r.code == 1 and "/nowhere/model.onnx (NOT A FILE)" in r.out


def test_install_from_the_onnx_file_then_found_in_the_cache(without_model: Path, smart_turn_model: Path) -> None:
    """--from the .onnx: copied into the user cache, sha256 checked; `where` and the demo then find it."""
    r = run_cli("model", "install", "--from", str(smart_turn_model))
    assert r.code == 0, r.err
    cached = without_model / "rxvoice" / MODEL_FILENAME
    assert r.out.strip() == f"installed {cached} (sha256 ok)"
    assert find_model() == cached
    assert f"In use: {cached}" in run_cli("model", "where").out


def test_install_from_a_pipecat_wheel_to_a_chosen_place(without_model: Path, smart_turn_model: Path,
                                                        tmp_path: Path) -> None:
    """--from a pipecat-ai wheel, --to a path: extracted there, and told how to point rxvoice at it."""
    wheel = tmp_path / "pipecat_ai-1.14.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.write(smart_turn_model, PIPECAT_WHEEL_MEMBER)
    target = tmp_path / "models" / "st.onnx"
    r = run_cli("model", "install", "--from", str(wheel), "--to", str(target))
    assert r.code == 0, r.err
    assert target.read_bytes()[:64] == smart_turn_model.read_bytes()[:64]
    assert f"{ENV_VAR}={target}" in r.out


def test_install_refuses_the_wrong_file(without_model: Path, tmp_path: Path) -> None:
    """A file that is not the model: the sha256 mismatch in one line, naming --no-verify; nothing written."""
    other = tmp_path / "other.onnx"
    other.write_bytes(b"not the model")
    line = one_line_error(run_cli("model", "install", "--from", str(other)))
    assert "has sha256" in line and "pass --no-verify" in line
    assert not (without_model / "rxvoice" / MODEL_FILENAME).exists()
    r = run_cli("model", "install", "--from", str(other), "--no-verify")
    assert r.code == 0 and "sha256 not checked" in r.out


def test_install_problems_are_one_line(without_model: Path, tmp_path: Path) -> None:
    """A missing source, a wheel without the model, a folder without it."""
    assert "no such file or folder" in one_line_error(run_cli("model", "install", "--from", str(tmp_path / "x")))
    wheel = tmp_path / "pipecat_ai-0.0.1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("pipecat/__init__.py", "")
    assert "is it a pipecat-ai wheel" in one_line_error(run_cli("model", "install", "--from", str(wheel)))
    (tmp_path / "empty").mkdir()
    assert f"no {MODEL_FILENAME} found" in one_line_error(
        run_cli("model", "install", "--from", str(tmp_path / "empty"))
    )


def test_install_without_source_needs_pipecat(without_model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No --from and no pipecat installed: says what to pass instead."""
    monkeypatch.setattr("importlib.util.find_spec", lambda name, *a: None)
    line = one_line_error(run_cli("model", "install"))
    assert "pipecat-ai is not installed" in line
