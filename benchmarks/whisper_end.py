"""Whisper's own end-of-sentence probability as end-of-turn evidence: measured on the tune split.

For every pause of the tune calls (the end of every segment: a turn end or a
mid-turn pause) this does what ``WhisperSTT`` does at the VAD's stop: it
transcribes the segment (0.3 s of pre-roll, to the VAD's stop 0.16 s after the
speech) after 5 s of the caller's previous speech, as shipped (Whisper base,
beam 5, the windowed encoder, the dropped-tail re-read). Then it asks the
decoder, with the same encoder output and Whisper's words for the window as a
forced prefix (no timestamps, the last word's punctuation taken off), for the
next token's probabilities, grouped:

* ``end``: a token starting with ``.``, ``?`` or ``!`` (not ``...``);
* ``comma``: ``,``, ``;``, ``:``, a dash;
* ``trail``: ``...``, ``…``;
* ``eot``: the end of the transcription with no punctuation;
* ``word``: anything else (another word).

It also keeps what ``fit_turn_wait.py`` extracts (Smart Turn's probability on
the turn's audio so far, reading, length) and the turn's words as Whisper
heard them, then prints the ROC AUC of each signal alone and of the logistic
model of ``fit_turn_wait.py`` (bias, audio, words, reading, length),
cross-validated by call (4 folds), with and without the new evidence (and its
products with the words' term and with reading), on the transcripts' words and
on Whisper's; the new evidence's AUC inside bands of the trigram's probability;
and the shipped wait with it folded into the words' log-odds (:func:`operating`).

    python benchmarks/whisper_end.py TUNE_DIR --rows whisper-end.jsonl [--limit N]
    python benchmarks/whisper_end.py TUNE_DIR --rows whisper-end.jsonl --analyse

Never give it the report split.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fit_turn_wait import fit_logistic, logit, simulate
from train_words_end import auc

from rxvoice.cli.wav import read_wav
from rxvoice.turns.ending import TrigramWordsEnd, WordsEnd, plain_words, reading_in_progress
from rxvoice.turns.wait import DEFAULT_WAIT

RATE = 16000
STOP_SECS = 0.16
PRE_ROLL = 0.3
GROUPS = ("end", "comma", "trail", "eot", "word")


def token_groups(tokenizer: Any, eot: int) -> np.ndarray:
    """The group (index into GROUPS) of every token id below ``eot``; special tokens are -1."""
    out = np.full(eot + 2000, -1, dtype=np.int64)
    for i in range(eot):
        s = tokenizer.decode([i]).lstrip()
        if s.startswith(("...", "…")):
            g = 2
        elif s[:1] in (".", "?", "!"):
            g = 0
        elif s[:1] in (",", ";", ":", "-", "—", "–"):
            g = 1
        else:
            g = 4
        out[i] = g
    out[eot] = 3
    out[eot + 107:] = 5  # the timestamps (<|0.00|> on): the segment ends there
    return out


class Probe:
    """A WhisperSTT recognizer whose transcriptions keep their encoder output and token ids."""

    def __init__(self) -> None:
        from rxvoice.services.whisper import WhisperSTT

        self.stt = WhisperSTT()
        self.rec: Any = self.stt.new_recognizer()
        model = self.rec.model
        self.model = model
        self.calls: list[tuple[int, list[Any], Any]] = []
        encode = model.encode
        last: list[Any] = [None]

        def capture(features: Any) -> Any:
            out = encode(features)
            last[0] = out
            return out

        transcribe = model.transcribe
        calls = self.calls

        def recording(samples: Any, **options: Any) -> Any:
            segments, info = transcribe(samples, **options)
            segments = list(segments)
            calls.append((len(samples), segments, last[0]))
            return segments, info

        model.encode = capture
        self.rec.model = _Proxy(model, recording)
        from faster_whisper.tokenizer import Tokenizer

        self.tokenizer = Tokenizer(model.hf_tokenizer, model.model.is_multilingual, task="transcribe", language="en")
        self.eot = self.tokenizer.eot
        self.groups = token_groups(model.hf_tokenizer, self.eot)

    def reset(self) -> None:
        self.rec.close()
        self.rec.said = []

    def segment(self, pcm: bytes) -> dict[str, Any]:
        """A final of ``pcm`` (after the context) and the next-token groups after its window's words."""
        rec = self.rec
        full = len(rec.context) // 2 + len(pcm) // 2
        self.calls.clear()
        rec.audio = bytearray(pcm)
        t0 = time.process_time()
        heard = rec.finish()
        t1 = time.process_time()
        main = [c for c in self.calls if c[0] == full]
        out: dict[str, Any] = {"whisper": str(heard), "written": heard.heard, "cpu_final": t1 - t0}
        if not main or main[-1][2] is None:
            out.update({"w_" + g: math.nan for g in [*GROUPS, "stamp"]})
            return out
        _, segments, encoded = main[-1]
        tok = self.tokenizer
        stamped = [t for s in segments for t in s.tokens if t != self.eot]
        t2 = time.process_time()
        # the decoder's own mode (timestamps, as WhisperSTT decodes): the words without their last
        # punctuation and segment end time
        seq = list(stamped)
        while seq and (seq[-1] >= tok.timestamp_begin or self.groups[seq[-1]] in (0, 1, 2)):
            seq.pop()
        sums = self._next(encoded, list(tok.sot_sequence), seq)
        out.update({"w_" + g: float(sums[i]) for i, g in enumerate(GROUPS)})
        out["w_stamp"] = float(sums[5])
        t3 = time.process_time()
        out["cpu_probe"] = t3 - t2
        return out

    def _next(self, encoded: Any, start: list[int], seq: list[int]) -> np.ndarray:
        """The probability of each group for the token after ``seq``."""
        # a dummy token after the words: the decoder's log-probabilities at its step are those of the token
        # after the words (the row of a forced token is the distribution it was forced over), end of text included;
        # max_length bounds the rows to about half of it
        prompt = start + seq + [self.eot - 1]
        result = self.model.model.generate(encoded, [prompt], beam_size=1, max_length=2 * (len(seq) + 3),
                                           return_logits_vocab=True, suppress_blank=False, suppress_tokens=[])
        steps = np.asarray(result[0].logits[0], dtype=np.float64)
        assert steps.shape[0] > len(seq), (steps.shape, len(seq))
        logits = steps[len(seq)]
        p = np.exp(logits - logits.max())
        p /= p.sum()
        g = self.groups[:len(p)]
        return np.bincount(g[g >= 0], weights=p[g >= 0], minlength=6)


