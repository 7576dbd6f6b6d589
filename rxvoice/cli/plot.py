"""A PNG timeline of one turn analysis (matplotlib, the ``plot`` extra).

Three rows on one time axis: the waveform with the transcript's segments
(green: a turn end, orange: mid-sentence), the VAD's confidence per window
with its threshold and the stretches it called speech, and the Smart Turn
probability at each decision (green: complete, red: incomplete). Every row
carries the turn ends as vertical lines (red when the turn cut the speaker
off), labeled with the latency after the end of speech.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import numpy as np

from ._common import CLIError
from .analysis import Analysis, Words
from .report import describe_setup
from .wav import RATE

__all__ = ["plot_timeline"]


def _pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise CLIError("--plot needs matplotlib: pip install 'rxvoice[plot]'") from None
    return plt


def plot_timeline(analysis: Analysis, out: Path) -> Path:
    """Write the timeline PNG to ``out`` and return it.

    Raises:
        CLIError: matplotlib is missing, or the file cannot be written.
    """
    plt = _pyplot()
    a = analysis
    samples = a.recording.samples.astype(np.float32) / 32768.0
    end = max(a.recording.duration, *(t.ended for t in a.turns), 0.1) + 0.3
    fig, (wave_ax, vad_ax, st_ax) = plt.subplots(
        3, 1, sharex=True, figsize=(max(8.0, min(24.0, end * 0.8)), 6.5),
        gridspec_kw={"height_ratios": [2.2, 1.2, 1.2]},
    )
    width = fig.get_figwidth()
    subtitle = textwrap.fill(describe_setup(a.setup), width=int(width * 15))
    fig.suptitle(f"{a.recording.path.name} — {len(a.turns)} user turns\n{subtitle}", fontsize=9)

    # Waveform (decimated to min/max envelopes for long files) and what was said.
    step = max(1, len(samples) // 20000)
    if step > 1:
        trimmed = samples[: len(samples) // step * step].reshape(-1, step)
        times = np.arange(trimmed.shape[0]) * step / RATE
        wave_ax.fill_between(times, trimmed.min(axis=1), trimmed.max(axis=1), color="0.35", linewidth=0)
    else:
        wave_ax.plot(np.arange(len(samples)) / RATE, samples, color="0.35", linewidth=0.5)
    peak = float(np.max(np.abs(samples))) or 1.0
    wave_ax.set_ylim(-peak * 1.15, peak * 1.6)
    if a.transcript is not None:
        for seg in a.transcript.segments:
            color = "tab:green" if seg.turn_end else "tab:orange"
            wave_ax.axvspan(seg.start, seg.end, color=color, alpha=0.15, linewidth=0)
            wave_ax.text(seg.start, peak * 1.3, seg.text[:40], fontsize=7, va="center", clip_on=True)
    for w in a.of(Words):
        wave_ax.plot([w.time], [-peak * 1.05], marker="^", color="tab:blue", markersize=4)
    wave_ax.set_ylabel("audio")
    wave_ax.set_yticks([])

    # VAD confidence per window, its threshold, and speech as the operator decided it.
    if a.windows:
        times = np.array([w.start_sample for w in a.windows]) / RATE
        conf = np.array([w.confidence for w in a.windows])
        vad_ax.step(times, conf, where="post", color="tab:purple", linewidth=0.8)
    vad_ax.axhline(a.setup.vad_params.confidence, color="tab:purple", linestyle=":", linewidth=0.8)
    for start, stop in a.speech:
        vad_ax.axvspan(start, stop if stop is not None else end, color="tab:purple", alpha=0.12, linewidth=0)
    vad_ax.set_ylim(-0.05, 1.05)
    vad_ax.set_ylabel(f"VAD ({a.setup.vad})")

    # Smart Turn probability at each decision.
    for v in a.verdicts:
        color = "tab:green" if v.complete else "tab:red"
        st_ax.vlines(v.time, 0, v.probability, color=color, linewidth=1.5)
        st_ax.plot([v.time], [v.probability], marker="o", color=color, markersize=5)
        st_ax.text(v.time - 0.04, min(1.0, v.probability + 0.05), f"{v.probability:.2f}", fontsize=7, ha="right")
    st_ax.axhline(0.5, color="0.5", linestyle=":", linewidth=0.8)
    st_ax.set_ylim(0, 1.15)
    st_ax.set_ylabel("Smart Turn")
    if not a.verdicts:
        st_ax.text(0.01, 0.5, "no Smart Turn verdicts (speech-timeout stop)", transform=st_ax.transAxes,
                   fontsize=8, color="0.4")
    st_ax.set_xlabel("seconds")
    st_ax.set_xlim(0, end)

    # Turn boundaries.
    for turn in a.turns:
        color = "tab:red" if turn.premature else "black"
        for ax in (wave_ax, vad_ax, st_ax):
            ax.axvline(turn.ended, color=color, linewidth=1.2, linestyle="--")
        label = f"turn {turn.index}" + ("" if turn.latency is None else f" +{turn.latency:.2f} s")
        wave_ax.text(turn.ended, -peak * 1.12, " " + label, fontsize=7, color=color, va="bottom")
        wave_ax.axvline(turn.started, color="0.6", linewidth=0.8, linestyle=":")
    # The silence played after the recording (so its last turn could end).
    for ax in (wave_ax, vad_ax, st_ax):
        ax.axvspan(a.recording.duration, end, color="0.92", linewidth=0, zorder=0)
    wave_ax.text(a.recording.duration, -peak * 0.9, " silence after the recording", fontsize=7, color="0.45",
                 clip_on=True)

    from matplotlib.artist import Artist
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles: list[Artist] = [
        Line2D([], [], color="black", linestyle="--", label="turn end"),
        Line2D([], [], color="tab:red", linestyle="--", label="turn end cutting the speaker off"),
        Line2D([], [], color="0.6", linestyle=":", label="turn start"),
        Line2D([], [], color="tab:blue", marker="^", linestyle="", label="STT final"),
    ]
    if a.transcript is not None:
        handles += [Patch(color="tab:green", alpha=0.3, label="segment labeled turn end"),
                    Patch(color="tab:orange", alpha=0.3, label="segment labeled mid-sentence")]
    handles += [
        Line2D([], [], color="tab:purple", label="VAD confidence"),
        Patch(color="tab:purple", alpha=0.2, label="VAD speech (start → stop)"),
    ]
    if a.verdicts:
        handles += [Line2D([], [], color="tab:green", marker="o", linestyle="", label="Smart Turn: complete"),
                    Line2D([], [], color="tab:red", marker="o", linestyle="", label="incomplete")]
    columns = max(3, min(len(handles), int(width // 1.6)))
    rows = -(-len(handles) // columns)
    fig.legend(handles=handles, loc="lower center", fontsize=7, ncol=columns, frameon=False)
    fig.tight_layout(rect=(0, 0.035 * rows + 0.01, 1, 1))
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(out, dpi=110)
    except OSError as exc:
        raise CLIError(f"cannot write the plot to {out}: {exc.strerror or exc}") from None
    finally:
        plt.close(fig)
    return out
