"""``rxvoice serve``: talk to a bot in the browser and watch its turn decisions being made, live.

A local web app (aiohttp: one well-kept library that is the HTTP server, the
WebSocket server and, for the tests and benchmarks, the client too). The page
captures the microphone (getUserMedia and an AudioWorklet, 16 kHz PCM over a
WebSocket); the server runs, per connection::

    VAD (Silero) → STT → pair.user() → model → TTS → WebSocket output → pair.assistant()

with the stop strategy ``rxvoice turns --stop`` builds (Smart Turn or a speech
timeout), the scripted model (or an OpenAI-compatible one when
``OPENAI_BASE_URL`` is set), and sends the page what it draws: input level,
VAD confidence, each Smart Turn verdict, turn starts and ends with their
reason and latency, interim and final words, the bot's words as spoken and
the conversation. The bot's audio plays in the page; speaking over it
interrupts it.

This module is the command (its options, checked, and the loop that
serves); :mod:`.serve_options` holds what a session runs,
:mod:`.serve_stack` builds one connection's pipeline, :mod:`.serve_page`
tells the page what happens, and :mod:`.server` runs the processes.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
from pathlib import Path
from typing import Any, TextIO

from ..errors import ConfigurationError
from ..services.stt import pocketsphinx_available
from ._common import MODEL_HELP, CLIError, need_module, port_number, positive_int
from .serve_options import STT_CHOICES, TTS_CHOICES, ServeOptions
from .serve_stack import make_app, reply_to
from .server import (
    INFERENCE_CHOICES,
    REUSE_PORT,
    listen,
    loopback,
    self_signed_certificate,
    serve_forever,
    tls_context,
)
from .setups import DEFAULT_SETUP, FALLBACK_SETUP, setup_names, stop_help
from .transcribe import default_stt, offline_stt
from .turns import make_setup, seconds_between

__all__ = ["STT_CHOICES", "TTS_CHOICES", "ServeOptions", "add_parser", "make_app", "reply_to", "run"]

log = logging.getLogger("rxvoice.cli.serve")

DESCRIPTION = (
    "Talk to a bot in the browser and watch its turn decisions live. A local page captures the microphone; "
    "per connection the server runs the Silero VAD, speech-to-text, the user aggregator with the stop strategy "
    "of --stop, the scripted model (or an OpenAI-compatible one when OPENAI_BASE_URL is set), text-to-speech "
    "and the assistant aggregator, and the page draws the input level, the VAD confidence, each Smart Turn "
    "verdict, every turn start and end with its reason and latency, the words and the conversation. Needs the "
    "serve extra (pip install 'rxvoice[serve]'); Whisper or PocketSphinx words need the stt extra."
)



# -- the command -------------------------------------------------------------------------------------


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    """Register ``serve``."""
    p = sub.add_parser("serve", help="talk to a bot in the browser and watch its turn decisions live",
                       description=DESCRIPTION)
    p.add_argument("--host", type=_host, default="127.0.0.1",
                   help="the address to listen on (default 127.0.0.1: this machine only; 0.0.0.0 or :: for all)")
    p.add_argument("--port", type=port_number, default=8765, help="the port (default 8765; 0: any free port)")
    p.add_argument("--stt", choices=STT_CHOICES,
                   help="speech-to-text (default whisper when it and its model are installed, else pocketsphinx "
                        "when installed, else none: placeholders)")
    p.add_argument("--tts", choices=TTS_CHOICES,
                   help="text-to-speech (default espeak when espeak-ng is installed, else paced words)")
    p.add_argument("--stop", choices=setup_names(),
                   help=stop_help(f"{DEFAULT_SETUP} when the Smart Turn model is found, else {FALLBACK_SETUP}"))
    p.add_argument("--speech-timeout", type=seconds_between(0.0, 10.0), default=0.6, metavar="S",
                   help="silence after the VAD stop that ends a turn with --stop speech-timeout (default 0.6)")
    p.add_argument("--model", metavar="PATH", help=MODEL_HELP)
    p.add_argument("--allow-origin", action="append", default=[], metavar="URL",
                   help="another page allowed to connect (http://host:port); repeatable")
    p.add_argument("--speculate", action="store_true",
                   help="speculative replies: ask the model when the end is likely and hold the answer (faster "
                        "answers, some requests paid for nothing)")
    p.add_argument("--backchannels", action="store_true",
                   help="a short 'mm-hmm' or 'yeah' while the bot speaks does not interrupt it")
    p.add_argument("--backchannel-pause", choices=("on", "off"), default="on",
                   help="with --backchannels: the bot pauses the moment you speak over it and resumes after a "
                        "continuer (on, the default: a barge-in stops it as fast as without backchannels), or "
                        "talks on until your words decide (off)")
    p.add_argument("--classifier", choices=("rules", "model"),
                   help="ask a turn-completion classifier (the completion rules, or the OPENAI_BASE_URL model) "
                        "before each turn end: complete, short pause or long pause")
    p.add_argument("--first-token-delay", type=seconds_between(0.0, 10.0), default=0.2, metavar="S",
                   help="the scripted model's seconds to its first token (default 0.2; 0.5 makes speculation "
                        "easy to hear)")
    _add_server_arguments(p)
    p.set_defaults(run=run)


def _add_server_arguments(p: argparse.ArgumentParser) -> None:
    """The server's own options: capacity, processes, inference, access, TLS."""
    p.add_argument("--max-sessions", type=positive_int, metavar="N",
                   help="sessions at once; more callers are told 'server full' (default: what this machine's "
                        "cores carry with the chosen --stt, measured by benchmarks/serve.py)")
    p.add_argument("--workers", type=positive_int, default=1, metavar="N",
                   help="server processes sharing the port, e.g. one per core (default 1)")
    p.add_argument("--inference", choices=INFERENCE_CHOICES, default="in-process",
                   help="where Smart Turn (and, with --stt pocketsphinx, the recognizer) runs: in this process "
                        "(default), a local process pool, or a Ray Serve deployment")
    p.add_argument("--inference-processes", type=positive_int, default=1, metavar="N",
                   help="processes of --inference process-pool (default 1)")
    p.add_argument("--ray-address", metavar="HOST:PORT",
                   help="the Ray cluster for --inference ray (default: start a local Ray instance)")
    p.add_argument("--inference-timeout", type=seconds_between(0.01, 60.0), default=1.0, metavar="S",
                   help="seconds a Smart Turn verdict is waited for before the turn is decided without it "
                        "(default 1.0)")
    p.add_argument("--token", metavar="TOKEN",
                   help="the access token the page needs (?token=...); off 127.0.0.1 one is made up and printed "
                        "when not given")
    p.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"),
                   help="serve https with this certificate and key (PEM): browsers give a page the microphone "
                        "only over https, or on localhost")
    p.add_argument("--self-signed", action="store_true",
                   help="serve https with a self-signed certificate made for this host (the browser warns once)")


