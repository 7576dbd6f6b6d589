"""``rxvoice eval PATH...``: how a turn-taking setup does on labelled recordings, pause by pause.

Labels come from a ``<name>.transcript.json`` beside each WAV (segments with
``text``/``start``/``end``/``turn_end``, as ``rxvoice turns`` reads them), or
from a folder's ``labels.csv`` (one utterance per WAV, ``label`` ``complete``
or ``incomplete``, as in the Smart Turn fixtures). The transcript is replayed
as a speech-to-text service would deliver it (``--words``, default ``plain``:
lower case, no punctuation; an annotator's commas and full stops know what
came next). Every pause after a segment is judged:

* ``found``: a labelled end of turn answered before the caller went on (its
  latency: the answer minus the segment's end);
* ``missed``: a labelled end with no answer before the next segment (an answer
  in the first ``HEARD`` seconds of the next segment, before a VAD can hear it,
  is a late one);
* ``cut-off``: a mid-sentence pause answered (or a turn that ended inside a
  segment); *recovered* when the caller resumed before the bot's first audio
  would have started (``--bot-delay`` seconds after the answer), *audible*
  otherwise;
* ``held``: a mid-sentence pause waited through.

A single ``incomplete`` utterance of a ``labels.csv`` stands for a speaker
who goes on after ``--resume-after`` seconds: an answer before that is a
cut-off. ``--sweep NAME=a,b,c`` runs the setup once per value (several
``--sweep`` options: every combination) and ``--plot`` draws cut-offs
against latency for each run.
"""

from __future__ import annotations

import argparse
import itertools
import json
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any, TextIO

from ..errors import RxVoiceError
from ._common import MODEL_HELP, CLIError, UsageError, check_plot, choose_model, positive_int
from .eval_items import WORD_MODES, Item, find_items, stt_words, without_punctuation, words_mode
from .eval_judge import BOT_DELAY, HEARD, PauseResult, RunResult, Totals, judge, totals
from .eval_report import JSON_VERSION, plot_tradeoff, report, to_json
from .progress import Progress
from .replies import ReplyCounts, ReplyResult, reply_results
from .runner import analyze
from .sample import SAMPLE_NOTE, sample_paths
from .score import check_transcript
from .setups import (
    DEFAULT_SETUP,
    FALLBACK_SETUP,
    VAD_CHOICES,
    Setup,
    named_setup,
    setup_names,
    stop_help,
    stop_strategy,
)
from .transcribe import offline_stt, stt_label, transcribe
from .wav import read_wav

__all__ = [
    "BOT_DELAY",
    "HEARD",
    "JSON_VERSION",
    "WORD_MODES",
    "Item",
    "PauseResult",
    "RunResult",
    "Totals",
    "add_parser",
    "evaluate",
    "find_items",
    "judge",
    "plot_tradeoff",
    "report",
    "run",
    "stt_words",
    "to_json",
    "totals",
    "without_punctuation",
]

DESCRIPTION = """\
Turn-taking on labelled recordings: for every pause, whether the setup
answered, when, and whether it should have; totals of ends found, cut-offs,
misses and recovered cut-offs, and the latency after the end of speech.
"""

EPILOG = """\
PATH is a WAV with <name>.transcript.json beside it, or a folder of them, or a
folder with a labels.csv (file,label,text: one utterance per WAV). The run is
in virtual time (Smart Turn verdicts take --model-latency), with the replayed
transcript's finals --stt-delay seconds after each segment.

Without a PATH (or with --sample) it scores the labelled sample shipped
with rxvoice: the demo call (three ends of turn, one mid-sentence pause) and
eight single utterances with a labels.csv (rxvoice/data/sample/).

Examples:
  rxvoice eval
  rxvoice eval --stop speech-timeout
  rxvoice eval calls/
  rxvoice eval calls/ turns/ --sweep patience=0.5,1,2 --plot tradeoff.png
  rxvoice eval calls/ --set stop_secs=0.12 --json
  rxvoice eval calls/ --words stop-each --bot-delay 0.8
"""


# -- running ---------------------------------------------------------------------------------------


_Replies = tuple[list[ReplyResult], ReplyCounts] | None


def _one(
    job: tuple[Item, Setup, str, float, str | None],
) -> tuple[Item, list[PauseResult] | None, str | None, _Replies]:
    item, setup, words, bot_delay, stt = job
    setup = replace(setup, bot_audio_at=bot_delay)  # resumed speech after the bot's first audio is a new turn
    try:
        recording = read_wav(item.wav)
        transcript = stt_words(item.transcript, words)
        check_transcript(transcript, recording, item.wav.name)
        if stt is not None:  # the words an offline STT hears; the transcript only labels the pauses
            engine = offline_stt(stt)
            heard = transcribe(recording, engine, vad=setup.vad, params=setup.vad_params) if engine else None
            analysis = analyze(recording, setup, words=heard, windows=False)
        else:
            analysis = analyze(recording, setup, transcript=transcript, windows=False)
        pauses = judge(item, analysis, bot_delay=bot_delay)
        replies: _Replies = None
        if setup.first_token_delay is not None:
            found = [(p.index, p.answered_at) for p in pauses if p.outcome == "found" and p.answered_at is not None]
            replies = reply_results(transcript, found, analysis)
        return item, pauses, None, replies
    except (CLIError, RxVoiceError) as exc:
        return item, None, str(exc), None


