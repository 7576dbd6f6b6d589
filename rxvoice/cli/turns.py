"""``rxvoice turns PATH``: where the turns of a recording (or of every WAV in a folder) end, and why.

A transcript is taken from ``--transcript``, else from ``<name>.transcript.json``
beside the WAV (``--no-transcript`` ignores it), and replayed as an STT would
deliver it (``--words``, default ``plain``: lower case, no punctuation);
without one, the live STT's words (``--stt``) or placeholders made from the
VAD stand in (see :mod:`rxvoice.cli.runner`).
A ``labels.csv`` beside the recordings (:mod:`rxvoice.cli.labels`) adds each
file's verdict against its label, and the accuracy; a row's ``text`` is then
the recording's words (replayed as the STT, as ``rxvoice eval`` does), in
place of an offline STT's or placeholders.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from ..errors import InvalidTranscriptError, RxVoiceError
from ..testing import Transcript, load_transcript
from ._common import MODEL_HELP, CLIError, UsageError, check_plot, choose_model, need_module
from .eval import WORD_MODES, stt_words
from .labels import LABELS_FILE, Label, judge, read_labels, utterance_words
from .progress import Progress
from .report import FileResult, describe_setup, detail, table, to_json
from .runner import analyze
from .score import check_transcript
from .setups import DEFAULT_SETUP, FALLBACK_SETUP, Setup, named_setup, setup_names, stop_help
from .transcribe import STT_CHOICES, recognized_words
from .wav import read_wav

__all__ = ["add_parser", "make_setup", "run", "seconds_between"]

DESCRIPTION = """\
Turn analysis of a WAV recording, or of every WAV in a folder: each turn end
with its latency after the end of speech and its deciding strategy, through
the real VAD operator and turn strategies, in virtual time.
"""

EPILOG = """\
With a transcript whose segments carry turn_end labels, a turn that ends
after a segment labeled false (or inside a segment) is a premature cut-off,
and a segment labeled true with no turn end before the next segment is a
missed end.

With a labels.csv beside the recordings (columns file and label, complete
or incomplete; text optional), each file's verdict is compared with its
label: complete when a stop strategy ended the turn on its own decision,
incomplete when it waited for a fallback (a bounded wait for unfinished or
unsure words, Smart Turn's own silence fallback, the watchdog), cut off when
a turn ended before the speaker's last words; the accuracy is printed. A
row's text is the file's words (one final over the utterance, as rxvoice
eval replays it), so both commands judge the same words.

Without a transcript, each stretch of speech the VAD hears (pauses shorter
than --stt-delay joined) becomes a finalized "<speech N>" transcript
--stt-delay seconds after it ends, so strategies that wait for words still
end turns; latencies then count from the VAD stop minus its stop_secs.

Recordings in other shapes are converted (channels averaged, resampled to
16 kHz) and the conversion is noted. Exit status: 0; 1 if a recording could
not be analyzed; 2 for a bad command line.
"""


def seconds_between(low: float, high: float) -> Callable[[str], float]:
    """An argparse type: seconds in ``low..high``."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{text} is outside {low:g}..{high:g} seconds")
        return value

    return parse


