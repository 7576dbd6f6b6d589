"""Fit the calibrated wait (``rxvoice.turns.wait.DEFAULT_WAIT``) on the tune split of the generated corpus.

For every pause of the tune calls (the end of every segment: a turn end or a
mid-turn pause) this takes what ``FusedTurnStop`` knows when the speech stops:
Smart Turn's probability on the turn's audio so far (from 0.3 s before the
turn's first word to the VAD stop, as the strategy's stream holds it), the
words of the turn so far as an STT delivers them (plain), whether a number or
spelling is being read and what its structure says (``reading_end``: a digit
count a number is commonly complete at, letters that spell a word), the turn's
length, and the longest pause the speaker came back from in the turn. Then:

1. a logistic regression of "turn end" on that evidence gives the odds at the
   moment the speech stops (bias, audio, words, reading, length, reading_end,
   and where a reading stands: its first group after other words, or the
   whole turn);
2. a log-logistic law fitted to the mid-turn pauses' lengths (ordinary and
   inside readings, one shape) gives how fast the silence makes a pause
   unlikely;
3. the threshold and the bounds (``max_wait``, the words' ``words_wait`` and
   ``words_hold``, a reading's ``rhythm`` and its first group's ``first_wait``, the
   audio's ``hold_wait``) are chosen on a grid by simulating
   every tune pause: the best score against the targets (with a margin on the
   cut-offs). It also prints what went wrong on tune, by class (:func:`errors`),
   and the outcome at patience 0.5 and 2.

    python benchmarks/fit_turn_wait.py TUNE_DIR [--features cache.json] [--human ROWS.json --human-share 0.5]
    python benchmarks/fit_turn_wait.py TUNE_DIR --features cache.json --frontier

``--frontier`` fits nothing: it simulates the shipped wait (``DEFAULT_WAIT``) on the
tune pauses with other thresholds and bounds, to see how far moving them goes.

``--human`` adds the rows of a tune set of real speech (``benchmarks/human_tune.py --out``):
the logistic model (step 1) is fitted on both, the human rows carrying
``--human-share`` of the weight; the pause law and the grid stay on the
corpus (the human set is too small to choose bounds on), and the outcome on
the human rows is printed as well.

It prints a ``WaitModel(...)`` to paste into ``rxvoice/turns/wait.py``. Never
give it the report split.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from rxvoice.cli.wav import read_wav
from rxvoice.turns.ending import TrigramWordsEnd, plain_words, reading_end, reading_in_progress
from rxvoice.turns.wait import (
    DEFAULT_WAIT,
    FIRST_GROUP,
    WHOLE_TURN,
    Evidence,
    WaitModel,
    needed_silence,
    reading_place,
)

RATE = 16000
STOP_SECS = 0.16
STT_DELAY = 0.3
HEARD = 0.25
"""As ``rxvoice eval`` counts: an answer in the first ``HEARD`` s of the next speech, before a VAD can hear
it, still cuts off the pause before it; an end answered after the caller went on is missed."""
BOT_DELAY = 0.6


def extract(folder: Path, model: Path) -> list[dict[str, Any]]:
    from rxvoice.audio.turn import SmartTurnAnalyzer

    analyzer = SmartTurnAnalyzer(model)
    rows: list[dict[str, Any]] = []
    for path in sorted(folder.glob("*.transcript.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        samples = read_wav(path.with_name(path.name.replace(".transcript.json", ".wav"))).samples
        segments = doc["segments"]
        turn_start: float | None = None
        words: list[str] = []
        longest = 0.0
        for i, seg in enumerate(segments):
            if turn_start is None:
                turn_start, words, longest = seg["start"], [], 0.0
            words += plain_words(seg["text"])
            a = max(0, round((turn_start - 0.3) * RATE))
            b = round((seg["end"] + STOP_SECS) * RATE)
            p_audio = analyzer.probability(samples[a:b])
            after = segments[i + 1]["start"] - seg["end"] if i + 1 < len(segments) else math.inf
            rows.append({
                "call": path.name, "text": " ".join(words), "end": bool(seg["turn_end"]), "audio": p_audio,
                "reading": reading_in_progress(words), "n": len(words), "longest": longest,
                "after": None if math.isinf(after) else after,
            })
            if seg["turn_end"]:
                turn_start = None
            else:
                longest = max(longest, after)
        print(f"  {path.name}", file=sys.stderr, end="\r")
    return rows


_vocabulary: list[TrigramWordsEnd] = []


def structure(r: dict[str, Any]) -> float:
    """Inside a reading, what its own structure says about its end (``rxvoice.turns.ending.reading_end``)."""
    if not r["reading"]:
        return 0.0
    if "reading_end" not in r:
        if not _vocabulary:
            _vocabulary.append(TrigramWordsEnd())
        r["reading_end"] = reading_end(plain_words(r["text"]), _vocabulary[0].known)
    return float(r["reading_end"])


def with_reading_pauses(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each row with ``pauses``: the pauses of its turn so far as (words before, seconds), as
    ``FusedTurnState.pauses`` holds them."""
    pauses: list[tuple[int, float]] = []
    for r, before in zip(rows, [None, *rows[:-1]], strict=True):
        if before is None or before["end"] or before["call"] != r["call"]:
            pauses = []
        elif before["after"] is not None:
            pauses = [*pauses, (int(before["n"]), float(before["after"]))]
        r["pauses"] = pauses
    return rows


