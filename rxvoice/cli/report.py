"""Turn analyses as text for people and JSON for machines.

JSON (``rxvoice turns --json``), schema version 1::

    {"version": 1,
     "settings": {"vad", "vad_stop_secs", "stop", "smart_turn_model", "model_latency",
                  "speech_timeout", "stt_delay", "tail"},
     "summary": {"recordings", "failed", "latency_median", "latency_max",   # over every turn end
                 "transcripts", "turn_ends", "found", "premature", "missed",   # over recordings with labels
                 "labels": null or {"correct", "total", "accuracy", "by_label": {label: {"correct", "total"}}}},
     "recordings": [
       {"file", "error",                       # error: one line, or null (then the rest is absent)
        "duration", "source_rate", "source_channels", "encoding", "conversions": [str],
        "warnings": [str],                     # e.g. a truncated file
        "level": {"peak_dbfs", "rms_dbfs", "vad_max_confidence", "vad_max_volume"},   # null dBFS: silence
        "no_speech": null or str,              # why the VAD heard no speech
        "transcript": path or null,            # null: no transcript file (see words_from)
        "words_from": "transcript" | "labels.csv" | "whisper" | "pocketsphinx" | "placeholders",   # what the STT said
        "speech": [{"start", "end"}],          # the VAD's stretches of speech (end null: still speaking)
        "words": [{"time", "text"}],           # what the STT delivered, when
        "verdicts": [{"time", "complete", "probability"}],   # Smart Turn, at each pause
        "turns": [{"index", "started", "ended", "strategy", "cause", "reason",
                   "speech_end", "latency", "text", "probability", "premature",
                   "reopened", "recovered_from"}],     # recovered_from: the turn it reopened
        "labels": null or {"turn_ends", "found", "premature", "missed", "missed_at": [s],
                           "latency_median", "latency_max"},
        "label": null or {"expected", "verdict", "correct", "cut_off_at", "probability",
                          "reference_probability", "text"}}]}   # from a labels.csv beside the file

Times are seconds from the start of the recording; ``labels`` compares the
turn ends with a transcript's ``turn_end`` labels, ``label`` the verdict on
the whole recording with its row in ``labels.csv``
(:mod:`rxvoice.cli.labels`).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..services.whisper import whisper_label
from ._common import secs
from .labels import LabelsSummary, LabelVerdict, summarize
from .observations import SpeechStarted, Turn, Verdict, Words
from .runner import Analysis
from .score import Score
from .setups import Setup
from .wav import RATE

__all__ = [
    "FileResult",
    "Level",
    "describe_setup",
    "detail",
    "ignored_verdicts",
    "level",
    "no_speech_reason",
    "score_line",
    "summary_json",
    "table",
    "to_json",
]

JSON_VERSION = 1


@dataclass(frozen=True)
class FileResult:
    """One recording's analysis, or why there is none."""

    path: Path
    analysis: Analysis | None
    transcript: Path | None = None
    error: str | None = None
    label: LabelVerdict | None = None
    """The verdict against the recording's row in ``labels.csv`` (None: no row)."""
    words_from: str | None = None
    """Where the words came from: ``transcript``, ``labels.csv`` (the row's text), ``whisper`` or ``pocketsphinx``
    (the offline STT) or ``placeholders`` (made from the VAD)."""


@dataclass(frozen=True)
class Level:
    """What the recording sounded like to the VAD.

    Attributes:
        peak_dbfs: the loudest sample, dB below full scale (None: every sample is 0).
        rms_dbfs: the average level (None: silence).
        vad_max_confidence: the VAD model's highest speech confidence in any window.
        vad_max_volume: the volume gate's highest smoothed level (0..1).
        longest_speech: the longest run of windows that counted as speech, in seconds.
    """

    peak_dbfs: float | None
    rms_dbfs: float | None
    vad_max_confidence: float
    vad_max_volume: float
    longest_speech: float


