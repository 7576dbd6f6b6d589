"""A PNG timeline of one turn analysis (matplotlib, the ``plot`` extra).

Rows on one time axis: the waveform with the transcript's segments (green:
a turn end, orange: mid-sentence; their words wrapped and shortened to fit),
the VAD's confidence per window with its threshold and the stretches it
called speech, and, when Smart Turn ran, its probability at each decision
(green: complete, red: incomplete, hollow: complete but it ended no turn,
because the speech resumed before its words arrived). Every row carries the
turn ends as vertical lines (red when the turn cut the speaker off), labeled
with the latency after the end of speech; the grey band is the silence
played after the recording so its last turn can end.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from textwrap import fill
from typing import Any

import numpy as np

from ._common import CLIError, signed
from .observations import Words
from .report import describe_setup, ignored_verdicts, no_speech_reason
from .runner import Analysis
from .wav import RATE

__all__ = ["fit_label", "plot_timeline", "timeline_figure"]

_FONT = 7  # points, the size of every label on the axes
_CHAR = 0.55 * _FONT  # points: an average character's width at that size


def fit_label(text: str, chars: int, lines: int = 2) -> str:
    """``text`` in at most ``lines`` lines of ``chars`` characters, wrapped at words, ellipsized when cut."""
    text = " ".join(text.split())
    if chars < 2 or not text:
        return ""
    wrapped = textwrap.wrap(text, width=chars, break_long_words=True, max_lines=lines, placeholder=" …")
    if len(wrapped) == lines and len(wrapped[-1]) > chars:  # the placeholder can push the last line over
        wrapped[-1] = wrapped[-1][: chars - 1].rstrip() + "…"
    return "\n".join(wrapped)


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
    return save_figure(timeline_figure(analysis), out, f"cannot write the plot to {out}")


def save_figure(fig: Any, out: Path, failure: str) -> Path:
    """Write ``fig`` as a PNG to ``out`` and close it (``failure`` begins the error when it cannot be written).

    Raises:
        CLIError: the file cannot be written.
    """
    try:
        fig.savefig(out, dpi=110)
    except OSError as exc:
        raise CLIError(f"{failure}: {exc.strerror or exc}") from None
    finally:
        _pyplot().close(fig)
    return out


def timeline_figure(analysis: Analysis) -> Any:
    """The timeline as a matplotlib ``Figure`` (the caller closes it).

    The Smart Turn row is drawn only when Smart Turn ran (a setup that needs the model).

    Raises:
        CLIError: matplotlib is missing.
    """
    plt = _pyplot()
    a = analysis
    samples = a.recording.samples.astype(np.float32) / 32768.0
    end = max(a.recording.duration, *(t.ended for t in a.turns), 0.1) + 0.3
    smart_turn = a.setup.named.needs_model
    panels = 3 if smart_turn else 2
    ratios = [2.2, 1.2, 1.2][:panels]
    fig, axes = plt.subplots(
        panels, 1, sharex=True, figsize=(max(8.0, min(24.0, end * 0.8)), 6.5 if smart_turn else 5.2),
        gridspec_kw={"height_ratios": ratios},
    )
    wave_ax, vad_ax = axes[0], axes[1]
    st_ax = axes[2] if smart_turn else None
    width = fig.get_figwidth()
    subtitle = textwrap.fill(describe_setup(a.setup), width=int(width * 15))
    fig.suptitle(f"{a.recording.path.name} — {len(a.turns)} user turns\n{subtitle}", fontsize=9)
    # Characters per second of the time axis at the label size (the axes span about 85 % of the width).
    chars_per_second = width * 0.85 * 72 / _CHAR / end
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
        segments = a.transcript.segments
        for i, seg in enumerate(segments):
            color = "tab:green" if seg.turn_end else "tab:orange"
            wave_ax.axvspan(seg.start, seg.end, color=color, alpha=0.15, linewidth=0)
            room = (segments[i + 1].start if i + 1 < len(segments) else end) - seg.start
            label = fit_label(seg.text, int(room * chars_per_second) - 1)
            if label:
                wave_ax.text(seg.start, peak * 1.3, label, fontsize=_FONT, va="center", clip_on=True,
                             linespacing=1.0)
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

    # Smart Turn probability at each decision; a hollow dot: complete, but it ended no turn.
    ignored = ignored_verdicts(a)
    if st_ax is not None:
        for v in a.verdicts:
            color = "tab:green" if v.complete else "tab:red"
            st_ax.vlines(v.time, 0, v.probability, color=color, linewidth=1.5)
            face = "white" if v in ignored else color
            st_ax.plot([v.time], [v.probability], marker="o", color=color, markerfacecolor=face, markersize=5)
            st_ax.text(v.time - 0.04, min(1.0, v.probability + 0.05), f"{v.probability:.2f}", fontsize=_FONT,
                       ha="right")
        st_ax.axhline(0.5, color="0.5", linestyle=":", linewidth=0.8)
        st_ax.set_ylim(0, 1.15)
        st_ax.set_ylabel("Smart Turn")
        if not a.verdicts:
            st_ax.text(0.01, 0.5, "no Smart Turn verdicts (the VAD heard no pause to judge)",
                       transform=st_ax.transAxes, fontsize=8, color="0.4")
    bottom = axes[-1]
    bottom.set_xlabel("seconds")
    bottom.set_xlim(0, end)
    if not a.speech:
        reason = no_speech_reason(a) or ""
        vad_ax.text(0.01, 0.5, fill("no speech heard in " + reason, int(width * 12)), transform=vad_ax.transAxes,
                    fontsize=8, color="0.3", va="center")

    # Turn boundaries; a label that would run past the right edge is written to the left of its line.
    for turn in a.turns:
        color = "tab:red" if turn.premature else "black"
        for ax in axes:
            ax.axvline(turn.ended, color=color, linewidth=1.2, linestyle="--")
        label = f"turn {turn.index}" + ("" if turn.latency is None else f" {signed(turn.latency)}")
        fits = (end - turn.ended) * chars_per_second > len(label) + 2
        wave_ax.text(turn.ended, -peak * 1.12, f" {label}" if fits else f"{label} ", fontsize=_FONT, color=color,
                     va="bottom", ha="left" if fits else "right")
        wave_ax.axvline(turn.started, color="0.6", linewidth=0.8, linestyle=":")
    # The silence played after the recording (so its last turn could end); named in the legend.
    for ax in axes:
        ax.axvspan(a.recording.duration, end, color="0.92", linewidth=0, zorder=0)

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
        Patch(color="0.92", label="silence played after the recording"),
    ]
    if a.verdicts:
        handles += [Line2D([], [], color="tab:green", marker="o", linestyle="", label="Smart Turn: complete"),
                    Line2D([], [], color="tab:red", marker="o", linestyle="", label="incomplete")]
    if ignored:
        handles.append(Line2D([], [], color="tab:green", marker="o", markerfacecolor="white", linestyle="",
                              label="complete, ended no turn (speech resumed before its words)"))
    # As many columns as fit the figure's width: an entry is its handle, its label and some padding.
    entry = (max(len(str(h.get_label())) for h in handles) * _CHAR + 40) / 72
    columns = max(1, min(len(handles), int(width * 0.96 // entry)))
    rows = -(-len(handles) // columns)
    fig.legend(handles=handles, loc="lower center", fontsize=_FONT, ncol=columns, frameon=False)
    fig.tight_layout(rect=(0, (rows * 0.15 + 0.08) / fig.get_figheight(), 1, 1))
    return fig
