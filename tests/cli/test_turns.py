"""`rxvoice turns`: turn ends of the booking call and of a folder, text, JSON and the PNG timeline."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from rxvoice.cli.analysis import Setup, first_pass
from rxvoice.cli.runner import _chunks
from rxvoice.cli.wav import read_wav
from rxvoice.services.whisper import whisper_label

from .conftest import TURN_FILES, run_cli
from .test_bad_input import one_line_error

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def test_booking_with_smart_turn_finds_every_labeled_end(with_model: Path, booking_wav: Path) -> None:
    """The transcript beside the WAV, replayed as plain words: three turns, no cut-off; the two whose words
    and audio agree are answered 0.30 s after speech (when the words are in)."""
    r = run_cli("turns", str(booking_wav))
    assert r.code == 0, r.err
    assert "transcript booking.transcript.json" in r.out
    assert "8 stretches of speech, 3 user turns" in r.out
    assert r.out.count("answered when the words were in") == 2
    assert r.out.count("0.30 s after speech ended") == 2
    assert "3 found, 0 premature cut-offs, 0 missed" in r.out
    assert '"hi i would like to book a flight to boston next friday"' in r.out
    assert "Smart Turn verdicts (8): 3.03 s incomplete 0.07, 4.93 s incomplete 0.06, 5.69 s complete 0.93" in r.out
    assert "3 labeled turn ends: 3 found, 0 premature cut-offs, 0 missed; latency median 0.30 s" in r.out


def test_booking_with_a_speech_timeout_cuts_the_caller_off_twice(without_model: Path, booking_wav: Path) -> None:
    """No model: a note, the speech-timeout stop, five turns, the two mid-sentence pauses counted as cut-offs."""
    r = run_cli("turns", str(booking_wav))
    assert r.code == 0, r.err
    assert r.err.startswith("note: Smart Turn model not found") and "--stop speech-timeout" in r.err
    assert r.out.count("decided by SpeechTimeoutStop: 0.8 s of silence") == 5
    assert r.out.count("<< CUT OFF mid-sentence") == 2
    assert "3 labeled turn ends: 3 found, 2 premature cut-offs, 0 missed" in r.out


def test_explicit_transcript_and_a_slow_stt(without_model: Path, booking_wav: Path, tmp_path: Path) -> None:
    """--transcript from elsewhere, --stt-delay 1.0: turns wait for their words; one lands in the next sentence."""
    wav = tmp_path / "call.wav"
    shutil.copy(booking_wav, wav)
    transcript = booking_wav.with_name("booking.transcript.json")
    r = run_cli("turns", str(wav), "--transcript", str(transcript), "--stt-delay", "1.0", "--stop", "speech-timeout",
                "--json")
    assert r.code == 0, r.err
    turns = json.loads(r.out)["recordings"][0]["turns"]
    assert len(turns) == 5
    assert all(t["reason"] == "0.8 s of silence, then waited for the words" for t in turns)
    assert [t["latency"] for t in turns] == [1.0, 1.0, -0.905, 1.0, 1.0]
    # "Actually, could we, uh" is answered 0.1 s after "leave on Saturday." began: counted as a cut-off.
    assert [t["premature"] for t in turns] == [True, False, True, False, False]


def test_without_a_transcript_placeholders_stand_in_for_the_stt(with_model: Path, booking_wav: Path) -> None:
    """--no-transcript: "<speech N>" finals (short pauses joined) carry no words to judge.

    The words then weigh nothing and the recommended stop has the audio and the silence: on these pauses the
    calibrated wait runs to its bound (1.3 s of silence), and the first pause (1.1 s) is cut and reopened.
    """
    r = run_cli("turns", str(booking_wav), "--no-transcript", "--stt", "none", "--json")
    assert r.code == 0, r.err
    rec = json.loads(r.out)["recordings"][0]
    assert rec["transcript"] is None and rec["labels"] is None
    # Where the next speech began within the recovery window of an end, it reopened that turn (no answer heard):
    # the reopened turn says so, and its words repeat those of the turn it reopened.
    assert [t["text"] for t in rec["turns"]] == [
        "<speech 1>", "<speech 1> <speech 2>", "<speech 3> <speech 4>", "<speech 5> <speech 6>",
    ]
    assert [t["recovered_from"] for t in rec["turns"]] == [None, 1, None, None]
    assert [t["reopened"] for t in rec["turns"]] == [False, True, False, False]
    assert [t["cause"] for t in rec["turns"]] == ["unsure"] * 4
    assert all(t["premature"] is None for t in rec["turns"])


def test_without_a_transcript_the_offline_stt_gives_the_words(with_model: Path, booking_wav: Path) -> None:
    """No transcript, --stt pocketsphinx: its words reach the turns, and the output says where they came from."""
    r = run_cli("turns", str(booking_wav), "--no-transcript", "--stt", "pocketsphinx")
    assert r.code == 0, r.err
    assert "PocketSphinx" in r.err and "words from the offline STT, PocketSphinx" in r.out
    assert "<speech" not in r.out
    assert r.out.count("decided by FusedTurnStop") >= 3


def test_without_a_transcript_whisper_is_the_default_where_installed(with_model: Path, booking_wav: Path) -> None:
    """Whisper and its model installed (README command 1): its words, and the output and the JSON name it."""
    r = run_cli("turns", str(booking_wav), "--no-transcript", "--json")
    assert r.code == 0, r.err
    assert f"the words are {whisper_label()}'s" in r.err and whisper_label() in ("Whisper base", "Whisper tiny.en")
    rec = json.loads(r.out)["recordings"][0]
    assert rec["words_from"] == "whisper" and rec["transcript"] is None
    said = " ".join(t["text"] for t in rec["turns"])
    for phrase in ("i would like to", "boston next", "friday", "leave on saturday"):
        assert phrase in said, said


def test_without_the_whisper_model_pocketsphinx_is_the_default(without_model: Path, booking_wav: Path) -> None:
    """No Whisper model in the cache: the words come from PocketSphinx, and --stt whisper says how to get it."""
    r = run_cli("turns", str(booking_wav), "--no-transcript", "--stop", "speech-timeout")
    assert r.code == 0, r.err
    assert "the words are PocketSphinx's" in r.err and "rxvoice model install stt" in r.err
    line = one_line_error(run_cli("turns", str(booking_wav), "--no-transcript", "--stt", "whisper"))
    assert "rxvoice model install" in line


def first_pass_spans(wav: Path, setup: Setup) -> list[dict[str, float]]:
    """The stretches of speech the placeholder STT is made from (a first VAD pass), as in the JSON."""
    recording = read_wav(wav)
    chunks = _chunks(recording.samples, setup.tail)
    windows, spans = first_pass(chunks, setup)
    window = 512 if setup.vad == "silero" else 480  # samples: Silero's 32 ms, WebRTC's 30 ms frames
    assert len(windows) == sum(len(c) for c in chunks) // 2 // window
    return [{"start": round(a, 3), "end": round(b, 3)} for a, b in spans]


def test_webrtc_vad(with_model: Path, booking_wav: Path) -> None:
    """--vad webrtc runs the same stack on WebRTC's VAD, finds the labeled ends; its first pass equals the operator."""
    r = run_cli("turns", str(booking_wav), "--vad", "webrtc", "--stop", "speech-timeout", "--json")
    assert r.code == 0, r.err
    data = json.loads(r.out)
    assert data["settings"]["vad"] == "webrtc"
    rec = data["recordings"][0]
    assert rec["labels"]["found"] == 3
    assert rec["speech"] == first_pass_spans(booking_wav, Setup(vad="webrtc", stop="speech-timeout"))


