"""The volume gate: BS.1770 loudness over 0.4 s, exact against a from-scratch filter."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.signal as sps

from rxvoice.audio.vad import VolumeMeter, block_loudness, k_weighting, loudness_to_volume
from rxvoice.audio.vad.volume import volume_window_samples


def reference_volume(block: np.ndarray, rate: int) -> float:
    """Straightforward recipe: filter from rest with scipy, gate, 0.1 LU bin centre, map."""
    (b1, a1), (b2, a2) = k_weighting(rate)
    y = sps.lfilter(b2, a2, sps.lfilter(b1, a1, block.astype(np.float64)))
    ms = float(np.mean(y * y))
    if ms <= 0 or 10 * math.log10(ms) - 0.691 < -70:
        return 0.0
    lufs = 10 * math.log10(ms) - 0.691
    centre = math.floor((lufs + 70) / 0.1) * 0.1 - 70 + 0.05
    return min(1.0, max(0.0, (centre + 110) / 100))


def test_k_weighting_matches_bs1770_at_48k() -> None:
    (b1, a1), (b2, a2) = k_weighting(48000)
    np.testing.assert_allclose(b1, [1.53512485958697, -2.69169618940638, 1.19839281085285],
                               rtol=1e-9)
    np.testing.assert_allclose(a1, [1.0, -1.69065929318241, 0.73248077421585], rtol=1e-9)
    np.testing.assert_allclose(a2, [1.0, -1.99004745483398, 0.99007225036621], rtol=1e-9)
    np.testing.assert_allclose(b2, [1.0, -2.0, 1.0])


def test_window_length() -> None:
    assert volume_window_samples(16000) == 6400
    assert volume_window_samples(8000) == 3200
    assert volume_window_samples(44100) == 17640


@pytest.mark.parametrize("rate", [8000, 16000, 48000])
def test_incremental_meter_equals_from_scratch(rate: int) -> None:
    rng = np.random.default_rng(rate)
    n = volume_window_samples(rate)
    signal = np.concatenate([
        rng.standard_normal(n + 1000) * 0.3,                       # loud noise
        rng.standard_normal(n) * 0.0005,                           # near the gate
        0.2 * np.sin(np.arange(2 * n) * 0.01) + 0.05,              # low tone with DC
        np.zeros(n // 2),
    ]).astype(np.float32)
    meter = VolumeMeter(rate)
    pos, sizes, checked = 0, [512, 160, 333, 1024, 7, 4096], 0
    while pos < signal.shape[0]:
        n_add = min(sizes[checked % len(sizes)], signal.shape[0] - pos)
        meter.add(signal[pos : pos + n_add])
        pos += n_add
        checked += 1
        if pos < n:
            assert meter.volume() == 0.0 and not meter.is_full
            continue
        assert meter.volume() == pytest.approx(reference_volume(signal[pos - n : pos], rate),
                                               abs=1e-9)
    assert checked > 10


def test_scenario_119_volume_tracker() -> None:
    rng = np.random.default_rng(1)
    loud = (rng.standard_normal(6400) * 0.2).astype(np.float32)
    quiet = loud * 0.01
    meter = VolumeMeter(16000)
    meter.add(loud[:6399])
    assert meter.volume() == 0.0  # not full yet
    meter.add(loud[6399:])
    loud_volume = meter.volume()
    meter.reset()
    meter.add(quiet)
    assert 0.0 < meter.volume() < loud_volume <= 1.0
    meter.reset()
    meter.add(np.zeros(7000, np.float32))
    assert meter.volume() == 0.0 and meter.lufs() == -math.inf
    # The window is bounded: only the last 0.4 s count.
    meter.add(loud)
    assert meter.volume() == loud_volume
    meter.add(np.zeros(6400, np.float32))
    assert meter.volume() == 0.0


def test_loudness_mapping_and_quantization() -> None:
    assert loudness_to_volume(-math.inf) == 0.0
    assert loudness_to_volume(-110.0) == 0.0
    assert loudness_to_volume(-50.0) == pytest.approx(0.6)
    assert loudness_to_volume(0.0) == 1.0
    rng = np.random.default_rng(3)
    lufs = block_loudness(rng.standard_normal(6400) * 0.1, 16000)
    assert ((lufs + 70) / 0.1 - 0.5) == pytest.approx(round((lufs + 70) / 0.1 - 0.5), abs=1e-6)
    assert block_loudness(np.zeros(6400), 16000) == -math.inf
