"""Where the latency, the misses and the cut-offs of an ``rxvoice eval`` run come from.

Reads the JSON of ``rxvoice eval PATH --json`` (any stop setup; the reasons are
parsed for the recommended ``FusedTurnStop``) and splits, run by run:

* **the latency of the ends found** into its floor and the wait after it: the
  earliest an answer can come is when the pause's final words are in (the
  replay's ``stt_delay`` after the speech) or when the VAD's stop and the audio
  model's verdict are (``vad_stop_secs + model_latency``), whichever is later;
  every answer is then classed as *at the words* (answered the moment the
  words were in), *silence* (the calibrated wait counted some silence, under its
  bound), *bound* (it waited the wait's bound, ``WaitModel.max_wait``), *hold*
  (longer than the bound: a reading's rhythm, words that say more is coming, or
  the audio model's confident "incomplete") or *fallback* (no VAD pause around
  the words: the quiet after them). It prints each class's count, its share of
  the ends found, and the classes of the slowest tenth (what sets the p90);
* **the ends missed** (answered only after the caller went on, or not at all)
  by what held them: a *reading* (a number or spelling in progress), words the
  signal cannot *read* (a name alone), *words* that say more is coming (their
  share of the odds at or under ``-words_hold``), or *unsure* otherwise; with how
  long the caller waited before going on;
* **the cut-offs** by the answer's cause, recovered or audible, and the turn ends
  answered inside their own speech.

    python benchmarks/turn_decompose.py EVAL.json [--json]

Use it on the tune split while tuning (``rxvoice eval TUNE/ --json > tune.json``);
the report split's texts are not for reading while tuning.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rxvoice.turns.ending import default_words_end, plain_words, reading_in_progress
from rxvoice.turns.wait import DEFAULT_WAIT, WaitModel, words_term

_WAITED = re.compile(r"waited (\d+(?:\.\d+)?) s of silence")
_AT_WORDS = "answered when the words were in"
_TOLERANCE = 0.015
LATENCY_CLASSES = ("at the words", "silence", "bound", "hold", "fallback", "other")
MISS_CLASSES = ("reading", "unread", "words", "unsure")


def latency_class(reason: str | None, model: WaitModel = DEFAULT_WAIT) -> str:
    """The class of an answer, from its reason (see the module's docstring)."""
    text = reason or ""
    if _AT_WORDS in text:
        return "at the words"
    if "no VAD pause" in text:
        return "fallback"
    waited = _WAITED.search(text)
    if waited is None:
        return "other"
    seconds = float(waited.group(1))
    if seconds > model.max_wait + _TOLERANCE:
        return "hold"
    if seconds >= model.max_wait - _TOLERANCE:
        return "bound"
    return "silence"


def turn_texts(pauses: Sequence[dict[str, Any]]) -> list[str]:
    """The turn's words up to each pause of one recording (a turn ends at a pause that should be answered)."""
    out: list[str] = []
    said: list[str] = []
    for p in pauses:
        said.append(str(p.get("text") or ""))
        out.append(" ".join(said))
        if p.get("should_answer"):
            said = []
    return out


def miss_class(text: str, judge: Any, model: WaitModel = DEFAULT_WAIT) -> str:
    """What held an end that was not answered in time (``judge``: a words' signal with ``judge(text)``)."""
    words = plain_words(text)
    if reading_in_progress(words):
        return "reading"
    verdict = judge.judge(text)
    if verdict.weight == 0:
        return "unread"
    if words_term(model, verdict) <= -model.words_hold:
        return "words"
    return "unsure"


def _quantile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else math.nan


def decompose(run: dict[str, Any], settings: dict[str, Any], judge: Any,
              model: WaitModel = DEFAULT_WAIT) -> dict[str, Any]:
    """One run's decomposition (the keys the module's docstring lists)."""
    stt_delay = float(settings.get("stt_delay") or 0.0)
    verdict_at = float(run.get("vad_stop_secs") or settings.get("vad_stop_secs") or 0.0) + float(
        settings.get("model_latency") or 0.0)
    found: list[tuple[float, str]] = []
    missed: list[tuple[str, float | None, str]] = []
    cuts: Counter[str] = Counter()
    inside = 0
    for recording in run["recordings"]:
        pauses = recording["pauses"]
        for p, text in zip(pauses, turn_texts(pauses), strict=True):
            outcome = p.get("outcome")
            if p.get("should_answer") and outcome == "found":
                found.append((float(p["latency"]), latency_class(p.get("reason"), model)))
            elif p.get("should_answer") and outcome == "missed":
                went_on = p.get("resumed_at")
                gap = None if went_on is None else float(went_on) - float(p["end"])
                missed.append((miss_class(text, judge, model), gap, text))
            elif outcome == "cut-off":
                if p.get("should_answer"):
                    inside += 1
                else:
                    heard = "recovered" if p.get("recovered") else "audible"
                    cuts[f"{p.get('cause') or 'none'}, {heard}"] += 1
    latencies = [lat for lat, _ in found]
    p90 = _quantile(latencies, 0.9)
    classes = Counter(kind for _, kind in found)
    slowest = Counter(kind for lat, kind in found if lat >= p90)
    gaps = [g for _, g, _ in missed if g is not None]
    return {
        "floor": {"stt_delay": stt_delay, "vad_stop_and_verdict": round(verdict_at, 3),
                  "earliest_answer": round(max(stt_delay, verdict_at), 3)},
        "found": len(found),
        "latency": {"p50": _quantile(latencies, 0.5), "p90": p90},
        "latency_classes": {k: classes[k] for k in LATENCY_CLASSES if classes[k]},
        "slowest_tenth": {k: slowest[k] for k in LATENCY_CLASSES if slowest[k]},
        "wait_after_floor_p50": _quantile([lat - max(stt_delay, verdict_at) for lat in latencies], 0.5),
        "missed": len(missed),
        "miss_classes": dict(Counter(kind for kind, _, _ in missed).most_common()),
        "missed_gap_p50": _quantile(gaps, 0.5),
        "cut_offs": dict(cuts.most_common()),
        "ends_cut_inside_their_speech": inside,
    }


def _print(out: dict[str, Any], stream: Any) -> None:
    f = out["floor"]
    n = max(1, out["found"])
    print(f"floor: words in {f['stt_delay']:.2f} s, VAD stop + verdict {f['vad_stop_and_verdict']:.2f} s "
          f"-> earliest answer {f['earliest_answer']:.2f} s", file=stream)
    print(f"ends found {out['found']}: latency p50 {out['latency']['p50']:.3f} s, p90 {out['latency']['p90']:.3f} s; "
          f"wait after the floor p50 {out['wait_after_floor_p50']:.3f} s", file=stream)
    for k, v in out["latency_classes"].items():
        print(f"  {k:<13} {v:>5}  {100 * v / n:5.1f} %", file=stream)
    print("  the slowest tenth (sets the p90): "
          + ", ".join(f"{k} {v}" for k, v in out["slowest_tenth"].items()), file=stream)
    print(f"ends missed {out['missed']} (the caller went on after {out['missed_gap_p50']:.2f} s, median): "
          + ", ".join(f"{k} {v}" for k, v in out["miss_classes"].items()), file=stream)
    print("cut-offs: " + ", ".join(f"{k} {v}" for k, v in out["cut_offs"].items())
          + f"; ends answered inside their own speech {out['ends_cut_inside_their_speech']}", file=stream)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("eval_json", type=Path, help="the output of rxvoice eval ... --json")
    p.add_argument("--json", action="store_true", help="print JSON")
    args = p.parse_args(argv)
    doc = json.loads(args.eval_json.read_text(encoding="utf-8"))
    judge = default_words_end("en")
    outs = []
    for run in doc["runs"]:
        out = decompose(run, doc["settings"], judge)
        outs.append({"params": run.get("params"), **out})
        if not args.json:
            if run.get("params"):
                print(f"== {run['params']}")
            _print(out, sys.stdout)
    if args.json:
        print(json.dumps(outs, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