@pytest.fixture(scope="module")
def booking_json_and_plot(smart_turn_model: Path, booking_wav: Path, tmp_path_factory: pytest.TempPathFactory
                          ) -> tuple[dict[str, object], Path]:
    """One Smart Turn run of the booking call with --json and --plot (shared by the tests below)."""
    out = tmp_path_factory.mktemp("plots") / "booking.png"
    r = run_cli("turns", str(booking_wav), "--model", str(smart_turn_model), "--json", "--plot", str(out))
    assert r.code == 0, r.err
    return json.loads(r.out), out


def test_json_schema(booking_json_and_plot: tuple[dict[str, Any], Path]) -> None:
    """--json: version, settings and per-recording fields with the documented types."""
    data = booking_json_and_plot[0]
    assert data["version"] == 1
    assert set(data["settings"]) == {"vad", "vad_stop_secs", "stop", "smart_turn_model", "model_latency",
                                     "speech_timeout", "stt_delay", "tail", "realtime"}
    assert data["settings"]["stop"] == "smart-turn" and data["settings"]["vad_stop_secs"] == 0.16
    rec = data["recordings"][0]
    assert set(data) == {"version", "settings", "summary", "recordings"}
    assert data["summary"] == {"recordings": 1, "failed": 0, "latency_median": 0.3, "latency_max": 0.911,
                               "transcripts": 1, "turn_ends": 3, "found": 3, "premature": 0, "missed": 0,
                               "labels": None}
    assert set(rec) == {"file", "error", "transcript", "words_from", "duration", "source_rate", "source_channels",
                        "encoding", "conversions", "warnings", "level", "no_speech", "speech", "words", "verdicts",
                        "turns", "labels", "label"}
    assert rec["words_from"] == "transcript"
    assert rec["warnings"] == [] and rec["no_speech"] is None and rec["label"] is None
    assert rec["level"]["peak_dbfs"] < 0 and rec["level"]["vad_max_confidence"] > 0.9
    assert rec["error"] is None and rec["duration"] == 18.304 and rec["conversions"] == []
    assert len(rec["speech"]) == 8 and all(s["start"] < s["end"] for s in rec["speech"])
    assert [w["text"] for w in rec["words"]][:2] == ["hi i would like to book a flight to", "boston next friday"]
    assert len(rec["verdicts"]) == 8
    assert all(isinstance(v["complete"], bool) and 0 <= v["probability"] <= 1 for v in rec["verdicts"])
    turn = rec["turns"][0]
    assert set(turn) == {"index", "started", "ended", "strategy", "cause", "reason", "speech_end", "latency", "text",
                         "probability", "premature", "reopened", "recovered_from"}
    assert (turn["strategy"], turn["cause"], turn["premature"]) == ("FusedTurnStop", "model", False)
    assert (turn["reopened"], turn["recovered_from"]) == (False, None)
    assert turn["ended"] == pytest.approx(5.696) and turn["speech_end"] == 5.396
    assert turn["probability"] == pytest.approx(0.9308, abs=1e-3)
    assert rec["labels"] == {"turn_ends": 3, "found": 3, "premature": 0, "missed": 0, "missed_at": [],
                             "latency_median": 0.3, "latency_max": 0.911}


