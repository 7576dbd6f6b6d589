"""Backchannels on labelled recordings: continuers kept, real interruptions still interrupting, and how fast.

A backchannel recording is a caller's channel with a transcript whose
segments say what each utterance is (``kind``: ``continuer`` or
``interruption``) and a ``bot`` list of the intervals in which the bot
speaks (``benchmarks/data/make_backchannel_set.py`` makes a set). It plays
through the VAD operator and the user aggregator, the bot's speech coming
upstream as ``BotStartedSpeakingFrame`` / ``BotStoppedSpeakingFrame`` at
those times and the transcript replayed as a streaming STT would send it
(interim words ``interim_lag`` after each is spoken, the final
``stt_delay`` after the segment), once with the setup's start strategies and
once with :class:`~rxvoice.turns.BackchannelStart` first, in virtual time.

Scored per utterance: a continuer is *kept* when nothing interrupted the
bot from its start until the next utterance; an interruption *interrupts*
when an ``InterruptionFrame`` came in that time, its barge-in latency the
time from the start of its speech.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import reactivex
from reactivex.disposable import CompositeDisposable
from reactivex.testing import TestScheduler

from .. import frames as F
from ..aggregators import Pair
from ..audio.vad_processor import VADProcessor
from ..context import LLMContext
from ..frames import Frame
from ..pipeline import SchedulerOffload, pipeline
from ..services.stt import STTService
from ..testing import Segment, Transcript, replay_transcript
from ..turns import TranscriptionStart, TurnsConfig, VADStart
from ..turns.backchannel import BackchannelStart
from ._common import CLIError
from .runner import _audio, _chunks, _Tap, _timeline, _vad_factory
from .setups import Setup, stop_strategy
from .transcribe import offline_stt, stt_label, transcribe
from .wav import read_wav

__all__ = [
    "BackchannelItem", "Utterance", "describe", "evaluate_backchannels", "find_backchannel_items", "is_backchannel_set",
    "score", "watch",
]


@dataclass(frozen=True)
class BackchannelItem:
    """A recording of the set: the caller's channel, what they said, when the bot spoke."""

    wav: Path
    transcript: Transcript
    kinds: tuple[str, ...]
    bot: tuple[tuple[float, float], ...]
    half: str = ""


@dataclass(frozen=True)
class Utterance:
    """One utterance, judged: did it interrupt the bot, and when (from the start of its speech)."""

    file: str
    text: str
    kind: str
    start: float
    interrupted_at: float | None
    backchannel: bool

    @property
    def interrupted(self) -> bool:
        return self.interrupted_at is not None

    @property
    def latency(self) -> float | None:
        return None if self.interrupted_at is None else round(self.interrupted_at - self.start, 3)

    @property
    def right(self) -> bool:
        """A continuer kept, or an interruption that interrupted."""
        return self.interrupted == (self.kind == "interruption")


def _load(path: Path) -> BackchannelItem | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise CLIError(f"{path}: {exc}") from None
    if not isinstance(data, dict) or "bot" not in data:
        return None
    try:
        segments = tuple(Segment(str(s["text"]), float(s["start"]), float(s["end"]), bool(s.get("turn_end")))
                         for s in data["segments"])
        kinds = tuple(str(s.get("kind", "interruption" if s.get("turn_end") else "continuer"))
                      for s in data["segments"])
        bot = tuple((float(a), float(b)) for a, b in data["bot"])
    except (KeyError, TypeError, ValueError) as exc:
        raise CLIError(f"{path}: not a backchannel transcript ({exc})") from None
    wav = path.with_name(path.name.removesuffix(".transcript.json") + ".wav")
    half = str(data.get("meta", {}).get("half", "")) if isinstance(data.get("meta"), dict) else ""
    return BackchannelItem(wav, Transcript(segments), kinds, bot, half)


def _transcripts(paths: Sequence[str | Path]) -> list[Path]:
    out: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            out.extend(sorted(p.glob("*.transcript.json")))
        elif p.suffix == ".wav":
            out.append(p.with_name(p.stem + ".transcript.json"))
    return out


