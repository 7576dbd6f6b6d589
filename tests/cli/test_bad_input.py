"""Bad input on the command line: one line on stderr and a non-zero exit, or a documented conversion.

Never a traceback.
"""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest
import soxr

from rxvoice.cli import analysis

from .conftest import Result, read_pcm, run_cli, write_wav


def one_line_error(r: Result, code: int = 1) -> str:
    """Assert the run failed with exactly one ``rxvoice: error:`` line and no traceback; return it."""
    assert r.code == code, (r.code, r.out, r.err)
    assert "Traceback" not in r.err and "Traceback" not in r.out
    lines = [line for line in r.err.splitlines() if not line.startswith("note: ")]
    assert len(lines) == 1, r.err
    assert lines[0].startswith("rxvoice: error: ")
    return lines[0]


def test_missing_file(without_model: Path, tmp_path: Path) -> None:
    """A path that does not exist."""
    line = one_line_error(run_cli("turns", str(tmp_path / "nope.wav")))
    assert line.endswith("nope.wav: no such file or folder")


def test_not_a_wav(without_model: Path, tmp_path: Path) -> None:
    """Text (or an MP3) named .wav."""
    bad = tmp_path / "song.wav"
    bad.write_bytes(b"ID3\x03\x00 an mp3, really")
    assert "not a WAV file (no RIFF/WAVE header)" in one_line_error(run_cli("turns", str(bad)))


def test_empty_file(without_model: Path, tmp_path: Path) -> None:
    """Zero bytes."""
    empty = tmp_path / "empty.wav"
    empty.write_bytes(b"")
    assert "empty file (0 bytes)" in one_line_error(run_cli("turns", str(empty)))


def test_wav_without_samples(without_model: Path, tmp_path: Path) -> None:
    """A valid header and no audio."""
    silent = write_wav(tmp_path / "nothing.wav", np.zeros(0, np.int16), 16000)
    assert "holds no audio (0 samples)" in one_line_error(run_cli("turns", str(silent)))


def test_unsupported_encoding(without_model: Path, tmp_path: Path) -> None:
    """An ADPCM WAV: named, with how to convert it."""
    fmt = struct.pack("<HHIIHH", 0x0002, 1, 16000, 8000, 256, 4)
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", 4) + b"\x00" * 4
    adpcm = tmp_path / "adpcm.wav"
    adpcm.write_bytes(b"RIFF" + struct.pack("<I", len(body)) + body)
    line = one_line_error(run_cli("turns", str(adpcm)))
    assert "unsupported WAV encoding (MS ADPCM, 4 bits)" in line and "sox adpcm.wav -b 16 out.wav" in line


def test_a_folder_without_wavs(without_model: Path, tmp_path: Path) -> None:
    """A folder holding no .wav files."""
    (tmp_path / "readme.txt").write_text("hi")
    assert "no .wav files in it" in one_line_error(run_cli("turns", str(tmp_path)))


def test_stereo_44k_is_converted_not_refused(without_model: Path, booking_wav: Path, tmp_path: Path) -> None:
    """Stereo 44.1 kHz: averaged and resampled (noted on stderr); the turns are those of the 16 kHz original."""
    mono = read_pcm(booking_wav).astype(np.float32) / 32768
    left = soxr.resample(mono, 16000, 44100)
    stereo = np.stack([left, left * 0.5], axis=1)
    wav = write_wav(tmp_path / "call44.wav", np.round(stereo * 32767).astype(np.int16), 44100, channels=2)
    shutil.copy(booking_wav.with_name("booking.transcript.json"), tmp_path / "call44.transcript.json")
    converted = run_cli("turns", str(wav), "--stop", "speech-timeout", "--words", "as-written", "--json")
    assert converted.code == 0, converted.err
    assert "note: call44.wav: 2 channels averaged to mono; resampled from 44100 Hz to 16000 Hz" in converted.err
    got = json.loads(converted.out)["recordings"][0]
    assert (got["source_rate"], got["source_channels"]) == (44100, 2)
    assert got["conversions"] == ["2 channels averaged to mono", "resampled from 44100 Hz to 16000 Hz"]
    # The 16 kHz original's turns (tests/cli/test_turns.py): the five segments, 0.80-0.88 s after each; the two
    # cut off mid-sentence are reopened when the speaker goes on, so the next turn holds the whole sentence.
    assert [t["text"] for t in got["turns"]] == [
        "Hi, I would like to book a flight to", "Hi, I would like to book a flight to Boston, next Friday.",
        "Actually, could we, uh", "Actually, could we, uh leave on Saturday.", "Thanks, that is all.",
    ]
    assert [t["ended"] for t in got["turns"]] == pytest.approx([3.62, 6.28, 10.34, 12.28, 16.16], abs=0.041)


