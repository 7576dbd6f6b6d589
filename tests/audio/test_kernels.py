"""Smart Turn's int8 kernels: the pure decision, the check window, and the per-process self-check."""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from rxvoice.audio.turn import (
    CHECK_PROBABILITY,
    CHECK_TOLERANCE,
    KernelCheck,
    SmartTurnAnalyzer,
    check_window,
    choose_kernels,
)
from rxvoice.audio.turn import smart_turn as smart_turn_module
from rxvoice.errors import ConfigurationError


def answer(value: float, calls: list[str], name: str) -> Callable[[], float]:
    def run() -> float:
        calls.append(name)
        return value

    return run


# -- the decision, without a CPU ----------------------------------------------------------


def test_faithful_default_kernels_are_kept_without_running_the_exact_ones() -> None:
    calls: list[str] = []
    check = choose_kernels(0.48, answer(0.4804, calls, "default"), answer(0.48, calls, "exact"))
    assert check == KernelCheck("default", 0.48, 0.4804, None, True, CHECK_TOLERANCE)
    assert calls == ["default"] and check.faithful


def test_saturating_default_kernels_give_way_to_the_exact_ones() -> None:
    calls: list[str] = []
    check = choose_kernels(0.48, answer(0.97, calls, "default"), answer(0.4801, calls, "exact"))
    assert (check.kernels, check.exact, check.faithful) == ("exact", 0.4801, True)
    assert calls == ["default", "exact"]


def test_neither_faithful_takes_the_closer_and_says_so() -> None:
    closer_default = choose_kernels(0.5, answer(0.52, [], "d"), answer(0.6, [], "e"))
    assert closer_default.kernels == "default" and not closer_default.faithful
    closer_exact = choose_kernels(0.5, answer(0.6, [], "d"), answer(0.52, [], "e"))
    assert closer_exact.kernels == "exact" and not closer_exact.faithful
    tie = choose_kernels(0.5, answer(0.6, [], "d"), answer(0.4, [], "e"))
    assert tie.kernels == "exact"


def test_without_a_pinned_value_the_exact_kernels_set_the_expectation() -> None:
    calls: list[str] = []
    agree = choose_kernels(None, answer(0.3, calls, "default"), answer(0.3002, calls, "exact"))
    assert (agree.kernels, agree.expected, agree.pinned) == ("default", 0.3002, False)
    assert calls == ["exact", "default"]  # each run once
    differ = choose_kernels(None, answer(0.9, [], "d"), answer(0.3, [], "e"))
    assert (differ.kernels, differ.faithful) == ("exact", True)


def test_the_tolerance_is_inclusive_and_configurable() -> None:
    assert choose_kernels(0.5, lambda: 0.5 + 2e-3, lambda: 0.9, tolerance=2e-3).kernels == "default"
    assert choose_kernels(0.5, lambda: 0.5 + 2e-3, lambda: 0.5).kernels == "exact"


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), "0.5", None, True])
def test_a_probability_that_is_not_a_number_is_refused(bad: object) -> None:
    with pytest.raises(ConfigurationError, match="kernel check"):
        choose_kernels(0.5, lambda: bad, lambda: 0.5)  # type: ignore[arg-type, return-value]


def test_describe_names_the_choice_and_the_numbers() -> None:
    line = KernelCheck("exact", 0.48, 0.97, 0.48, True).describe()
    assert "exact" in line and "0.970000" in line and "pinned" in line


# -- the check window ------------------------------------------------------------------------


def test_the_check_window_is_the_same_everywhere() -> None:
    """Integer arithmetic only: the same samples on every machine (pinned hash), and a new array each call."""
    window = check_window()
    assert window.dtype == np.int16 and window.shape == (17600,)
    assert not window[:4800].any() and np.abs(window[4800:]).max() > 8000
    assert hashlib.sha256(window.tobytes()).hexdigest()[:16] == "51fbfb54f75805b0"
    assert check_window() is not window


def test_the_pinned_probability_is_the_exact_kernels_answer(smart_turn_model: Path) -> None:
    exact = SmartTurnAnalyzer(smart_turn_model, exact_quantization=True)
    assert exact.kernels == "exact" and exact.kernel_check is None
    assert abs(exact.probability(check_window()) - CHECK_PROBABILITY) < 1e-6


# -- the self-check in the analyzer ------------------------------------------------------------


@pytest.fixture
def model_copy(smart_turn_model: Path, tmp_path: Path) -> Iterator[Path]:
    """The published model under a path no analyzer has used yet (a fresh self-check); released after."""
    copy = tmp_path / "smart-turn.onnx"
    shutil.copyfile(smart_turn_model, copy)
    yield copy
    path = str(copy.resolve())
    for cache in (SmartTurnAnalyzer._sessions, SmartTurnAnalyzer._checks):
        for key in [k for k in cache if k[0] == path]:
            del cache[key]  # type: ignore[attr-defined]


def test_the_default_analyzer_runs_kernels_that_reproduce_the_check(model_copy: Path) -> None:
    """Whatever this CPU is: the chosen kernels give the pinned probability, and only their session is kept."""
    analyzer = SmartTurnAnalyzer(model_copy)
    check = analyzer.kernel_check
    assert check is not None and check.pinned and check.expected == CHECK_PROBABILITY
    assert check.faithful, check.describe()
    assert analyzer.kernels == check.kernels
    assert abs(analyzer.probability(check_window()) - CHECK_PROBABILITY) <= CHECK_TOLERANCE
    path = str(model_copy.resolve())
    kept = [exact for (p, _, exact) in SmartTurnAnalyzer._sessions if p == path]
    assert kept == [check.kernels == "exact"]


def test_the_check_runs_once_per_process_per_model(model_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runs: list[object] = []
    real = smart_turn_module.choose_kernels

    def counted(*args: object, **kwargs: object) -> KernelCheck:
        runs.append(args)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(smart_turn_module, "choose_kernels", counted)
    first = SmartTurnAnalyzer(model_copy)
    second = SmartTurnAnalyzer(str(model_copy))
    assert len(runs) == 1
    assert second.kernel_check is first.kernel_check and second._shared is first._shared
    SmartTurnAnalyzer(model_copy, threads=2)
    assert len(runs) == 2  # another thread count is another session: checked on its own


def test_forced_kernels_skip_the_check(model_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(smart_turn_module, "choose_kernels", lambda *a, **k: pytest.fail("checked"))
    assert SmartTurnAnalyzer(model_copy, exact_quantization=False).kernels == "default"
    assert SmartTurnAnalyzer(model_copy, exact_quantization=True).kernels == "exact"


def test_another_model_is_checked_against_its_own_exact_answer(
    model_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model file other than the published one (here: its hash not recognized) has no pinned value."""
    monkeypatch.setattr(smart_turn_module, "MODEL_SHA256", "0" * 64)
    check = SmartTurnAnalyzer(model_copy).kernel_check
    assert check is not None and not check.pinned and check.exact is not None
    assert check.expected == check.exact and abs(check.expected - CHECK_PROBABILITY) < 1e-6


@pytest.mark.parametrize("bad", [1, "yes", 0.5])
def test_exact_quantization_is_a_bool_or_none(smart_turn_model: Path, bad: object) -> None:
    with pytest.raises(ConfigurationError, match="exact_quantization"):
        SmartTurnAnalyzer(smart_turn_model, exact_quantization=bad)  # type: ignore[arg-type]
