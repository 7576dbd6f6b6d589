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
import csv
import itertools
import json
import math
import re
import statistics
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from ..errors import InvalidTranscriptError, RxVoiceError
from ..testing import Segment, Transcript, load_transcript
from ._common import MODEL_HELP, CLIError, UsageError, check_plot, choose_model, positive_int
from .labels import utterance_words
from .observations import Turn
from .progress import Progress
from .replies import ReplyCounts, ReplyResult, reply_results, reply_summary
from .runner import Analysis, analyze
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
    "run",
    "stt_words",
    "totals",
]

JSON_VERSION = 2
WORD_MODES = ("plain", "stop-each", "as-written")
"""How a transcript is replayed: as an STT without punctuation or casing (``plain``, the default), as
one that ends every final with a full stop (``stop-each``), or as the file wrote it (``as-written``,
for comparison only: an annotator's punctuation knows what came next)."""
HEARD = 0.25
"""Seconds into a segment before a VAD can have heard it (Silero's 0.2 s start, a frame): a turn that
ends that early in a segment is judged with the pause before it."""
BOT_DELAY = 0.6
"""Seconds from a turn end to the bot's first audio (a fast model plus TTS): a caller who resumes
sooner never hears the cut-off."""
RECOVERED_EVENT = "on_user_turn_recovered"
"""The user aggregator's event for a false end undone (counted when the aggregator has it)."""
_EPS = 0.0015

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
  rxvoice eval calls/ --sweep patience=0.5,1,1.5,2 --plot tradeoff.png