def evaluate(
    items: Sequence[Item], setups: Sequence[tuple[Setup, dict[str, float]]], *,
    words: str = "plain", bot_delay: float = BOT_DELAY, jobs: int = 1,
    on_step: Callable[[str], None] | None = None, strip_punctuation: bool | None = None,
    stt: str | None = None,
) -> list[RunResult]:
    """Run every setup over every item (``jobs`` processes), in order (``stt``: words from that offline STT).

    ``words`` is the replay mode (:data:`WORD_MODES`); ``strip_punctuation`` is its old spelling
    (``True``: ``plain``, ``False``: ``as-written``).
    """
    if strip_punctuation is not None:
        words = "plain" if strip_punctuation else "as-written"
    if words not in WORD_MODES:
        raise CLIError(f"--words {words}: choose one of {', '.join(WORD_MODES)}")
    runs = [RunResult(setup, params) for setup, params in setups]
    work = [(item, setup, words, bot_delay, stt) for setup, _ in setups for item in items]
    if jobs > 1 and len(work) > 1:
        with ProcessPoolExecutor(jobs) as pool:
            results = list(_stepped(pool.map(_one, work), on_step))
    else:
        results = list(_stepped(map(_one, work), on_step))
    for n, (item, pauses, error, replies) in enumerate(results):
        target = runs[n // len(items)]
        if pauses is None:
            target.errors.append((item.wav, error or "failed"))
        else:
            target.recordings.append((item, pauses))
            if replies is not None:
                target.replies.append(replies)
    return runs


def _stepped(
    results: Iterable[tuple[Item, list[PauseResult] | None, str | None, _Replies]],
    on_step: Callable[[str], None] | None,
) -> Iterable[tuple[Item, list[PauseResult] | None, str | None, _Replies]]:
    for result in results:
        if on_step is not None:
            on_step(result[0].wav.name)
        yield result


# -- the command line -----------------------------------------------------------------------------


def _assignment(text: str) -> tuple[str, float]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"{text!r}: give NAME=VALUE")
    try:
        return name.strip(), float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: {value!r} is not a number") from None