def _dbfs(value: float) -> float | None:
    return None if value <= 0 else round(20 * math.log10(value / 32768.0), 1)


def level(a: Analysis) -> Level:
    """Peak and average level, and the VAD's highest confidence and volume."""
    samples = a.recording.samples.astype(np.float64)
    peak = float(np.max(np.abs(samples))) if samples.size else 0.0
    rms = float(np.sqrt(np.mean(samples * samples))) if samples.size else 0.0
    windows = a.windows
    window_secs = (windows[1].start_sample - windows[0].start_sample) / RATE if len(windows) > 1 else 0.032
    longest = run = 0
    for w in windows:
        run = run + 1 if w.speaking else 0
        longest = max(longest, run)
    return Level(
        _dbfs(peak), _dbfs(rms), max((w.confidence for w in windows), default=0.0),
        max((w.volume for w in windows), default=0.0), longest * window_secs,
    )


def no_speech_reason(a: Analysis) -> str | None:
    """Why the VAD heard no speech, with what it did hear (None when it heard some)."""
    if a.speech:
        return None
    lv = level(a)
    params = a.setup.vad_params
    length = f"{a.recording.duration:.2f} s of audio"
    if lv.peak_dbfs is None:
        return f"{length}, all digital silence (every sample is 0)"
    heard = (f"{length}, peak {lv.peak_dbfs:.1f} dBFS, average {lv.rms_dbfs:.1f} dBFS; "
             f"VAD confidence up to {lv.vad_max_confidence:.2f}, volume up to {lv.vad_max_volume:.2f}")
    if a.recording.duration < 0.4 + params.start_secs:
        why = (f"too short: the volume gate reads the last 0.4 s of audio and the VAD needs {params.start_secs:g} s "
               f"of speech (start_secs), so a recording under {0.4 + params.start_secs:.1f} s cannot start speech")
    elif lv.vad_max_confidence < params.confidence:
        why = f"no voice: the VAD's confidence never reached {params.confidence:g}"
    elif lv.vad_max_volume < params.min_volume:
        why = (f"too quiet: the volume gate never reached min_volume {params.min_volume:g} "
               "(it reads the last 0.4 s of audio)")
    else:
        why = (f"too short: voice lasted {lv.longest_speech:.2f} s at most, the VAD needs "
               f"{params.start_secs:g} s of it (start_secs) to call it speech")
    return f"{heard}: {why}"


def ignored_verdicts(a: Analysis) -> list[Verdict]:
    """Smart Turn "complete" verdicts that ended no turn.

    ``TurnAnalyzerStop`` ends a turn on a complete verdict only once the words
    of the speech just ended are in; when the speech resumes before they
    arrive, the turn goes on.
    """
    ended = [t.ended for t in a.turns]
    starts = [o.time for o in a.of(SpeechStarted)]
    out = []
    for v in a.verdicts:
        if not v.complete:
            continue
        resumed = min((s for s in starts if s > v.time), default=math.inf)
        if not any(v.time - 0.0015 <= t < resumed for t in ended):
            out.append(v)
    return out


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def describe_setup(setup: Setup) -> str:
    """One line: VAD, stop strategy, STT and model timing."""
    vad = f"VAD {setup.vad} (stops after {setup.vad_params.stop_secs:g} s of silence)"
    return f"{vad} · {setup.named.describe(setup)} · STT finals {setup.stt_delay:g} s after speech"


def score_line(score: Score) -> str:
    """The transcript comparison in one line."""
    line = (
        f"{score.turn_ends} labeled turn ends: {score.found} found, {score.premature} premature cut-offs, "
        f"{score.missed} missed"
    )
    if score.missed_at:
        line += " (at " + ", ".join(f"{t:.2f} s" for t in score.missed_at) + ")"
    if score.latencies:
        line += (
            f"; latency median {statistics.median(score.latencies):.2f} s, max {max(score.latencies):.2f} s"
        )
    return line


