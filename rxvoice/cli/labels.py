"""A folder's ``labels.csv``: whether each recording ends a finished turn, and the setup's verdict on it.

A ``labels.csv`` beside the recordings has one row per file, with at least
the columns ``file`` and ``label`` (``complete``: the speaker finished,
``incomplete``: they stopped mid-sentence); ``text`` and ``smart_turn_prob``
(a reference probability) are read when present, other columns are ignored.

The *verdict* on a recording is what the setup did at the end of its speech:

* ``complete``: a stop strategy ended the turn on its own decision (Smart
  Turn said complete, the speech timeout ran out);
* ``incomplete``: it kept waiting until a fallback ended the turn (Smart
  Turn's 3 s of silence, the recommended stop's bounded waits for unfinished
  or unsure words, the watchdog) or the recording ended first;
* ``cut off``: a turn ended while the speaker had more to say (before the
  end of the last stretch of speech), whatever the label;
* ``no speech``: the VAD heard none.

A verdict is right when it equals the label.

A row's ``text`` is what was said: ``rxvoice turns`` and ``rxvoice eval``
both replay it as the speech-to-text's words (:func:`utterance_words`), one
final over the utterance, so the two commands judge the same words.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..testing import Segment, Transcript
from ._common import CLIError
from .runner import Analysis
from .wav import RATE, Recording

__all__ = ["LABELS_FILE", "LABEL_VALUES", "Label", "LabelVerdict", "LabelsSummary", "judge", "read_labels",
           "speech_span", "summarize", "utterance_words"]

LABELS_FILE = "labels.csv"
LABEL_VALUES = ("complete", "incomplete")
_WAITED = frozenset({"fallback", "watchdog", "end", "unsure", "unfinished", "sequence"})


@dataclass(frozen=True)
class Label:
    """One row of ``labels.csv``.

    Attributes:
        file: the recording's file name.
        expected: ``"complete"`` or ``"incomplete"``.
        text: what is said in it (None when the column is absent or empty).
        reference_probability: ``smart_turn_prob`` (None when absent).
    """

    file: str
    expected: str
    text: str | None = None
    reference_probability: float | None = None


@dataclass(frozen=True)
class LabelVerdict:
    """The setup's verdict on one labeled recording.

    Attributes:
        label: the row it is judged against.
        verdict: ``"complete"``, ``"incomplete"``, ``"cut off"`` or ``"no speech"``.
        correct: the verdict equals the label.
        cut_off_at: when a turn ended with more speech to come (None otherwise).
        probability: the last Smart Turn probability before the verdict (None without one).
    """

    label: Label
    verdict: str
    correct: bool
    cut_off_at: float | None = None
    probability: float | None = None


def read_labels(path: Path) -> dict[str, Label]:
    """The rows of a ``labels.csv``, by file name.

    Raises:
        CLIError: the file cannot be read, lacks the ``file`` or ``label`` column,
            or a row has an unknown label, a bad probability or a repeated file
            (rows are numbered from 1, the header not counted).
    """
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise CLIError(f"{path}: cannot read it ({exc})") from None
    reader = csv.DictReader(text.splitlines())
    columns = reader.fieldnames or []
    missing = [c for c in ("file", "label") if c not in columns]
    if missing:
        raise CLIError(f"{path}: no {' or '.join(repr(c) for c in missing)} column (it has {columns or 'none'})")
    labels: dict[str, Label] = {}
    for row_number, row in enumerate(reader, 1):
        name = (row.get("file") or "").strip()
        expected = (row.get("label") or "").strip().lower()
        if not name:
            raise CLIError(f"{path}: row {row_number} has no file name")
        if expected not in LABEL_VALUES:
            raise CLIError(f"{path}: row {row_number} ({name}): label {row.get('label')!r} is not "
                           f"{' or '.join(LABEL_VALUES)}")
        if name in labels:
            raise CLIError(f"{path}: row {row_number}: {name} is labeled twice")
        probability: float | None = None
        raw = (row.get("smart_turn_prob") or "").strip()
        if raw:
            try:
                probability = float(raw)
            except ValueError:
                raise CLIError(f"{path}: row {row_number} ({name}): smart_turn_prob {raw!r} is not a number") from None
        labels[name] = Label(name, expected, (row.get("text") or "").strip() or None, probability)
    return labels


def speech_span(recording: Recording) -> tuple[float, float]:
    """First and last 10 ms with sound above 2 % of the peak (the utterance in a single-utterance file)."""
    samples = np.abs(recording.samples.astype(np.float32))
    n = len(samples) // 160
    if n == 0 or float(samples.max(initial=0.0)) == 0.0:
        return 0.0, recording.duration
    frames = samples[: n * 160].reshape(n, 160).max(axis=1)
    loud = np.flatnonzero(frames > 0.02 * float(samples.max()))
    return float(loud[0] * 160 / RATE), float((loud[-1] + 1) * 160 / RATE)


def utterance_words(recording: Recording, text: str, complete: bool) -> Transcript:
    """A single utterance's words as one segment over its speech (``turn_end``: the label says complete)."""
    start, end = speech_span(recording)
    return Transcript((Segment(text, round(start, 3), round(end, 3), complete),))


def judge(analysis: Analysis, label: Label) -> LabelVerdict:
    """The setup's verdict on a recording (see the module docs) against its label."""
    speech = analysis.speech
    turns = analysis.turns
    if not speech:
        return LabelVerdict(label, "no speech", False)
    last_start, last_end = speech[-1]
    # A turn that ended before the last stretch of speech was over cut the speaker off.
    early = [t for t in turns if last_end is None or t.ended < last_end]
    verdicts = [v for v in analysis.verdicts if v.time >= last_start]
    probability = verdicts[-1].probability if verdicts else None
    if early:
        return LabelVerdict(label, "cut off", False, early[0].ended, probability)
    last = turns[-1] if turns else None
    verdict = "incomplete" if last is None or last.cause in _WAITED else "complete"
    return LabelVerdict(label, verdict, verdict == label.expected, None, probability)


@dataclass(frozen=True)
class LabelsSummary:
    """Verdicts against labels, counted.

    Attributes:
        correct: right verdicts.
        total: labeled recordings that were analyzed.
        by_label: ``{label: (right, total)}`` for each label value present.
    """

    correct: int
    total: int
    by_label: Mapping[str, tuple[int, int]]

    @property
    def accuracy(self) -> float | None:
        """``correct / total`` (None when nothing was labeled)."""
        return self.correct / self.total if self.total else None


def summarize(verdicts: Sequence[LabelVerdict]) -> LabelsSummary:
    """Count right verdicts, overall and per label."""
    by_label: dict[str, tuple[int, int]] = {}
    for v in verdicts:
        right, total = by_label.get(v.label.expected, (0, 0))
        by_label[v.label.expected] = (right + v.correct, total + 1)
    return LabelsSummary(sum(v.correct for v in verdicts), len(verdicts), dict(sorted(by_label.items())))