def options_from(args: argparse.Namespace, err: TextIO) -> ServeOptions:
    """The options the command line asks for, with defaults filled in from what is installed."""
    import shutil

    need_module("aiohttp", "serve", "rxvoice serve")
    setup = make_setup(argparse.Namespace(  # the builder `rxvoice turns` uses: the same default and errors
        model=args.model, stop=args.stop, vad="silero", stt_delay=0.3, model_latency=0.05,
        speech_timeout=args.speech_timeout, tail=4.0), err)
    stt = args.stt
    if stt is None:
        stt = default_stt()
        if stt == "none":
            print("note: no offline STT is installed (pip install 'rxvoice[stt]', then `rxvoice model install`): "
                  "utterances become placeholders", file=err)
    elif stt == "pocketsphinx" and not pocketsphinx_available():
        raise CLIError("--stt pocketsphinx needs the pocketsphinx package: pip install 'rxvoice[stt]'")
    if stt == "whisper":
        offline_stt("whisper")  # the package and the model checked now, in one line, not at the first connection
    tts = args.tts
    if tts is None:
        tts = "espeak" if shutil.which("espeak-ng") else "paced"
        if tts == "paced":
            print("note: espeak-ng is not installed (Debian package espeak-ng): the bot's words are shown, "
                  "not spoken", file=err)
    elif tts == "espeak" and not shutil.which("espeak-ng"):
        raise CLIError("--tts espeak needs the espeak-ng program: install the Debian package espeak-ng")
    llm = "openai" if os.environ.get("OPENAI_BASE_URL") else "scripted"
    if (stt == "openai" or tts == "openai" or llm == "openai") and not _has_httpx():
        why = "OPENAI_BASE_URL is set: the OpenAI-compatible model" if llm == "openai" else "--stt/--tts openai"
        raise CLIError(f"{why} needs the httpx package: pip install 'rxvoice[openai]' "
                       "(from a clone: .venv/bin/pip install -e '.[openai]')")
    classifier = getattr(args, "classifier", None)
    if classifier == "model" and llm != "openai":
        raise CLIError("--classifier model asks the OpenAI-compatible model: set OPENAI_BASE_URL (or use "
                       "--classifier rules)")
    talk: dict[str, Any] = {"speculate": bool(getattr(args, "speculate", False)),
            "backchannels": bool(getattr(args, "backchannels", False)), "classifier": classifier,
            "backchannel_pause": getattr(args, "backchannel_pause", "on") != "off",
            "first_token_delay": float(getattr(args, "first_token_delay", 0.2))}
    return ServeOptions(stt=stt, tts=tts, stop=setup.stop, model=setup.model, speech_timeout=setup.speech_timeout,
                        llm=llm, allowed_origins=tuple(args.allow_origin), **_server_options(args, stt, err), **talk)