def _sweep(text: str) -> tuple[str, list[float]]:
    name, sep, values = text.partition("=")
    if not sep or not name.strip() or not values.strip():
        raise argparse.ArgumentTypeError(f"{text!r}: give NAME=a,b,c")
    try:
        numbers = [float(v) for v in values.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: the values must be numbers") from None
    if not numbers:
        raise argparse.ArgumentTypeError(f"{text!r}: no values")
    return name.strip(), numbers


def _nonneg(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0.0 <= value <= 60.0:
        raise argparse.ArgumentTypeError(f"{text} is outside 0..60 seconds")
    return value


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    """Register ``eval``."""
    p = sub.add_parser(
        "eval", help="ends found, cut-offs and latency on labelled recordings",
        description=DESCRIPTION, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("paths", nargs="*", metavar="PATH",
                   help="WAVs with transcripts beside them, or folders (none: the labelled sample shipped with "
                        "rxvoice)")
    p.add_argument("--sample", action="store_true",
                   help="also score the labelled sample shipped with rxvoice: the demo call and 8 utterances")
    p.add_argument("--stop", choices=setup_names(), default=DEFAULT_SETUP, help=stop_help(DEFAULT_SETUP))
    p.add_argument("--vad", choices=VAD_CHOICES, default="silero", help="the VAD (default silero)")
    p.add_argument("--stt-delay", type=_nonneg, default=0.3, metavar="S",
                   help="finals arrive S seconds after each segment ends (default 0.3)")
    p.add_argument("--model-latency", type=_nonneg, default=0.05, metavar="S",
                   help="virtual seconds a Smart Turn verdict takes (default 0.05)")
    p.add_argument("--model", metavar="PATH", help=MODEL_HELP)
    p.add_argument("--set", type=_assignment, action="append", default=[], metavar="NAME=V", dest="fixed",
                   help="a VAD or stop-strategy parameter (e.g. stop_secs=0.12); repeatable")
    p.add_argument("--sweep", type=_sweep, action="append", default=[], metavar="NAME=a,b,c",
                   help="run once per value; several --sweep: every combination")
    p.add_argument("--words", choices=WORD_MODES, default=None,
                   help="how the transcripts are replayed: plain (default: lower case, no punctuation), "
                        "stop-each (a full stop after every final) or as-written (the file's text, "
                        "for comparison only)")
    p.add_argument("--no-punctuation", action="store_true", help="the same as --words plain (the default)")
    p.add_argument("--bot-delay", type=_nonneg, default=BOT_DELAY, metavar="S",
                   help="seconds from a turn end to the bot's first audio: a cut-off the caller resumes "
                        f"from sooner is recovered, later audible (default {BOT_DELAY:g})")
    p.add_argument("--stt", choices=("whisper", "pocketsphinx"),
                   help="judge on the words an offline STT hears in each recording instead of its transcript's "
                        "text (the transcript still labels the pauses)")
    p.add_argument("--resume-after", type=_nonneg, default=1.0, metavar="S",
                   help="a labels.csv 'incomplete' utterance is cut off if answered within S s (default 1.0)")
    p.add_argument("--tail", type=_nonneg, default=4.0, metavar="S",
                   help="seconds of silence played after each recording (default 4)")
    p.add_argument("--first-token-delay", type=_nonneg, metavar="S",
                   help="a scripted model answers every turn S seconds after it is asked and a paced voice "
                        "speaks it: report the end of speech to the bot's first audio")
    p.add_argument("--speculate", action="store_true",
                   help="speculative replies: ask the model when the end is likely, hold the answer "
                        "(with --first-token-delay: report the wasted requests per turn)")
    p.add_argument("--interim-lag", type=_nonneg, metavar="S",
                   help="the replayed STT also sends interim words, each S seconds after it is spoken")
    p.add_argument("--jobs", type=positive_int, default=1, metavar="N",
                   help="recordings analysed in parallel, in processes (default 1)")
    p.add_argument("--plot", metavar="OUT.png", help="write the cut-offs-against-latency curve as a PNG")
    p.add_argument("--detail", action="store_true", help="list every pause")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.add_argument("--progress", action="store_true", help="draw the progress bar even when not on a terminal")
    p.set_defaults(run=run)


def _setups(args: argparse.Namespace, model: Path | None) -> list[tuple[Setup, dict[str, float]]]:
    fixed = dict(args.fixed)
    names = [name for name, _ in args.sweep]
    if len(set(names)) != len(names):
        raise UsageError("--sweep: give each parameter once")
    grid = list(itertools.product(*(values for _, values in args.sweep))) or [()]
    out: list[tuple[Setup, dict[str, float]]] = []
    for combo in grid:
        params = {**fixed, **dict(zip(names, combo, strict=True))}
        setup = Setup(
            vad=args.vad, stop=args.stop, model=model, stt_delay=args.stt_delay,
            model_latency=args.model_latency, tail=args.tail, overrides=tuple(sorted(params.items())),
            first_token_delay=args.first_token_delay, speculate=args.speculate, interim_lag=args.interim_lag,
        )
        setup.vad_params  # noqa: B018  (validates the parameters now, not in a worker)
        stop_strategy(setup)
        out.append((setup, params))
    return out


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Evaluate, print, plot."""
    check_plot(args.plot)
    model: Path | None = None
    if named_setup(args.stop).needs_model:
        choice = choose_model(args.model)
        if choice.path is None:
            raise CLIError(f"{choice.problem}; install it with `rxvoice model install`, "
                           f"or use --stop {FALLBACK_SETUP}")
        model = choice.path
    setups = _setups(args, model)  # the parameters checked before any recording is read
    from .backchannels import is_backchannel_set, run_backchannels

    if args.paths and is_backchannel_set(args.paths):  # the bot speaks in these: continuers kept, interruptions
        return run_backchannels(args, setups[0][0], out, err)
    paths = list(args.paths)
    if args.sample or not paths:
        paths += sample_paths()
        print(f"note: scoring {SAMPLE_NOTE} ({paths[-1].parent})", file=err)
    items = find_items(paths, resume_after=args.resume_after)
    if args.stt is not None:
        offline_stt(args.stt)  # installed and its model sound: checked once, here
        print(f"note: the words are {stt_label(args.stt)}'s, heard in each recording; the transcripts only label "
              "the pauses", file=err)
    progress = Progress(len(items) * len(setups), err, force=args.progress)
    runs = evaluate(items, setups, words=words_mode(args), bot_delay=args.bot_delay, jobs=args.jobs,
                    on_step=progress.step, stt=args.stt)
    progress.finish()
    if args.plot is not None:
        plot_tradeoff(runs, Path(args.plot), f"rxvoice eval --stop {args.stop}: {len(items)} recordings")
    if args.json:
        print(json.dumps(to_json(runs, args), indent=2), file=out)
    else:
        print(report(runs, detail=args.detail), file=out)
        if args.plot is not None:
            print(f"trade-off curve written to {args.plot}", file=out)
    return 1 if any(r.errors for r in runs) else 0