"""


# -- the recordings --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Item:
    """One labelled recording.

    Attributes:
        wav: the recording.
        transcript: its segments and labels.
        resume_after: for a single mid-sentence utterance, when the speaker
            would go on (seconds after its end); ``None`` for a transcript file.
    """

    wav: Path
    transcript: Transcript
    resume_after: float | None = None


def _labels_csv(folder: Path, resume_after: float) -> list[Item]:
    items: list[Item] = []
    with (folder / "labels.csv").open(encoding="utf-8", newline="") as f:
        for n, row in enumerate(csv.DictReader(f), 2):
            name, label, text = row.get("file"), row.get("label"), row.get("text")
            if not name or label not in ("complete", "incomplete") or text is None:
                raise CLIError(f"{folder / 'labels.csv'} line {n}: needs file, label (complete/incomplete), text")
            wav = folder / name
            if not wav.is_file():
                raise CLIError(f"{folder / 'labels.csv'} line {n}: no such file {name}")
            words = utterance_words(read_wav(wav), text, label == "complete")  # as `rxvoice turns` replays them
            items.append(Item(wav, words, None if label == "complete" else resume_after))
    return items


def _load(path: Path) -> Transcript:
    try:
        return load_transcript(path)
    except InvalidTranscriptError as exc:
        raise CLIError(str(exc)) from None


def find_items(paths: Iterable[str | Path], *, resume_after: float = 1.0) -> list[Item]:
    """The labelled recordings under ``paths`` (files or folders), in a stable order.

    Raises:
        CLIError: a path that does not exist, a WAV with no labels, a folder with none.
    """
    items: list[Item] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            if (path / "labels.csv").is_file():
                items.extend(_labels_csv(path, resume_after))
                continue
            found = [w for w in sorted(path.glob("*.wav")) if w.with_name(w.stem + ".transcript.json").is_file()]
            if not found:
                raise CLIError(f"{path}: no labels.csv and no WAV with a <name>.transcript.json beside it")
            items.extend(Item(w, _load(w.with_name(w.stem + ".transcript.json"))) for w in found)
        elif path.is_file():
            labels = path.with_name(path.stem + ".transcript.json")
            if not labels.is_file():
                raise CLIError(f"{path}: no {labels.name} beside it (rxvoice eval needs labels)")
            items.append(Item(path, _load(labels)))
        else:
            raise CLIError(f"{path}: no such file or folder")
    return items


def _plain(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s']", " ", text).lower().split())


def stt_words(transcript: Transcript, mode: str = "plain") -> Transcript:
    """The transcript's words as a speech-to-text service would deliver them (see :data:`WORD_MODES`).

    Raises:
        CLIError: an unknown mode.
    """
    if mode == "as-written":
        return transcript
    if mode not in WORD_MODES:
        raise CLIError(f"--words {mode}: choose one of {', '.join(WORD_MODES)}")

    def form(text: str) -> str:
        words = _plain(text)
        if mode == "plain" or not words:
            return words
        return words[:1].upper() + words[1:] + "."

    segments = tuple(Segment(form(s.text), s.start, s.end, s.turn_end) for s in transcript.segments)
    return Transcript(segments, transcript.sample_rate, transcript.duration)


def without_punctuation(transcript: Transcript) -> Transcript:
    """The transcript as an STT without punctuation or casing would give it (``stt_words(t, "plain")``)."""
    return stt_words(transcript, "plain")


# -- judging ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PauseResult:
    """What happened in the pause after one segment.

    Attributes:
        index: the segment (1, 2, ...).
        text: its words.
        end: when it ended (s).
        should_answer: its label (a listener would take the turn).
        answered_at: when a turn ended in the pause (``None``: no answer).
        outcome: ``found``, ``missed``, ``cut-off`` or ``held``.
        latency: ``answered_at - end`` for an answer.
        cause: the deciding reason's short form (``model``, ``words``, ...).
        reason: the deciding reason in words.
        recovered: a cut-off the caller never heard: they resumed before the bot's first audio
            (``answered_at + bot_delay``), or the turn ended inside their speech.
        resumed_at: when the caller went on after this segment (``None``: they did not).
    """

    index: int
    text: str
    end: float
    should_answer: bool
    answered_at: float | None
    outcome: str
    latency: float | None
    cause: str | None = None
    reason: str | None = None
    recovered: bool = False
    resumed_at: float | None = None

    @property
    def audible(self) -> bool:
        """A cut-off the caller heard: the bot started speaking before they went on."""
        return self.outcome == "cut-off" and not self.recovered


def judge(item: Item, analysis: Analysis, *, bot_delay: float = BOT_DELAY) -> list[PauseResult]:
    """Every segment's pause, judged against its label (``bot_delay``: see :data:`BOT_DELAY`)."""
    segments = item.transcript.segments
    decided = [t for t in analysis.turns if t.cause != "end"]
    out: list[PauseResult] = []
    for i, seg in enumerate(segments):
        if i + 1 < len(segments):
            until = segments[i + 1].start
        elif item.resume_after is not None:
            until = seg.end + item.resume_after
        else:
            until = math.inf
        resumed = None if math.isinf(until) else until
        # No VAD hears speech before HEARD seconds of it: an answer that early still belongs to the pause.
        inside = [t for t in decided if seg.start + (HEARD if i else 0.0) + _EPS < t.ended < seg.end - _EPS]
        after = [t for t in decided if seg.end - _EPS <= t.ended < until + HEARD]
        hits = inside or after
        hit: Turn | None = hits[0] if hits else None
        if inside or (after and not seg.turn_end):
            outcome = "cut-off"
        elif after and after[0].ended < until:
            outcome = "found"
        else:
            outcome = "missed" if seg.turn_end else "held"  # an end answered after the caller went on: missed
        latency = None if hit is None else round(hit.ended - seg.end, 6)
        recovered = outcome == "cut-off" and hit is not None and (
            bool(inside) or (resumed is not None and resumed < hit.ended + bot_delay - _EPS)
        )
        out.append(PauseResult(
            i + 1, seg.text, seg.end, seg.turn_end, None if hit is None else hit.ended, outcome, latency,
            None if hit is None else hit.cause, None if hit is None else hit.reason, recovered, resumed,
        ))
    return out