def is_backchannel_set(paths: Sequence[str | Path]) -> bool:
    """Whether the first transcript under ``paths`` has a ``bot`` list (a backchannel recording)."""
    for path in _transcripts(paths):
        if path.is_file():
            return _load(path) is not None
    return False


def find_backchannel_items(paths: Sequence[str | Path]) -> list[BackchannelItem]:
    """The backchannel recordings under ``paths`` (a transcript with a ``bot`` list beside each WAV)."""
    items = []
    for path in _transcripts(paths):
        if not path.is_file():
            raise CLIError(f"{path}: no such transcript")
        item = _load(path)
        if item is not None and item.wav.is_file():
            items.append(item)
    if not items:
        raise CLIError("no backchannel recordings (transcripts with a \"bot\" list) found")
    return items


def watch(
    item: BackchannelItem, setup: Setup, *, backchannels: bool, words: Transcript | None = None
) -> list[Utterance]:
    """Play one recording through the VAD and the user aggregator; judge each utterance.

    ``words``: what a speech recognizer heard (replayed instead of the script's words; the script's
    segments still say what each utterance was).
    """
    recording = read_wav(item.wav)
    chunks = _chunks(recording.samples, setup.tail)
    start = (BackchannelStart(), VADStart(), TranscriptionStart()) if backchannels else None
    pair = Pair(LLMContext(), turns=TurnsConfig(start=start, stop=[stop_strategy(setup)]))
    items, end = _audio(chunks)
    interrupted: list[float] = []
    kept: list[float] = []
    subscriptions = CompositeDisposable()
    test = TestScheduler()
    t0 = [0.0]

    def clock() -> float:
        return test.now.timestamp() - t0[0]

    def started() -> None:
        t0[0] = test.now.timestamp()

    def on_interruption(_frame: Frame) -> None:
        interrupted.append(round(clock(), 3))

    def on_backchannel(_agg: object, _frame: object = None) -> None:
        kept.append(round(clock(), 3))

    bot: list[tuple[float, Frame]] = []
    for a, b in item.bot:
        bot += [(a, F.BotStartedSpeakingFrame()), (b, F.BotStoppedSpeakingFrame())]
    user = pair.user()
    user.events.on("on_user_backchannel", on_backchannel)
    user.offload = SchedulerOffload(test, setup.model_latency)
    stages = [VADProcessor(_vad_factory(setup)), user, _Tap((F.InterruptionFrame,), on_interruption)]
    down = reactivex.merge(
        _timeline(items, started),
        replay_transcript(words or item.transcript, delay=setup.stt_delay, interim_lag=setup.interim_lag),
    )
    up = _timeline(bot, lambda: None)
    out_down, out_up = pipeline(*stages).duplex(down, up)
    try:
        subscriptions.add(out_up.subscribe(lambda _f: None, lambda _e: None, scheduler=test))
        subscriptions.add(out_down.subscribe(lambda _f: None, lambda _e: None, scheduler=test))
        test.advance_to(end + 0.1)
    finally:
        subscriptions.dispose()
    segments = item.transcript.segments
    out: list[Utterance] = []
    for i, (seg, kind) in enumerate(zip(segments, item.kinds, strict=True)):
        until = segments[i + 1].start if i + 1 < len(segments) else float("inf")
        hits = [t for t in interrupted if seg.start - 0.05 <= t < until]
        said = any(seg.start <= t < until for t in kept)
        out.append(Utterance(item.wav.name, seg.text, kind, seg.start, hits[0] if hits else None, said))
    return out


def _share(n: int, d: int) -> str:
    return f"{n}/{d} ({n / d:.0%})" if d else "0/0"


def _p(values: Sequence[float], q: int) -> float | None:
    if not values:
        return None
    if len(values) == 1:
        return values[0]
    return round(statistics.quantiles(values, n=100, method="inclusive")[q - 1], 3)