def evidence(r: dict[str, Any], words: Any) -> Evidence:
    """What ``FusedTurnStop`` knows at this row's pause (a reading waits by the pauses inside it)."""
    longest, group = r["longest"], 0
    if r["reading"]:  # rows without pauses (a human set's): the turn's longest counts as inside
        pauses = r.get("pauses", [(r["n"], r["longest"])])
        longest, group = reading_place(plain_words(r["text"]), pauses)
    return Evidence(r["audio"], words, r["reading"], r["n"], longest, structure(r), group)


def logit(p: float) -> float:
    q = min(1 - 1e-3, max(1e-3, p))
    return math.log(q / (1 - q))


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 1e-2, weights: np.ndarray | None = None) -> np.ndarray:
    """Newton's method on the (row-weighted, mean 1) log-loss with a small ridge on all but the bias."""
    v = np.ones(len(y)) if weights is None else weights * len(y) / weights.sum()
    w = np.zeros(x.shape[1])
    for _ in range(40):
        p = 1 / (1 + np.exp(-x @ w))
        grad = x.T @ (v * (p - y)) / len(y) + l2 * np.r_[0, w[1:]]
        hess = (x * (v * p * (1 - p))[:, None]).T @ x / len(y) + l2 * np.diag(np.r_[0, np.ones(len(w) - 1)])
        w -= np.linalg.solve(hess, grad)
    return np.asarray(w)


def share_weights(rows: list[dict[str, Any]], human: list[dict[str, Any]], share: float) -> np.ndarray:
    """Row weights giving the ``human`` rows (appended after ``rows``) ``share`` of the fit."""
    if not human:
        return np.ones(len(rows))
    return np.asarray(np.r_[np.full(len(rows), (1 - share) / len(rows)), np.full(len(human), share / len(human))])


def fit_pauses(ordinary: list[float], reading: list[float]) -> tuple[float, float, float]:
    """Log-logistic MLE: (ordinary median, reading median, shared shape), by a grid search."""
    best = (math.inf, 0.6, 0.9, 3.0)
    for shape in np.arange(1.5, 6.01, 0.25):
        for m in np.arange(0.3, 1.51, 0.02):
            for mr in np.arange(0.4, 1.81, 0.02):
                nll = 0.0
                for values, med in ((ordinary, m), (reading, mr)):
                    v = np.asarray(values)
                    z = (v / med) ** shape
                    nll -= float(np.sum(np.log(shape / med) + (shape - 1) * np.log(v / med) - 2 * np.log1p(z)))
                if nll < best[0]:
                    best = (nll, float(m), float(mr), float(shape))
    return best[1], best[2], best[3]


def simulate(model: WaitModel, rows: list[dict[str, Any]], signal: TrigramWordsEnd, patience: float = 1.0,
             judged: list[Any] | None = None) -> dict[str, float]:
    """The outcome of every pause if answered after ``needed_silence`` (words in at STT_DELAY)."""
    ends = found = mids = cut = audible = 0
    latencies: list[float] = []
    verdicts = judged if judged is not None else [signal.judge(r["text"]) for r in rows]
    for r, words in zip(rows, verdicts, strict=True):
        ev = evidence(r, words)
        answer = max(needed_silence(model, ev, patience), STT_DELAY)
        after = r["after"] if r["after"] is not None else math.inf
        heard_back = after + HEARD  # the resumed speech reaches the strategy
        if r["end"]:
            ends += 1
            if answer < after:  # an end answered after the caller went on is missed (as rxvoice eval counts)
                found += 1
                latencies.append(answer)
        else:
            mids += 1
            if answer < heard_back:
                cut += 1
                if after >= answer + BOT_DELAY:
                    audible += 1
    latencies.sort()

    def q(f: float) -> float:
        return latencies[min(len(latencies) - 1, int(f * len(latencies)))] if latencies else math.nan

    def share(n: int, of: int) -> float:
        return n / of if of else math.nan

    return {"found": share(found, ends), "cut": share(cut, mids), "audible": share(audible, mids),
            "p50": q(0.5), "p90": q(0.9)}


