"""Fit the words' end-of-turn signal (``rxvoice.turns.ending.TRIGRAM_WEIGHTS``) and compare the candidates.

The data: every English utterance of ``chatterbot-corpus`` 1.3.3 (a dialogue
corpus on PyPI, BSD licence: ``pip install --no-deps chatterbot-corpus==1.3.3``),
lower-cased without punctuation as an STT delivers it. Every prefix that ends
where a sentence ends is a possible turn end (label 1), every other prefix a
speaker going on (label 0). The model: a logistic regression over five
features of the PocketSphinx trigram model (``TrigramWordsEnd.features``),
classes weighted equally, a little L2, fitted by Newton's method: the same
numbers every run.

    python benchmarks/train_words_end.py                     # fit, print the weights and held-out scores
    python benchmarks/train_words_end.py --measure DIR...    # compare the candidates on labelled calls

``--measure`` scores each candidate on the pauses of labelled calls (every
segment end: turn end or mid-turn pause, the turn's words so far, plain):
ROC AUC, and the share of mid-turn pauses ranked above the median turn end.
"""

from __future__ import annotations

import argparse
import json
import math
import re
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from rxvoice.turns.completion import Completion, judge_completion
from rxvoice.turns.ending import TRIGRAM_WEIGHTS, TrigramWordsEnd, plain_words

FIVE_FEATURES = (0.1517, 1.5388, -0.6715, -0.2369, 0.0)
"""The five-feature fit (a candidate, measured against the one-feature fit that ships)."""

_LINE = re.compile(r"^\s*-\s+(?:-\s+)?(.*\S)\s*$")
_SENTENCE_END = re.compile(r"[.?!]+(?=\s|$)")


def corpus_folder() -> Path:
    import chatterbot_corpus

    return Path(chatterbot_corpus.__file__).parent / "data" / "english"