def add_common_options(p: argparse.ArgumentParser) -> None:
    """The timing options ``turns`` and ``demo`` share."""
    p.add_argument("--stt-delay", type=seconds_between(0.0, 10.0), default=0.3, metavar="S",
                   help="the STT's final transcript arrives S seconds after the speech ends (default 0.3)")
    p.add_argument("--model-latency", type=seconds_between(0.0, 10.0), default=0.05, metavar="S",
                   help="virtual seconds a Smart Turn verdict takes (default 0.05)")
    p.add_argument("--model", metavar="PATH", help=MODEL_HELP)


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    """Register ``turns``."""
    p = sub.add_parser(
        "turns", help="where the turns of a recording end, and why",
        description=DESCRIPTION, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("path", help="a .wav file or a folder of them")
    words = p.add_mutually_exclusive_group()
    words.add_argument("--transcript", metavar="T.json",
                       help="the recording's transcript (segments with text/start/end/turn_end); "
                            "default: <name>.transcript.json beside it")
    words.add_argument("--no-transcript", action="store_true", help="ignore a transcript found beside the WAV")
    p.add_argument("--words", choices=WORD_MODES, default="plain",
                   help="how a transcript is replayed: plain (default: lower case, no punctuation), "
                        "stop-each (a full stop after every final), as-written (the file's text, for "
                        "comparison only: an annotator's punctuation knows what came next)")
    p.add_argument("--stop", choices=setup_names(),
                   help=stop_help(f"{DEFAULT_SETUP} when the Smart Turn model is found, else {FALLBACK_SETUP}"))
    p.add_argument("--vad", choices=("silero", "webrtc"), default="silero", help="the VAD (default silero)")
    p.add_argument("--speech-timeout", type=seconds_between(0.0, 10.0), default=0.6, metavar="S",
                   help="silence after the VAD stop that ends a turn with --stop speech-timeout (default 0.6)")
    p.add_argument("--tail", type=seconds_between(0.0, 60.0), default=4.0, metavar="S",
                   help="seconds of silence played after the recording so its last turn can end (default 4)")
    add_common_options(p)
    p.add_argument("--plot", metavar="OUT.png",
                   help="write a timeline PNG (for a folder: a folder to write <name>.png into)")
    p.add_argument("--stt", choices=STT_CHOICES,
                   help="without a transcript: recognize the words offline (whisper, the default when it and "
                        "its model are installed; else pocketsphinx) or not (none: placeholders from the VAD)")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="the folder progress bar on stderr (default: shown on a terminal, never with --json)")
    p.set_defaults(run=run)


def make_setup(args: argparse.Namespace, err: TextIO) -> Setup:
    """The analysis settings; Smart Turn when asked for or found."""
    choice = choose_model(args.model)
    stop = args.stop
    if stop is None:
        stop = DEFAULT_SETUP if choice.path is not None else FALLBACK_SETUP
        if choice.path is None:
            print(f"note: {choice.problem}: using --stop {FALLBACK_SETUP} "
                  "(`rxvoice model install` gets it)", file=err)
    elif named_setup(stop).needs_model and choice.path is None:
        raise CLIError(f"{choice.problem}; `rxvoice model install` gets it")
    return Setup(
        vad=args.vad, stop=stop, model=choice.path, stt_delay=args.stt_delay, model_latency=args.model_latency,
        speech_timeout=args.speech_timeout, tail=args.tail,
    )


def _load_transcript(path: Path) -> Transcript:
    try:
        return load_transcript(path)
    except InvalidTranscriptError as exc:
        raise CLIError(str(exc)) from None


def _transcript_for(wav: Path, explicit: str | None, ignore: bool) -> Path | None:
    if explicit is not None:
        path = Path(explicit)
        if not path.is_file():
            raise CLIError(f"--transcript {explicit}: no such file")
        return path
    if ignore:
        return None
    beside = wav.with_name(wav.stem + ".transcript.json")
    return beside if beside.is_file() else None


def labels_beside(folder: Path) -> dict[str, Label]:
    """The rows of ``folder/labels.csv`` (empty when there is none)."""
    path = folder / LABELS_FILE
    return read_labels(path) if path.is_file() else {}