def _verdicts(verdicts: Sequence[Verdict], ignored: Sequence[Verdict] = ()) -> str:
    items = []
    for v in verdicts:
        item = f"{v.time:.2f} s {'complete' if v.complete else 'incomplete'} {v.probability:.2f}"
        items.append(item + "*" if v in ignored else item)
    return ", ".join(items)


def _turn_lines(turn: Turn) -> list[str]:
    after = "" if turn.latency is None else f", {turn.latency:.2f} s after speech ended"
    if turn.latency is not None and turn.latency < 0:
        after = f", {-turn.latency:.2f} s BEFORE speech ended"
    flag = "  << CUT OFF mid-sentence" if turn.premature else ""
    lines = [
        f"  turn {turn.index}  {turn.started:6.2f} → {turn.ended:6.2f} s{after}{flag}",
        f"          decided by {turn.strategy or '(none)'}: {turn.reason}",
    ]
    if turn.recovered_from is not None:
        lines.append(f"          reopens turn {turn.recovered_from}: the user went on before the bot spoke, "
                     "so its words are repeated here (one message in the conversation)")
    lines.append(f"          {_quote(turn.text)}")
    return lines


def _turn_count(turns: Sequence[Turn]) -> str:
    """``3 user turns``, and how many reopened the one before (a false end undone)."""
    reopened = sum(t.reopened for t in turns)
    line = f"{len(turns)} user turns"
    if reopened:
        kept = len(turns) - reopened
        line += (f" ({reopened} reopened the turn before it after a false end: {kept} "
                 f"{'turn' if kept == 1 else 'turns'} in the conversation)")
    return line


def _quote(text: str, width: int = 100) -> str:
    text = " ".join(text.split())
    if not text:
        return "(no words)"
    return '"' + (text if len(text) <= width else text[: width - 1] + "…") + '"'


def detail(result: FileResult) -> str:
    """A recording's turns, one block each, and the verdicts and label counts."""
    a = result.analysis
    if a is None:
        return f"{result.path}: error: {result.error}"
    rec = a.recording
    source = f"{rec.source_rate} Hz, {rec.source_channels} ch, {rec.encoding}"
    words = {
        "labels.csv": "no transcript (the words: the text of its row in labels.csv)",
        "whisper": f"no transcript (words from the offline STT, {whisper_label()})",
        "pocketsphinx": "no transcript (words from the offline STT, PocketSphinx)",
    }.get(result.words_from or "", "no transcript (placeholders from the VAD)")
    if result.transcript is not None:
        words = f"transcript {result.transcript.name}"
    lines = [
        f"{rec.path.name}: {rec.duration:.2f} s ({source}) · {words}",
        f"  {describe_setup(a.setup)}",
    ]
    lines += [f"  converted: {c}" for c in rec.conversions]
    lines += [f"  warning: {w}" for w in rec.warnings]
    turns = a.turns
    lines.append(f"  {len(a.speech)} stretches of speech, {_turn_count(turns)}")
    reason = no_speech_reason(a)
    if reason is not None:
        lines.append(f"  no speech heard in {reason}")
    for turn in turns:
        lines += _turn_lines(turn)
    if a.verdicts:
        ignored = ignored_verdicts(a)
        lines.append(f"  Smart Turn verdicts ({len(a.verdicts)}): {_verdicts(a.verdicts, ignored)}")
        if ignored:
            lines.append("    * complete, but no turn ended: the speech resumed before its words arrived "
                         "(a turn ends once the words of the speech just ended are in)")
    score = a.score
    if score is not None:
        lines.append("  " + score_line(score))
    if result.label is not None:
        lines.append("  " + _label_line(result.label))
    return "\n".join(lines)


