"""Which int8 kernels Smart Turn runs on this CPU, decided by a self-check once per process.

Smart Turn v3.2 is int8-quantized, and its output jumps when an intermediate
value lands in another quantization bin, so the arithmetic of onnxruntime's
int8 matrix kernels decides whether it reproduces the reference
probabilities (the ones Pipecat 1.14 publishes for its fixtures). Where the
CPU multiplies int8 exactly (x86-64 with VNNI, ARM), the default kernels are
exact and fast. On x86-64 CPUs without VNNI, the default kernels saturate
16-bit intermediate sums and the probabilities drift by up to ±0.58;
onnxruntime's ``session.x64quantprecision`` option then selects exact
kernels, which cost more time there (and nothing elsewhere: the option only
acts where the saturation exists).

A table of CPU names would go stale, so rxvoice asks the CPU instead: at the
first :class:`~rxvoice.audio.turn.SmartTurnAnalyzer` of a process (per model
file and thread count) it runs the model once on :func:`check_window`, a
synthetic window whose probability is known (:data:`CHECK_PROBABILITY`,
computed with exact kernels and equal to the reference to 5e-7 on all the
fixtures), and keeps the default kernels only if they give that probability
within :data:`CHECK_TOLERANCE`. Otherwise it checks the exact kernels too and
takes them. For another model file than the published one, the expected
probability is computed with the exact kernels at that first use. The
window was chosen where the two kernels disagree most (0.48 against 0.97 on
a CPU without VNNI), so a saturating CPU cannot pass by chance.

:func:`choose_kernels` is the decision alone (pure: the probabilities come
from callables it calls at most once each), so it is tested without a
particular CPU.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from ...errors import ConfigurationError

__all__ = [
    "CHECK_PROBABILITY",
    "CHECK_TOLERANCE",
    "KernelCheck",
    "KernelChoice",
    "check_window",
    "choose_kernels",
]

KernelChoice = Literal["default", "exact"]
"""onnxruntime's default int8 kernels, or its exact ones (``session.x64quantprecision``)."""

CHECK_PROBABILITY = 0.4803165793418884
"""Smart Turn v3.2's probability for :func:`check_window` (the published model, exact arithmetic)."""

CHECK_TOLERANCE = 1e-3
"""How far from the expected probability the check still counts as faithful (the reference's own bar)."""

_LEAD = 4800  # 0.3 s of silence first, as in the reference fixtures
_SAMPLES = 12800  # then 0.8 s of buzz
_PERIOD = 90  # a 177.8 Hz sawtooth
_SYLLABLE = 6400  # a 0.4 s triangular loudness envelope


def check_window() -> NDArray[np.int16]:
    """The self-check's input: 1.1 s of a synthetic voiced buzz at 16 kHz, int16.

    0.3 s of silence, then a 177.8 Hz sawtooth under a triangular syllable
    envelope plus white noise from an integer hash. Made with integer
    arithmetic only, so every machine makes exactly the same samples.
    """
    t = np.arange(_SAMPLES, dtype=np.int64)
    saw = (t % _PERIOD) * 16384 // _PERIOD - 8192
    half = _SYLLABLE // 2
    envelope = 256 - np.abs(t % _SYLLABLE - half) * 256 // half
    h = (t.astype(np.uint64) * np.uint64(2654435761)) & np.uint64(0xFFFFFFFF)
    h ^= h >> np.uint64(15)
    h = (h * np.uint64(2246822519)) & np.uint64(0xFFFFFFFF)
    h ^= h >> np.uint64(13)
    noise = (h & np.uint64(0xFFFF)).astype(np.int64) - 32768
    voiced = saw * envelope // 256 + noise // 16
    out = np.zeros(_LEAD + _SAMPLES, dtype=np.int16)
    out[_LEAD:] = voiced
    return out


@dataclass(frozen=True, slots=True)
class KernelCheck:
    """What the self-check found, and the kernels it chose.

    Attributes:
        kernels: The kernels chosen.
        expected: The probability the check window should get.
        default: What the default kernels gave.
        exact: What the exact kernels gave (``None`` when they were not needed).
        pinned: Whether ``expected`` is :data:`CHECK_PROBABILITY` (the published
            model) rather than computed with the exact kernels at first use.
        tolerance: The tolerance used.
    """

    kernels: KernelChoice
    expected: float
    default: float
    exact: float | None
    pinned: bool
    tolerance: float = CHECK_TOLERANCE

    @property
    def faithful(self) -> bool:
        """Whether the chosen kernels reproduce the expected probability within the tolerance."""
        got = self.default if self.kernels == "default" else self.exact
        return got is not None and abs(got - self.expected) <= self.tolerance

    def describe(self) -> str:
        """One line for a log: what was chosen and why."""
        exact = "not run" if self.exact is None else f"{self.exact:.6f}"
        source = "pinned" if self.pinned else "exact kernels"
        return (
            f"Smart Turn int8 kernels: {self.kernels} (check window: expected {self.expected:.6f} "
            f"({source}), default kernels {self.default:.6f}, exact kernels {exact}, "
            f"tolerance {self.tolerance:g})"
        )


def _probability(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigurationError(f"the {name} probability of the kernel check must be a finite number, got {value!r}")
    return float(value)


def choose_kernels(
    expected: float | None,
    default: Callable[[], float],
    exact: Callable[[], float],
    *,
    tolerance: float = CHECK_TOLERANCE,
) -> KernelCheck:
    """Decide between the default and the exact kernels from their answers on the check window.

    Args:
        expected: The known probability of the window, or ``None`` to take the
            exact kernels' answer as the expectation (a model other than the
            published one).
        default: Runs the window with the default kernels.
        exact: Runs it with the exact kernels; called only when needed.
        tolerance: How far from ``expected`` still counts as equal.

    Returns:
        The default kernels when they reproduce the expectation (the exact
        ones are then never run, unless ``expected`` is ``None``); else the
        exact kernels when they do; else, neither being faithful (a CPU or
        library with other arithmetic), the closer of the two, the exact
        kernels on a tie. ``KernelCheck.faithful`` tells the last case apart.

    Raises:
        ConfigurationError: a probability or the tolerance is not a finite number.
    """
    tolerance = _probability("tolerance", tolerance)
    exact_p: float | None = None
    pinned = expected is not None
    if expected is None:
        exact_p = _probability("exact kernels'", exact())
        want = exact_p
    else:
        want = _probability("expected", expected)
    default_p = _probability("default kernels'", default())
    if abs(default_p - want) <= tolerance:
        return KernelCheck("default", want, default_p, exact_p, pinned, tolerance)
    if exact_p is None:
        exact_p = _probability("exact kernels'", exact())
    if abs(exact_p - want) <= tolerance or abs(exact_p - want) <= abs(default_p - want):
        return KernelCheck("exact", want, default_p, exact_p, pinned, tolerance)
    return KernelCheck("default", want, default_p, exact_p, pinned, tolerance)
