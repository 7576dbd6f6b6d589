"""Finding the Smart Turn v3.2 model file, and installing it from Pipecat.

The model (BSD-2-Clause, by the Pipecat project) is not on PyPI on its own
and rxvoice never downloads anything at run time, so it is looked for, in
order:

1. the path the caller passes (``model_path=``);
2. the ``RXVOICE_SMART_TURN_MODEL`` environment variable;
3. the user cache: ``$XDG_CACHE_HOME/rxvoice/smart-turn-v3.2-cpu.onnx``
   (``~/.cache/rxvoice/...`` when ``XDG_CACHE_HOME`` is unset).

When none holds it, :class:`~rxvoice.errors.ModelNotFoundError` says where to
put it and how to get it. :func:`install_model` copies it into the cache from
a ``pipecat-ai`` wheel, an installed ``pipecat`` package or a loose file, and
checks its sha256.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import tempfile
import zipfile
from pathlib import Path

from ...errors import ModelError, ModelNotFoundError

__all__ = [
    "ENV_VAR",
    "MODEL_FILENAME",
    "MODEL_SHA256",
    "PIPECAT_REQUIREMENT",
    "PIPECAT_WHEEL_MEMBER",
    "cache_dir",
    "cached_model_path",
    "find_model",
    "install_model",
    "installed_pipecat_model",
    "sha256_file",
]

MODEL_FILENAME = "smart-turn-v3.2-cpu.onnx"
MODEL_SHA256 = "2bb026316b14a660486a75b1733cd3fbab8c2fd0314dc9af7be49f8cca967e4f"
ENV_VAR = "RXVOICE_SMART_TURN_MODEL"
PIPECAT_REQUIREMENT = "pipecat-ai==1.14.0"
"""The published wheel that ships this exact build of the model (``rxvoice model install`` asks pip for it)."""
PIPECAT_WHEEL_MEMBER = f"pipecat/audio/turn/smart_turn/data/{MODEL_FILENAME}"
_PACKAGE_MEMBER = f"audio/turn/smart_turn/data/{MODEL_FILENAME}"


def cache_dir() -> Path:
    """rxvoice's user cache folder (``$XDG_CACHE_HOME/rxvoice`` or ``~/.cache/rxvoice``)."""
    base = os.environ.get("XDG_CACHE_HOME", "").strip()
    root = Path(base) if base else Path.home() / ".cache"
    return root / "rxvoice"


def cached_model_path() -> Path:
    """Where the cached model belongs."""
    return cache_dir() / MODEL_FILENAME


def _how_to_get(destination: Path) -> str:
    return (
        f"Run `rxvoice model install`: it asks pip for the {PIPECAT_REQUIREMENT} wheel that ships the model, "
        f"checks its sha256 and puts {MODEL_FILENAME} at {destination} (or pass model_path=..., or set "
        f"{ENV_VAR}). By hand: `pip download --no-deps {PIPECAT_REQUIREMENT}` and then "
        "rxvoice.audio.turn.install_model('<the .whl>') copies it there (the wheel holds it as "
        f"{PIPECAT_WHEEL_MEMBER}); with pipecat-ai installed, install_model() with no argument does. It is "
        f"also published in the pipecat-ai/smart-turn-v3 repository on Hugging Face. sha256 {MODEL_SHA256}."
    )


def find_model(model_path: str | os.PathLike[str] | None = None) -> Path:
    """Locate the Smart Turn model: explicit path, then the env variable, then the cache.

    Raises:
        ModelNotFoundError: the file is not where it was looked for; the message
            says where to put it and how to get it.
    """
    if model_path is not None:
        path = Path(model_path).expanduser()
        if path.is_file():
            return path
        raise ModelNotFoundError(
            f"Smart Turn model not found at {path} (given as model_path). "
            + _how_to_get(cached_model_path())
        )
    env = os.environ.get(ENV_VAR, "").strip()
    if env:
        path = Path(env).expanduser()
        if path.is_file():
            return path
        raise ModelNotFoundError(
            f"Smart Turn model not found at {path} (from {ENV_VAR}). "
            + _how_to_get(cached_model_path())
        )
    path = cached_model_path()
    if path.is_file():
        return path
    raise ModelNotFoundError(
        f"Smart Turn model not found: no model_path given, {ENV_VAR} unset, nothing at "
        f"{path}. " + _how_to_get(path)
    )