@dataclass(frozen=True)
class Totals:
    """Counts over many pauses."""

    turn_ends: int
    found: int
    missed: int
    pauses: int
    cut_offs: int
    recovered: int
    latency_p50: float | None
    latency_p90: float | None
    audible: int = 0

    @property
    def found_rate(self) -> float:
        return self.found / self.turn_ends if self.turn_ends else 1.0

    @property
    def cut_off_rate(self) -> float:
        return self.cut_offs / self.pauses if self.pauses else 0.0

    @property
    def audible_rate(self) -> float:
        return self.audible / self.pauses if self.pauses else 0.0

    def as_json(self) -> dict[str, Any]:
        """The totals under their documented keys (``docs/turn-taking.md``, "Measuring it")."""
        return {
            "turn_ends": self.turn_ends, "found": self.found, "missed": self.missed, "pauses": self.pauses,
            "cut_offs": self.cut_offs, "recovered_cut_offs": self.recovered, "audible_cut_offs": self.audible,
            "found_rate": round(self.found_rate, 4), "cut_off_rate": round(self.cut_off_rate, 4),
            "audible_rate": round(self.audible_rate, 4),
            "latency_p50": self.latency_p50, "latency_p90": self.latency_p90,
        }


def _quantile(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    if len(values) == 1:
        return round(values[0], 3)
    return round(statistics.quantiles(values, n=100, method="inclusive")[round(q * 100) - 1], 3)


def totals(pauses: Iterable[PauseResult]) -> Totals:
    """The counts and the latency percentiles (found ends only)."""
    ps = list(pauses)
    ends = [p for p in ps if p.should_answer]
    mids = [p for p in ps if not p.should_answer]
    latencies = [p.latency for p in ends if p.outcome == "found" and p.latency is not None]
    return Totals(
        len(ends), sum(p.outcome == "found" for p in ends), sum(p.outcome == "missed" for p in ends),
        len(mids), sum(p.outcome == "cut-off" for p in ps), sum(p.recovered for p in ps),
        _quantile(latencies, 0.5), _quantile(latencies, 0.9), sum(p.audible for p in ps),
    )


@dataclass
class RunResult:
    """One setup over every recording."""

    setup: Setup
    params: dict[str, float]
    recordings: list[tuple[Item, list[PauseResult]]] = field(default_factory=list)
    errors: list[tuple[Path, str]] = field(default_factory=list)
    replies: list[tuple[list[ReplyResult], ReplyCounts]] = field(default_factory=list)
    """With ``--first-token-delay``: each recording's first-audio latencies and speculation counts."""

    @property
    def totals(self) -> Totals:
        return totals(p for _, ps in self.recordings for p in ps)

    def reply_figures(self) -> dict[str, Any] | None:
        """The end of speech to the bot's first audio and the speculation counts, over every recording."""
        if not self.replies:
            return None
        results = [r for rs, _ in self.replies for r in rs]
        counts = sum((c for _, c in self.replies), ReplyCounts())
        return reply_summary(results, counts)


_Replies = tuple[list[ReplyResult], ReplyCounts] | None


def _one(
    job: tuple[Item, Setup, str, float, str | None],
) -> tuple[Item, list[PauseResult] | None, str | None, _Replies]:
    item, setup, words, bot_delay, stt = job
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


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f} s"


def _params(params: dict[str, float]) -> str:
    return ", ".join(f"{k}={v:g}" for k, v in params.items()) or "defaults"


def _summary(t: Totals) -> str:
    return (
        f"ends found {t.found}/{t.turn_ends} ({t.found_rate:.0%}), missed {t.missed}; "
        f"cut-offs {t.cut_offs}/{t.pauses} ({t.cut_off_rate:.0%}): recovered {t.recovered}, "
        f"audible {t.audible} ({t.audible_rate:.0%}); "
        f"latency p50 {_fmt(t.latency_p50)}, p90 {_fmt(t.latency_p90)}"
    )