def _label_line(v: LabelVerdict) -> str:
    mark = "right" if v.correct else "WRONG"
    at = f" at {v.cut_off_at:.2f} s" if v.cut_off_at is not None else ""
    p = f" (Smart Turn p={v.probability:.2f})" if v.probability is not None else ""
    return f"labels.csv: {v.label.expected}; verdict: {v.verdict}{at}{p}: {mark}"


def _accuracy_line(s: LabelsSummary) -> str:
    parts = ", ".join(f"{label} {right}/{total}" for label, (right, total) in s.by_label.items())
    share = f" ({s.accuracy:.1%})" if s.accuracy is not None else ""
    return f"labels.csv: {s.correct} of {s.total} verdicts match the labels{share}: {parts}"


def _causes(turns: Sequence[Turn]) -> str:
    parts = []
    for t in turns:
        part = f"model {t.probability:.2f}" if t.cause == "model" and t.probability is not None else t.cause
        parts.append(f"{part} (reopened)" if t.reopened else part)
    return ", ".join(parts) or "-"


def table(results: Sequence[FileResult]) -> str:
    """One row per recording, and the totals."""
    name_width = min(64, max([len(r.path.name) for r in results] + [4]))
    labeled_files = any(r.label is not None for r in results)
    header = (
        f"{'file':<{name_width}}  {'length':>7}  {'speech':>6}  {'turns':>5}  {'latency':>8}  "
        f"{'cut-offs':>8}  {'missed':>6}  "
        + (f"{'label':<10}  {'verdict':<10}  {'':5}  " if labeled_files else "")
        + "decided by"
    )
    lines = [header, "-" * len(header)]
    latencies: list[float] = []
    premature = missed = labeled = 0
    failed = 0
    for r in results:
        name = r.path.name if len(r.path.name) <= name_width else r.path.name[: name_width - 1] + "…"
        a = r.analysis
        if a is None:
            failed += 1
            lines.append(f"{name:<{name_width}}  error: {r.error}")
            continue
        turns = a.turns
        lat = [t.latency for t in turns if t.latency is not None and t.cause != "end"]
        latencies += lat
        med = secs(statistics.median(lat)) if lat else "-"
        score = a.score
        cut = miss = "-"
        if score is not None:
            labeled += 1
            premature += score.premature
            missed += score.missed
            cut, miss = str(score.premature), str(score.missed)
        verdict = ""
        if labeled_files:
            v = r.label
            verdict = (f"{v.label.expected:<10}  {v.verdict:<10}  {'right' if v.correct else 'WRONG':5}  "
                       if v is not None else f"{'-':<10}  {'-':<10}  {'':5}  ")
        causes = _causes(turns) if a.speech else "no speech (see the file's own run)"
        lines.append(
            f"{name:<{name_width}}  {a.recording.duration:>5.2f} s  {len(a.speech):>6}  {len(turns):>5}  "
            f"{med:>8}  {cut:>8}  {miss:>6}  {verdict}{causes}"
        )
    lines.append("-" * len(header))
    done = len(results) - failed
    total = f"{done} recording{'' if done == 1 else 's'}"
    if failed:
        total += f", {failed} failed"
    if latencies:
        total += f"; latency after speech: median {statistics.median(latencies):.2f} s, max {max(latencies):.2f} s"
    if labeled:
        total += f"; with labels ({labeled}): {premature} premature cut-offs, {missed} missed ends"
    lines.append(total)
    verdicts = [r.label for r in results if r.label is not None]
    if verdicts:
        lines.append(_accuracy_line(summarize(verdicts)))
    return "\n".join(lines)