def analyze_file(wav: Path, setup: Setup, transcript_path: Path | None, err: TextIO, quiet: bool,
                 label: Label | None = None, stt: str | None = "none", words: str = "plain") -> FileResult:
    """Read, check and analyze one recording (and judge it against its label, if any).

    A transcript is replayed in the ``words`` mode (:data:`~rxvoice.cli.eval.WORD_MODES`).
    """
    recording = read_wav(wav)
    if recording.conversions and not quiet:
        print(f"note: {wav.name}: " + "; ".join(recording.conversions), file=err)
    for warning in recording.warnings:
        print(f"warning: {wav.name}: {warning}", file=err)
    transcript = None
    if transcript_path is not None:
        transcript = stt_words(_load_transcript(transcript_path), words)
        check_transcript(transcript, recording, transcript_path.name)
    heard: Transcript | None = None
    if transcript is not None:
        source = "transcript"
    elif label is not None and label.text:
        # The row's text is what was said: the words, as `rxvoice eval` replays them (not scored as a transcript).
        heard = stt_words(utterance_words(recording, label.text, label.expected == "complete"), words)
        source = "labels.csv"
    else:
        heard, engine = recognized_words(recording, setup, stt, err, quiet)
        source = "placeholders" if heard is None or engine is None else engine
    analysis = analyze(recording, setup, transcript=transcript, words=heard)
    verdict = judge(analysis, label) if label is not None else None
    return FileResult(wav, analysis, transcript_path, label=verdict, words_from=source)


def _plot(result: FileResult, out: Path) -> None:
    from .plot import plot_timeline

    if result.analysis is not None:
        plot_timeline(result.analysis, out)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Analyze, print, plot."""
    path = Path(args.path)
    if path.is_dir():
        return _run_folder(path, args, out, err)
    check_plot(args.plot)
    _check_stt(args)
    if not path.exists():
        raise CLIError(f"{path}: no such file or folder")
    setup = make_setup(args, err)
    label = labels_beside(path.parent).get(path.name)
    result = analyze_file(path, setup, _transcript_for(path, args.transcript, args.no_transcript), err, False,
                          label, args.stt, args.words)
    if args.plot is not None:
        _plot(result, Path(args.plot))
    if args.json:
        print(json.dumps(to_json(setup, [result]), indent=2), file=out)
    else:
        print(detail(result), file=out)
        if args.plot is not None:
            print(f"timeline written to {args.plot}", file=out)
    return 0


def _check_stt(args: argparse.Namespace) -> None:
    """``--stt pocketsphinx`` without its package is refused before any work."""
    if args.stt == "pocketsphinx":
        need_module("pocketsphinx", "stt", "--stt pocketsphinx")


def _run_folder(folder: Path, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if args.transcript is not None:
        raise UsageError(
            "--transcript names one recording's transcript; in a folder, each <name>.transcript.json "
            "beside its WAV is used"
        )
    plots = check_plot(args.plot, folder=True)
    _check_stt(args)
    files = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() == ".wav")
    if not files:
        raise CLIError(f"{folder}: no .wav files in it")
    labels = labels_beside(folder)
    unlisted = sorted(set(labels) - {f.name for f in files})
    if unlisted:
        print(f"note: {LABELS_FILE} lists {len(unlisted)} file(s) not in {folder}: {', '.join(unlisted[:3])}"
              + (" ..." if len(unlisted) > 3 else ""), file=err)
    setup = make_setup(args, err)
    # On a terminal by default, never with --json unless asked for; --progress draws it into a pipe too.
    progress = Progress(len(files), err, force=args.progress is True,
                        enabled=args.progress is True or (args.progress is None and not args.json))
    results: list[FileResult] = []
    converted = 0
    for wav in files:
        progress.step(wav.name)
        try:
            with progress.paused():  # a warning about this file does not tear the bar
                result = analyze_file(wav, setup, _transcript_for(wav, None, args.no_transcript), err, True,
                                      labels.get(wav.name), args.stt, args.words)
            if result.analysis is not None and result.analysis.recording.conversions:
                converted += 1
            if plots is not None:
                _plot(result, plots / (wav.stem + ".png"))
        except (CLIError, RxVoiceError) as exc:
            result = FileResult(wav, None, None, str(exc))
        results.append(result)
    progress.finish()
    if converted:
        print(f"note: {converted} recordings were converted (see --json \"conversions\")", file=err)
    if args.json:
        print(json.dumps(to_json(setup, results), indent=2), file=out)
    else:
        print(describe_setup(setup), file=out)
        print(table(results), file=out)
        if plots is not None:
            print(f"timelines written to {plots}/", file=out)
    return 1 if any(r.error for r in results) else 0
