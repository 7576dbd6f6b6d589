"""The labelled recordings ``rxvoice eval`` reads, and their words as a speech-to-text service gives them."""

from __future__ import annotations

import argparse
import csv
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..errors import InvalidTranscriptError
from ..testing import Segment, Transcript, load_transcript
from ._common import CLIError, UsageError
from .labels import utterance_words
from .wav import read_wav

__all__ = ["WORD_MODES", "Item", "find_items", "stt_words", "without_punctuation", "words_mode"]

WORD_MODES = ("plain", "stop-each", "as-written")
"""How a transcript is replayed: as an STT without punctuation or casing (``plain``, the default), as
one that ends every final with a full stop (``stop-each``), or as the file wrote it (``as-written``,
for comparison only: an annotator's punctuation knows what came next)."""


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



def words_mode(args: argparse.Namespace) -> str:
    """The replay mode ``--words`` / ``--no-punctuation`` ask for (``plain`` when neither)."""
    words: str | None = getattr(args, "words", None)
    if getattr(args, "no_punctuation", False):
        if words not in (None, "plain"):
            raise UsageError(f"--no-punctuation is --words plain; it contradicts --words {words}")
        return "plain"
    return words or "plain"