def utterances(folder: Path) -> list[str]:
    """The utterances of the corpus's English YAML files, in file order (a plain line reader)."""
    out: list[str] = []
    for path in sorted(folder.glob("*.yml")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.startswith(("categories", "conversations")) or line.strip() in ("- conversations",):
                continue
            m = _LINE.match(line)
            if m is None:
                continue
            text = m.group(1).strip().strip("'\"")
            if text and not text.startswith(("- ", "#")) and len(text.split()) <= 40:
                out.append(text)
    return out


def prefixes(text: str) -> list[tuple[list[str], int]]:
    """Every word prefix of ``text`` (plain) and whether a sentence ends there."""
    words: list[str] = []
    ends: set[int] = set()
    for piece in _SENTENCE_END.split(text):
        words += plain_words(piece)
        ends.add(len(words))
    ends.add(len(words))
    return [(words[:n], int(n in ends)) for n in range(1, len(words) + 1)]


def fit(x: np.ndarray, y: np.ndarray, l2: float = 1e-3, iterations: int = 30) -> np.ndarray:
    """Class-balanced L2 logistic regression by Newton's method (x has the bias column)."""
    weight = np.where(y == 1, 0.5 / y.mean(), 0.5 / (1 - y.mean()))
    w = np.zeros(x.shape[1])
    for _ in range(iterations):
        p = 1 / (1 + np.exp(-x @ w))
        grad = x.T @ (weight * (p - y)) / len(y) + l2 * np.r_[0, w[1:]]
        hess = (x * (weight * p * (1 - p))[:, None]).T @ x / len(y) + l2 * np.diag(np.r_[0, np.ones(len(w) - 1)])
        w -= np.linalg.solve(hess, grad)
    return np.asarray(w)


def auc(scores: Sequence[float], labels: Sequence[int]) -> float:
    """ROC AUC (ties count half)."""
    pos = [s for s, y in zip(scores, labels, strict=True) if y]
    neg = [s for s, y in zip(scores, labels, strict=True) if not y]
    if not pos or not neg:
        return math.nan
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def pauses(folders: Sequence[Path]) -> list[tuple[str, int]]:
    """(the turn's words so far, plain; 1 at a turn end) for every segment of the calls in ``folders``."""
    out: list[tuple[str, int]] = []
    for folder in folders:
        for path in sorted(folder.glob("*.transcript.json")):
            turn: list[str] = []
            for seg in json.loads(path.read_text(encoding="utf-8"))["segments"]:
                turn.append(seg["text"])
                out.append((" ".join(plain_words(" ".join(turn))), int(bool(seg["turn_end"]))))
                if seg["turn_end"]:
                    turn = []
    return out


def _rules(text: str) -> float:
    v = judge_completion(text)
    if v.completion is Completion.COMPLETE:
        return 1.0
    if v.completion is Completion.INCOMPLETE:
        return 0.3 if v.tentative else 0.0
    return 0.5


def measure(folders: Sequence[Path], model: TrigramWordsEnd) -> None:
    data = pauses(folders)
    labels = [y for _, y in data]
    raw = TrigramWordsEnd(weights=(0.0, 1.0, 0.0, 0.0, 0.0))
    five = TrigramWordsEnd(weights=FIVE_FEATURES)
    candidates: dict[str, Callable[[str], float]] = {
        "hand rules (judge_completion)": _rules,
        "trigram end log-probability (raw)": lambda t: raw.judge(t).probability,
        "trigram, five-feature logistic": lambda t: five.judge(t).probability,
        "TrigramWordsEnd (the shipped weights)": lambda t: model.judge(t).probability,
    }
    print(f"{len(data)} pauses ({sum(labels)} turn ends) in {', '.join(str(f) for f in folders)}")
    for name, fn in candidates.items():
        scores = [fn(t) for t, _ in data]
        ends = sorted(s for s, y in zip(scores, labels, strict=True) if y)
        median_end = ends[len(ends) // 2] if ends else math.nan
        above = sum(1 for s, y in zip(scores, labels, strict=True) if not y and s >= median_end)
        mids = len(labels) - sum(labels)
        print(f"  {name:<40} AUC {auc(scores, labels):.3f}   mid-turn pauses at or above the median end: "
              f"{above}/{mids}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--corpus", type=Path, help="the chatterbot-corpus English folder (default: the installed one)")
    p.add_argument("--measure", type=Path, nargs="+", help="compare the candidates on these labelled calls")
    args = p.parse_args(argv)
    if args.measure:
        measure(args.measure, TrigramWordsEnd())
        return 0
    texts = utterances(args.corpus or corpus_folder())
    lm = TrigramWordsEnd()
    rows: list[tuple[tuple[float, ...], int, bool]] = []
    for i, text in enumerate(texts):
        for words, label in prefixes(text):
            rows.append((lm.features(words), label, i % 5 == 4))
    print(f"{len(texts)} utterances, {len(rows)} prefixes ({int(sum(r[1] for r in rows))} sentence ends)")
    held = [r for r in rows if r[2]]
    for name, used in (("all five features", (0, 1, 2, 3, 4)), ("the end log-probability alone", (0, 1))):
        x = np.array([[r[0][i] for i in used] for r in rows if not r[2]])
        y = np.array([r[1] for r in rows if not r[2]], dtype=float)
        fitted = fit(x, y)
        w = [0.0] * len(TRIGRAM_WEIGHTS)
        for i, v in zip(used, fitted, strict=True):
            w[i] = float(v)
        scores = [float(np.dot(w, r[0])) for r in held]
        print(f"{name}: held-out prefixes (every fifth utterance) AUC {auc(scores, [r[1] for r in held]):.3f}; "
              "weights (" + ", ".join(f"{v:.4f}" for v in w) + ")")
    print("TRIGRAM_WEIGHTS in rxvoice.turns.ending:", TRIGRAM_WEIGHTS)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