class _Proxy:
    def __init__(self, model: Any, transcribe: Any) -> None:
        self._model = model
        self.transcribe = transcribe

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)


def extract(folder: Path, model: Path, limit: int | None, sink: Any) -> list[dict[str, Any]]:
    from rxvoice.audio.turn import SmartTurnAnalyzer

    analyzer = SmartTurnAnalyzer(model)
    probe = Probe()
    rows: list[dict[str, Any]] = []
    paths = sorted(folder.glob("*.transcript.json"))[:limit]
    for k, path in enumerate(paths):
        doc = json.loads(path.read_text(encoding="utf-8"))
        samples = read_wav(path.with_name(path.name.replace(".transcript.json", ".wav"))).samples
        pcm = (np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes() if samples.dtype != np.int16 \
            else samples.astype("<i2").tobytes()
        segments = doc["segments"]
        probe.reset()
        first = len(rows)
        turn_start: float | None = None
        words: list[str] = []
        heard: list[str] = []
        longest = 0.0
        for i, seg in enumerate(segments):
            if turn_start is None:
                turn_start, words, heard, longest = seg["start"], [], [], 0.0
            words += plain_words(seg["text"])
            a = max(0, round((turn_start - 0.3) * RATE))
            b = round((seg["end"] + STOP_SECS) * RATE)
            p_audio = analyzer.probability(samples[a:b])
            s0 = max(0, round((seg["start"] - PRE_ROLL) * RATE))
            w = probe.segment(pcm[2 * s0:2 * b])
            heard += plain_words(w["whisper"])
            after = segments[i + 1]["start"] - seg["end"] if i + 1 < len(segments) else math.inf
            if doc.get("cut") and i == len(segments) - 1:
                continue  # a recording that stops mid-speech (benchmarks/human_pauses.py): its last speech has no end
            rows.append({
                "call": path.name, "text": " ".join(words), "end": bool(seg["turn_end"]), "audio": p_audio,
                "reading": reading_in_progress(words), "n": len(words), "longest": longest,
                "after": None if math.isinf(after) else after,
                "heard": " ".join(heard), "heard_reading": reading_in_progress(heard), "heard_n": len(heard), **w,
            })
            if seg["turn_end"]:
                turn_start = None
            else:
                longest = max(longest, after)
        for r in rows[first:]:
            sink.write(json.dumps(r) + "\n")
        sink.flush()
        print(f"  {k + 1}/{len(paths)} {path.name}", file=sys.stderr, flush=True)
    return rows


def whisper_score(r: dict[str, Any], kind: str) -> float:
    """The new evidence as one number (log odds)."""
    end, comma, trail, eot, word = (r["w_" + g] for g in GROUPS)
    stop = eot + r["w_stamp"]  # the text or its segment over, without punctuation
    eps = 1e-6
    if kind == "end":
        return math.log((end + eps) / (1 - end + eps))
    if kind == "end_vs_cont":  # end punctuation against a comma or another word
        return math.log((end + eps) / (comma + trail + word + eps))
    if kind == "stop_vs_cont":  # the sentence over, punctuated or not, against going on
        return math.log((end + stop + eps) / (comma + trail + word + eps))
    raise ValueError(kind)


KINDS = ("end", "end_vs_cont", "stop_vs_cont")


def design(rows: list[dict[str, Any]], signal: TrigramWordsEnd, words: str, extra: str | None) -> np.ndarray:
    out = []
    for r in rows:
        text, reading, n = (r["text"], r["reading"], r["n"]) if words == "transcript" else \
            (r["heard"], r["heard_reading"], r["heard_n"])
        x = [1.0, logit(r["audio"]), 0.0 if reading else logit(signal.judge(text).probability), float(reading),
             math.log1p(n)]
        if extra is not None:
            x.append(whisper_score(r, extra))
        out.append(x)
    return np.array(out)


def cross_validated(x: np.ndarray, y: np.ndarray, calls: list[str], folds: int = 4) -> float:
    names = sorted(set(calls))
    fold = {c: i % folds for i, c in enumerate(names)}
    f = np.array([fold[c] for c in calls])
    scores = np.zeros(len(y))
    for k in range(folds):
        w = fit_logistic(x[f != k], y[f != k])
        scores[f == k] = x[f == k] @ w
    return auc(list(scores), [int(v) for v in y])


def analyse(rows: list[dict[str, Any]]) -> None:
    lost = [r for r in rows if any(math.isnan(r["w_" + g]) for g in GROUPS)]
    rows = [r for r in rows if r not in lost]
    if lost:
        print(f"{len(lost)} pauses without a transcription left out")
    y = np.array([float(r["end"]) for r in rows])
    labels = [int(v) for v in y]
    calls = [r["call"] for r in rows]
    signal = TrigramWordsEnd()
    print(f"{len(rows)} pauses ({int(y.sum())} turn ends) in {len(set(calls))} calls")
    outside = [i for i, r in enumerate(rows) if not r["reading"]]
    for kind in KINDS:
        s = [whisper_score(r, kind) for r in rows]
        print(f"  Whisper {kind}: AUC {auc(s, labels):.3f} (outside readings "
              f"{auc([s[i] for i in outside], [labels[i] for i in outside]):.3f})")
    written = [1.0 if r["written"].rstrip().endswith((".", "?", "!")) else 0.0 for r in rows]
    print(f"  Whisper's written text ends in . ? !: AUC {auc(written, labels):.3f}")
    for words in ("transcript", "whisper"):
        text = "text" if words == "transcript" else "heard"
        tri = [signal.judge(r[text]).probability for r in rows]
        print(f"  trigram on the {words}'s words: AUC {auc(tri, labels):.3f} (outside readings "
              f"{auc([tri[i] for i in outside], [labels[i] for i in outside]):.3f})")
        base = cross_validated(design(rows, signal, words, None), y, calls)
        print(f"  logistic CV by call, {words}'s words: {base:.3f}")
        for kind in KINDS:
            print(f"    + Whisper {kind}: {cross_validated(design(rows, signal, words, kind), y, calls):.3f}")
        x = design(rows, signal, words, "stop_vs_cont")
        both = np.c_[x, x[:, 5] * x[:, 2], x[:, 5] * x[:, 3]]  # and its products with the words' term, reading
        print(f"    + Whisper stop_vs_cont and its products: {cross_validated(both, y, calls):.3f}")
        for lo, hi in ((0.0, 0.2), (0.2, 0.5), (0.5, 0.8), (0.8, 1.01)):
            band = [i for i in outside if lo <= tri[i] < hi]
            ys = [labels[i] for i in band]
            s = [whisper_score(rows[i], "stop_vs_cont") for i in band]
            print(f"    trigram {lo:.1f}-{min(hi, 1.0):.1f} ({len(band)} outside readings): Whisper stop_vs_cont "
                  f"AUC {auc(s, ys):.3f}, trigram {auc([tri[i] for i in band], ys):.3f}")
    cpu = [r["cpu_probe"] for r in rows if "cpu_probe" in r]
    fin = [r["cpu_final"] for r in rows]
    print(f"  CPU s: the probe median {np.median(cpu):.4f} (p90 {np.percentile(cpu, 90):.4f}); "
          f"the final median {np.median(fin):.3f}")


def operating(rows: list[dict[str, Any]], kind: str = "end_vs_cont") -> None:
    """The shipped wait (fit_turn_wait.simulate) with Whisper's score folded into the words' log-odds.

    The words' probability becomes sigmoid(logit(p) + k * (score - median score)) for a few k; for each,
    the threshold is moved to the least that cuts no more pauses than the shipped wait (k 0, its own
    threshold) does, and the ends found, audible cut-offs and p90 there are printed: more ends at the
    same cut-offs is what the new evidence would have to give.
    """
    signal = TrigramWordsEnd()
    for words in ("transcript", "whisper"):
        text, reading, n = ("text", "reading", "n") if words == "transcript" else ("heard", "heard_reading", "heard_n")
        view = [{**r, "text": r[text], "reading": r[reading], "n": r[n]} for r in rows]
        judged = [signal.judge(r["text"]) for r in view]
        score = [whisper_score(r, kind) for r in view]
        mid = float(np.median(score))
        shipped = simulate(DEFAULT_WAIT, view, signal, judged=judged)
        print(f"  the shipped wait on the {words}'s words: found {shipped['found']:.3f} cut {shipped['cut']:.3f} "
              f"audible {shipped['audible']:.3f} p50 {shipped['p50']:.2f} p90 {shipped['p90']:.2f}")
        for k in (0.0, 0.25, 0.5, 0.75, 1.0):
            mixed = [WordsEnd(1 / (1 + math.exp(-(logit(j.probability) + k * (z - mid)))), j.weight, j.reason)
                     for j, z in zip(judged, score, strict=True)]
            best = None
            for t in np.arange(1.0, 4.01, 0.05):
                out = simulate(replace(DEFAULT_WAIT, threshold=round(float(t), 2)), view, signal, judged=mixed)
                if out["cut"] <= shipped["cut"] + 1e-9:
                    best = (round(float(t), 2), out)
                    break
            if best is None:
                print(f"    k {k:.2f}: no threshold cuts as few")
                continue
            t, out = best
            print(f"    k {k:.2f}, threshold {t:.2f}: found {out['found']:.3f} cut {out['cut']:.3f} "
                  f"audible {out['audible']:.3f} p50 {out['p50']:.2f} p90 {out['p90']:.2f}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("tune", type=Path, nargs="+", help="the tune split's folder(s)")
    p.add_argument("--model", type=Path, default=Path.home() / ".cache" / "rxvoice" / "smart-turn-v3.2-cpu.onnx")
    p.add_argument("--rows", type=Path, required=True,
                   help="the extracted rows (JSON lines): written, or read with --analyse")
    p.add_argument("--limit", type=int, help="only the first N calls of each folder")
    p.add_argument("--analyse", action="store_true", help="read --rows, extract nothing")
    args = p.parse_args(argv)
    if not args.analyse:
        with args.rows.open("w", encoding="utf-8") as sink:
            for folder in args.tune:
                extract(folder, args.model, args.limit, sink)
    rows = [json.loads(line) for line in args.rows.read_text().splitlines() if line.strip()]
    analyse(rows)
    operating([r for r in rows if not any(math.isnan(r["w_" + g]) for g in GROUPS)])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