def _server_options(args: argparse.Namespace, stt: str, err: TextIO) -> dict[str, Any]:
    """The server's own options, checked; off loopback a token is made up when none is given."""
    from ..transports import new_token

    timeout = getattr(args, "inference_timeout", 1.0)
    token = getattr(args, "token", None)
    if token is not None and len(token) < 8:
        raise CLIError("--token: give at least 8 characters (or leave it out: one is made up)")
    if token is None and not loopback(args.host):
        token = new_token()
    tls: tuple[Path, Path] | None = None
    if getattr(args, "tls", None):
        cert, key = (Path(p).expanduser() for p in args.tls)
        for path in (cert, key):
            if not path.is_file():
                raise CLIError(f"--tls: {path} is not a file")
        tls_context(cert, key)  # fails now, with a one-line error, rather than in every worker
        tls = (cert, key)
    elif getattr(args, "self_signed", False):
        tls = self_signed_certificate(args.host)
        print(f"note: serving https with a self-signed certificate ({tls[0]}): the browser warns once",
              file=err)
    inference = getattr(args, "inference", "in-process")
    address = getattr(args, "ray_address", None)
    if address is not None and inference != "ray":
        raise CLIError("--ray-address goes with --inference ray")
    if inference == "ray":
        from ..inference import check_ray_address

        try:
            import ray  # noqa: F401
        except ImportError:
            raise CLIError("--inference ray needs Ray Serve: pip install 'rxvoice[ray]'") from None
        if address is not None:
            try:
                check_ray_address(address)
            except ConfigurationError as exc:
                raise CLIError(str(exc)) from None
    return {"max_sessions": getattr(args, "max_sessions", None), "token": token, "tls": tls,
            "workers": getattr(args, "workers", 1), "inference": inference,
            "inference_processes": getattr(args, "inference_processes", 1), "ray_address": address,
            "inference_timeout": timeout}


def _has_httpx() -> bool:
    import importlib.util

    return importlib.util.find_spec("httpx") is not None


def _host(text: str) -> str:
    """An argparse type: an address or host name to listen on (an empty one would mean every interface, unsaid)."""
    host = text.strip()
    if not host:
        raise argparse.ArgumentTypeError("give an address: 127.0.0.1 (this machine), 0.0.0.0 or :: (every interface)")
    return host


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Serve until interrupted."""
    options = options_from(args, err)
    host = args.host
    if not loopback(host):
        spend = " and, with OPENAI_BASE_URL set, your API quota" if options.llm == "openai" else ""
        print(f"warning: listening on {host}: whoever can reach this address and has the token can use the "
              f"page, this machine's CPU{spend}; the default 127.0.0.1 keeps it to this machine", file=err)
        if options.tls is None:
            print("note: browsers give a page the microphone only over https or on localhost: for another "
                  "machine use --self-signed (or --tls CERT KEY), or an SSH tunnel to 127.0.0.1", file=err)
    try:
        sock = listen(host, args.port, reuse_port=options.workers > 1 and REUSE_PORT)
    except OSError as exc:
        raise CLIError(f"cannot listen on {host}:{args.port}: {exc.strerror or exc}") from None

    def announce(port: int) -> None:
        shown = f"[{host}]" if ":" in host else host
        scheme = "https" if options.tls else "http"
        query = f"?token={options.token}" if options.token else ""
        workers = f", {options.workers} workers" if options.workers > 1 else ""
        print(f"rxvoice serve: open {scheme}://{shown}:{port}/{query} in a browser and speak "
              f"(stt {options.stt}, tts {options.tts}, stop {options.stop}, model {options.llm}, "
              f"up to {options.max_sessions} sessions{workers}, inference {options.inference}); Ctrl-C stops",
              file=out, flush=True)

    try:
        if options.workers > 1:
            from .server import run_workers

            return run_workers(make_app, options, sock, out, announce)
        app = make_app(options)
        tls = tls_context(*options.tls) if options.tls else None
        asyncio.run(serve_forever(app, sock, tls, announce))
    finally:
        sock.close()
    return 0
