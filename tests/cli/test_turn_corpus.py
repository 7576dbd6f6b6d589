"""The generated turn-taking corpus: deterministic, split by a fixed rule, in the format ``rxvoice eval`` reads."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest

from rxvoice.testing import load_transcript
from tests.support import REPO, load_script


@pytest.fixture(scope="module")
def corpus() -> ModuleType:
    return load_script(REPO / "benchmarks" / "turn_corpus.py", "rxvoice_benchmark_turn_corpus")


def test_a_call_is_drawn_from_its_seed_alone(corpus: ModuleType) -> None:
    assert corpus.call_spec(3, 1) == corpus.call_spec(3, 1)
    assert corpus.call_spec(3, 1) != corpus.call_spec(3, 2)
    assert corpus.call_spec(4, 1) != corpus.call_spec(5, 1)


def test_the_splits_share_no_voice_and_no_template(corpus: ModuleType) -> None:
    specs = [corpus.call_spec(i, 7) for i in range(40)]
    assert {s.split for s in specs[0::2]} == {"tune"} and {s.split for s in specs[1::2]} == {"report"}
    voices = {split: {s.voice for s in specs if s.split == split} for split in corpus.SPLITS}
    assert not voices["tune"] & voices["report"]
    for kinds in (corpus.PAUSES, corpus.ENDS):
        for templates in kinds.values():
            tune, report = set(corpus._mine(templates, "tune")), set(corpus._mine(templates, "report"))
            assert tune and not tune & report


def test_every_call_has_ends_and_pauses_within_the_documented_ranges(corpus: ModuleType) -> None:
    segments = [seg for i in range(60) for seg in corpus.call_spec(i, 1).segments]
    mids = [s.gap for s in segments if not s.turn_end]
    gaps = [s.gap for s in segments if s.turn_end]
    assert mids and gaps and min(mids) >= 0.3 and max(mids) <= 2.0
    assert min(gaps) >= 1.2 and max(gaps) <= 2.5
    inside = [s.text for s in segments if not s.turn_end]
    assert any(t.endswith(",") for t in inside) and any(not t.endswith(",") for t in inside)


def test_each_split_has_both_prosodies_by_a_fixed_rule(corpus: ModuleType) -> None:
    assert [corpus.prosody_of(i) for i in range(8)] == ["sentence"] * 2 + ["segments"] * 2 + ["sentence"] * 2 + [
        "segments"] * 2
    spec = corpus.call_spec(0, 1)
    assert spec.prosody == "sentence" and spec.name.endswith("-sentence")
    # inside one spoken sentence no comma marks a pause (its own intonation carries over it)
    assert not any(s.text.endswith(",") for s in spec.segments if not s.turn_end)


def test_the_same_seed_makes_the_same_bytes(corpus: ModuleType, tmp_path: Path) -> None:
    a = corpus.generate(2, 5, root=tmp_path / "a")
    b = corpus.generate(2, 5, root=tmp_path / "b")
    assert corpus.fingerprint(a) == corpus.fingerprint(b)
    assert sorted(p.name for p in (a / "tune").iterdir()) == ["c0000-sentence.transcript.json", "c0000-sentence.wav"]
    transcript = load_transcript(a / "report" / "c0001-sentence.transcript.json")
    doc = json.loads((a / "report" / "c0001-sentence.transcript.json").read_text())
    assert transcript.segments and doc["meta"]["split"] == "report" and doc["meta"]["prosody"] == "sentence"
    assert any(s.turn_end for s in transcript.segments)
    assert transcript.duration is not None and transcript.segments[-1].end < transcript.duration
    assert corpus.generate(2, 5, root=tmp_path / "a") == a  # made once: found again
