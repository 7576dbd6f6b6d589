"""The wait's fit: its simulation counts the outcomes as ``rxvoice eval`` does; a second set's share of the fit."""

from __future__ import annotations

import math
from dataclasses import replace
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from rxvoice.turns.ending import WordsEnd
from rxvoice.turns.wait import DEFAULT_WAIT, Evidence, needed_silence
from tests.support import REPO, load_script


@pytest.fixture(scope="module")
def fit() -> ModuleType:
    return load_script(REPO / "benchmarks" / "fit_turn_wait.py", "rxvoice_benchmark_fit_turn_wait")


UNSURE = WordsEnd(0.5, 0.0, "unsure")
MODEL = replace(DEFAULT_WAIT, bias=0.0, audio=0.0, length=0.0, threshold=1.0)


def row(end: bool, after: float | None) -> dict[str, Any]:
    return {"call": "c", "text": "", "end": end, "audio": 0.5, "reading": False, "n": 0, "longest": 0.0,
            "after": after}


def test_an_end_answered_after_the_caller_went_on_is_missed(fit: ModuleType) -> None:
    need = needed_silence(MODEL, Evidence(0.5, UNSURE))
    assert 0.3 < need < MODEL.max_wait
    rows = [row(True, need + 0.1), row(True, need - 0.1), row(True, None)]
    out = fit.simulate(MODEL, rows, None, judged=[UNSURE] * 3)
    assert out["found"] == pytest.approx(2 / 3)  # the second caller went on 0.1 s before the answer


def test_a_pause_answered_before_a_vad_could_hear_the_speech_again_is_cut_off(fit: ModuleType) -> None:
    need = needed_silence(MODEL, Evidence(0.5, UNSURE))
    rows = [row(False, need - fit.HEARD + 0.05), row(False, need - fit.HEARD - 0.05), row(False, need + 1.0)]
    out = fit.simulate(MODEL, rows, None, judged=[UNSURE] * 3)
    assert out["cut"] == pytest.approx(2 / 3)
    assert out["audible"] == pytest.approx(1 / 3)  # only the last one: the bot would have spoken
    assert math.isnan(out["p50"])


def test_a_second_set_carries_its_share_of_the_logistic_fit(fit: ModuleType) -> None:
    rng = np.random.default_rng(7)
    a = [{} for _ in range(200)]
    b = [{} for _ in range(20)]
    weights = fit.share_weights(a, b, 0.25)
    assert weights[:200].sum() == pytest.approx(0.75) and weights[200:].sum() == pytest.approx(0.25)
    assert fit.share_weights(a, [], 0.5).tolist() == [1.0] * 200
    x = np.c_[np.ones(220), rng.normal(size=220)]
    y = np.r_[(x[:200, 1] > 0).astype(float), (x[200:, 1] < 0).astype(float)]  # the second set says the opposite
    alone = fit.fit_logistic(x[:200], y[:200])
    assert fit.fit_logistic(x, y, weights=np.r_[np.ones(200), np.zeros(20)]) == pytest.approx(alone, rel=1e-6)
    little = fit.fit_logistic(x, y, weights=fit.share_weights(a, b, 0.1))
    half = fit.fit_logistic(x, y, weights=fit.share_weights(a, b, 0.5))
    assert half[1] < little[1] < alone[1] and little[1] > 0  # pulled towards the second set's opposite slope


def test_the_human_tune_set_is_pinned_apart_from_the_report_set() -> None:
    tune = load_script(REPO / "benchmarks" / "human_tune.py", "rxvoice_benchmark_human_tune")
    report = load_script(REPO / "benchmarks" / "human_pauses.py", "rxvoice_benchmark_human_pauses")
    assert all(len(sha) == 64 for *_, sha in tune.DISTRIBUTIONS.values())
    pinned = {requirement.split("==")[0].replace(".", "-").lower() for requirement, *_ in tune.DISTRIBUTIONS.values()}
    used = {requirement.split("==")[0].lower() for requirement, *_ in report.SDISTS.values()}
    assert pinned and not pinned & used


def test_the_frontier_moves_the_shipped_wait_along_its_curve(fit: ModuleType) -> None:
    rows = [row(False, 0.4), row(False, 0.9), row(False, 1.6), row(True, 1.5), row(True, 1.25)]
    out = fit.frontier(MODEL, rows, [UNSURE] * len(rows), [0.5, 1.0, 2.0, 4.0], [1.0, 1.3])
    assert [(o["threshold"], o["max_wait"]) for o in out] == [(t, m) for m in (1.0, 1.3) for t in (0.5, 1.0, 2.0, 4.0)]
    for bound in (1.0, 1.3):
        curve = [o for o in out if o["max_wait"] == bound]
        cuts = [o["cut"] for o in curve]
        assert cuts == sorted(cuts, reverse=True) and cuts[0] > cuts[-1]  # more patience, fewer cut-offs
    # the bound caps the wait: at 1.3 s the end whose caller went on after 1.25 s is missed, at 1.0 s found
    assert out[3]["found"] == 1.0 and out[7]["found"] == pytest.approx(0.5)