def test_transcript_that_does_not_match(without_model: Path, booking_wav: Path, tmp_path: Path) -> None:
    """A transcript of a longer recording, or stating another duration."""
    long = tmp_path / "long.json"
    long.write_text(json.dumps({"segments": [{"text": "hello", "start": 1.0, "end": 40.0}]}))
    line = one_line_error(run_cli("turns", str(booking_wav), "--transcript", str(long)))
    assert "long.json does not match booking.wav: segment 1 ('hello') ends at 40.00 s" in line
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"duration": 3.0, "segments": []}))
    line = one_line_error(run_cli("turns", str(booking_wav), "--transcript", str(other)))
    assert "it says 3.00 s, the recording is 18.30 s" in line


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "is not a JSON transcript"),
        ('{"words": []}', 'a transcript is an object with a "segments" list'),
        ('{"segments": [{"text": "a", "start": 2, "end": 1}]}', "segment 1 ends (1) before it starts (2)"),
        ('{"segments": [{"text": 3, "start": 0, "end": 1}]}', "text must be a string"),
    ],
)
def test_transcript_that_is_not_one(without_model: Path, booking_wav: Path, tmp_path: Path, content: str,
                                    message: str) -> None:
    """Broken JSON and wrong shapes: the loader's message, one line."""
    bad = tmp_path / "t.json"
    bad.write_text(content)
    assert message in one_line_error(run_cli("turns", str(booking_wav), "--transcript", str(bad)))


def test_transcript_flag_problems(without_model: Path, booking_wav: Path, tmp_path: Path) -> None:
    """--transcript naming nothing, or given with a folder."""
    assert "--transcript" in one_line_error(run_cli("turns", str(booking_wav), "--transcript", "nope.json"))
    (tmp_path / "a.wav").write_bytes(b"")
    line = one_line_error(run_cli("turns", str(tmp_path), "--transcript", "x.json"), code=2)
    assert "<name>.transcript.json beside its WAV" in line


def test_smart_turn_asked_for_without_the_model(without_model: Path, booking_wav: Path) -> None:
    """--stop smart-turn with no model anywhere: where it looked and how to install it."""
    line = one_line_error(run_cli("turns", str(booking_wav), "--stop", "smart-turn"))
    assert "Smart Turn model not found" in line and "rxvoice model install" in line
    assert "--model" in one_line_error(run_cli("turns", str(booking_wav), "--model", "/nope/model.onnx"))


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["turns"], "the following arguments are required: path"),
        (["turns", "x.wav", "--stt-delay", "-1"], "-1 is outside 0..10 seconds"),
        (["turns", "x.wav", "--tail", "soon"], "'soon' is not a number of seconds"),
        (["turns", "x.wav", "--vad", "cobra"], "invalid choice: 'cobra'"),
        (["dance"], "invalid choice: 'dance'"),
        ([], "the following arguments are required"),
        (["model"], "the following arguments are required: {where,install}"),
    ],
)
def test_bad_command_lines_exit_2(argv: list[str], message: str) -> None:
    """argparse's complaints, made one line, exit status 2."""
    line = one_line_error(run_cli(*argv), code=2)
    assert message in line and "--help" in line


def test_plot_name_must_be_png(without_model: Path, booking_wav: Path) -> None:
    """--plot needs a .png name for one recording."""
    assert "give a .png file name" in one_line_error(run_cli("turns", str(booking_wav), "--plot", "out.pdf"), code=2)


def test_an_unexpected_failure_is_one_line(without_model: Path, booking_wav: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug still ends in one line (RXVOICE_DEBUG=1 adds the traceback)."""
    def broken(*_a: object, **_k: object) -> None:
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr("rxvoice.cli.turns.analyze", broken)
    line = one_line_error(run_cli("turns", str(booking_wav)))
    assert line == "rxvoice: error: unexpected RuntimeError: boom second line (set RXVOICE_DEBUG=1 for the traceback)"
    monkeypatch.setenv("RXVOICE_DEBUG", "1")
    r = run_cli("turns", str(booking_wav))
    assert r.code == 1 and "Traceback" in r.err


def test_help_and_version_exit_0() -> None:
    """--help and --version print and succeed."""
    r = run_cli("--version")
    assert r.code == 0 and r.out.startswith("rxvoice ")
    r = run_cli("turns", "--help")
    assert r.code == 0 and "--transcript" in r.out and "<speech N>" in r.out


def test_analysis_module_is_the_one_patched() -> None:
    """(guard) the turns command calls analysis.analyze through its own name, so the patch above is real."""
    from rxvoice.cli import turns

    assert turns.analyze is analysis.analyze
