"""What every command shares: the one-line errors, argument checks, time formatting, the Smart Turn lookup."""

from __future__ import annotations

import argparse
import importlib.util
import os
from pathlib import Path

from ..audio.turn.model import ENV_VAR, cached_model_path, find_model
from ..errors import ModelNotFoundError

__all__ = [
    "MODEL_HELP",
    "CLIError",
    "ModelChoice",
    "UsageError",
    "check_plot",
    "choose_model",
    "need_module",
    "port_number",
    "positive_int",
    "secs",
    "signed",
]

MODEL_HELP = (f"the Smart Turn model file (default: ${ENV_VAR}, then the user cache, "
              f"{cached_model_path()}, where `rxvoice model install` puts it)")
"""The ``--model`` help of every command."""


class CLIError(Exception):
    """Input the command line cannot use: printed as one line, exit status 1."""


class UsageError(CLIError):
    """A bad command line that argparse cannot see (option values that do not go together): exit status 2."""


def positive_int(text: str) -> int:
    """An argparse type: a whole number of 1 or more."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not 1 or more")
    return value


def port_number(text: str) -> int:
    """An argparse type: a TCP port, 0..65535 (0: any free port)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{text} is outside 0..65535")
    return value


def need_module(module: str, extra: str, feature: str) -> None:
    """Refuse, before any work, a feature whose optional package is not installed (naming the extra).

    Raises:
        CLIError: ``module`` cannot be imported.
    """
    if importlib.util.find_spec(module) is None:
        raise CLIError(f"{feature} needs the {module} package: pip install 'rxvoice[{extra}]' "
                       f"(from a clone: .venv/bin/pip install -e '.[{extra}]')")


def check_plot(value: str | None, *, folder: bool = False) -> Path | None:
    """``--plot``'s target, checked before any work: matplotlib installed, a ``.png`` name (or, for
    ``folder``, a folder) whose folder exists. Nothing is created.

    Raises:
        UsageError: not a ``.png`` name, or the folder to write into does not exist.
        CLIError: matplotlib is not installed.
    """
    if value is None:
        return None
    path = Path(value).expanduser()
    if folder:
        if path.exists() and not path.is_dir():
            raise UsageError(f"--plot {value}: for a folder, give a folder to write the PNGs into")
        if not path.is_dir():
            raise UsageError(f"--plot {value}: no such folder (create it first)")
    else:
        if path.suffix.lower() != ".png":
            raise UsageError(f"--plot {value}: give a .png file name")
        parent = path.parent
        if not parent.is_dir():
            raise UsageError(f"--plot {value}: no such folder {parent} (create it first)")
    need_module("matplotlib", "plot", "--plot")
    return path


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
