"""Turn analyses as text for people and JSON for machines.

JSON (``rxvoice turns --json``), schema version 1::

    {"version": 1,
     "settings": {"vad", "vad_stop_secs", "stop", "smart_turn_model", "model_latency",
                  "speech_timeout", "stt_delay", "tail"},
     "recordings": [
       {"file", "error",                       # error: one line, or null (then the rest is absent)
        "duration", "source_rate", "source_channels", "encoding", "conversions": [str],
        "transcript": path or null,            # null: placeholders made from the VAD were the STT
        "speech": [{"start", "end"}],          # the VAD's stretches of speech (end null: still speaking)
        "words": [{"time", "text"}],           # what the STT delivered, when
        "verdicts": [{"time", "complete", "probability"}],   # Smart Turn, at each pause
        "turns": [{"index", "started", "ended", "strategy", "cause", "reason",
                   "speech_end", "latency", "text", "probability", "premature"}],
        "labels": null or {"turn_ends", "found", "premature", "missed", "missed_at": [s],
                           "latency_median", "latency_max"}}]}

Times are seconds from the start of the recording.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._common import secs
from .analysis import Analysis, Score, Setup, Turn, Verdict, Words

__all__ = ["FileResult", "describe_setup", "detail", "score_line", "table", "to_json"]

JSON_VERSION = 1


@dataclass(frozen=True)
class FileResult:
    """One recording's analysis, or why there is none."""

    path: Path
    analysis: Analysis | None
    transcript: Path | None = None
    error: str | None = None


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def describe_setup(setup: Setup) -> str:
    """One line: VAD, stop strategy, STT and model timing."""
    vad = f"VAD {setup.vad} (stops after {setup.vad_params.stop_secs:g} s of silence)"
    if setup.stop == "smart-turn":
        model = setup.model.name if setup.model else "?"
        timing = "real model latency" if setup.realtime else f"verdicts take {setup.model_latency * 1000:.0f} ms"
        stop = f"turn end: Smart Turn ({model}; {timing})"
    else:
        quiet = setup.vad_params.stop_secs + setup.speech_timeout
        stop = f"turn end: speech timeout ({quiet:.1f} s of silence)"
    return f"{vad} · {stop} · STT finals {setup.stt_delay:g} s after speech"


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


def _verdicts(verdicts: Sequence[Verdict]) -> str:
    items = [f"{v.time:.2f} s {'complete' if v.complete else 'incomplete'} {v.probability:.2f}" for v in verdicts]
    return ", ".join(items)


def _turn_lines(turn: Turn) -> list[str]:
    after = "" if turn.latency is None else f", {turn.latency:.2f} s after speech ended"
    if turn.latency is not None and turn.latency < 0:
        after = f", {-turn.latency:.2f} s BEFORE speech ended"
    flag = "  << CUT OFF mid-sentence" if turn.premature else ""
    return [
        f"  turn {turn.index}  {turn.started:6.2f} → {turn.ended:6.2f} s{after}{flag}",
        f"          decided by {turn.strategy or '(none)'}: {turn.reason}",
        f"          {_quote(turn.text)}",
    ]


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
    words = (
        f"transcript {result.transcript.name}" if result.transcript is not None
        else "no transcript (placeholders from the VAD)"
    )
    recognized = a.stt is not None and a.stt.segments and not a.stt.segments[0].text.startswith("<")
    if result.transcript is None and recognized:
        words = "no transcript (words from the offline STT, PocketSphinx)"
    lines = [
        f"{rec.path.name}: {rec.duration:.2f} s ({source}) · {words}",
        f"  {describe_setup(a.setup)}",
    ]
    lines += [f"  converted: {c}" for c in rec.conversions]
    turns = a.turns
    lines.append(f"  {len(a.speech)} stretches of speech, {len(turns)} user turns")
    for turn in turns:
        lines += _turn_lines(turn)
    if a.verdicts:
        lines.append(f"  Smart Turn verdicts ({len(a.verdicts)}): {_verdicts(a.verdicts)}")
    score = a.score
    if score is not None:
        lines.append("  " + score_line(score))
    return "\n".join(lines)


def _causes(turns: Sequence[Turn]) -> str:
    parts = []
    for t in turns:
        if t.cause == "model" and t.probability is not None:
            parts.append(f"model {t.probability:.2f}")
        elif t.cause == "fallback":
            parts.append("3 s fallback")
        else:
            parts.append(t.cause)
    return ", ".join(parts) or "-"


def table(results: Sequence[FileResult]) -> str:
    """One row per recording, and the totals."""
    name_width = min(64, max([len(r.path.name) for r in results] + [4]))
    header = (
        f"{'file':<{name_width}}  {'length':>7}  {'speech':>6}  {'turns':>5}  {'latency':>8}  "
        f"{'cut-offs':>8}  {'missed':>6}  decided by"
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
        lines.append(
            f"{name:<{name_width}}  {a.recording.duration:>5.2f} s  {len(a.speech):>6}  {len(turns):>5}  "
            f"{med:>8}  {cut:>8}  {miss:>6}  {_causes(turns)}"
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
    return {
        "duration": _r(rec.duration),
        "source_rate": rec.source_rate,
        "source_channels": rec.source_channels,
        "encoding": rec.encoding,
        "conversions": list(rec.conversions),
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
            }
            for t in a.turns
        ],
        "labels": labels,
    }


def to_json(setup: Setup, results: Sequence[FileResult]) -> dict[str, Any]:
    """The whole run as a JSON-ready dict (schema in the module docs)."""
    recordings: list[dict[str, Any]] = []
    for r in results:
        entry: dict[str, Any] = {"file": str(r.path), "error": r.error}
        if r.analysis is not None:
            entry["transcript"] = str(r.transcript) if r.transcript is not None else None
            entry.update(_analysis_json(r.analysis))
        recordings.append(entry)
    return {"version": JSON_VERSION, "settings": setup.describe(), "recordings": recordings}
