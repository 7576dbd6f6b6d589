"""Whisper's end-of-sentence probe (benchmarks/whisper_end.py): its token groups, scores and cross-validation."""

from __future__ import annotations

import math
from types import ModuleType

import numpy as np
import pytest

from tests.support import REPO, load_script


@pytest.fixture(scope="module")
def probe() -> ModuleType:
    return load_script(REPO / "benchmarks" / "whisper_end.py", "rxvoice_benchmark_whisper_end")


class _Tokens:
    texts = (" hello", ".", "?\"", ",", "...", "…", " -", "!", " world", ":")

    def decode(self, ids: list[int]) -> str:
        return "".join(self.texts[i] for i in ids)


def test_tokens_are_grouped_by_what_they_say_after_the_last_word(probe: ModuleType) -> None:
    eot = len(_Tokens.texts)
    groups = probe.token_groups(_Tokens(), eot)
    names = [probe.GROUPS[g] for g in groups[:eot]]
    assert names == ["word", "end", "end", "comma", "trail", "trail", "comma", "end", "word", "comma"]
    assert probe.GROUPS[groups[eot]] == "eot"
    assert groups[eot + 1] == -1  # another special token counts in no group
    assert (groups[eot + 107:] == 5).all()  # the timestamps: the segment ends there


def _row(end: float, comma: float, trail: float, eot: float, stamp: float) -> dict[str, float]:
    word = 1 - end - comma - trail - eot - stamp
    return {"w_end": end, "w_comma": comma, "w_trail": trail, "w_eot": eot, "w_stamp": stamp, "w_word": word}


def test_the_scores_rank_an_end_over_a_comma_and_count_an_unpunctuated_stop_only_in_stop_vs_cont(
        probe: ModuleType) -> None:
    end, comma = _row(0.8, 0.05, 0.0, 0.0, 0.1), _row(0.1, 0.6, 0.1, 0.0, 0.1)
    stamp = _row(0.1, 0.05, 0.0, 0.0, 0.8)
    for kind in probe.KINDS:
        assert probe.whisper_score(end, kind) > probe.whisper_score(comma, kind)
    assert probe.whisper_score(stamp, "stop_vs_cont") > probe.whisper_score(comma, "stop_vs_cont")
    assert probe.whisper_score(stamp, "end") == pytest.approx(math.log(0.1 / 0.9), abs=1e-4)
    with pytest.raises(ValueError):
        probe.whisper_score(end, "nothing")


def test_cross_validation_by_call_keeps_each_calls_rows_out_of_its_own_fit(probe: ModuleType) -> None:
    rng = np.random.default_rng(3)
    calls = [f"c{i % 12}" for i in range(480)]
    y = rng.integers(0, 2, 480).astype(float)
    informative = np.c_[np.ones(480), y + rng.normal(0, 0.7, 480)]
    noise = np.c_[np.ones(480), rng.normal(size=480)]
    assert probe.cross_validated(informative, y, calls) > 0.8
    assert abs(probe.cross_validated(noise, y, calls) - 0.5) < 0.1
    # a value drawn once per call, with labels drawn per call: nothing carries over from the other calls
    index = [int(c[1:]) for c in calls]
    per_call = np.c_[np.ones(480), rng.normal(size=12)[index]]
    labels = rng.integers(0, 2, 12).astype(float)[index]
    assert probe.cross_validated(per_call, labels, calls) < 0.8
