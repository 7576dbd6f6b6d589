"""The human-speech check's labelled set: words cut at the pauses the VAD found, labels from the structure."""

from __future__ import annotations

from types import ModuleType

import pytest

from tests.support import REPO, load_script


@pytest.fixture(scope="module")
def human() -> ModuleType:
    return load_script(REPO / "benchmarks" / "human_pauses.py", "rxvoice_benchmark_human_pauses")


def test_a_transcript_is_cut_where_its_aligned_words_were_heard(human: ModuleType) -> None:
    stretches = [(0.0, 1.0), (1.6, 2.5), (3.2, 4.0)]
    heard = [("how", 0.2), ("do", 0.5), ("i", 0.8), ("get", 1.8), ("to", 2.1), ("dublin", 3.5)]
    words = ["how", "do", "i", "get", "there", "to", "dublin"]
    assert human._cut(words, heard, stretches) == [["how", "do", "i"], ["get", "there", "to"], ["dublin"]]


def test_words_whisper_did_not_hear_stay_with_the_word_before(human: ModuleType) -> None:
    stretches = [(0.0, 1.0), (2.0, 3.0)]
    assert human._cut(["alpha", "beta", "gamma"], [("alpha", 0.5), ("gamma", 2.5)], stretches) == [
        ["alpha", "beta"], ["gamma"]]
    assert human._cut(["one"], [], [(0.0, 1.0)]) == [["one"]]


def test_every_source_is_pinned_and_says_its_licence(human: ModuleType) -> None:
    assert {s.sdist for s in human.SOURCES} <= set(human.SDISTS)
    assert all(s.licence for s in human.SOURCES)
    assert len({s.name for s in human.SOURCES}) == len(human.SOURCES)
    assert all(len(sha) == 64 for _, _, sha in human.SDISTS.values())
    assert not any("tidigits" in s.member for s in human.SOURCES)  # the LDC's licence, not a free one
