"""Whisper log-mel features for Smart Turn, in numpy, as Pipecat computes them.

Smart Turn v3 is a Whisper-tiny encoder with a classifier head, so it must
see exactly the features HF ``WhisperFeatureExtractor(chunk_length=8)``
produces, or its probabilities drift. The recipe, as Pipecat 1.14 computes it:

1. the last 8 s at 16 kHz (128 000 samples), zero-padded at the front;
2. zero-mean / unit-variance over the whole buffer, in float32
   (``(x − mean) / sqrt(var + 1e-7)``);
3. centred STFT: reflect padding of 200, periodic Hann window of 400, hop
   160, real FFT, power ``|X|²``, in float64;
4. 80 Slaney mel filters over 0–8 kHz with Slaney area normalization;
5. ``log10(max(mel, 1e-10))``, last frame dropped (801 → 800 frames),
   clamped to at least ``max − 8``, mapped ``(x + 4) / 4``; float32 (80, 800).

Exactness matters more than usual: Smart Turn is int8-quantized and its
output jumps when a value lands in another quantization bin, so features
that differ by 1e-5 (say, normalizing in float64 instead of float32) can
move the probability by 0.1. Every step therefore does the reference's
arithmetic in the reference's precision and order; the result is bit-for-bit
the features Pipecat computes.

Speed (it runs on every end-of-speech, on the critical path of a reply):
the framing is a strided view (no copy), the window, filterbank and scratch
buffers are allocated once per extractor and written in place, and the
never-used 801st frame is not transformed at all. The mel product skips the
filterbank's zeros: each Slaney filter covers a few neighbouring FFT bins,
so the 80 filters are taken in 8 bands of 10, each multiplied with only the
bins it covers (2,150 multiply-adds a frame instead of 16,080). Leaving out
terms that are exactly zero does not change a sum: with a single-threaded
BLAS the float64 products are the dense one's to the bit. (A multi-threaded
BLAS orders the dense product's own sums differently, so its last bit moves
with the thread count, the banded one's does not; the float32 features the
model sees are the same either way.) The first extractor of a process checks
that the float32 features of a fixed signal are identical both ways, and
falls back to the dense product if they ever differ.
"""

from __future__ import annotations

import logging
import math
import threading

import numpy as np
from numpy.lib.stride_tricks import as_strided
from numpy.typing import NDArray

from ...errors import InvalidAudioError
from ..pcm import Float32Array

__all__ = [
    "HOP_LENGTH",
    "N_FFT",
    "N_FRAMES",
    "N_MELS",
    "N_SAMPLES",
    "SAMPLE_RATE",
    "WhisperFeatures",
    "fit_window",
    "mel_filterbank",
    "whisper_features",
]

SAMPLE_RATE = 16000
N_SAMPLES = 8 * SAMPLE_RATE
N_FFT = 400
HOP_LENGTH = 160
N_MELS = 80
N_FRAMES = N_SAMPLES // HOP_LENGTH  # 800: the 801st STFT frame is dropped
_PAD = N_FFT // 2
_NORM_EPS = 1e-7
_MEL_FLOOR = 1e-10
_BANDS = 8

log = logging.getLogger("rxvoice.audio.turn")


def _hz_to_mel(hz: NDArray[np.float64]) -> NDArray[np.float64]:
    """Slaney mel scale: linear (3 per 200 Hz) below 1 kHz, logarithmic above."""
    log_step = math.log(6.4) / 27.0
    linear = 3.0 * hz / 200.0
    above = 15.0 + np.log(np.maximum(hz, 1e-10) / 1000.0) / log_step
    return np.where(hz >= 1000.0, above, linear)


def _mel_to_hz(mel: NDArray[np.float64]) -> NDArray[np.float64]:
    log_step = math.log(6.4) / 27.0
    linear = 200.0 * mel / 3.0
    above = 1000.0 * np.exp(log_step * (mel - 15.0))
    return np.where(mel >= 15.0, above, linear)


