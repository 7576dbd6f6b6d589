"""Scoring a run against a transcript's labels, and refusing a transcript that is not the recording's."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..testing import Transcript
from ._common import CLIError
from .observations import Turn
from .wav import Recording

__all__ = ["Score", "check_transcript", "score"]

_EPS = 0.0015  # times are compared at millisecond precision


@dataclass(frozen=True)
class Score:
    """Detected turn ends against a transcript's ``turn_end`` labels."""

    turn_ends: int
    found: int
    premature: int
    missed: int
    missed_at: tuple[float, ...]
    latencies: tuple[float, ...]


def score(transcript: Transcript, turns: Sequence[Turn]) -> Score:
    """Count found, premature and missed turn ends.

    A labeled end (``turn_end: true``) is found when a turn ended, by a
    strategy or the watchdog, after that segment and before the next one
    starts; a turn that ends after a segment labeled ``false`` (or during a
    segment) cut the speaker off.
    """
    segments = transcript.segments
    decided = [t for t in turns if t.cause != "end"]
    found: list[float] = []
    missed: list[float] = []
    for i, seg in enumerate(segments):
        if not seg.turn_end:
            continue
        until = segments[i + 1].start if i + 1 < len(segments) else float("inf")
        hits = [t for t in decided if seg.end - _EPS <= t.ended < until]
        if hits:
            found.append(hits[0].ended - seg.end)
        else:
            missed.append(seg.end)
    premature = sum(1 for t in turns if t.premature)
    return Score(
        sum(1 for s in segments if s.turn_end), len(found), premature, len(missed), tuple(missed), tuple(found)
    )


def check_transcript(transcript: Transcript, recording: Recording, name: str) -> None:
    """Refuse a transcript that cannot be about this recording.

    Raises:
        CLIError: a segment ends after the recording (beyond 0.5 s), or the
            transcript's ``duration`` differs from the recording's by more than 0.5 s.
    """
    duration = recording.duration
    if transcript.duration is not None:
        try:
            stated = float(transcript.duration)
        except (TypeError, ValueError):
            raise CLIError(f"{name}: duration must be seconds, got {transcript.duration!r}") from None
        if abs(stated - duration) > 0.5:
            raise CLIError(
                f"{name} does not match {recording.path.name}: it says {stated:.2f} s, "
                f"the recording is {duration:.2f} s"
            )
    for i, seg in enumerate(transcript.segments, 1):
        if seg.end > duration + 0.5:
            raise CLIError(
                f"{name} does not match {recording.path.name}: segment {i} ({seg.text[:30]!r}) ends at "
                f"{seg.end:.2f} s, the recording is {duration:.2f} s"
            )
