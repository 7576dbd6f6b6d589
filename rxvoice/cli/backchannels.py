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
when an ``InterruptionFrame`` came in that time. Its **barge-in latency** is
the time from the start of its speech until the bot's audio stops, paused
(``BotSpeechPauseFrame``) or cut (``InterruptionFrame``), whichever comes
first; its **interruption latency** the time until the ``InterruptionFrame``
(the reply cancelled, the turn open). A kept continuer that paused the bot
leaves a **gap** in its speech: from the pause to the resume.
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
    paused_at: float | None = None
    """When the bot's speech paused for it (``None``: it did not pause)."""
    resumed_at: float | None = None
    """When the paused speech played on (``None``: it did not, or it never paused)."""

    @property
    def interrupted(self) -> bool:
        return self.interrupted_at is not None

    @property
    def latency(self) -> float | None:
        """Speech start to the bot's audio stopping, paused or cut (``None``: it went on)."""
        stops = [t for t in (self.paused_at, self.interrupted_at) if t is not None]
        return round(min(stops) - self.start, 3) if stops else None

    @property
    def interruption_latency(self) -> float | None:
        """Speech start to the interruption (the reply cancelled, the turn open)."""
        return None if self.interrupted_at is None else round(self.interrupted_at - self.start, 3)

    @property
    def gap(self) -> float | None:
        """How long the bot's speech paused for a continuer it then played on through."""
        if self.paused_at is None or self.resumed_at is None or self.interrupted:
            return None
        return round(self.resumed_at - self.paused_at, 3)

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
    item: BackchannelItem, setup: Setup, *, backchannels: bool, words: Transcript | None = None, pause: bool = True
) -> list[Utterance]:
    """Play one recording through the VAD and the user aggregator; judge each utterance.

    ``words``: what a speech recognizer heard (replayed instead of the script's words; the script's
    segments still say what each utterance was). ``pause``: ``BackchannelStart(pause=...)``.
    """
    recording = read_wav(item.wav)
    chunks = _chunks(recording.samples, setup.tail)
    start = (BackchannelStart(pause=pause), VADStart(), TranscriptionStart()) if backchannels else None
    pair = Pair(LLMContext(), turns=TurnsConfig(start=start, stop=[stop_strategy(setup)]))
    items, end = _audio(chunks)
    interrupted: list[float] = []
    paused: list[float] = []
    resumed: list[float] = []
    kept: list[float] = []
    subscriptions = CompositeDisposable()
    test = TestScheduler()
    t0 = [0.0]

    def clock() -> float:
        return test.now.timestamp() - t0[0]

    def started() -> None:
        t0[0] = test.now.timestamp()

    def on_output(frame: Frame) -> None:
        into = {F.InterruptionFrame: interrupted, F.BotSpeechPauseFrame: paused, F.BotSpeechResumeFrame: resumed}
        into[type(frame)].append(round(clock(), 3))  # type: ignore[index]

    def on_backchannel(_agg: object, _frame: object = None) -> None:
        kept.append(round(clock(), 3))

    bot: list[tuple[float, Frame]] = []
    for a, b in item.bot:
        bot += [(a, F.BotStartedSpeakingFrame()), (b, F.BotStoppedSpeakingFrame())]
    user = pair.user()
    user.events.on("on_user_backchannel", on_backchannel)
    user.offload = SchedulerOffload(test, setup.model_latency)
    watched = (F.InterruptionFrame, F.BotSpeechPauseFrame, F.BotSpeechResumeFrame)
    stages = [VADProcessor(_vad_factory(setup)), user, _Tap(watched, on_output)]
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
        held = [t for t in paused if seg.start - 0.05 <= t < until]
        again = [t for t in resumed if held and held[0] <= t < until]
        out.append(Utterance(item.wav.name, seg.text, kind, seg.start, hits[0] if hits else None, said,
                             held[0] if held else None, again[0] if again else None))
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
    """Continuers kept, interruptions that interrupted, the barge-in latency (p50, p90) of those, the gaps.

    ``barge_in_*``: speech start to the bot's audio stopping (paused or cut); ``interruption_*``: to the
    interruption itself; ``gap_*``: how long the bot paused for each continuer it then played on through.
    """
    continuers = [u for u in utterances if u.kind == "continuer"]
    interruptions = [u for u in utterances if u.kind == "interruption"]
    caught = [u for u in interruptions if u.interrupted]
    latencies = [u.latency for u in caught if u.latency is not None]
    cut = [u.interruption_latency for u in caught if u.interruption_latency is not None]
    gaps = [u.gap for u in continuers if u.gap is not None]
    return {
        "continuers": len(continuers), "continuers_kept": sum(not u.interrupted for u in continuers),
        "interruptions": len(interruptions), "interruptions_caught": len(caught),
        "barge_in_p50": _p(latencies, 50), "barge_in_p90": _p(latencies, 90),
        "interruption_p50": _p(cut, 50), "interruption_p90": _p(cut, 90),
        "continuers_paused": len(gaps), "gap_p50": _p(gaps, 50), "gap_p90": _p(gaps, 90),
        "false_barge_ins": [u.text for u in continuers if u.interrupted],
        "missed_barge_ins": [u.text for u in interruptions if not u.interrupted],
    }


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f} s"


def describe(name: str, s: dict[str, Any]) -> str:
    """One line for a run."""
    line = (f"{name}: continuers kept {_share(s['continuers_kept'], s['continuers'])}, "
            f"interruptions that interrupted {_share(s['interruptions_caught'], s['interruptions'])}; "
            f"barge-in latency from the start of speech (the bot's audio stops) p50 {_s(s['barge_in_p50'])}, "
            f"p90 {_s(s['barge_in_p90'])}")
    if s["interruption_p50"] != s["barge_in_p50"] or s["interruption_p90"] != s["barge_in_p90"]:
        line += f"; interrupted p50 {_s(s['interruption_p50'])}, p90 {_s(s['interruption_p90'])}"
    if s["continuers_paused"]:
        line += (f"; {s['continuers_paused']} continuers paused the bot for p50 {_s(s['gap_p50'])}, "
                 f"p90 {_s(s['gap_p90'])}")
    return line


def evaluate_backchannels(
    items: Sequence[BackchannelItem], setup: Setup, on_step: Callable[[str], None] | None = None,
    stt: STTService | None = None, *, without_pause: bool = False,
) -> dict[str, list[Utterance]]:
    """Every recording, without and with :class:`BackchannelStart` (``"off"``, ``"on"``).

    ``stt``: the words are what it hears in each recording (its finals, and interim words made from
    them with ``setup.interim_lag``), not the script's. ``without_pause``: also with
    ``BackchannelStart(pause=False)`` (``"on_without_pause"``: the bot talks on until the words decide).
    """
    modes = [("off", False, True), ("on", True, True)] + ([("on_without_pause", True, False)] if without_pause else [])
    runs: dict[str, list[Utterance]] = {name: [] for name, _, _ in modes}
    for item in items:
        heard = transcribe(read_wav(item.wav), stt, vad=setup.vad, params=setup.vad_params) if stt else None
        for name, on, pause in modes:
            runs[name].extend(watch(item, setup, backchannels=on, words=heard, pause=pause))
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
