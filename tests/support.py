"""What tests in several folders need: where the shared fixtures are, and importing a script as a module.

The speech fixtures and the Smart Turn model live beside the repository
(``../shared``), never in it; examples and benchmarks are scripts, not
packages, so their tests import them by path.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

from rxvoice.audio.turn import ENV_VAR, cached_model_path

REPO = Path(__file__).resolve().parents[1]


def shared_dir() -> Path:
    """The shared fixtures folder (``RXVOICE_SHARED``, else ``../shared`` next to the repo, else /work/shared)."""
    for candidate in (os.environ.get("RXVOICE_SHARED", "").strip(), REPO.parent / "shared", Path("/work/shared")):
        if candidate and (Path(candidate) / "audio").is_dir():
            return Path(candidate)
    raise RuntimeError("the shared fixtures (audio, models) were not found; set RXVOICE_SHARED")


def smart_turn_model_path() -> Path:
    """The Smart Turn v3.2 model: ``$RXVOICE_SMART_TURN_MODEL``, else ``models/`` of the shared folder.

    Without either, the user cache that ``rxvoice model install`` fills (so the README's two
    commands work on a machine without the shared folder). Nothing is ever downloaded here.
    """
    env = os.environ.get(ENV_VAR, "").strip()
    if env:
        path = Path(env)
    else:
        try:
            path = shared_dir() / "models" / "smart-turn-v3.2-cpu.onnx"
        except RuntimeError:
            path = cached_model_path()
        if not path.is_file() and cached_model_path().is_file():
            path = cached_model_path()
    if not path.is_file():
        raise RuntimeError(
            f"Smart Turn model not found at {path}: set {ENV_VAR} or put "
            "smart-turn-v3.2-cpu.onnx in ../shared/models/ (see docs/audio.md)"
        )
    return path


def load_script(path: Path, key: str) -> ModuleType:
    """Import the script at ``path`` as module ``key`` (registered, so its dataclasses and pickling work)."""
    spec = importlib.util.spec_from_file_location(key, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[key] = module
    spec.loader.exec_module(module)
    return module


def load_example(stem: str) -> ModuleType:
    """Import ``examples/<stem>.py`` afresh."""
    return load_script(REPO / "examples" / f"{stem}.py", f"rxvoice_example_{stem}")
