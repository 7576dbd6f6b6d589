"""A replayed speech-to-text service: transcripts at the times a transcript file gives.

It stands in for a real STT in tests and demos: each segment's text is
emitted as a finalized ``TranscriptionFrame`` ``delay`` seconds after the
segment ends (an STT's latency), optionally preceded by interim guesses.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reactivex import Observable, abc
from reactivex.disposable import CompositeDisposable
from reactivex.scheduler import TimeoutScheduler

from ..errors import InvalidTranscriptError
from ..frames import Frame, InterimTranscriptionFrame, TranscriptionFrame

__all__ = ["Segment", "Transcript", "load_transcript", "replay_transcript", "streamed_words"]


@dataclass(frozen=True)
class Segment:
    """One spoken segment: its words, when it started and ended (s), and whether the turn ends there."""

    text: str
    start: float
    end: float
    turn_end: bool = True


@dataclass(frozen=True)
class Transcript:
    """What was said in a recording, segment by segment."""

    segments: tuple[Segment, ...]
    sample_rate: int | None = None
    duration: float | None = None

    @property
    def turn_ends(self) -> list[float]:
        """End times of the segments after which a listener would take the turn."""
        return [s.end for s in self.segments if s.turn_end]


def _segment(raw: Any, index: int) -> Segment:
    if not isinstance(raw, Mapping):
        raise InvalidTranscriptError(f"segment {index} is not an object: {raw!r}")
    text, start, end = raw.get("text"), raw.get("start"), raw.get("end")
    if not isinstance(text, str):
        raise InvalidTranscriptError(f"segment {index}: text must be a string, got {text!r}")
    for name, value in (("start", start), ("end", end)):
        if isinstance(value, bool) or not isinstance(value, int | float) or value != value or value < 0:
            raise InvalidTranscriptError(f"segment {index}: {name} must be seconds >= 0, got {value!r}")
    if end < start:  # type: ignore[operator]
        raise InvalidTranscriptError(f"segment {index} ends ({end}) before it starts ({start})")
    return Segment(text, float(start), float(end), bool(raw.get("turn_end", True)))  # type: ignore[arg-type]


def load_transcript(source: str | Path | Mapping[str, Any]) -> Transcript:
    """Read a transcript (a JSON file or its parsed content) with ``segments`` of text/start/end/turn_end."""
    if isinstance(source, str | Path):
        path = Path(source)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise InvalidTranscriptError(f"no transcript at {path}") from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise InvalidTranscriptError(f"{path} is not a JSON transcript: {exc}") from exc
    else:
        data = source
    if not isinstance(data, Mapping) or not isinstance(data.get("segments"), list):
        raise InvalidTranscriptError('a transcript is an object with a "segments" list')
    segments = tuple(_segment(s, i) for i, s in enumerate(data["segments"], 1))
    for a, b in itertools.pairwise(segments):
        if b.start < a.end:
            raise InvalidTranscriptError(f"segments overlap: {a.text!r} ends after {b.text!r} starts")
    return Transcript(segments, data.get("sample_rate"), data.get("duration"))


def streamed_words(segment: Segment, lag: float) -> list[tuple[float, str]]:
    """``(time, words so far)`` as a streaming STT would send them for ``segment``, ``lag`` after each word."""
    words = segment.text.split()
    if not words:
        return []
    total = sum(len(w) + 1 for w in words)
    span = max(0.0, segment.end - segment.start)
    out: list[tuple[float, str]] = []
    said = 0
    for i, w in enumerate(words):
        said += len(w) + 1
        out.append((segment.start + span * said / total + lag, " ".join(words[: i + 1])))
    return out


def replay_transcript(
    transcript: Transcript | str | Path | Mapping[str, Any],
    *,
    delay: float | Sequence[float] = 0.3,
    user_id: str = "user",
    interims: bool = False,
    offset: float = 0.0,
    interim_lag: float | None = None,
) -> Observable[Frame]:
    """Finalized transcriptions at ``segment.end + delay`` seconds after subscription.

    Args:
        transcript: A :class:`Transcript` or a source for :func:`load_transcript`.
        delay: The STT's latency after each segment ends (one value, or one per segment).
        user_id: Who speaks.
        interims: Also emit an interim guess (the first half of the words) mid-segment.
        offset: Seconds added to every time (e.g. to line up with audio started later).
        interim_lag: Interims as a streaming STT sends them: the words so far,
            each word ``interim_lag`` seconds after it was spoken (the
            segment's time spread over its words by their length), the whole
            segment last; none later than the final.
    """
    t = transcript if isinstance(transcript, Transcript) else load_transcript(transcript)
    delays = [float(delay)] * len(t.segments) if isinstance(delay, int | float) else [float(d) for d in delay]
    if len(delays) != len(t.segments):
        raise InvalidTranscriptError(f"{len(delays)} delays for {len(t.segments)} segments")
    timeline: list[tuple[float, Frame]] = []
    for seg, d in zip(t.segments, delays, strict=True):
        if interim_lag is not None:
            timeline.extend((offset + when, InterimTranscriptionFrame(words, user_id=user_id))
                            for when, words in streamed_words(seg, interim_lag) if when < seg.end + d)
        if interims:
            words = seg.text.split()
            guess = " ".join(words[: max(1, len(words) // 2)])
            timeline.append((offset + (seg.start + seg.end) / 2, InterimTranscriptionFrame(guess, user_id=user_id)))
        timeline.append((offset + seg.end + d, TranscriptionFrame(seg.text, user_id=user_id, finalized=True)))
    timeline.sort(key=lambda item: item[0])

    def subscribe(observer: abc.ObserverBase[Frame], scheduler: abc.SchedulerBase | None = None) -> abc.DisposableBase:
        sched = scheduler or TimeoutScheduler.singleton()
        d = CompositeDisposable()
        for when, frame in timeline:
            def emit(_s: abc.SchedulerBase, _st: Any = None, f: Frame = frame) -> None:
                observer.on_next(f)

            d.add(sched.schedule_relative(when, emit))
        return d

    return Observable(subscribe)
