"""The decomposition of an ``rxvoice eval`` run: latency classes from the reasons, misses and cut-offs by class."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from rxvoice.turns.ending import WordsEnd
from rxvoice.turns.wait import DEFAULT_WAIT
from tests.support import REPO, load_script


@pytest.fixture(scope="module")
def dec() -> ModuleType:
    return load_script(REPO / "benchmarks" / "turn_decompose.py", "rxvoice_benchmark_turn_decompose")


class Judge:
    """A words' signal that knows two texts: "finished" ends, "i need the" goes on, the rest is unread."""

    def judge(self, text: str, confidence: float | None = None) -> WordsEnd:
        if text.endswith("finished"):
            return WordsEnd(0.9, 1.0, "end")
        if text.endswith("the"):
            return WordsEnd(0.02, 1.0, "more")
        if text.endswith("maybe"):
            return WordsEnd(0.5, 1.0, "unsure")
        return WordsEnd(0.5, 0.0, "unread")


def pause(text: str, end: float, should: bool, outcome: str, latency: float | None = None,
          reason: str | None = None, cause: str | None = None, recovered: bool = False,
          resumed_at: float | None = None) -> dict[str, Any]:
    return {"text": text, "end": end, "should_answer": should, "outcome": outcome, "latency": latency,
            "reason": reason, "cause": cause, "recovered": recovered, "audible": not recovered,
            "resumed_at": resumed_at}


BOUND = f"Smart Turn p=0.50, words end p=0.50, end odds +0.0: waited {DEFAULT_WAIT.max_wait:.2f} s of silence"
RUN = {
    "vad_stop_secs": 0.16,
    "recordings": [{"pauses": [
        pause("all finished", 1.0, True, "found", 0.3, "…: answered when the words were in"),
        pause("i need the", 3.0, False, "cut-off", cause="unsure", recovered=True, resumed_at=3.8),
        pause("form", 4.0, True, "found", 0.7, "…, end odds +1.0: waited 0.62 s of silence"),
        pause("four five", 6.0, False, "held", resumed_at=6.9),
        pause("six", 7.0, True, "missed", resumed_at=8.5),
        pause("kowalski", 10.0, True, "found", 1.34, BOUND),
        pause("so i need the", 12.0, True, "missed", resumed_at=13.4),
        pause("maybe", 15.0, True, "found", 2.3, "…: waited 2.20 s of silence"),
        pause("dunno", 18.0, True, "missed", resumed_at=19.5),
        pause("well maybe", 21.0, True, "missed", resumed_at=22.2),
        pause("ok", 24.0, True, "found", 1.6, "0.5 s after the words (no VAD pause to judge)"),
        pause("then", 26.0, True, "cut-off", -0.4, BOUND, cause="unsure"),
        pause("and the", 28.0, False, "cut-off", cause="words", resumed_at=29.0),
    ]}],
}


def test_each_answer_is_classed_by_what_its_reason_says(dec: ModuleType) -> None:
    assert dec.latency_class("x: answered when the words were in, then waited for the words") == "at the words"
    assert dec.latency_class("x: waited 0.40 s of silence") == "silence"
    assert dec.latency_class(f"x: waited {DEFAULT_WAIT.max_wait:.2f} s of silence") == "bound"
    assert dec.latency_class("x: waited 2.20 s of silence") == "hold"
    assert dec.latency_class("0.5 s after the words (no VAD pause to judge)") == "fallback"
    assert dec.latency_class(None) == "other"


def test_the_turns_words_run_until_a_pause_that_should_be_answered(dec: ModuleType) -> None:
    pauses = RUN["recordings"][0]["pauses"][:5]
    assert dec.turn_texts(pauses) == ["all finished", "i need the", "i need the form", "four five",
                                      "four five six"]


def test_a_run_is_split_into_the_floor_the_classes_the_misses_and_the_cut_offs(dec: ModuleType) -> None:
    settings = {"stt_delay": 0.3, "model_latency": 0.05}
    out = dec.decompose(RUN, settings, Judge())
    assert out["floor"] == {"stt_delay": 0.3, "vad_stop_and_verdict": 0.21, "earliest_answer": 0.3}
    assert out["found"] == 5
    assert out["latency_classes"] == {"at the words": 1, "silence": 1, "bound": 1, "hold": 1, "fallback": 1}
    assert out["slowest_tenth"] == {"hold": 1}  # 2.3 s: the p90 of five
    # "four five six" a reading, "so i need the" words going on, "dunno" unread, "well maybe" unsure
    assert out["miss_classes"] == {"reading": 1, "words": 1, "unread": 1, "unsure": 1}
    assert out["missed_gap_p50"] == pytest.approx(1.5)
    assert out["cut_offs"] == {"unsure, recovered": 1, "words, audible": 1}
    assert out["ends_cut_inside_their_speech"] == 1


def test_the_script_prints_each_run(dec: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "eval.json"
    path.write_text(json.dumps({"settings": {"stt_delay": 0.3, "model_latency": 0.05},
                                "runs": [{**RUN, "params": {"patience": 2.0}}]}))
    assert dec.main([str(path)]) == 0
    out = capsys.readouterr().out
    assert "== {'patience': 2.0}" in out and "earliest answer 0.30 s" in out and "ends missed 4" in out
    assert dec.main([str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["params"] == {"patience": 2.0}
