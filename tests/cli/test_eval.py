"""``rxvoice eval``: pause-by-pause scoring on small labelled data, sweeps, the trade-off plot, bad input."""

from __future__ import annotations

import csv
import json
import shutil
import wave
from pathlib import Path

import numpy as np
import pytest

from rxvoice.cli.analysis import Analysis, Setup, Turn
from rxvoice.cli.eval import Item, judge, totals
from rxvoice.cli.wav import Recording
from rxvoice.testing import Segment, Transcript
from tests.support import turns_dir

from .conftest import TURN_FILES, run_cli

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def short_call(booking_wav: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The first 7.5 s of the booking call: a mid-sentence pause, then an end of turn."""
    folder = tmp_path_factory.mktemp("call")
    with wave.open(str(booking_wav)) as w:
        frames = w.readframes(round(7.5 * 16000))
    with wave.open(str(folder / "short.wav"), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(frames)
    words = json.loads(booking_wav.with_name("booking.transcript.json").read_text())
    doc = {"segments": words["segments"][:2]}
    (folder / "short.transcript.json").write_text(json.dumps(doc))
    return folder / "short.wav"


@pytest.fixture(scope="module")
def labels_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three single utterances with a labels.csv (two complete, one incomplete)."""
    folder = tmp_path_factory.mktemp("labels")
    rows = {r["file"]: r for r in csv.DictReader((turns_dir() / "labels.csv").open())}
    with (folder / "labels.csv").open("w", newline="") as f:
        out = csv.DictWriter(f, ["file", "label", "text"])
        out.writeheader()
        for name in TURN_FILES:
            shutil.copy(turns_dir() / name, folder / name)
            out.writerow({"file": name, "label": rows[name]["label"], "text": rows[name]["text"]})
    return folder


def test_eval_scores_every_pause(with_model: Path, short_call: Path) -> None:
    """The mid-sentence pause is held, the end found 0.3 s after the speech (the transcript's arrival)."""
    r = run_cli("eval", str(short_call), "--json")
    assert r.code == 0, r.err
    data = json.loads(r.out)
    assert data["version"] == 2 and data["settings"]["stop"] == "smart-turn"
    assert data["settings"]["words"] == "plain" and data["settings"]["bot_delay"] == 0.6
    run = data["runs"][0]
    assert run["totals"] == {
        "turn_ends": 1, "found": 1, "missed": 0, "pauses": 1, "cut_offs": 0, "recovered_cut_offs": 0,
        "audible_cut_offs": 0, "found_rate": 1.0, "cut_off_rate": 0.0, "audible_rate": 0.0,
        "latency_p50": 0.3, "latency_p90": 0.3,
    }
    pauses = run["recordings"][0]["pauses"]
    assert [p["outcome"] for p in pauses] == ["held", "found"]
    assert pauses[0]["answered_at"] is None and pauses[1]["latency"] == pytest.approx(0.3, abs=0.002)
    assert pauses[1]["cause"] in ("model", "words") and "answered when the words were in" in pauses[1]["reason"]
    assert set(pauses[0]) == {"index", "text", "end", "should_answer", "answered_at", "latency", "outcome",
                              "cause", "reason", "recovered", "audible", "resumed_at"}


@pytest.mark.parametrize("words", ["plain", "stop-each", "as-written"])
def test_every_word_mode_replays_the_transcript(with_model: Path, short_call: Path, words: str) -> None:
    r = run_cli("eval", str(short_call), "--words", words, "--json")
    assert r.code == 0, r.err
    data = json.loads(r.out)
    assert data["settings"]["words"] == words and data["settings"]["no_punctuation"] == (words == "plain")
    assert data["runs"][0]["totals"]["turn_ends"] == 1


def test_the_word_modes() -> None:
    from rxvoice.cli.eval import stt_words

    t = Transcript((Segment("Hello, I'd like a table for", 0.0, 1.0, False), Segment("two, please!", 1.5, 2.0),))
    assert [s.text for s in stt_words(t, "plain").segments] == ["hello i'd like a table for", "two please"]
    assert [s.text for s in stt_words(t, "stop-each").segments] == ["Hello i'd like a table for.", "Two please."]
    assert stt_words(t, "as-written") is t
    assert [s.turn_end for s in stt_words(t).segments] == [False, True]
    with pytest.raises(Exception, match="--words"):
        stt_words(t, "shouting")


def test_a_speech_timeout_cuts_the_pause_off(without_model: Path, short_call: Path) -> None:
    """--stop speech-timeout needs no model; its 0.8 s of silence answers the 1.1 s mid-sentence pause."""
    r = run_cli("eval", str(short_call), "--stop", "speech-timeout", "--detail")
    assert r.code == 0, r.err
    assert "cut-offs 1/1 (100%)" in r.out
    assert " 1 pause recovered " in r.out


def test_labels_csv_single_utterances(with_model: Path, labels_folder: Path) -> None:
    """labels.csv: complete files must be answered; the incomplete one must wait --resume-after seconds."""
    r = run_cli("eval", str(labels_folder), "--json", "--resume-after", "0.7")
    assert r.code == 0, r.err
    t = json.loads(r.out)["runs"][0]["totals"]
    assert (t["turn_ends"], t["found"], t["pauses"]) == (2, 2, 1)
    # The transcript says "So what I was thinking is that": unfinished words, the turn is held.
    assert t["cut_offs"] == 0


def test_a_sweep_gives_one_run_per_value_and_a_readable_plot(with_model: Path, short_call: Path,
                                                              tmp_path: Path) -> None:
    out = tmp_path / "tradeoff.png"
    r = run_cli("eval", str(short_call), "--no-punctuation", "--sweep", "patience=0.5,2",
                "--set", "stop_secs=0.2", "--plot", str(out), "--json")
    assert r.code == 0, r.err
    runs = json.loads(r.out)["runs"]
    assert [run["params"] for run in runs] == [{"stop_secs": 0.2, "patience": 0.5},
                                               {"stop_secs": 0.2, "patience": 2.0}]
    assert all(run["vad_stop_secs"] == 0.2 for run in runs)
    data = out.read_bytes()
    assert data[:8] == PNG_SIGNATURE and len(data) > 20_000


def test_the_text_report_has_the_totals(with_model: Path, short_call: Path) -> None:
    r = run_cli("eval", str(short_call))
    assert r.code == 0, r.err
    assert r.out.splitlines()[0].startswith("smart-turn (defaults): ends found 1/1 (100%), missed 0; cut-offs 0/1")


@pytest.mark.parametrize(("argv", "message"), [
    (["--sweep", "patience"], "give NAME=a,b,c"),
    (["--sweep", "patience=a,b"], "must be numbers"),
    (["--set", "bogus=1"], "has no parameter 'bogus'"),
    (["--set", "patience=-1"], "patience"),
    (["--sweep", "patience=0.5,20"], "patience"),
    (["--words", "shouting"], "invalid choice"),
    (["--no-punctuation", "--words", "as-written"], "contradicts"),
    (["--bot-delay", "-1"], "outside 0..60"),
    (["--plot", "out.jpg"], "give a .png file name"),
    (["--jobs", "0"], "argument --jobs: 0 is not 1 or more"),
])
def test_bad_options_are_one_line_errors(with_model: Path, short_call: Path, argv: list[str], message: str) -> None:
    """Every bad option is a usage error: one line, exit status 2."""
    r = run_cli("eval", str(short_call), *argv)
    assert r.code == 2 and message in r.err and "Traceback" not in r.err


def test_recordings_without_labels_are_refused(with_model: Path, tmp_path: Path, short_call: Path) -> None:
    shutil.copy(short_call, tmp_path / "lonely.wav")
    r = run_cli("eval", str(tmp_path / "lonely.wav"))
    assert r.code == 1 and "lonely.transcript.json beside it" in r.err
    r = run_cli("eval", str(tmp_path / "nothing"))
    assert r.code == 1 and "no such file or folder" in r.err


def _analysis(ends: list[tuple[float, str]]) -> Analysis:
    rec = Recording(Path("x.wav"), np.zeros(16000, dtype=np.int16), 16000, 1, "16-bit PCM", ())
    turns = [Turn(i, 0.0, t, "X", cause, "", None, None, "") for i, (t, cause) in enumerate(ends, 1)]
    return Analysis(rec, Setup(stop="speech-timeout"), None, list(turns))


def test_judge_classifies_each_pause() -> None:
    """found / missed / cut-off (in a pause or inside speech) / held; a cut-off is recovered when the caller
    resumed before the bot's first audio (the answer + bot delay) or was still speaking, else audible."""
    transcript = Transcript((
        Segment("I want to", 0.0, 1.0, False), Segment("book a table.", 1.6, 3.0, True),
        Segment("For two.", 5.0, 6.0, True), Segment("Thanks.", 8.0, 9.0, True),
    ))
    item = Item(Path("x.wav"), transcript)
    pauses = judge(item, _analysis([(1.3, "silence"), (3.3, "model"), (8.5, "silence")]))
    assert [p.outcome for p in pauses] == ["cut-off", "found", "missed", "cut-off"]
    assert pauses[0].recovered and pauses[0].resumed_at == 1.6  # resumed 0.3 s after the answer
    assert pauses[3].recovered  # inside the speech: the caller is talking when the bot would start
    assert pauses[1].latency == pytest.approx(0.3)
    t = totals(pauses)
    assert (t.turn_ends, t.found, t.missed, t.pauses, t.cut_offs, t.recovered, t.audible) == (3, 1, 1, 1, 2, 2, 0)
    # a recording's end closing a turn is no answer
    assert judge(item, _analysis([(9.5, "end")]))[3].outcome == "missed"


def test_a_cut_off_the_caller_resumes_from_after_the_bot_started_is_audible() -> None:
    item = Item(Path("x.wav"), Transcript((Segment("I want to", 0.0, 1.0, False), Segment("go.", 2.5, 3.0))))
    early = judge(item, _analysis([(1.3, "unsure"), (3.3, "model")]))
    assert early[0].outcome == "cut-off" and early[0].audible and not early[0].recovered
    assert totals(early).as_json()["audible_cut_offs"] == 1 and totals(early).audible_rate == 1.0
    assert judge(item, _analysis([(1.3, "unsure")]), bot_delay=1.5)[0].recovered  # a slower bot: never heard
    assert judge(item, _analysis([(2.0, "unsure")]))[0].recovered  # resumed 0.5 s after: before the audio


def test_an_answer_before_a_vad_can_hear_the_next_segment_belongs_to_the_pause() -> None:
    item = Item(Path("x.wav"), Transcript((Segment("I want to", 0.0, 1.0, False), Segment("go.", 2.0, 3.0),
                                           Segment("Bye.", 4.0, 4.5))))
    pauses = judge(item, _analysis([(2.1, "unsure"), (4.1, "model")]))
    assert [p.outcome for p in pauses] == ["cut-off", "missed", "missed"]  # 4.1: after "Bye." began: late
    assert pauses[0].recovered and pauses[1].answered_at == 4.1


def test_a_single_incomplete_utterance_is_cut_off_only_before_the_speaker_would_go_on() -> None:
    item = Item(Path("x.wav"), Transcript((Segment("I want to", 0.3, 1.0, False),)), resume_after=1.0)
    assert judge(item, _analysis([(1.9, "unsure")]))[0].outcome == "cut-off"
    assert judge(item, _analysis([(2.1, "unsure")]))[0].outcome == "cut-off"  # before a VAD could hear it
    assert judge(item, _analysis([(2.3, "unfinished")]))[0].outcome == "held"


def test_the_turn_shows_the_reason_its_strategy_reported() -> None:
    """The collector prints the strategy's own reason (kind, text, probability), derived nowhere else; a verdict
    delivered just after the turn-end event is still listed before the turn it ended."""
    from rxvoice import frames as F
    from rxvoice.aggregators.reports import UserTurnStopped
    from rxvoice.cli.analysis import Setup as S
    from rxvoice.cli.analysis import Verdict
    from rxvoice.cli.runner import _Collector
    from rxvoice.turns import FusedTurnStop, TurnEndReason
    from tests.turns.helpers import FakeAnalyzer

    clock = [0.0]
    queued: list[object] = []
    reason = TurnEndReason("model", "a made-up text: complete (p=0.90)", probability=0.9)
    for stopped, expected in (
        (UserTurnStopped(FusedTurnStop(FakeAnalyzer()), "What time is it?", "", reason=reason),
         ("model", "a made-up text: complete (p=0.90)", 0.9)),
        (UserTurnStopped(FusedTurnStop(FakeAnalyzer()), "What time is it?", ""), ("other", "FusedTurnStop", None)),
    ):
        stt = Transcript((Segment("What time is it?", 0.0, 1.0, True),))
        c = _Collector(S(), stt, True, lambda: clock[0], None, queued.append)  # type: ignore[arg-type]
        clock[0] = 0.2
        c.turn_started(None)
        c.frame(F.VADUserStartedSpeakingFrame(0.2))
        clock[0] = 1.2
        c.frame(F.VADUserStoppedSpeakingFrame(0.2))
        clock[0] = 1.35
        c.turn_stopped(None, stopped)
        c.frame(F.MetricsFrame((F.TurnMetricsData("TurnAnalyzer", True, 0.3, 50.0),)))  # after the event
        kinds = [type(o).__name__ for o in c.observations]
        assert kinds.index("Verdict") < kinds.index("Turn")
        (turn,) = [o for o in c.observations if isinstance(o, Turn)]
        assert (turn.cause, turn.reason, turn.probability) == expected  # not the later verdict's 0.3
        assert [v.probability for v in c.observations if isinstance(v, Verdict)] == [0.3]


def test_speech_resumed_after_the_bots_first_audio_is_a_new_turn(with_model: Path, booking_wav: Path) -> None:
    """With no scripted bot, ``Setup.bot_audio_at`` stands for the bot's first audio: speech resumed before it
    reopens the turn (a false end recovered), speech resumed after it is a turn of its own, as live."""
    from rxvoice.cli.runner import analyze
    from rxvoice.cli.wav import read_wav

    recording = read_wav(booking_wav)  # no transcript: the second speech begins ~0.1 s after the first answer
    texts = {at: [t.text for t in analyze(recording, Setup(model=with_model, bot_audio_at=at), windows=False).turns]
             for at in (None, 0.6, 0.0)}
    assert texts[None][1] == "<speech 1> <speech 2>"  # reopened within the recovery window
    assert texts[0.6] == texts[None]  # the bot had not spoken yet: still a false end recovered
    assert texts[0.0][1] == "<speech 2>"  # the bot spoke at once: the next speech is a new turn


def test_eval_takes_the_bots_first_audio_at_its_bot_delay(
    with_model: Path, short_call: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    import rxvoice.cli.eval as cli_eval
    from rxvoice.cli.runner import analyze as real

    seen: list[float | None] = []

    def spy(recording: Recording, setup: Setup, **kw: object) -> Analysis:
        seen.append(setup.bot_audio_at)
        return real(recording, setup, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(cli_eval, "analyze", spy)
    assert run_cli("eval", str(short_call), "--bot-delay", "0.45").code == 0
    assert seen == [0.45]