def _reply_line(setup: Setup, f: dict[str, Any]) -> str:
    """The bot's first audio after the end of speech, and (with speculation) what it cost."""
    spec = "speculation on" if setup.speculate else "no speculation"
    line = (f"first token {setup.first_token_delay:g} s, {spec}: end of speech to the bot's first audio "
            f"p50 {_fmt(f['first_audio_p50'])}, p90 {_fmt(f['first_audio_p90'])} ({f['answered']} ends), "
            f"false ends undone before the bot spoke {f['recovered']}")
    if setup.speculate:
        line += (f"; speculative requests {f['speculative_asked']} ({f['released']} released, {f['dropped']} dropped, "
                 f"{f['refused']} refused for a tool), wasted {f['wasted_per_turn']:.2f} a turn, "
                 f"{f['wasted_tokens']} tokens; tool calls started speculatively: {f['speculative_tool_calls']}")
    return line


def report(runs: Sequence[RunResult], *, detail: bool = False) -> str:
    """The runs as text: per recording, then the totals (and a sweep table)."""
    lines: list[str] = []
    for r in runs:
        lines.append(f"{r.setup.stop} ({_params(r.params)}): {_summary(r.totals)}")
        figures = r.reply_figures()
        if figures is not None:
            lines.append("  " + _reply_line(r.setup, figures))
        if len(runs) == 1 or detail:
            width = max([len(i.wav.name) for i, _ in r.recordings] + [4])
            for item, pauses in r.recordings:
                t = totals(pauses)
                lines.append(
                    f"  {item.wav.name:<{width}}  ends {t.found}/{t.turn_ends}  cut-offs {t.cut_offs}/{t.pauses} "
                    f"(audible {t.audible})  "
                    f"p50 {_fmt(t.latency_p50)}  p90 {_fmt(t.latency_p90)}"
                )
                if detail:
                    for p in pauses:
                        when = "no answer" if p.answered_at is None else f"answered +{p.latency:.2f} s ({p.cause})"
                        want = "end" if p.should_answer else "pause"
                        outcome = p.outcome if p.outcome != "cut-off" else ("recovered" if p.recovered else "AUDIBLE")
                        lines.append(f"      {p.index:>2} {want:<5} {outcome:<9} {when:<28} {p.text[:60]}")
        for path, error in r.errors:
            lines.append(f"  {path.name}: error: {error}")
    return "\n".join(lines)


def to_json(runs: Sequence[RunResult], args: argparse.Namespace) -> dict[str, Any]:
    """The runs as JSON (schema version 2; the keys are documented in ``docs/turn-taking.md``)."""
    words = _words_mode(args)
    return {
        "version": JSON_VERSION,
        "settings": {**runs[0].setup.describe(), "vad_min_volume": runs[0].setup.vad_params.min_volume,
                     "words": words, "no_punctuation": words == "plain", "bot_delay": args.bot_delay,
                     "resume_after": args.resume_after, "words_from": args.stt or "transcript"},
        "runs": [{
            "params": r.params,
            "vad_stop_secs": r.setup.vad_params.stop_secs,
            "totals": r.totals.as_json(),
            "errors": [{"file": str(p), "error": e} for p, e in r.errors],
            **({} if r.reply_figures() is None else {"replies": r.reply_figures()}),
            "recordings": [{
                "file": str(item.wav),
                "totals": totals(pauses).as_json(),
                "pauses": [{
                    "index": p.index, "text": p.text, "end": p.end, "should_answer": p.should_answer,
                    "answered_at": p.answered_at, "latency": p.latency, "outcome": p.outcome,
                    "cause": p.cause, "reason": p.reason, "recovered": p.recovered, "audible": p.audible,
                    "resumed_at": p.resumed_at,
                } for p in pauses],
            } for item, pauses in r.recordings],
        } for r in runs],
    }


