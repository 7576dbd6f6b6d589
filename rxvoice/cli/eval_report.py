"""``rxvoice eval``'s results as text, as JSON (its documented keys) and as a trade-off plot."""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .eval_items import words_mode
from .eval_judge import RunResult, Totals, totals
from .setups import Setup

__all__ = ["JSON_VERSION", "plot_tradeoff", "report", "to_json"]

JSON_VERSION = 2


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f} s"


def _params(params: dict[str, float]) -> str:
    return ", ".join(f"{k}={v:g}" for k, v in params.items()) or "defaults"


def _summary(t: Totals) -> str:
    return (
        f"ends found {t.found}/{t.turn_ends} ({t.found_rate:.0%}), missed {t.missed}; "
        f"cut-offs {t.cut_offs}/{t.pauses} ({t.cut_off_rate:.0%}): recovered {t.recovered}, "
        f"audible {t.audible} ({t.audible_rate:.0%}); "
        f"latency p50 {_fmt(t.latency_p50)}, p90 {_fmt(t.latency_p90)}"
    )


def _reply_line(setup: Setup, f: dict[str, Any]) -> str:
    """The bot's first audio after the end of speech, and (with speculation) what it cost."""
    spec = "speculation on" if setup.speculate else "no speculation"
    line = (f"first token {setup.first_token_delay:g} s, {spec}: end of speech to the bot's first audio "
            f"p50 {_fmt(f['first_audio_p50'])}, p90 {_fmt(f['first_audio_p90'])} ({f['answered']} ends), "
            f"false ends undone before the bot spoke {f['recovered']}")
    if setup.speculate:
        line += (f"; speculative requests {f['speculative_asked']} ({f['released']} released, {f['dropped']} dropped, "
                 f"{f['refused']} refused for a tool), wasted {f['wasted_per_turn']:.2f} a turn, "
                 f"{f['wasted_tokens']} tokens; tool calls started speculatively: {f['speculative_tool_calls']}")
    return line


def report(runs: Sequence[RunResult], *, detail: bool = False) -> str:
    """The runs as text: per recording, then the totals (and a sweep table)."""
    lines: list[str] = []
    for r in runs:
        lines.append(f"{r.setup.stop} ({_params(r.params)}): {_summary(r.totals)}")
        figures = r.reply_figures()
        if figures is not None:
            lines.append("  " + _reply_line(r.setup, figures))
        if len(runs) == 1 or detail:
            width = max([len(i.wav.name) for i, _ in r.recordings] + [4])
            for item, pauses in r.recordings:
                t = totals(pauses)
                lines.append(
                    f"  {item.wav.name:<{width}}  ends {t.found}/{t.turn_ends}  cut-offs {t.cut_offs}/{t.pauses} "
                    f"(audible {t.audible})  "
                    f"p50 {_fmt(t.latency_p50)}  p90 {_fmt(t.latency_p90)}"
                )
                if detail:
                    for p in pauses:
                        when = "no answer" if p.answered_at is None else f"answered +{p.latency:.2f} s ({p.cause})"
                        want = "end" if p.should_answer else "pause"
                        outcome = p.outcome if p.outcome != "cut-off" else ("recovered" if p.recovered else "AUDIBLE")
                        lines.append(f"      {p.index:>2} {want:<5} {outcome:<9} {when:<28} {p.text[:60]}")
        for path, error in r.errors:
            lines.append(f"  {path.name}: error: {error}")
    return "\n".join(lines)


def to_json(runs: Sequence[RunResult], args: argparse.Namespace) -> dict[str, Any]:
    """The runs as JSON (schema version 2; the keys are documented in ``docs/turn-taking.md``)."""
    words = words_mode(args)
    return {
        "version": JSON_VERSION,
        "settings": {**runs[0].setup.describe(), "vad_min_volume": runs[0].setup.vad_params.min_volume,
                     "words": words, "no_punctuation": words == "plain", "bot_delay": args.bot_delay,
                     "resume_after": args.resume_after, "words_from": args.stt or "transcript"},
        "runs": [{
            "params": r.params,
            "vad_stop_secs": r.setup.vad_params.stop_secs,
            "totals": r.totals.as_json(),
            "errors": [{"file": str(p), "error": e} for p, e in r.errors],
            **({} if r.reply_figures() is None else {"replies": r.reply_figures()}),
            "recordings": [{
                "file": str(item.wav),
                "totals": totals(pauses).as_json(),
                "pauses": [{
                    "index": p.index, "text": p.text, "end": p.end, "should_answer": p.should_answer,
                    "answered_at": p.answered_at, "latency": p.latency, "outcome": p.outcome,
                    "cause": p.cause, "reason": p.reason, "recovered": p.recovered, "audible": p.audible,
                    "resumed_at": p.resumed_at,
                } for p in pauses],
            } for item, pauses in r.recordings],
        } for r in runs],
    }