def errors(model: WaitModel, rows: list[dict[str, Any]], judged: list[Any]) -> dict[str, dict[str, int]]:
    """Why each pause went wrong (the tune split only): the cut-offs and the late or missed ends, by class.

    A cut-off is classed by what let it through: ``reading`` (a number or spelling being read),
    ``bound`` (the silence reached the wait's bound first), ``words`` (the words said "finished"),
    ``audio`` (the audio model said "complete" and the words did not decide), ``silence`` (the
    odds grew with the silence). An end answered after 1.0 s (or missed) by what held it: ``reading``,
    ``unread`` (words the signal cannot read: a name alone), ``words`` (the words said "more is
    coming"), ``unsure`` (neither said much).
    """
    out: dict[str, dict[str, int]] = {"cut-offs": {}, "late ends": {}}
    for r, words in zip(rows, judged, strict=True):
        ev = evidence(r, words)
        answer = max(needed_silence(model, ev), STT_DELAY)
        after = r["after"] if r["after"] is not None else math.inf
        if not r["end"] and answer < after + HEARD:
            if r["reading"]:
                kind = "reading"
            elif answer > 0.99 * model.max_wait and words.probability < 0.5:
                kind = "bound"
            elif words.weight > 0 and words.probability >= 0.5:
                kind = "words"
            elif r["audio"] >= 0.5:
                kind = "audio"
            else:
                kind = "silence"
            key = "cut-offs"
        elif r["end"] and (answer > 1.0 or answer >= after):
            if r["reading"]:
                kind = "reading"
            elif words.weight == 0:
                kind = "unread"
            elif words.probability < 0.5:
                kind = "words"
            else:
                kind = "unsure"
            key = "late ends"
        else:
            continue
        out[key][kind] = out[key].get(kind, 0) + 1
    return out


def frontier(model: WaitModel, rows: list[dict[str, Any]], judged: list[Any],
             thresholds: list[float], max_waits: list[float]) -> list[dict[str, float]]:
    """The outcome of ``model`` with each threshold and bound (``--frontier``): how far moving them goes."""
    out = []
    for max_wait in max_waits:
        for threshold in thresholds:
            candidate = replace(model, threshold=threshold, max_wait=max_wait)
            out.append({"threshold": threshold, "max_wait": max_wait,
                        **simulate(candidate, rows, None, judged=judged)})  # type: ignore[arg-type]
    return out


