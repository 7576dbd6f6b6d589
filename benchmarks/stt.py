"""Offline speech-to-text: word error rate and real-time factor of WhisperSTT and PocketSphinxSTT, with Pipecat's
WhisperSTTService on the same segments as the reference.

Every recording goes through the Silero VAD (the recommended setup's 0.16 s stop) and the engine in virtual
time (:func:`rxvoice.cli.transcribe.transcribe`, recognition inline), so each engine hears the same segments
with the same pre-roll. The engines:

* ``whisper``: :class:`~rxvoice.services.whisper.WhisperSTT` as shipped (the model found as WhisperSTT finds it,
  or ``--size``/``--whisper-model``; int8, one CTranslate2 thread, beam 5, the caller's previous speech as
  context, the encoder reading the audio and 5 s of padding);
* ``pocketsphinx``: :class:`~rxvoice.services.stt.PocketSphinxSTT` as shipped;
* ``pipecat``: Pipecat 1.14's ``WhisperSTTService`` (same model folder, int8) given each segment alone, as
  its segmented STT does (needs ``pip install -e '.[bench]'``; left out when Pipecat is not installed).

The sets (from the data folder given as the argument): ``calls`` (the ten development calls,
``calls/*.wav`` with their transcripts), split in two halves: ``calls-tune`` (:data:`TUNE_CALLS`, the five
the model and the decoding options were chosen on) and ``calls-held`` (the other five, only reported);
``booking`` (``conversation/booking.wav``) and ``utterances`` (``turns/*.wav``, the texts of ``labels.csv``).

Word error rate is pooled over a set (errors / reference words). The headline scoring (``WER``) is the
field's: Whisper's English text normalizer (``whisper-normalizer``, the bench extra) on both sides, after
three rules it lacks (see :func:`normalised`), with word splits reconciled (:func:`_same_forms`). Beside it:
``spoken`` (both sides as spoken words, digits as number words, fillers dropped) and ``raw`` (lower case
without punctuation, nothing else). Real-time factor is CPU seconds (all threads of the process) per second
of audio, silences included, VAD included; min/median/max over ``--runs``; CPU s/final is the median run's CPU
seconds over the finals the engine gave (what one utterance's words cost; VAD included). The machine may be shared: the
ratio against Pipecat, measured in the same run, is the figure to compare.

    python benchmarks/stt.py DATA      # DATA: a folder with calls/, conversation/, turns/; --json, --engines
    python benchmarks/stt.py DATA --per-call --turns    # each call's errors; the turn decisions on the words
    python benchmarks/stt.py DATA --sets calls --engines whisper --dropped-tail none   # one set, one option

Targets: WhisperSTT word error rate <= 0.15 pooled over the calls; real-time factor <= 0.3 on one thread.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import re
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rxvoice.cli.transcribe import transcribe
from rxvoice.cli.wav import Recording, read_wav
from rxvoice.pipeline import inline_offload
from rxvoice.services.spoken import spoken_words
from rxvoice.services.stt import PocketSphinxSTT, Recognizer, STTService
from rxvoice.services.whisper import WhisperSTT
from rxvoice.services.whisper_model import find_whisper_model, whisper_model_spec
from rxvoice.testing import load_transcript

FILLERS = frozenset({"uh", "um", "er", "hmm", "mm"})
TARGET_WER = 0.15
TARGET_RTF = 0.3


def words(text: str) -> str:
    return " ".join(w for w in spoken_words(text) if w not in FILLERS)


# ---- scoring: the field's normalisation ---------------------------------------------------------------------

_ADDRESS = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+", re.IGNORECASE)
_OCLOCK = re.compile(r"\b(\w+)\s+o['’]?clock\b|\b(\d{1,2}):00\b", re.IGNORECASE)
_VARIANTS = {"alright": "all right", "ok": "okay"}
_VARIANT = re.compile(r"\b(" + "|".join(_VARIANTS) + r")\b", re.IGNORECASE)


def _english_normalizer() -> Callable[[str], str]:
    try:
        from whisper_normalizer.english import EnglishTextNormalizer
    except ImportError:
        raise SystemExit("benchmarks/stt.py scores with Whisper's English text normalizer: "
                         "pip install -e '.[bench]' (whisper-normalizer)") from None
    return EnglishTextNormalizer()  # type: ignore[no-any-return]


_NORMALIZER: Callable[[str], str] | None = None


def normalised(text: str) -> list[str]:
    """``text`` as the field scores it: Whisper's English text normalizer, after two rules it lacks.

    Whisper's normalizer (OpenAI's, as published in ``whisper-normalizer``) lower-cases, drops punctuation and
    the fillers, expands contractions, writes numbers as digits ("forty two dollars" and "$42" → "$42", "four
    eight two six one" → "48261") and British spellings as American ones. Before it: an e-mail address is
    written as said ("jordan.kim@gmail.com" → "jordan dot kim at gmail dot com"; the normalizer would delete
    "@" and "."), and "o'clock" and ":00" after an hour are dropped ("four o'clock", "4:00" → "four", "4";
    the normalizer turns "four o'clock" into "40 clock"); "alright" and "ok" are written "all right" and "okay"
    (spelling variants its British-to-American list does not cover). Word splits are reconciled by :func:`_same_forms`.
    """
    global _NORMALIZER
    if _NORMALIZER is None:
        _NORMALIZER = _english_normalizer()
    text = _ADDRESS.sub(lambda m: " " + m.group(0).replace("@", " at ").replace(".", " dot ") + " ", text)
    text = _OCLOCK.sub(lambda m: m.group(1) or m.group(2), text)
    text = _VARIANT.sub(lambda m: _VARIANTS[m.group(1).lower()], text)
    return _NORMALIZER(text).split()


def _same_forms(reference: list[str], hypothesis: list[str]) -> list[str]:
    """The hypothesis with its word splits written as the reference's: "e mail" / "email", "all right" /
    "alright", "6 pm" / "6 p m", "jordan" / "j o r d a n", "773 118" / "773118".

    A token of either side that equals 2-8 adjacent tokens of the other written together is one spelling of
    the same words, not an error: adjacent hypothesis tokens that make a reference token are joined, a
    hypothesis token that several adjacent reference tokens make is split as the reference writes them (the
    reference's word count, the denominator, never changes). Spelled letters compare with "0" read as "o"
    (the normalizer writes the letter "o" as the digit).
    """
    def key(run: list[str]) -> str:
        return "".join("o" if t == "0" and len(run) > 1 and all(len(x) == 1 for x in run) else t for t in run)

    ref_words = set(reference)
    ref_runs: dict[str, list[str]] = {}
    for i in range(len(reference)):
        for k in range(2, 9):
            if i + k <= len(reference):
                ref_runs.setdefault(key(reference[i:i + k]), reference[i:i + k])
    out: list[str] = []
    i = 0
    while i < len(hypothesis):
        for k in range(8, 1, -1):
            run = hypothesis[i:i + k]
            if len(run) == k and key(run) in ref_words:
                out.append(key(run))
                i += k
                break
        else:
            token = hypothesis[i]
            split = ref_runs.get(token) if token not in ref_words else None
            out += split if split is not None else [token]
            i += 1
    return out


def edits(reference: list[str], hypothesis: list[str]) -> int:
    """Substitutions + deletions + insertions between two token lists (Levenshtein)."""
    row = list(range(len(hypothesis) + 1))
    for i, r in enumerate(reference, 1):
        prev, row[0] = row[0], i
        for j, h in enumerate(hypothesis, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (r != h))
    return row[-1]


def raw_words(text: str) -> list[str]:
    """Lower case without punctuation, nothing else: what a plain scorer compares."""
    return re.findall(r"[a-z0-9']+", text.lower())


def scored(reference: str, hypothesis: str) -> dict[str, tuple[int, int]]:
    """(errors, reference words) under each scoring: ``raw``, ``spoken`` (digits as words) and ``normalised``."""
    ref, hyp = normalised(reference), normalised(hypothesis)
    spoken_ref, spoken_hyp = words(reference).split(), words(hypothesis).split()
    raw_ref = raw_words(reference)
    return {"raw": (edits(raw_ref, raw_words(hypothesis)), len(raw_ref)),
            "spoken": (edits(spoken_ref, spoken_hyp), len(spoken_ref)),
            "normalised": (edits(ref, _same_forms(ref, hyp)), len(ref))}


@dataclass
class Item:
    set: str
    path: Path
    reference: str


def items(data: Path) -> list[Item]:
    out = [Item("calls", w, " ".join(s.text for s in load_transcript(w.with_name(w.stem + ".transcript.json"))
                                     .segments)) for w in sorted((data / "calls").glob("*.wav"))]
    booking = data / "conversation" / "booking.wav"
    out.append(Item("booking", booking, " ".join(
        s.text for s in load_transcript(booking.with_name("booking.transcript.json")).segments)))
    with (data / "turns" / "labels.csv").open(encoding="utf-8", newline="") as f:
        out += [Item("utterances", data / "turns" / row["file"], row["text"]) for row in csv.DictReader(f)]
    missing = [i.path for i in out if not i.path.is_file()]
    if missing:
        raise SystemExit(f"{missing[0]}: not found (give the folder holding calls/, conversation/, turns/)")
    return out


class _PipecatRecognizer:
    """Pipecat's WhisperSTTService given each utterance's audio whole, when the VAD closes it."""

    def __init__(self, service: Any) -> None:
        self.service = service
        self.audio = bytearray()
        self.loop = asyncio.new_event_loop()

    def accept(self, audio: bytes) -> str | None:
        self.audio += audio
        return None

    def finish(self) -> str:
        audio, self.audio = bytes(self.audio), bytearray()

        async def run() -> str:
            return " ".join(f.text for f in [f async for f in self.service.run_stt(audio)] if hasattr(f, "text"))

        return self.loop.run_until_complete(run())

    def close(self) -> None:
        self.loop.close()


class PipecatWhisper(STTService):
    """The reference: Pipecat 1.14's WhisperSTTService (the same model folder, int8 on the CPU)."""

    name = "PipecatWhisper"

    def __init__(self, service: Any) -> None:
        super().__init__(offload=inline_offload, interim_interval=3600.0)
        self.service = service

    def new_recognizer(self) -> Recognizer:
        return _PipecatRecognizer(self.service)


def pipecat_service(model: Path) -> Any | None:
    try:
        import logging

        from loguru import logger
        from pipecat.services.whisper.stt import WhisperSTTService
    except ImportError:
        return None
    logger.remove()
    logging.getLogger("faster_whisper").setLevel(logging.WARNING)
    return WhisperSTTService(settings=WhisperSTTService.Settings(model=str(model)), device="cpu",
                             compute_type="int8")


def engines(names: list[str], model: Path, whisper_options: dict[str, Any]) -> dict[str, Callable[[], STTService]]:
    made: dict[str, Callable[[], STTService]] = {}
    for name in names:
        if name == "whisper":
            made[name] = lambda: WhisperSTT(model, offload=inline_offload, **whisper_options)
        elif name == "pocketsphinx":
            made[name] = lambda: PocketSphinxSTT(offload=inline_offload)
        elif name == "pipecat":
            service = pipecat_service(model)
            if service is None:
                print("note: pipecat-ai is not installed (pip install -e '.[bench]'): no reference", file=sys.stderr)
                continue
            made[name] = lambda service=service: PipecatWhisper(service)  # type: ignore[misc]
        else:
            raise SystemExit(f"unknown engine {name!r}")
    return made


SCORINGS = ("normalised", "spoken", "raw")


@dataclass
class Tally:
    errors: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SCORINGS, 0))
    reference: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SCORINGS, 0))
    audio: float = 0.0
    finals: int = 0
    cpu: list[float] = field(default_factory=list)

    def add(self, score: dict[str, tuple[int, int]]) -> None:
        for scoring, (errors, reference) in score.items():
            self.errors[scoring] += errors
            self.reference[scoring] += reference

    def wer(self, scoring: str = "normalised") -> float:
        return self.errors[scoring] / max(1, self.reference[scoring])