def test_a_folder_gives_a_table_with_a_progress_bar(with_model: Path, turns_folder: Path) -> None:
    """A folder: one row per WAV, totals, and (forced) a progress bar on stderr."""
    r = run_cli("turns", str(turns_folder), "--progress")
    assert r.code == 0, r.err
    rows = {line.split()[0]: line for line in r.out.splitlines() if line.startswith(("complete", "incomplete"))}
    assert len(rows) == 3
    # No transcript: Whisper's words, "so what i was thinking is that", an open "is that": waited out.
    assert rows["incomplete__en-us__so_what_i_was_thinking_is_that.wav"].endswith(("unfinished", "unsure"))
    assert rows["complete__en-us__please_send_the_invoice_to_my_email_addr.wav"].endswith("model 0.99")
    assert "3 recordings; latency after speech" in r.out
    assert "3/3" in r.err and "done" in r.err


def test_a_folder_with_a_bad_file_reports_it_and_goes_on(with_model: Path, turns_folder: Path,
                                                          tmp_path: Path) -> None:
    """A broken WAV in a folder is an error row and exit status 1; the other files are analyzed; JSON too."""
    folder = tmp_path / "mixed"
    folder.mkdir()
    shutil.copy(turns_folder / TURN_FILES[0], folder / "good.wav")
    (folder / "broken.wav").write_bytes(b"RIFF....WAVEjunk")
    (folder / "notes.txt").write_text("not audio")
    r = run_cli("turns", str(folder))
    assert r.code == 1
    assert "broken.wav  error: " in r.out and "no 'fmt ' chunk" in r.out
    assert "1 recording, 1 failed" in r.out
    r = run_cli("turns", str(folder), "--json")
    assert r.code == 1
    recs = {Path(x["file"]).name: x for x in json.loads(r.out)["recordings"]}
    assert set(recs) == {"broken.wav", "good.wav"}
    assert "no 'fmt ' chunk" in recs["broken.wav"]["error"] and recs["good.wav"]["error"] is None


def test_plot_writes_a_png_timeline(booking_json_and_plot: tuple[dict[str, Any], Path]) -> None:
    """--plot out.png writes a real PNG of some size."""
    data = booking_json_and_plot[1].read_bytes()
    assert data[:8] == PNG_SIGNATURE
    assert len(data) > 30_000


def test_plot_of_a_folder_writes_one_png_each(turns_folder: Path, tmp_path: Path) -> None:
    """--plot DIR with a folder: <name>.png for every recording."""
    folder = tmp_path / "two"
    folder.mkdir()
    for name in ("a.wav", "b.wav"):
        shutil.copy(turns_folder / TURN_FILES[1], folder / name)
    out = tmp_path / "timelines"
    out.mkdir()
    r = run_cli("turns", str(folder), "--plot", str(out), "--stop", "speech-timeout")
    assert r.code == 0, r.err
    pngs = sorted(p.name for p in out.iterdir())
    assert pngs == ["a.png", "b.png"]
    assert all((out / p).read_bytes()[:8] == PNG_SIGNATURE for p in pngs)


def test_the_first_pass_sees_what_the_vad_operator_sees(booking_json_and_plot: tuple[dict[str, Any], Path],
                                                         booking_wav: Path) -> None:
    """The placeholder STT's speech stretches (a first Silero pass) equal the operator's VAD starts and stops."""
    speech = booking_json_and_plot[0]["recordings"][0]["speech"]
    assert speech == first_pass_spans(booking_wav, Setup(stop="smart-turn"))
    assert len(speech) == 8


def test_reopened_turns_are_shown_as_such_in_the_text(with_model: Path, booking_wav: Path) -> None:
    """A false end undone: the reopened turn names the turn it continues, and the count says how many there are."""
    r = run_cli("turns", str(booking_wav), "--no-transcript", "--stt", "none")
    assert r.code == 0, r.err
    assert "4 user turns (1 reopened the turn before it after a false end: 3 turns in the conversation)" in r.out
    assert r.out.count("reopens turn 1: the user went on before the bot spoke") == 1
    block = r.out.split("turn 2 ")[1]
    assert block.index("reopens turn 1") < block.index('"<speech 1> <speech 2>"')