def plot_tradeoff(runs: Sequence[RunResult], out: Path, title: str = "") -> Path:
    """Cut-offs against latency, one point per run (p50 and p90), labelled with its parameters.

    Raises:
        CLIError: matplotlib is missing, or the file cannot be written.
    """
    from .plot import _pyplot

    plt = _pyplot()
    fig, (ax, found_ax) = plt.subplots(1, 2, figsize=(13, 5.2), gridspec_kw={"width_ratios": [3, 1.4]})
    labels = [_params(r.params) for r in runs]
    t = [r.totals for r in runs]
    p50 = [x.latency_p50 if x.latency_p50 is not None else math.nan for x in t]
    p90 = [x.latency_p90 if x.latency_p90 is not None else math.nan for x in t]
    cut = [100 * x.cut_off_rate for x in t]
    # One run = a p50 dot and a p90 square joined by a bar, numbered as in the right panel.
    ax.scatter(p50, cut, marker="o", facecolors="none", edgecolors="tab:blue", label="latency p50", zorder=3)
    ax.scatter(p90, cut, marker="s", color="tab:orange", label="latency p90", zorder=3)
    seen: dict[tuple[float, float], int] = {}
    for n, (x50, x90, y) in enumerate(zip(p50, p90, cut, strict=True), 1):
        ax.plot([x50, x90], [y, y], color="0.75", lw=1.2, zorder=1)
        stack = seen.get((round(x90, 2), round(y, 1)), 0)
        seen[(round(x90, 2), round(y, 1))] = stack + 1
        ax.annotate(str(n), (x90, y), textcoords="offset points", xytext=(5 + 9 * stack, 4), fontsize=9,
                    fontweight="bold")
    audible = [100 * x.audible_rate for x in t]
    ax.scatter(p90, audible, marker="x", color="tab:red", label="audible cut-offs (at p90)", zorder=3)
    ax.axhline(5, color="tab:red", lw=0.8, ls=":")
    ax.text(ax.get_xlim()[0], 5, " 1 in 20 pauses", color="tab:red", fontsize=8, va="bottom")
    ax.axhline(100 / 6, color="tab:purple", lw=0.8, ls=":")
    ax.text(ax.get_xlim()[0], 100 / 6, " 1 in 6 pauses", color="tab:purple", fontsize=8, va="bottom")
    ax.set_xlabel("latency after the end of speech (s): found ends")
    ax.set_ylabel("mid-turn pauses cut off: all (dots, squares), audible (x) (%)")
    ax.set_ylim(bottom=-2)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper right", fontsize=8)
    ax.set_title("cut-offs against latency", fontsize=10)
    found = [100 * x.found_rate for x in t]
    found_ax.barh(range(len(runs)), found, color="tab:green")
    found_ax.set_yticks(range(len(runs)), [f"{n}: {label}" for n, label in enumerate(labels, 1)], fontsize=8)
    found_ax.invert_yaxis()
    found_ax.axvline(95, color="tab:red", lw=0.8, ls=":")
    found_ax.set_xlim(min([*found, 90.0]) - 2, 100.5)
    found_ax.set_xlabel("ends of turn found (%)")
    for i, x in enumerate(t):
        found_ax.text(found[i], i, f" {x.found}/{x.turn_ends}", va="center", fontsize=8)
    found_ax.set_title("ends found", fontsize=10)
    fig.suptitle(title or f"rxvoice eval: {runs[0].setup.stop}", fontsize=11)
    fig.tight_layout()
    try:
        fig.savefig(out, dpi=110)
    except OSError as exc:
        raise CLIError(f"--plot {out}: {exc.strerror or exc}") from None
    finally:
        plt.close(fig)
    return out


def _words_mode(args: argparse.Namespace) -> str:
    words: str | None = getattr(args, "words", None)
    if getattr(args, "no_punctuation", False):
        if words not in (None, "plain"):
            raise UsageError(f"--no-punctuation is --words plain; it contradicts --words {words}")
        return "plain"
    return words or "plain"


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
    runs = evaluate(items, setups, words=_words_mode(args), bot_delay=args.bot_delay, jobs=args.jobs,
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