TUNE_CALLS = frozenset({"call01_banking", "call02_travel", "call04_utilities_phone", "call05_pizza", "call08_vet"})
"""The calls the decoding options and the model were chosen on; the other five are only reported."""


def call_sets(item: Item) -> tuple[str, ...]:
    """The sets a recording counts in: ``calls`` and its half (``calls-tune`` or ``calls-held``), or its own."""
    if item.set != "calls":
        return (item.set,)
    return ("calls", "calls-tune" if item.path.stem in TUNE_CALLS else "calls-held")


def measure(recording: Recording, make: Callable[[], STTService]) -> tuple[str, float, Any]:
    stt = make()
    started = time.process_time()  # CPU time on purpose: the figure is the engine's cost, not the machine's load
    heard = transcribe(recording, stt)
    return " ".join(s.text for s in heard.segments), time.process_time() - started, heard


def turn_counts(data: Path, recordings: dict[Path, Recording], heard: dict[Path, Any]) -> dict[str, int]:
    """The recommended setup's turn decisions on these words, scored against the calls' labels."""
    from rxvoice.audio.turn import find_model
    from rxvoice.cli.analysis import Setup, analyze, score

    setup = Setup(vad="silero", stop="smart-turn", model=find_model(), stt_delay=0.3, model_latency=0.05,
                  speech_timeout=0.6, tail=4.0)
    totals = {"turn_ends": 0, "found": 0, "cut_offs": 0, "missed": 0}
    for path, words_heard in heard.items():
        transcript = load_transcript(path.with_name(path.stem + ".transcript.json"))
        result = score(transcript, analyze(recordings[path], setup, words=words_heard, windows=False).turns)
        totals["turn_ends"] += result.turn_ends
        totals["found"] += result.found
        totals["cut_offs"] += result.premature
        totals["missed"] += result.missed
    return totals


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("data", type=Path, help="the folder holding calls/, conversation/ and turns/")
    parser.add_argument("--engines", default="whisper,pocketsphinx,pipecat")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--size", default=None, help="the Whisper model in the cache (tiny.en, base; default: "
                                                     "as WhisperSTT picks it)")
    parser.add_argument("--whisper-model", type=Path, default=None, help="a Whisper model folder (overrides --size)")
    parser.add_argument("--context", type=float, default=None, help="WhisperSTT's context seconds (default its own)")
    parser.add_argument("--beam-size", type=int, default=None)
    parser.add_argument("--full-window", action="store_true", help="WhisperSTT's encoder reads the whole 30 s window")
    parser.add_argument("--dropped-tail", default=None, help="WhisperSTT's dropped_tail seconds, or 'none' (default "
                                                             "its own)")
    parser.add_argument("--sets", default="calls,booking,utterances",
                        help="which recordings: calls, booking, utterances (comma-separated; default all)")
    parser.add_argument("--per-call", action="store_true", help="also each call's word errors, per engine")
    parser.add_argument("--turns", action="store_true", help="also the turn decisions on each engine's words")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    wanted = set(args.sets.split(","))
    if not wanted <= {"calls", "booking", "utterances"}:
        raise SystemExit(f"--sets: calls, booking, utterances; got {args.sets!r}")
    todo = [i for i in items(args.data) if i.set in wanted]
    recordings = {i.path: read_wav(i.path) for i in todo}
    model = find_whisper_model(args.whisper_model, size=args.size)
    options: dict[str, Any] = {}
    if args.context is not None:
        options["context"] = args.context
    if args.beam_size is not None:
        options["beam_size"] = args.beam_size
    if args.full_window:
        options["window_margin"] = None
    if args.dropped_tail is not None:
        options["dropped_tail"] = None if args.dropped_tail == "none" else float(args.dropped_tail)
    label = whisper_model_spec(model)
    print(f"Whisper model: {model} ({label.label if label else 'unpinned files'}); options {options or 'defaults'}",
          file=sys.stderr)
    made = engines(args.engines.split(","), model, options)
    tallies: dict[tuple[str, str], Tally] = {}
    texts: dict[tuple[str, Path], str] = {}
    per_call: dict[tuple[str, Path], dict[str, tuple[int, int]]] = {}
    heard_calls: dict[str, dict[Path, Any]] = {name: {} for name in made}
    for run in range(args.runs):
        for name, make in made.items():
            cpu_by_set: dict[str, float] = {}
            for item in todo:
                recording = recordings[item.path]
                text, cpu, heard = measure(recording, make)
                for set_name in call_sets(item):
                    cpu_by_set[set_name] = cpu_by_set.get(set_name, 0.0) + cpu
                if run == 0:
                    score = scored(item.reference, text)
                    for set_name in call_sets(item):
                        tally = tallies.setdefault((name, set_name), Tally())
                        tally.add(score)
                        tally.audio += recording.duration
                        tally.finals += len(heard.segments)
                    texts[(name, item.path)] = text
                    if item.set == "calls":
                        per_call[(name, item.path)] = score
                    if item.set in ("calls", "booking"):
                        heard_calls[name][item.path] = heard
            for set_name, cpu in cpu_by_set.items():
                tallies[(name, set_name)].cpu.append(cpu)
            print(f"run {run + 1}/{args.runs}: {name} done", file=sys.stderr, flush=True)
    rows = []
    for (name, set_name), t in tallies.items():
        rtf = sorted(c / t.audio for c in t.cpu)
        rows.append({"engine": name, "set": set_name, "words": t.reference["normalised"],
                     "seconds": round(t.audio, 1), "wer": round(t.wer(), 3), "wer_spoken": round(t.wer("spoken"), 3),
                     "wer_raw": round(t.wer("raw"), 3), "rtf_min": round(rtf[0], 3),
                     "rtf_median": round(statistics.median(rtf), 3), "rtf_max": round(rtf[-1], 3),
                     "finals": t.finals,
                     "cpu_per_final": round(statistics.median(t.cpu) / t.finals, 3) if t.finals else None})
    ratios = {}
    if "pipecat" in made and "whisper" in made:
        for set_name in ("calls", "calls-held", "booking", "utterances"):
            if ("whisper", set_name) not in tallies:
                continue
            ours, theirs = tallies[("whisper", set_name)], tallies[("pipecat", set_name)]
            ratios[set_name] = {
                "wer_vs_pipecat": round(ours.wer() / theirs.wer(), 3) if theirs.wer() else None,
                "rtf_vs_pipecat": round(statistics.median(ours.cpu) / statistics.median(theirs.cpu), 3),
            }
    turns = ({name: turn_counts(args.data, recordings, heard) for name, heard in heard_calls.items()}
             if args.turns else {})
    if args.json:
        print(json.dumps({"model": str(model), "options": options, "rows": rows, "ratios": ratios, "turns": turns,
                          "per_call": {f"{n}:{p.stem}": s for (n, p), s in per_call.items()},
                          "heard": {f"{n}:{p.name}": t for (n, p), t in texts.items()}}, indent=2))
        return
    print("WER: normalised (Whisper's English text normalizer; the headline), spoken (digits as words), raw")
    print(f"{'engine':13s} {'set':11s} {'words':>6s} {'audio s':>8s} {'WER':>6s} {'spoken':>6s} {'raw':>6s}"
          "  RTF min/median/max  finals  CPU s/final")
    for r in rows:
        print(f"{r['engine']:13s} {r['set']:11s} {r['words']:6d} {r['seconds']:8.1f} {r['wer']:6.3f} "
              f"{r['wer_spoken']:6.3f} {r['wer_raw']:6.3f}  "
              f"{r['rtf_min']:.3f}/{r['rtf_median']:.3f}/{r['rtf_max']:.3f}  {r['finals']:6d}  "
              f"{r['cpu_per_final'] if r['cpu_per_final'] is not None else '-'}")
    if args.per_call:
        for (name, path), score in per_call.items():
            errors, reference = score["normalised"]
            half = "tune" if path.stem in TUNE_CALLS else "held"
            rate = errors / max(1, reference)
            print(f"  {name:13s} {path.stem:24s} ({half}) {errors:3d}/{reference:3d} = {rate:.3f}")
    for set_name, ratio in ratios.items():
        print(f"whisper vs pipecat, {set_name}: WER ratio {ratio['wer_vs_pipecat']}, "
              f"CPU ratio {ratio['rtf_vs_pipecat']}")
    for name, counts in turns.items():
        print(f"turns on {name}'s words (calls + booking, recommended setup): ends {counts['found']}/"
              f"{counts['turn_ends']}, cut-offs {counts['cut_offs']}, missed {counts['missed']}")
    for set_name in ("calls", "calls-held"):
        calls = tallies.get(("whisper", set_name))
        if calls is not None:
            median_rtf = statistics.median(calls.cpu) / calls.audio
            print(f"targets ({set_name}): WER <= {TARGET_WER} pooled: {calls.wer():.3f} "
                  f"({'met' if calls.wer() <= TARGET_WER else 'NOT met'}); RTF <= {TARGET_RTF} on one thread: "
                  f"{median_rtf:.3f} ({'met' if median_rtf <= TARGET_RTF else 'NOT met'})")


if __name__ == "__main__":
    main()