def plot_tradeoff(runs: Sequence[RunResult], out: Path, title: str = "") -> Path:
    """Cut-offs against latency, one point per run (p50 and p90), labelled with its parameters.

    Raises:
        CLIError: matplotlib is missing, or the file cannot be written.
    """
    from .plot import _pyplot, save_figure

    plt = _pyplot()
    fig, (ax, found_ax) = plt.subplots(1, 2, figsize=(13, 5.2), gridspec_kw={"width_ratios": [3, 1.4]})
    labels = [_params(r.params) for r in runs]
    t = [r.totals for r in runs]
    p50 = [x.latency_p50 if x.latency_p50 is not None else math.nan for x in t]
    p90 = [x.latency_p90 if x.latency_p90 is not None else math.nan for x in t]
    cut = [100 * x.cut_off_rate for x in t]
    # One run = a p50 dot and a p90 square joined by a bar, numbered as in the right panel.
    ax.scatter(p50, cut, marker="o", facecolors="none", edgecolors="tab:blue", label="latency p50", zorder=3)
    ax.scatter(p90, cut, marker="s", color="tab:orange", label="latency p90", zorder=3)
    seen: dict[tuple[float, float], int] = {}
    for n, (x50, x90, y) in enumerate(zip(p50, p90, cut, strict=True), 1):
        ax.plot([x50, x90], [y, y], color="0.75", lw=1.2, zorder=1)
        stack = seen.get((round(x90, 2), round(y, 1)), 0)
        seen[(round(x90, 2), round(y, 1))] = stack + 1
        ax.annotate(str(n), (x90, y), textcoords="offset points", xytext=(5 + 9 * stack, 4), fontsize=9,
                    fontweight="bold")
    audible = [100 * x.audible_rate for x in t]
    ax.scatter(p90, audible, marker="x", color="tab:red", label="audible cut-offs (at p90)", zorder=3)
    ax.axhline(5, color="tab:red", lw=0.8, ls=":")
    ax.text(ax.get_xlim()[0], 5, " 1 in 20 pauses", color="tab:red", fontsize=8, va="bottom")
    ax.axhline(100 / 6, color="tab:purple", lw=0.8, ls=":")
    ax.text(ax.get_xlim()[0], 100 / 6, " 1 in 6 pauses", color="tab:purple", fontsize=8, va="bottom")
    ax.set_xlabel("latency after the end of speech (s): found ends")
    ax.set_ylabel("mid-turn pauses cut off: all (dots, squares), audible (x) (%)")
    ax.set_ylim(bottom=-2)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper right", fontsize=8)
    ax.set_title("cut-offs against latency", fontsize=10)
    found = [100 * x.found_rate for x in t]
    found_ax.barh(range(len(runs)), found, color="tab:green")
    found_ax.set_yticks(range(len(runs)), [f"{n}: {label}" for n, label in enumerate(labels, 1)], fontsize=8)
    found_ax.invert_yaxis()
    found_ax.axvline(95, color="tab:red", lw=0.8, ls=":")
    found_ax.set_xlim(min([*found, 90.0]) - 2, 100.5)
    found_ax.set_xlabel("ends of turn found (%)")
    for i, x in enumerate(t):
        found_ax.text(found[i], i, f" {x.found}/{x.turn_ends}", va="center", fontsize=8)
    found_ax.set_title("ends found", fontsize=10)
    fig.suptitle(title or f"rxvoice eval: {runs[0].setup.stop}", fontsize=11)
    fig.tight_layout()
    return save_figure(fig, out, f"--plot {out}")

