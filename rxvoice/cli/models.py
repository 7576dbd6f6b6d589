"""``rxvoice model where`` and ``rxvoice model install``: the Smart Turn model, without run-time downloads.

``where`` shows the lookup order of :func:`rxvoice.audio.turn.find_model` and
what each place holds (exit 0 when a model is found, 1 when not).
``install`` wraps :func:`rxvoice.audio.turn.install_model`: it copies the
model into the user cache (or ``--to``) from a local ``pipecat-ai`` wheel, a
folder, the ``.onnx`` file, or (no ``--from``) the installed ``pipecat``
package, after checking its sha256.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any, TextIO

from ..audio.turn.model import (
    ENV_VAR,
    MODEL_FILENAME,
    MODEL_SHA256,
    PIPECAT_WHEEL_MEMBER,
    cached_model_path,
    find_model,
    install_model,
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
        "install", help="copy the model into the user cache from local files",
        description="Copy the Smart Turn model into the user cache (nothing is downloaded). Get a pipecat-ai "
                    "wheel with `pip download --no-deps pipecat-ai==1.14.0`.",
    )
    install.add_argument("--from", dest="source", metavar="PATH",
                         help="a pipecat-ai .whl, a folder holding the model, or the .onnx file "
                              "(default: the installed pipecat package)")
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
        print("No model found. Install it without downloading at run time:", file=out)
        print("  pip download --no-deps pipecat-ai==1.14.0 -d /tmp/pc   # a wheel holding it as", file=out)
        print(f"      {PIPECAT_WHEEL_MEMBER}", file=out)
        print("  rxvoice model install --from /tmp/pc/pipecat_ai-1.14.0-py3-none-any.whl", file=out)
        return 1
    print(f"In use: {path}", file=out)
    if args.verify:
        digest = sha256_file(path)
        if digest != MODEL_SHA256:
            raise CLIError(f"{path} has sha256 {digest}, not Smart Turn v3.2's {MODEL_SHA256}")
        print("sha256 ok", file=out)
    return 0


def run_install(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Install the model and say where it went."""
    if args.source is not None and not Path(args.source).expanduser().exists():
        raise CLIError(f"--from {args.source}: no such file or folder")
    try:
        path = install_model(args.source, destination=args.destination, verify=not args.no_verify)
    except (ModelNotFoundError, ModelError) as exc:
        raise CLIError(str(exc).replace("pass verify=False", "pass --no-verify")) from None
    except OSError as exc:
        raise CLIError(f"cannot install the model: {exc.strerror or exc}") from None
    check = "sha256 not checked" if args.no_verify else "sha256 ok"
    print(f"installed {path} ({check})", file=out)
    if args.destination is not None and Path(args.destination).expanduser().resolve() != cached_model_path().resolve():
        print(f"rxvoice finds it there with {ENV_VAR}={path} or --model {path}", file=out)
    return 0