def cost(out: dict[str, float], audible: float, cut: float) -> float:
    """The targets as one score: misses and late answers cost, audible cut-offs cost most."""
    return (max(0.0, 0.95 - out["found"]) * 10 + max(0.0, out["audible"] - audible) * 20
            + max(0.0, out["cut"] - cut) * 5 + max(0.0, out["p90"] - 1.0) + max(0.0, out["p50"] - 0.4) * 5)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("tune", type=Path, nargs="+", help="the tune split's folder(s)")
    p.add_argument("--model", type=Path, default=Path.home() / ".cache" / "rxvoice" / "smart-turn-v3.2-cpu.onnx")
    p.add_argument("--features", type=Path, help="cache the extracted evidence here (JSON)")
    p.add_argument("--audible", type=float, default=0.03, help="target share of audible cut-offs (default 0.03)")
    p.add_argument("--cut", type=float, default=0.12, help="target share of all cut-offs (default 0.12)")
    p.add_argument("--human", type=Path, help="rows of a tune set of real speech (benchmarks/human_tune.py --out)")
    p.add_argument("--human-share", type=float, default=0.5, help="their share of the logistic fit (default 0.5)")
    p.add_argument("--frontier", action="store_true",
                   help="no fit: simulate the shipped wait with other thresholds and bounds")
    args = p.parse_args(argv)
    human: list[dict[str, Any]] = json.loads(args.human.read_text()) if args.human is not None else []
    if args.features is not None and args.features.is_file():
        rows = json.loads(args.features.read_text())
    else:
        rows = [r for folder in args.tune for r in extract(folder, args.model)]
        if args.features is not None:
            args.features.write_text(json.dumps(rows))
    rows = with_reading_pauses(rows)
    signal = TrigramWordsEnd()
    if args.frontier:
        judged = [signal.judge(r["text"]) for r in rows]
        thresholds = [round(float(t), 2) for t in np.arange(1.5, 3.51, 0.25)]
        for o in frontier(DEFAULT_WAIT, rows, judged, thresholds, [1.0, 1.1, 1.2, 1.3]):
            print(f"threshold {o['threshold']:.2f} max_wait {o['max_wait']:.1f}: found {o['found']:.3f} "
                  f"cut {o['cut']:.3f} audible {o['audible']:.3f} p50 {o['p50']:.2f} s p90 {o['p90']:.2f} s")
        return 0
    # inside a reading the words weigh nothing (rxvoice.turns.wait.end_log_odds)
    both = rows + human
    groups = [evidence(r, None).reading_group for r in both]
    x = np.array([[1.0, logit(r["audio"]), 0.0 if r["reading"] else logit(signal.judge(r["text"]).probability),
                   float(r["reading"]), math.log1p(r["n"]), structure(r),
                   float(g == FIRST_GROUP), float(g == WHOLE_TURN)]
                  for r, g in zip(both, groups, strict=True)])
    y = np.array([float(r["end"]) for r in both])
    w = fit_logistic(x, y, weights=share_weights(rows, human, args.human_share))
    ordinary = [r["after"] for r in rows if not r["end"] and not r["reading"]]
    inside = [r["after"] for r in rows if not r["end"] and r["reading"]]
    m, mr, shape = fit_pauses(ordinary, inside)
    model = replace(DEFAULT_WAIT, bias=round(float(w[0]), 3), audio=round(float(w[1]), 3),
                    words=round(float(w[2]), 3), reading=round(float(w[3]), 3),
                    length=round(float(w[4]), 3), reading_end=round(float(w[5]), 3),
                    first_group=round(float(w[6]), 3), alone=round(float(w[7]), 3),
                    pause_median=round(m, 2), reading_median=round(mr, 2), pause_shape=round(shape, 2))
    if human:
        print(f"with {len(human)} rows of real speech ({sum(bool(r['end']) for r in human)} turn ends), "
              f"{args.human_share:.0%} of the logistic fit")
    print(f"{len(rows)} pauses ({int(sum(r['end'] for r in rows))} turn ends); logistic {np.round(w, 3)}; "
          f"pauses: median {m:.2f} s, in readings {mr:.2f} s, shape {shape:.2f}")
    judged = [signal.judge(r["text"]) for r in rows]
    chosen, best = None, math.inf
    for max_wait in (1.0, 1.2, 1.3, 1.4, 1.6):
        for words_wait in (0.0, 1.8, 2.0, 2.2, 2.5):
            for words_hold in (1.0, 1.5, 2.0):
                for rhythm in (1.35, 1.5, 2.0):  # at least 1.35: a reader slowing down 0.6, 1.0, 1.5 s is held
                    for first_wait, hold_wait in itertools.product((0.0, 1.8, 2.2), (1.6, 2.0, 2.5)):
                        for threshold in np.arange(0.0, 4.01, 0.25):
                            candidate = replace(model, threshold=round(float(threshold), 2), max_wait=max_wait,
                                                words_wait=words_wait, words_hold=words_hold, rhythm=rhythm,
                                                first_wait=first_wait, hold_wait=hold_wait)
                            out = simulate(candidate, rows, signal, judged=judged)
                            c = cost(out, args.audible, args.cut)
                            if c < best:
                                chosen, best = candidate, c
    assert chosen is not None
    coarse = chosen
    for threshold in np.arange(coarse.threshold - 0.2, coarse.threshold + 0.201, 0.05):  # finer, around it
        candidate = replace(coarse, threshold=round(float(threshold), 2))
        c = cost(simulate(candidate, rows, signal, judged=judged), args.audible, args.cut)
        if c < best:
            chosen, best = candidate, c
    print("chosen:", chosen)
    print("simulated on tune:", simulate(chosen, rows, signal, judged=judged))
    print("what went wrong on tune:", errors(chosen, rows, judged))
    if human:
        print("simulated on the real-speech rows:", simulate(chosen, human, signal))
    for patience in (0.5, 2.0):
        print(f"  patience {patience}:", simulate(chosen, rows, signal, patience, judged=judged))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
