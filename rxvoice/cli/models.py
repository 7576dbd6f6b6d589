"""``rxvoice model where`` and ``rxvoice model install``: the Smart Turn model, found or fetched on request.

``where`` shows the lookup order of :func:`rxvoice.audio.turn.find_model` and
what each place holds (exit 0 when a model is found, 1 when not).

``install`` puts the model in the user cache (or ``--to``), checking its
sha256 against :data:`~rxvoice.audio.turn.MODEL_SHA256`. With ``--from``
it copies it from a local ``pipecat-ai`` wheel, a folder or the ``.onnx``
file. Without, it is a no-op when the model is already there; else it takes
it from an installed ``pipecat`` package; else it asks pip for the published
``pipecat-ai`` 1.14.0 wheel that ships it (``pip download --no-deps`` into a
temporary folder, so pip's own settings, an index mirror or a proxy, apply),
extracts the one file and deletes the rest. That package is never installed
or imported. This is the only command that downloads anything, and only
when asked to; the library itself never does.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, TextIO

from ..audio.turn.model import (
    ENV_VAR,
    MODEL_FILENAME,
    MODEL_SHA256,
    PIPECAT_REQUIREMENT,
    PIPECAT_WHEEL_MEMBER,
    cached_model_path,
    find_model,
    install_model,
    installed_pipecat_model,
    sha256_file,
)
from ..errors import ModelError, ModelNotFoundError
from ._common import CLIError

__all__ = ["add_parser"]


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    """Register ``model where`` and ``model install``."""
    p = sub.add_parser("model", help="find or install the Smart Turn model",
                       description="The Smart Turn v3.2 model: where rxvoice looks for it, and installing it.")
    actions = p.add_subparsers(dest="action", metavar="{where,install}")
    actions.required = True
    where = actions.add_parser("where", help="where rxvoice looks for the model, and what it finds",
                               description="Show the model lookup order and what each place holds.")
    where.add_argument("--verify", action="store_true", help="also check the found file's sha256")
    where.set_defaults(run=run_where)
    install = actions.add_parser(
        "install", help="put the model in the user cache (fetched with pip unless found locally)",
        description=f"Put the Smart Turn model in the user cache, its sha256 checked. Already there: nothing "
                    f"to do. Else from an installed pipecat package, else from the {PIPECAT_REQUIREMENT} wheel "
                    "that pip downloads into a temporary folder (never installed or imported; pip's index "
                    "settings apply). --from takes a local wheel, folder or .onnx file instead.",
    )
    install.add_argument("--from", dest="source", metavar="PATH",
                         help="a pipecat-ai .whl, a folder holding the model, or the .onnx file "
                              "(default: the cache if it holds it, an installed pipecat package, or pip)")
    install.add_argument("--to", dest="destination", metavar="PATH",
                         help=f"where to write it (default: {cached_model_path()})")
    install.add_argument("--no-verify", action="store_true",
                         help="install a file whose sha256 is not Smart Turn v3.2's (another build, on purpose)")
    install.set_defaults(run=run_install)


def run_where(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Print the lookup order and the model in use."""
    env = os.environ.get(ENV_VAR, "").strip()
    cache = cached_model_path()
    print(f"Smart Turn v3.2 ({MODEL_FILENAME}) is looked for, in order, at:", file=out)
    print("  1. a path given to the program (--model, model_path=)", file=out)
    if env:
        state = "found" if Path(env).expanduser().is_file() else "NOT A FILE"
        print(f"  2. ${ENV_VAR}: {env} ({state})", file=out)
    else:
        print(f"  2. ${ENV_VAR}: unset", file=out)
    print(f"  3. the user cache: {cache} ({'found' if cache.is_file() else 'missing'})", file=out)
    try:
        path = find_model()
    except ModelNotFoundError:
        print("No model found. Install it (pip fetches the wheel that ships it; nothing is installed):", file=out)
        print("  rxvoice model install", file=out)
        print("Or by hand, from a wheel you downloaded:", file=out)
        print(f"  pip download --no-deps {PIPECAT_REQUIREMENT} -d DIR   # holds it as {PIPECAT_WHEEL_MEMBER}",
              file=out)
        print("  rxvoice model install --from DIR/pipecat_ai-1.14.0-py3-none-any.whl", file=out)
        return 1
    print(f"In use: {path}", file=out)
    if args.verify:
        digest = sha256_file(path)
        if digest != MODEL_SHA256:
            raise CLIError(f"{path} has sha256 {digest}, not Smart Turn v3.2's {MODEL_SHA256}")
        print("sha256 ok", file=out)
    return 0


