"""Whisper log-mel features against an independent, straightforward reference."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rxvoice.audio.turn import WhisperFeatures, fit_window, mel_filterbank, whisper_features
from rxvoice.errors import InvalidAudioError


def slaney_mel(f: float) -> float:
    return 3.0 * f / 200.0 if f < 1000.0 else 15.0 + 27.0 * math.log(f / 1000.0) / math.log(6.4)


def slaney_hz(m: float) -> float:
    return 200.0 * m / 3.0 if m < 15.0 else 1000.0 * math.exp(math.log(6.4) * (m - 15.0) / 27.0)


def reference_filters() -> np.ndarray:
    """Triangles between 82 mel-spaced edges, written out filter by filter, bin by bin."""
    top = slaney_mel(8000.0)
    edges = [slaney_hz(top * i / 81) for i in range(82)]
    filters = np.zeros((80, 201))
    for m in range(80):
        lo, mid, hi = edges[m], edges[m + 1], edges[m + 2]
        for k in range(201):
            f = k * 8000.0 / 200
            if lo < f <= mid:
                filters[m, k] = (f - lo) / (mid - lo)
            elif mid < f < hi:
                filters[m, k] = (hi - f) / (hi - mid)
        filters[m] *= 2.0 / (hi - lo)
    return filters


def reference_features(samples: np.ndarray) -> np.ndarray:
    """The recipe of pipecat-behavior §6.4 with a DFT matrix instead of an FFT."""
    x = np.zeros(128000, dtype=np.float32)
    tail = samples[-128000:]
    x[128000 - tail.shape[0] :] = tail
    x = (x - x.mean()) / np.sqrt(x.var() + np.float32(1e-7))
    padded = np.pad(x.astype(np.float64), 200, mode="reflect")
    n = np.arange(400)
    window = 0.5 * (1 - np.cos(2 * np.pi * n / 400))
    frames = np.stack([padded[160 * t : 160 * t + 400] * window for t in range(801)])
    k = np.arange(201)[:, None]
    angle = 2 * np.pi * k * n[None, :] / 400
    re = frames @ np.cos(angle).T
    im = frames @ np.sin(angle).T
    power = re**2 + im**2
    mel = reference_filters() @ power.T
    log = np.log10(np.maximum(mel, 1e-10))[:, :-1]
    log = np.maximum(log, log.max() - 8.0)
    return ((log + 4.0) / 4.0).astype(np.float32)


def test_filterbank_matches_the_written_out_one() -> None:
    np.testing.assert_allclose(mel_filterbank().T, reference_filters(), atol=1e-12)


@pytest.mark.parametrize("kind", ["speech", "long noise", "short quiet", "silence"])
def test_features_match_reference(kind: str, turn_audio: dict[str, np.ndarray]) -> None:
    rng = np.random.default_rng(11)
    if kind == "speech":
        samples = next(iter(turn_audio.values())).astype(np.float32) / 32768
    elif kind == "long noise":
        samples = (rng.standard_normal(150_000) * 0.3).astype(np.float32)
    elif kind == "short quiet":
        samples = (rng.standard_normal(3000) * 1e-4).astype(np.float32)
    else:
        samples = np.zeros(16000, np.float32)
    got = whisper_features(samples)
    assert got.shape == (80, 800) and got.dtype == np.float32
    np.testing.assert_allclose(got, reference_features(samples), atol=1e-4, rtol=0)


def test_fit_window() -> None:
    short = np.arange(10, dtype=np.float32)
    fitted = fit_window(short)
    assert fitted.shape == (128000,) and fitted[-10:].tolist() == list(range(10))
    assert not fitted[:-10].any()
    long = np.arange(130000, dtype=np.float32)
    assert fit_window(long)[0] == 2000


def test_extractor_reuse_and_shape_check() -> None:
    extractor = WhisperFeatures()
    x = fit_window(np.ones(100, np.float32) * 0.1)
    out = np.empty((80, 800), np.float32)
    assert extractor(x, out=out) is out
    np.testing.assert_array_equal(extractor(x), out)
    with pytest.raises(InvalidAudioError, match="128000"):
        extractor(np.zeros(1000, np.float32))


def test_the_banded_mel_product_gives_the_dense_features(turn_audio: dict[str, np.ndarray]) -> None:
    """The filterbank's zeros left out: every row covered, nothing but zeros outside the bands, and on real
    speech exactly the float32 features of the dense product."""
    banded = WhisperFeatures()
    assert banded._bands is not None  # this BLAS passed the once-per-process check
    rows = [r for r0, r1, *_ in banded._bands for r in range(r0, r1)]
    assert rows == list(range(80))
    for r0, r1, lo, hi, weights in banded._bands:
        outside = np.delete(banded._filters_t[r0:r1], np.s_[lo:hi], axis=1)
        assert not outside.any() and weights.shape == (r1 - r0, hi - lo)
        np.testing.assert_array_equal(weights, banded._filters_t[r0:r1, lo:hi])
    dense = WhisperFeatures()
    dense._bands = None  # as with a BLAS that failed the check
    for clip in turn_audio.values():
        x = fit_window(clip.astype(np.float32) / 32768)
        assert np.array_equal(banded(x), dense(x))
