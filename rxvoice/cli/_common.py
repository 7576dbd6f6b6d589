"""What every command shares: the one-line error, time formatting, the Smart Turn lookup."""

from __future__ import annotations

import os
from pathlib import Path

from ..audio.turn.model import ENV_VAR, cached_model_path, find_model
from ..errors import ModelNotFoundError

__all__ = ["CLIError", "ModelChoice", "choose_model", "secs", "signed"]


class CLIError(Exception):
    """Input the command line cannot use: printed as one line, exit status 1."""


def secs(value: float | None, digits: int = 2) -> str:
    """Seconds for people: ``1.23 s``, or ``-`` when unknown."""
    return "-" if value is None else f"{value:.{digits}f} s"


def signed(value: float, digits: int = 2) -> str:
    """Seconds with their sign: ``+0.30 s``, ``-1.17 s``."""
    return f"{value:+.{digits}f} s"


class ModelChoice:
    """Where the Smart Turn model was found, or why it was not.

    Attributes:
        path: the model file, or None.
        problem: one line saying why there is no model (None when found).
        source: where it was found, in words (``--model``, ``$RXVOICE_SMART_TURN_MODEL``,
            ``the user cache``); None when not found.
    """

    def __init__(self, path: Path | None, problem: str | None, source: str | None = None) -> None:
        self.path = path
        self.problem = problem
        self.source = source


def choose_model(explicit: str | None) -> ModelChoice:
    """Find the Smart Turn model: ``--model``, then ``RXVOICE_SMART_TURN_MODEL``, then the user cache.

    Raises:
        CLIError: ``--model`` was given and names no file (a typo should not
            silently fall back).
    """
    if explicit is not None:
        path = Path(explicit).expanduser()
        if not path.is_file():
            raise CLIError(f"--model {explicit}: no such file")
        return ModelChoice(path, None, "--model")
    try:
        found = find_model()
    except ModelNotFoundError:
        env = os.environ.get(ENV_VAR, "").strip()
        where = f"{ENV_VAR}={env} is not a file" if env else f"{ENV_VAR} unset"
        return ModelChoice(None, f"Smart Turn model not found ({where}; nothing at {cached_model_path()})")
    env = os.environ.get(ENV_VAR, "").strip()
    return ModelChoice(found, None, f"${ENV_VAR}" if env else "the user cache")
