"""Finding and installing the Smart Turn model; the not-found message."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from rxvoice.audio.turn import (
    ENV_VAR,
    MODEL_FILENAME,
    MODEL_SHA256,
    cache_dir,
    find_model,
    install_model,
    sha256_file,
)
from rxvoice.audio.turn import model as lookup
from rxvoice.errors import ModelError, ModelNotFoundError


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "rxvoice" / MODEL_FILENAME


def test_not_found_message_says_where_and_how(clean_env: Path) -> None:
    with pytest.raises(ModelNotFoundError) as info:
        find_model()
    message = str(info.value)
    assert str(clean_env) in message
    assert ENV_VAR in message and "model_path" in message
    assert "pipecat-ai" in message and lookup.PIPECAT_WHEEL_MEMBER in message
    assert "Hugging Face" in message and "install_model" in message
    assert isinstance(info.value, FileNotFoundError)


def test_home_cache_when_xdg_unset(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert cache_dir() == tmp_path / ".cache" / "rxvoice"


def test_lookup_order(clean_env: Path, smart_turn_model: Path, monkeypatch: pytest.MonkeyPatch,
                      tmp_path: Path) -> None:
    assert find_model(smart_turn_model) == smart_turn_model
    with pytest.raises(ModelNotFoundError, match="given as model_path"):
        find_model(tmp_path / "nope.onnx")
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "missing.onnx"))
    with pytest.raises(ModelNotFoundError, match=ENV_VAR):
        find_model()
    monkeypatch.setenv(ENV_VAR, str(smart_turn_model))
    assert find_model() == smart_turn_model
    monkeypatch.delenv(ENV_VAR)
    clean_env.parent.mkdir(parents=True)
    clean_env.write_bytes(b"x")
    assert find_model() == clean_env


def test_install_from_file_wheel_and_folder(
    clean_env: Path, smart_turn_model: Path, tmp_path: Path
) -> None:
    assert install_model(smart_turn_model) == clean_env
    assert sha256_file(clean_env) == MODEL_SHA256
    wheel = tmp_path / "pipecat_ai-1.14.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.write(smart_turn_model, lookup.PIPECAT_WHEEL_MEMBER)
    target = tmp_path / "out" / "m.onnx"
    assert install_model(wheel, destination=target) == target
    assert sha256_file(target) == MODEL_SHA256
    site = tmp_path / "site-packages"
    (site / "pipecat/audio/turn/smart_turn/data").mkdir(parents=True)
    (site / lookup.PIPECAT_WHEEL_MEMBER).write_bytes(smart_turn_model.read_bytes())
    assert sha256_file(install_model(site, destination=tmp_path / "s.onnx")) == MODEL_SHA256


def test_install_refuses_wrong_files(clean_env: Path, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "fake.onnx"
    fake.write_bytes(b"not the model")
    with pytest.raises(ModelError, match="sha256"):
        install_model(fake)
    assert not clean_env.exists() and not list(clean_env.parent.glob(".smart-turn-*"))
    assert install_model(fake, verify=False).read_bytes() == b"not the model"
    empty_wheel = tmp_path / "other.whl"
    with zipfile.ZipFile(empty_wheel, "w") as z:
        z.writestr("other/file.txt", "x")
    with pytest.raises(ModelNotFoundError, match="pipecat-ai wheel"):
        install_model(empty_wheel)
    with pytest.raises(ModelNotFoundError):
        install_model(tmp_path / "does-not-exist.whl")
    with pytest.raises(ModelNotFoundError):
        install_model(tmp_path)  # a folder without the model
    monkeypatch.setattr(lookup.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ModelNotFoundError, match="not installed"):
        install_model()