def sha256_file(path: str | os.PathLike[str]) -> str:
    """The hex sha256 of a file."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def installed_pipecat_model() -> Path | None:
    """The model inside an installed ``pipecat`` package, found without importing it; None when there is none."""
    try:
        return _installed_pipecat_model()
    except ModelNotFoundError:
        return None


def _installed_pipecat_model() -> Path:
    spec = importlib.util.find_spec("pipecat")  # locates without importing it
    if spec is None or not spec.submodule_search_locations:
        raise ModelNotFoundError(
            "no source given and pipecat-ai is not installed; pass the path of a "
            "pipecat-ai wheel, a pipecat package folder or the .onnx file. "
            + _how_to_get(cached_model_path())
        )
    for location in spec.submodule_search_locations:
        candidate = Path(location) / _PACKAGE_MEMBER
        if candidate.is_file():
            return candidate
    raise ModelNotFoundError(
        f"pipecat is installed but has no {_PACKAGE_MEMBER} (a pipecat-ai version without "
        "Smart Turn v3.2?). " + _how_to_get(cached_model_path())
    )


def _source_file(source: Path) -> Path | None:
    """The model inside a folder or the file itself; None for a wheel."""
    if source.is_dir():
        for relative in (MODEL_FILENAME, PIPECAT_WHEEL_MEMBER, _PACKAGE_MEMBER,
                         f"smart_turn/data/{MODEL_FILENAME}", f"data/{MODEL_FILENAME}"):
            candidate = source / relative
            if candidate.is_file():
                return candidate
        raise ModelNotFoundError(f"no {MODEL_FILENAME} found under {source}")
    if not source.is_file():
        raise ModelNotFoundError(f"{source} does not exist")
    if zipfile.is_zipfile(source):
        return None
    return source


def install_model(
    source: str | os.PathLike[str] | None = None,
    *,
    destination: str | os.PathLike[str] | None = None,
    verify: bool = True,
) -> Path:
    """Copy the Smart Turn model into the cache (or ``destination``) from local files.

    Args:
        source: a ``pipecat-ai`` wheel (``.whl``), a folder holding the model
            (a ``site-packages``, a ``pipecat`` package folder, ...), or the
            ``.onnx`` file itself. None: the installed ``pipecat`` package.
        destination: where to write it (default :func:`cached_model_path`).
        verify: check the sha256 against :data:`MODEL_SHA256` first.

    Returns:
        The installed path.

    Raises:
        ModelNotFoundError: the source does not hold the model.
        ModelError: the sha256 does not match (nothing is written).
    """
    target = Path(destination).expanduser() if destination is not None else cached_model_path()
    origin = _installed_pipecat_model() if source is None else Path(source).expanduser()
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temp_name = tempfile.mkstemp(prefix=".smart-turn-", dir=target.parent)
    temp = Path(temp_name)
    try:
        with os.fdopen(handle, "wb") as out:
            loose = _source_file(origin)
            if loose is not None:
                with open(loose, "rb") as src:
                    shutil.copyfileobj(src, out)
            else:
                with zipfile.ZipFile(origin) as wheel:
                    try:
                        member = wheel.getinfo(PIPECAT_WHEEL_MEMBER)
                    except KeyError as exc:
                        raise ModelNotFoundError(
                            f"{origin} has no {PIPECAT_WHEEL_MEMBER}; is it a pipecat-ai wheel "
                            "of version 1.x?"
                        ) from exc
                    with wheel.open(member) as src:
                        shutil.copyfileobj(src, out)
        if verify:
            digest = sha256_file(temp)
            if digest != MODEL_SHA256:
                raise ModelError(
                    f"the model from {origin} has sha256 {digest}, expected {MODEL_SHA256}; "
                    "pass verify=False to install another Smart Turn build on purpose"
                )
        os.chmod(temp, 0o644)  # mkstemp's 0600 would hide a shared model from other users
        os.replace(temp, target)
    finally:
        temp.unlink(missing_ok=True)
    return target