def score(utterances: Sequence[Utterance]) -> dict[str, Any]:
    """Continuers kept, interruptions that interrupted, and the barge-in latency (p50, p90) of those."""
    continuers = [u for u in utterances if u.kind == "continuer"]
    interruptions = [u for u in utterances if u.kind == "interruption"]
    latencies = [u.latency for u in interruptions if u.latency is not None]
    return {
        "continuers": len(continuers), "continuers_kept": sum(not u.interrupted for u in continuers),
        "interruptions": len(interruptions), "interruptions_caught": sum(u.interrupted for u in interruptions),
        "barge_in_p50": _p(latencies, 50), "barge_in_p90": _p(latencies, 90),
        "false_barge_ins": [u.text for u in continuers if u.interrupted],
        "missed_barge_ins": [u.text for u in interruptions if not u.interrupted],
    }


def describe(name: str, s: dict[str, Any]) -> str:
    """One line for a run."""
    p50 = "-" if s["barge_in_p50"] is None else f"{s['barge_in_p50']:.2f} s"
    p90 = "-" if s["barge_in_p90"] is None else f"{s['barge_in_p90']:.2f} s"
    return (f"{name}: continuers kept {_share(s['continuers_kept'], s['continuers'])}, "
            f"interruptions that interrupted {_share(s['interruptions_caught'], s['interruptions'])}; "
            f"barge-in latency from the start of speech p50 {p50}, p90 {p90}")


def evaluate_backchannels(
    items: Sequence[BackchannelItem], setup: Setup, on_step: Callable[[str], None] | None = None,
    stt: STTService | None = None,
) -> dict[str, list[Utterance]]:
    """Every recording, without and with :class:`BackchannelStart` (``"off"``, ``"on"``).

    ``stt``: the words are what it hears in each recording (its finals, and interim words made from
    them with ``setup.interim_lag``), not the script's.
    """
    runs: dict[str, list[Utterance]] = {"off": [], "on": []}
    for item in items:
        heard = transcribe(read_wav(item.wav), stt, vad=setup.vad, params=setup.vad_params) if stt else None
        for name, on in (("off", False), ("on", True)):
            runs[name].extend(watch(item, setup, backchannels=on, words=heard))
        if on_step is not None:
            on_step(item.wav.name)
    return runs



def report(runs: dict[str, list[Utterance]], items: Sequence[BackchannelItem]) -> list[str]:
    """Text lines: without and with backchannels, over every recording and per half of the set."""
    lines = [describe("without backchannels (VAD start interrupts)", score(runs["off"])),
             describe("with BackchannelStart", score(runs["on"]))]
    halves = sorted({i.half for i in items if i.half})
    for half in halves:
        names = {i.wav.name for i in items if i.half == half}
        lines.append("  " + describe(f"{half} half, with BackchannelStart",
                                      score([u for u in runs["on"] if u.file in names])))
    on = score(runs["on"])
    if on["false_barge_ins"]:
        lines.append(f"  continuers that interrupted: {', '.join(on['false_barge_ins'])}")
    if on["missed_barge_ins"]:
        lines.append(f"  interruptions taken for continuers: {', '.join(on['missed_barge_ins'])}")
    return lines


def run_backchannels(args: argparse.Namespace, setup: Setup, out: TextIO, err: TextIO) -> int:
    """``rxvoice eval`` on a backchannel set: print (or ``--json``) the scores without and with backchannels."""
    items = find_backchannel_items(args.paths)
    choice = getattr(args, "stt", None)
    stt = offline_stt(choice) if choice is not None else None
    runs = evaluate_backchannels(items, setup, stt=stt)
    if getattr(args, "json", False):
        data = {"version": 1, "settings": setup.describe(),
                "backchannels": {name: score(us) for name, us in runs.items()},
                "halves": {half: score([u for u in runs["on"] if u.file in {i.wav.name for i in items
                                                                         if i.half == half}])
                           for half in sorted({i.half for i in items if i.half})}}
        print(json.dumps(data, indent=2), file=out)
    else:
        lag = "no interim words" if setup.interim_lag is None else f"interim words {setup.interim_lag:g} s after each"
        heard = "the script's words" if stt is None else f"the words {stt_label(choice or '')} hears"
        print(f"backchannel set: {len(items)} recordings; {heard}, finals {setup.stt_delay:g} s after speech, {lag}",
              file=out)
        for line in report(runs, items):
            print(line, file=out)
    return 0
