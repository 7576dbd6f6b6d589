"""What a new user meets in `rxvoice turns`: labels.csv verdicts, the JSON summary, progress, and the rough edges.

Each test is one item that once went wrong: a folder's labels ignored, no
JSON summary, no progress on a terminal, ``at +-1.17 s``, ``--transcript``
with ``--no-transcript`` accepted, a truncated WAV read silently, a short or
silent file with no word on why nothing was heard, and the plot's cut
labels, unnamed grey band, unexplained verdicts and empty Smart Turn panel.
"""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rxvoice.cli._common import signed
from rxvoice.cli.analysis import Setup, analyze
from rxvoice.cli.labels import read_labels
from rxvoice.cli.plot import fit_label, timeline_figure
from rxvoice.cli.progress import Progress
from rxvoice.cli.report import ignored_verdicts
from rxvoice.cli.wav import read_wav
from rxvoice.testing import load_transcript
from tests.support import turns_dir

from .conftest import TURN_FILES, read_pcm, run_cli, write_wav
from .test_bad_input import one_line_error

CUT_OFF = "incomplete__en-us__yes_but_only_if_the.wav"  # Smart Turn says complete (0.96) after "Yes,"


class Terminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


@pytest.fixture(scope="module")
def labeled_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four turn recordings of tests/data and their rows of its labels.csv."""
    folder = tmp_path_factory.mktemp("labeled")
    names = (*TURN_FILES, CUT_OFF)
    source = turns_dir()
    for name in names:
        shutil.copy(source / name, folder / name)
    lines = (source / "labels.csv").read_text().splitlines()
    rows = [lines[0]] + [line for line in lines[1:] if line.split(",")[0] in names]
    (folder / "labels.csv").write_text("\n".join(rows) + "\n")
    return folder


def test_a_labeled_folder_shows_each_verdict_and_the_accuracy(with_model: Path, labeled_folder: Path) -> None:
    """labels.csv: each row's label and verdict (right/WRONG) in the table, then the accuracy per label.

    Each row's text is the recording's words (as `rxvoice eval` replays them): "So what I was thinking is that"
    and "Yes, but only if the" end unfinished, so the recommended stop's calibrated wait holds them. "Thanks, that
    is all I needed." is answered only after a wait (the words' signal reads "i needed" as likely to go on): the
    table's verdict for it is "incomplete", a wrong one.
    """
    r = run_cli("turns", str(labeled_folder))
    assert r.code == 0, r.err
    rows = {line.split()[0]: line for line in r.out.splitlines() if line.startswith(("complete", "incomplete"))}
    assert "label       verdict" in r.out
    assert " complete    complete    right  model 0.99" in rows[TURN_FILES[0]]
    assert " incomplete  incomplete  right  " in rows[TURN_FILES[2]]
    assert " incomplete  incomplete  right  " in rows[CUT_OFF]
    assert "labels.csv: 3 of 4 verdicts match the labels (75.0%): complete 1/2, incomplete 2/2" in r.out
    r = run_cli("turns", str(labeled_folder / CUT_OFF))
    assert "no transcript (the words: the text of its row in labels.csv)" in r.out
    assert '"yes but only if the"' in r.out and "PocketSphinx" not in r.err


def test_turns_and_eval_agree_on_a_labeled_folder(with_model: Path, labeled_folder: Path) -> None:
    """The same labels.csv, the same words (each row's text): each file `turns` calls cut off is a cut-off in `eval`,
    and every file is found or held in `eval` (an end answered after a wait is found there, "incomplete" in `turns`)."""
    turns = json.loads(run_cli("turns", str(labeled_folder), "--json").out)
    right = {Path(x["file"]).name: x["label"]["correct"] for x in turns["recordings"]}
    assert {Path(x["file"]).name: x["words_from"] for x in turns["recordings"]} == dict.fromkeys(right, "labels.csv")
    evaluation = json.loads(run_cli("eval", str(labeled_folder), "--json").out)
    outcomes = {Path(x["file"]).name: x["pauses"][-1]["outcome"] for x in evaluation["runs"][0]["recordings"]}
    assert set(outcomes) == set(right)
    verdicts = {Path(x["file"]).name: x["label"]["verdict"] for x in turns["recordings"]}
    assert {name: outcome == "cut-off" for name, outcome in outcomes.items()} == {
        name: verdict == "cut off" for name, verdict in verdicts.items()}
    assert set(outcomes.values()) <= {"found", "held"}


def test_a_labeled_folder_with_a_speech_timeout_calls_everything_complete(without_model: Path,
                                                                           labeled_folder: Path) -> None:
    """Without Smart Turn every pause ends the turn: the unfinished sentences are the wrong verdicts."""
    r = run_cli("turns", str(labeled_folder), "--stop", "speech-timeout")
    assert r.code == 0, r.err
    assert "labels.csv: 2 of 4 verdicts match the labels (50.0%): complete 2/2, incomplete 0/2" in r.out


def test_json_has_a_summary_and_each_label(with_model: Path, labeled_folder: Path, tmp_path: Path) -> None:
    """--json: a summary object (the table's totals and the accuracy); each recording's label; old keys kept.

    A row without text leaves the words to the STT (placeholders here): "Yes," is then answered (Smart Turn
    0.96) while "but only if the" follows, a cut-off.
    """
    folder = tmp_path / "labeled"
    shutil.copytree(labeled_folder, folder)
    csv_text = (folder / "labels.csv").read_text()
    (folder / "labels.csv").write_text(csv_text.replace('"Yes, but only if the"', ""))
    r = run_cli("turns", str(folder), "--json", "--stt", "none")
    assert r.code == 0, r.err
    data = json.loads(r.out)
    summary = data["summary"]
    assert summary["recordings"] == 4 and summary["failed"] == 0
    assert summary["labels"] == {"correct": 3, "total": 4, "accuracy": 0.75,
                                 "by_label": {"complete": {"correct": 1, "total": 2},
                                              "incomplete": {"correct": 2, "total": 2}}}
    assert summary["latency_median"] is not None and summary["latency_max"] >= summary["latency_median"]
    recs = {Path(x["file"]).name: x for x in data["recordings"]}
    assert recs[CUT_OFF]["words_from"] == "placeholders" and recs[TURN_FILES[0]]["words_from"] == "labels.csv"
    label = recs[CUT_OFF]["label"]
    assert (label["expected"], label["verdict"], label["correct"]) == ("incomplete", "incomplete", True)
    assert label["cut_off_at"] is None and label["text"] is None
    assert label["reference_probability"] == pytest.approx(0.32118)
    turn = recs[TURN_FILES[0]]["turns"][0]
    assert {"ended", "cause", "premature"} <= set(turn)
    assert recs[TURN_FILES[0]]["labels"] is None  # no transcript beside it: the transcript scoring is absent


def test_a_single_file_beside_labels_csv_gets_its_verdict(with_model: Path, labeled_folder: Path) -> None:
    """One file from a labeled folder: its verdict line."""
    r = run_cli("turns", str(labeled_folder / TURN_FILES[2]))
    assert r.code == 0, r.err
    assert "labels.csv: incomplete; verdict: incomplete (Smart Turn p=0.02): right" in r.out


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("name,label\na.wav,complete\n", "no 'file' column"),
        ("file,label\na.wav,done\n", "row 1 (a.wav): label 'done' is not complete or incomplete"),
        ("file,label\na.wav,complete\nb.wav,maybe\n", "row 2 (b.wav)"),
        ("file,label\na.wav,complete\na.wav,incomplete\n", "row 2: a.wav is labeled twice"),
        ("file,label,smart_turn_prob\na.wav,complete,high\n", "smart_turn_prob 'high' is not a number"),
    ],
)
def test_a_broken_labels_csv_is_one_line(without_model: Path, tmp_path: Path, turns_folder: Path, content: str,
                                         message: str) -> None:
    """labels.csv problems name the row (counted from 1) and what is wrong."""
    shutil.copy(turns_folder / TURN_FILES[0], tmp_path / "a.wav")
    (tmp_path / "labels.csv").write_text(content)
    assert message in one_line_error(run_cli("turns", str(tmp_path)))


def test_labels_csv_reader_reads_the_fixture_file() -> None:
    """tests/data/turns/labels.csv: 32 rows, 16 of each label, texts and reference probabilities."""
    labels = read_labels(turns_dir() / "labels.csv")
    assert len(labels) == 32
    assert sum(1 for x in labels.values() if x.expected == "complete") == 16
    row = labels["complete__en-us__yes_that_works_for_me.wav"]
    assert row.text == "Yes, that works for me." and row.reference_probability == pytest.approx(0.96047)


def test_progress_is_drawn_on_a_terminal_only() -> None:
    """tqdm's bar: on a terminal by default, nowhere in a pipe, everywhere when forced, never when disabled."""
    for stream, kwargs, drawn in ((io.StringIO(), {}, False), (Terminal(), {}, True),
                                  (io.StringIO(), {"force": True}, True), (Terminal(), {"enabled": False}, False)):
        p = Progress(2, stream, **kwargs)
        p.step("a.wav")
        p.step("b.wav")
        p.finish()
        text = stream.getvalue()
        assert (text != "") is drawn, (kwargs, text)
        if drawn:
            assert "2/2" in text and "b.wav" in text and "done" in text and text.endswith("\n")


def test_the_folder_run_shows_progress_on_a_terminal_but_not_with_json(with_model: Path, turns_folder: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """`rxvoice turns DIR` on a terminal: a bar on stderr; with --json none; piped none; --progress forces it."""
    from rxvoice.cli import main

    def run(*argv: str, err: io.StringIO) -> str:
        out = io.StringIO()
        assert main(["turns", str(turns_folder), *argv], out=out, err=err) == 0
        return err.getvalue()

    assert "3/3" in run(err=Terminal())
    assert "3/3" not in run("--json", err=Terminal())
    assert run(err=io.StringIO()) == ""
    assert "3/3" in run("--json", "--progress", err=io.StringIO())
    assert "3/3" not in run("--no-progress", err=Terminal())


def test_signs_are_printed_once(without_model: Path, booking_wav: Path) -> None:
    """A turn that ends before its speech did reads "0.91 s BEFORE speech ended", never "+-0.91 s"."""
    assert signed(-1.17) == "-1.17 s" and signed(0.3) == "+0.30 s" and signed(0.0) == "+0.00 s"
    # A slow STT: "Actually, could we, uh" is answered 0.905 s before "leave on Saturday." ends.
    r = run_cli("turns", str(booking_wav), "--stt-delay", "1.0", "--stop", "speech-timeout")
    assert r.code == 0, r.err
    assert "+-" not in r.out and "--" not in r.out
    assert r.out.count(", 0.91 s BEFORE speech ended") == 1 and r.out.count(", 1.00 s after speech ended") == 4


def test_transcript_and_no_transcript_together_are_refused(booking_wav: Path) -> None:
    """--transcript X --no-transcript contradicts itself: a usage error."""
    line = one_line_error(run_cli("turns", str(booking_wav), "--transcript", "x.json", "--no-transcript"), code=2)
    assert "not allowed with argument --transcript" in line


def test_a_truncated_wav_is_read_with_a_warning(without_model: Path, booking_wav: Path, tmp_path: Path) -> None:
    """A file cut short (its header promises more): what is there is analyzed, and a warning says so."""
    whole = write_wav(tmp_path / "whole.wav", read_pcm(booking_wav)[: 16000 * 4], 16000)
    cut = tmp_path / "cut.wav"
    cut.write_bytes(whole.read_bytes()[: 44 + 2 * 16000 * 3])
    r = run_cli("turns", str(cut), "--json")
    assert r.code == 0, r.err
    assert "warning: cut.wav: truncated: the header promises 4.00 s of audio (128000 bytes), the file holds 3.00 s" \
        in r.err
    rec = json.loads(r.out)["recordings"][0]
    assert rec["duration"] == 3.0 and rec["warnings"][0].startswith("truncated:")
    assert read_wav(whole).warnings == ()
    assert "  warning: truncated" in run_cli("turns", str(cut)).out


def test_a_tenth_of_a_second_says_it_is_too_short(without_model: Path, booking_wav: Path, tmp_path: Path) -> None:
    """0.1 s of speech: what was heard (length, level, VAD) and why it is no speech."""
    short = write_wav(tmp_path / "short.wav", read_pcm(booking_wav)[16000:17600], 16000)
    r = run_cli("turns", str(short))
    assert r.code == 0, r.err
    line = next(x for x in r.out.splitlines() if "no speech heard" in x)
    assert "0.10 s of audio, peak -" in line and "dBFS" in line and "VAD confidence up to" in line
    assert "too short" in line and "cannot start speech" in line


def test_silence_and_quiet_audio_say_what_was_heard(without_model: Path, booking_wav: Path, tmp_path: Path) -> None:
    """Digital silence is named; speech far below the volume gate is "no voice"/"too quiet", with its level."""
    silent = write_wav(tmp_path / "silent.wav", np.zeros(32000, np.int16), 16000)
    r = run_cli("turns", str(silent), "--json")
    rec = json.loads(r.out)["recordings"][0]
    assert rec["no_speech"] == "2.00 s of audio, all digital silence (every sample is 0)"
    assert rec["level"]["peak_dbfs"] is None
    quiet = write_wav(tmp_path / "quiet.wav", (read_pcm(booking_wav)[: 16000 * 3] * 0.003).astype(np.int16), 16000)
    line = next(x for x in run_cli("turns", str(quiet)).out.splitlines() if "no speech heard" in x)
    assert "3.00 s of audio, peak -5" in line and ("no voice" in line or "too quiet" in line)
    assert "no speech heard" not in run_cli("turns", str(booking_wav), "--stop", "speech-timeout").out


def test_complete_verdicts_that_ended_nothing_are_explained(with_model: Path, booking_wav: Path) -> None:
    """The booking call's "Actually," (0.76) and "Thanks," (0.97): marked and explained in the text."""
    r = run_cli("turns", str(booking_wav))
    assert "8.83 s complete 0.76*" in r.out and "14.55 s complete 0.97*" in r.out
    assert "5.69 s complete 0.93," in r.out  # the one that ended turn 1 is not marked
    assert "* complete, but no turn ended: the speech resumed before its words arrived" in r.out


# -- the plot -----------------------------------------------------------------------------------------------


def test_fit_label_wraps_and_ellipsizes() -> None:
    """Text that fits is unchanged; longer text wraps at words into two lines and ends with an ellipsis."""
    assert fit_label("Boston, next Friday.", 30) == "Boston, next Friday."
    long = "I would like to book a flight to Boston next Friday and come back on Sunday evening please"
    fitted = fit_label(long, 20)
    lines = fitted.split("\n")
    assert len(lines) == 2 and all(len(line) <= 20 for line in lines) and fitted.endswith("…")
    assert lines[0] == "I would like to book"
    assert fit_label(long, 1) == "" and fit_label("", 10) == ""


def _texts_inside(fig: Any) -> list[str]:
    """Every label that runs outside its axes (or the figure): what a reader would see cut (ticks aside)."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    outside = []
    figure_box = fig.bbox
    for ax in fig.axes:
        box = ax.bbox
        for t in ax.texts:
            extent = t.get_window_extent(renderer)
            if t.get_text().strip() and (extent.x0 < box.x0 - 1 or extent.x1 > box.x1 + 1):
                outside.append(t.get_text())
    labels = [*fig.texts, *(t for legend in fig.legends for t in legend.get_texts())]
    labels += [t for ax in fig.axes for t in (*ax.texts, ax.xaxis.label, ax.yaxis.label)]
    for t in labels:
        if t.get_visible() and t.get_text().strip():
            extent = t.get_window_extent(renderer)
            if extent.x0 < figure_box.x0 - 1 or extent.x1 > figure_box.x1 + 1:
                outside.append(t.get_text())
    return outside


def test_plot_keeps_every_label_inside_and_names_the_grey_band(with_model: Path, booking_wav: Path,
                                                              tmp_path: Path) -> None:
    """A turn ending at the right edge, a long segment text: nothing is cut; the legend names the tail band
    and the complete verdicts that ended nothing; three rows with Smart Turn."""
    import matplotlib.pyplot as plt

    recording = read_wav(booking_wav)
    cut = type(recording)(recording.path, recording.samples[: int(16000 * 16.3)], 16000, 1, "16-bit PCM")
    data = json.loads(booking_wav.with_name("booking.transcript.json").read_text())
    data["duration"] = None
    data["segments"][-1]["text"] = "Thanks, that is all, and please also send the receipt to my office address today"
    analysis = analyze(cut, Setup(stop="smart-turn", model=with_model, tail=0.3),
                       transcript=load_transcript(data))
    fig = timeline_figure(analysis)
    try:
        assert len(fig.axes) == 3
        assert _texts_inside(fig) == []
        legend = [t.get_text() for t in fig.legends[0].get_texts()]
        assert "silence played after the recording" in legend
        assert "complete, ended no turn (speech resumed before its words)" in legend
        shown = [t.get_text() for t in fig.axes[0].texts]
        assert any(s.endswith("…") for s in shown)  # the long text is shortened, not cut mid-letter
        assert any("turn 3 +0.30 s" in s for s in shown)
        assert ignored_verdicts(analysis)
    finally:
        plt.close(fig)


def test_plot_without_smart_turn_has_no_smart_turn_row(without_model: Path, booking_wav: Path) -> None:
    """A speech-timeout run draws the audio and VAD rows only, and no Smart Turn legend entries."""
    import matplotlib.pyplot as plt

    analysis = analyze(read_wav(booking_wav), Setup(stop="speech-timeout"))
    fig = timeline_figure(analysis)
    try:
        assert len(fig.axes) == 2
        assert [ax.get_ylabel() for ax in fig.axes] == ["audio", "VAD (silero)"]
        legend = [t.get_text() for t in fig.legends[0].get_texts()]
        assert "Smart Turn: complete" not in legend and "silence played after the recording" in legend
        assert _texts_inside(fig) == []
    finally:
        plt.close(fig)