def run_install(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Install the model and say where it went (and where it came from)."""
    verify = not args.no_verify
    target = Path(args.destination).expanduser() if args.destination is not None else cached_model_path()
    if args.source is not None:
        if not Path(args.source).expanduser().exists():
            raise CLIError(f"--from {args.source}: no such file or folder")
        path = _install(args.source, target, verify)
        origin = f"from {args.source}"
    elif verify and target.is_file() and sha256_file(target) == MODEL_SHA256:
        print(f"already installed: {target} (sha256 ok); nothing to do", file=out)
        _say_how_it_is_found(target, args.destination is not None, out)
        return 0
    elif (packaged := installed_pipecat_model()) is not None:
        path = _install(packaged, target, verify)
        origin = "from the installed pipecat package"
    else:
        path = _download_and_install(target, verify, err)
        origin = f"from the {PIPECAT_REQUIREMENT} wheel (downloaded by pip, then deleted)"
    check = "sha256 not checked" if args.no_verify else "sha256 ok"
    print(f"installed {path} ({check}), {origin}", file=out)
    _say_how_it_is_found(path, args.destination is not None, out)
    return 0


def _install(source: str | os.PathLike[str], target: Path, verify: bool) -> Path:
    try:
        return install_model(source, destination=target, verify=verify)
    except (ModelNotFoundError, ModelError) as exc:
        raise CLIError(str(exc).replace("pass verify=False", "pass --no-verify")) from None
    except OSError as exc:
        raise CLIError(f"cannot install the model: {exc.strerror or exc}") from None


def _download_and_install(target: Path, verify: bool, err: TextIO) -> Path:
    """``pip download --no-deps`` the wheel into a temporary folder and extract the model from it."""
    if importlib.util.find_spec("pip") is None:
        raise CLIError(
            f"this Python has no pip to fetch the model with; download the {PIPECAT_REQUIREMENT} wheel "
            "elsewhere and run `rxvoice model install --from <the .whl>`"
        )
    print(f"note: fetching {PIPECAT_REQUIREMENT} with pip (one 12 MB wheel, not installed) for {MODEL_FILENAME} ...",
          file=err, flush=True)
    with tempfile.TemporaryDirectory(prefix="rxvoice-model-") as folder:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                   "--disable-pip-version-check", "--no-input", "-d", folder, PIPECAT_REQUIREMENT]
        done = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            said = [line.strip() for line in (done.stderr + done.stdout).splitlines() if line.strip()]
            errors = [line for line in said if line.startswith("ERROR")] or said[-2:]
            raise CLIError(
                f"pip could not download {PIPECAT_REQUIREMENT} ({' '.join(errors) or f'exit {done.returncode}'}); "
                "check the network or pip's index settings, or download the wheel elsewhere and run "
                "`rxvoice model install --from <the .whl>`"
            )
        wheels = sorted(Path(folder).glob("pipecat_ai-*.whl"))
        if not wheels:
            raise CLIError(f"pip reported success but left no pipecat_ai wheel in {folder}")
        return _install(wheels[0], target, verify)


def _say_how_it_is_found(path: Path, chosen: bool, out: TextIO) -> None:
    if chosen and path.resolve() != cached_model_path().resolve():
        print(f"rxvoice finds it there with {ENV_VAR}={path} or --model {path}", file=out)
        return
    env = os.environ.get(ENV_VAR, "").strip()
    if env and Path(env).expanduser().resolve() != path.resolve():
        print(f"note: {ENV_VAR}={env} is set and is looked at first; unset it to use {path}", file=out)