def mel_filterbank() -> NDArray[np.float64]:
    """The (201, 80) Slaney mel filterbank Whisper uses (0–8 kHz, area-normalized)."""
    bins = np.linspace(0.0, SAMPLE_RATE / 2, N_FFT // 2 + 1)
    edges = _mel_to_hz(np.linspace(_hz_to_mel(np.array(0.0)), _hz_to_mel(np.array(8000.0)),
                                   N_MELS + 2))
    widths = np.diff(edges)
    offsets = edges[None, :] - bins[:, None]
    rising = -offsets[:, :-2] / widths[:-1]
    falling = offsets[:, 2:] / widths[1:]
    filters = np.maximum(0.0, np.minimum(rising, falling))
    return filters * (2.0 / (edges[2:] - edges[:-2]))[None, :]


Band = tuple[int, int, int, int, NDArray[np.float64]]
"""Filters ``[r0, r1)`` over FFT bins ``[lo, hi)``, and their weights there (``(r1 - r0, hi - lo)``)."""


def _bands(filters_t: NDArray[np.float64], count: int) -> list[Band]:
    """The filterbank (80, 201) cut into ``count`` bands of filters, each with the bins it covers."""
    bands: list[Band] = []
    for rows in np.array_split(np.arange(filters_t.shape[0]), count):
        r0, r1 = int(rows[0]), int(rows[-1]) + 1
        covered = np.nonzero(filters_t[r0:r1].any(axis=0))[0]
        lo, hi = int(covered[0]), int(covered[-1]) + 1
        bands.append((r0, r1, lo, hi, np.ascontiguousarray(filters_t[r0:r1, lo:hi])))
    return bands


def _banded_product(bands: list[Band], power: NDArray[np.float64], out: NDArray[np.float64]) -> None:
    """``filters_t @ power.T`` band by band, into ``out`` (80, frames); the zeros outside the bands left out."""
    for r0, r1, lo, hi, weights in bands:
        np.matmul(weights, power[:, lo:hi].T, out=out[r0:r1])


_banded_ok: bool | None = None
_banded_lock = threading.Lock()


def _banded_agrees(extractor: WhisperFeatures) -> bool:
    """Whether the banded product gives the dense one's float32 features here (checked once per process)."""
    global _banded_ok
    with _banded_lock:
        if _banded_ok is None:
            rng = np.random.default_rng(20261201)
            signal = (rng.standard_normal(N_SAMPLES) * 0.05).astype(np.float32)
            signal[: N_SAMPLES // 4] = 0.0  # a silent lead-in, as a padded turn has
            bands, extractor._bands = extractor._bands, None
            dense = extractor(signal)
            extractor._bands = bands
            _banded_ok = bool(np.array_equal(dense, extractor(signal)))
            if not _banded_ok:
                log.info("the banded mel product changes the features with this BLAS; using the dense one")
        return _banded_ok


def fit_window(samples: Float32Array) -> Float32Array:
    """The last 8 s of 16 kHz samples, zero-padded at the front to 128 000."""
    if samples.shape[0] >= N_SAMPLES:
        return samples[-N_SAMPLES:]
    out = np.zeros(N_SAMPLES, dtype=np.float32)
    if samples.shape[0]:
        out[-samples.shape[0] :] = samples
    return out


class WhisperFeatures:
    """A feature extractor with its own scratch buffers (reuse it: no allocations).

    Thread-safe: calls are serialized by a lock, since the buffers are shared.
    """

    def __init__(self) -> None:
        """Precompute the window and filterbank and allocate the buffers."""
        self._window = 0.5 - 0.5 * np.cos(2.0 * np.pi * np.arange(N_FFT) / N_FFT)
        self._filters_t = np.ascontiguousarray(mel_filterbank().T)  # (80, 201)
        self._bands: list[Band] | None = _bands(self._filters_t, _BANDS)
        self._normalized = np.empty(N_SAMPLES, dtype=np.float32)
        self._padded = np.zeros(N_SAMPLES + 2 * _PAD)
        self._frames = np.empty((N_FRAMES, N_FFT))
        self._spectrum = np.empty((N_FRAMES, N_FFT // 2 + 1), dtype=np.complex128)
        self._power = np.empty((N_FRAMES, N_FFT // 2 + 1))
        self._imag = np.empty((N_FRAMES, N_FFT // 2 + 1))
        self._mel = np.empty((N_MELS, N_FRAMES))
        self._lock = threading.Lock()
        if not _banded_agrees(self):
            self._bands = None

    def __call__(self, samples: Float32Array, out: Float32Array | None = None) -> Float32Array:
        """Features (80, 800) float32 of exactly 128 000 float32 samples.

        Args:
            samples: 8 s of 16 kHz float32 audio (see :func:`fit_window`).
            out: an optional (80, 800) float32 array to write into.

        Raises:
            InvalidAudioError: not 128 000 samples.
        """
        if samples.shape != (N_SAMPLES,):
            raise InvalidAudioError(
                f"Whisper features need exactly {N_SAMPLES} samples (8 s at 16 kHz), "
                f"got shape {samples.shape}"
            )
        result = np.empty((N_MELS, N_FRAMES), dtype=np.float32) if out is None else out
        with self._lock:
            self._compute(np.asarray(samples, dtype=np.float32), result)
        return result

    def _compute(self, x: Float32Array, result: Float32Array) -> None:
        # 1. Normalize in float32, operation for operation as numpy does it on
        #    float32 input (a float64 division would already move the features
        #    by ~1e-5, enough to flip the model's quantization bins).
        mean = x.mean()
        std = np.sqrt(x.var() + np.float32(_NORM_EPS))
        normalized = self._normalized
        np.subtract(x, mean, out=normalized)
        np.divide(normalized, std, out=normalized)
        padded = self._padded
        padded[_PAD : _PAD + N_SAMPLES] = normalized
        # 2. Reflect-pad 200 on each side (the edge sample itself is not repeated).
        padded[:_PAD] = padded[2 * _PAD : _PAD : -1]
        padded[_PAD + N_SAMPLES :] = padded[N_SAMPLES + _PAD - 2 : N_SAMPLES - 2 : -1]
        # 3. Frames as a strided view (only the 800 kept), windowed, real FFT, power.
        step = padded.strides[0]
        frames = as_strided(padded, shape=(N_FRAMES, N_FFT), strides=(HOP_LENGTH * step, step))
        np.multiply(frames, self._window, out=self._frames)
        spectrum = np.fft.rfft(self._frames, axis=1, out=self._spectrum)
        power = self._power
        np.square(spectrum.real, out=power)
        np.square(spectrum.imag, out=self._imag)
        power += self._imag
        # 4. Mel filterbank, straight into (80, 800): band by band (the zeros left out), or dense.
        mel = self._mel
        if self._bands is not None:
            _banded_product(self._bands, power, mel)
        else:
            np.matmul(self._filters_t, power.T, out=mel)
        # 5. log10 of the floored mel, clamped to 8 below the maximum, (x + 4) / 4,
        #    in float64 and in this order, as the reference does.
        np.maximum(mel, _MEL_FLOOR, out=mel)
        np.log10(mel, out=mel)
        np.maximum(mel, mel.max() - 8.0, out=mel)
        mel += 4.0
        mel *= 0.25  # exactly / 4
        np.copyto(result, mel, casting="same_kind")


_default: WhisperFeatures | None = None
_default_lock = threading.Lock()


def whisper_features(samples: Float32Array) -> Float32Array:
    """Features (80, 800) of 16 kHz float32 audio, fitted to the last 8 s first."""
    global _default
    with _default_lock:
        if _default is None:
            _default = WhisperFeatures()
        extractor = _default
    return extractor(fit_window(np.asarray(samples, dtype=np.float32)))