def _analysis_json(a: Analysis) -> dict[str, Any]:
    rec = a.recording
    score = a.score
    labels = None
    if score is not None:
        labels = {
            "turn_ends": score.turn_ends,
            "found": score.found,
            "premature": score.premature,
            "missed": score.missed,
            "missed_at": [_r(t) for t in score.missed_at],
            "latency_median": _r(statistics.median(score.latencies)) if score.latencies else None,
            "latency_max": _r(max(score.latencies)) if score.latencies else None,
        }
    lv = level(a)
    return {
        "duration": _r(rec.duration),
        "source_rate": rec.source_rate,
        "source_channels": rec.source_channels,
        "encoding": rec.encoding,
        "conversions": list(rec.conversions),
        "warnings": list(rec.warnings),
        "level": {
            "peak_dbfs": lv.peak_dbfs, "rms_dbfs": lv.rms_dbfs,
            "vad_max_confidence": round(lv.vad_max_confidence, 4), "vad_max_volume": round(lv.vad_max_volume, 4),
        },
        "no_speech": no_speech_reason(a),
        "speech": [{"start": _r(s), "end": _r(e)} for s, e in a.speech],
        "words": [{"time": _r(w.time), "text": w.text} for w in a.of(Words)],
        "verdicts": [
            {"time": _r(v.time), "complete": v.complete, "probability": round(v.probability, 4)} for v in a.verdicts
        ],
        "turns": [
            {
                "index": t.index,
                "started": _r(t.started),
                "ended": _r(t.ended),
                "strategy": t.strategy,
                "cause": t.cause,
                "reason": t.reason,
                "speech_end": _r(t.speech_end),
                "latency": _r(t.latency),
                "text": t.text,
                "probability": None if t.probability is None else round(t.probability, 4),
                "premature": t.premature,
                "reopened": t.reopened,
                "recovered_from": t.recovered_from,
            }
            for t in a.turns
        ],
        "labels": labels,
    }


def _label_json(v: LabelVerdict | None) -> dict[str, Any] | None:
    if v is None:
        return None
    return {
        "expected": v.label.expected, "verdict": v.verdict, "correct": v.correct, "cut_off_at": _r(v.cut_off_at),
        "probability": None if v.probability is None else round(v.probability, 4),
        "reference_probability": v.label.reference_probability, "text": v.label.text,
    }


def summary_json(results: Sequence[FileResult]) -> dict[str, Any]:
    """The totals of a run (what the text table's last lines say)."""
    analyses = [r.analysis for r in results if r.analysis is not None]
    latencies = [t.latency for a in analyses for t in a.turns if t.latency is not None and t.cause != "end"]
    scores = [s for s in (a.score for a in analyses) if s is not None]
    verdicts = [r.label for r in results if r.label is not None]
    labels = None
    if verdicts:
        s = summarize(verdicts)
        labels = {
            "correct": s.correct, "total": s.total,
            "accuracy": None if s.accuracy is None else round(s.accuracy, 4),
            "by_label": {k: {"correct": right, "total": total} for k, (right, total) in s.by_label.items()},
        }
    return {
        "recordings": len(analyses),
        "failed": len(results) - len(analyses),
        "latency_median": _r(statistics.median(latencies)) if latencies else None,
        "latency_max": _r(max(latencies)) if latencies else None,
        "transcripts": len(scores),
        "turn_ends": sum(s.turn_ends for s in scores),
        "found": sum(s.found for s in scores),
        "premature": sum(s.premature for s in scores),
        "missed": sum(s.missed for s in scores),
        "labels": labels,
    }


def to_json(setup: Setup, results: Sequence[FileResult]) -> dict[str, Any]:
    """The whole run as a JSON-ready dict (schema in the module docs)."""
    recordings: list[dict[str, Any]] = []
    for r in results:
        entry: dict[str, Any] = {"file": str(r.path), "error": r.error}
        if r.analysis is not None:
            entry["transcript"] = str(r.transcript) if r.transcript is not None else None
            entry["words_from"] = r.words_from
            entry.update(_analysis_json(r.analysis))
            entry["label"] = _label_json(r.label)
        recordings.append(entry)
    return {"version": JSON_VERSION, "settings": setup.describe(), "summary": summary_json(results),
            "recordings": recordings}
