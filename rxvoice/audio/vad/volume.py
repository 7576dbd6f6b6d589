"""The VAD's volume gate: BS.1770 loudness of the last 0.4 s, as Pipecat measures it.

A window only counts as speech when the model is confident *and* the audio is
loud enough; the loudness keeps faint background talk and line noise from
starting a turn. The measurement follows Pipecat 1.14 (which uses the
``loudness`` package, a libebur128-style meter):

* the last ``ceil(0.4 · rate)`` samples (one BS.1770 gating block), read as
  0 until that many samples have arrived;
* K-weighted (the BS.1770 pre-filter and RLB high-pass, designed from their
  analog prototypes so they fit any sample rate), the filter starting from
  rest at the start of the block;
* mean square → LUFS (``10·log10(ms) − 0.691``), absolutely gated at −70 LUFS
  (quieter reads as −inf), and quantized to the centre of its 0.1 LU
  histogram bin, as the reference meter's histogram mode does;
* mapped linearly from [−110, −10] LUFS to [0, 1] and clamped, so
  ``min_volume=0.6`` means about −50 LUFS and anything gated reads 0.

:class:`VolumeMeter` filters each sample once, continuously (a 6400-sample
IIR per 32 ms window would cost more than the VAD model), and recovers the
block's "from rest" filtering exactly by subtracting the zero-input response
to its state at the block's start; the IIR runs as block state-space matrix
products (numpy has no recursive filter), exact to rounding;
:meth:`VolumeMeter.add_many` runs many meters in lockstep as one array.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "ABSOLUTE_GATE_LUFS", "SMOOTHING_FACTOR", "VolumeMeter", "block_loudness", "k_weighting", "loudness_to_volume",
    "volume_window_samples",
]

F64 = NDArray[np.float64]

ABSOLUTE_GATE_LUFS = -70.0
"""Blocks quieter than this are gated out (read as −inf LUFS, volume 0)."""

SMOOTHING_FACTOR = 0.2
"""Per-window exponential smoothing: ``v = prev + 0.2 · (raw − prev)``."""

_LUFS_LOW = -110.0
_LUFS_HIGH = -10.0
_BIN_LU = 0.1
_GATE_ENERGY = 10.0 ** ((ABSOLUTE_GATE_LUFS + 0.691) / 10.0)
_SUB_BLOCK = 32
_MAX_SUB_BLOCKS = 64
_ZIR_TOLERANCE = 1e-14


def volume_window_samples(sample_rate: int) -> int:
    """Samples in the 0.4 s loudness window: ``ceil(0.4 · rate)``, in integers."""
    return -(-2 * sample_rate // 5)


def k_weighting(sample_rate: int) -> tuple[tuple[F64, F64], tuple[F64, F64]]:
    """BS.1770 K-weighting as two biquads ``((b_shelf, a_shelf), (b_hp, a_hp))``.

    Designed from the analog prototypes behind BS.1770's 48 kHz coefficients
    (the libebur128 design), so they are right at 8, 16 or 44.1 kHz too.
    """
    f0 = 1681.974450955533
    gain_db = 3.999843853973347
    q = 0.7071752369554196
    vh = 10.0 ** (gain_db / 20.0)
    vb = vh**0.4996667741545416
    k = math.tan(math.pi * f0 / sample_rate)
    a0 = 1.0 + k / q + k * k
    b_shelf = np.array([(vh + vb * k / q + k * k) / a0, 2.0 * (k * k - vh) / a0,
                        (vh - vb * k / q + k * k) / a0])
    a_shelf = np.array([1.0, 2.0 * (k * k - 1.0) / a0, (1.0 - k / q + k * k) / a0])
    f0 = 38.13547087602444
    q = 0.5003270373238773
    k = math.tan(math.pi * f0 / sample_rate)
    a0 = 1.0 + k / q + k * k
    b_hp = np.array([1.0, -2.0, 1.0])
    a_hp = np.array([1.0, 2.0 * (k * k - 1.0) / a0, (1.0 - k / q + k * k) / a0])
    return (b_shelf, a_shelf), (b_hp, a_hp)


def loudness_to_volume(lufs: float) -> float:
    """Map LUFS linearly from [−110, −10] to [0, 1], clamped (−inf → 0)."""
    if lufs == -math.inf:
        return 0.0
    return min(1.0, max(0.0, (lufs - _LUFS_LOW) / (_LUFS_HIGH - _LUFS_LOW)))


def _quantized_lufs(mean_square: float) -> float:
    """Gate at −70 LUFS and snap to the centre of the meter's 0.1 LU bin."""
    if not mean_square >= _GATE_ENERGY:
        return -math.inf
    lufs = 10.0 * math.log10(mean_square) - 0.691
    index = int((lufs - ABSOLUTE_GATE_LUFS) / _BIN_LU)
    centre = index * _BIN_LU + ABSOLUTE_GATE_LUFS + _BIN_LU / 2
    return 10.0 * math.log10(10.0 ** ((centre + 0.691) / 10.0)) - 0.691


def _volumes(mean_squares: F64) -> F64:
    """:func:`loudness_to_volume` of :func:`_quantized_lufs`, for an array."""
    gated = mean_squares >= _GATE_ENERGY
    safe = np.where(gated, mean_squares, 1.0)
    lufs = 10.0 * np.log10(safe) - 0.691
    index = np.floor((lufs - ABSOLUTE_GATE_LUFS) / _BIN_LU)
    centre = index * _BIN_LU + ABSOLUTE_GATE_LUFS + _BIN_LU / 2
    quantized = 10.0 * np.log10(10.0 ** ((centre + 0.691) / 10.0)) - 0.691
    volume = np.clip((quantized - _LUFS_LOW) / (_LUFS_HIGH - _LUFS_LOW), 0.0, 1.0)
    return np.where(gated, volume, 0.0)


class _KFilter:
    """The K-weighting IIR as a 4-state system, run block-wise with matrices.

    For a sub-block of ``b`` samples, ``y = T x + O s`` and the state after it
    is ``A^b s + R x``; sub-block start states chain through ``A^b``, unrolled
    into one matrix product. Everything is precomputed per sample rate.
    """

    def __init__(self, sample_rate: int) -> None:
        (b1, a1), (b2, a2) = k_weighting(sample_rate)
        # Transposed direct form II per biquad, cascaded into one state space.
        m1, v1, c1, d1 = _biquad_state_space(b1, a1)
        m2, v2, c2, d2 = _biquad_state_space(b2, a2)
        a = np.zeros((4, 4))
        a[:2, :2] = m1
        a[2:, 2:] = m2
        a[2:, :2] = np.outer(v2, c1)
        bvec = np.concatenate([v1, v2 * d1])
        cvec = np.concatenate([d2 * c1, c2])
        dval = d2 * d1
        bsz = _SUB_BLOCK
        powers = [np.eye(4)]
        for _ in range(bsz):
            powers.append(a @ powers[-1])
        self.powers = np.stack(powers)  # A^0 .. A^b
        self.obs = np.stack([cvec @ powers[n] for n in range(bsz)])  # (b, 4)
        impulse = np.empty(bsz)
        impulse[0] = dval
        for n in range(1, bsz):
            impulse[n] = cvec @ powers[n - 1] @ bvec
        toeplitz = np.zeros((bsz, bsz))
        for n in range(bsz):
            toeplitz[n, : n + 1] = impulse[n::-1]
        self.toeplitz = toeplitz
        self.reach = np.stack([powers[bsz - 1 - k] @ bvec for k in range(bsz)], axis=1)  # (4, b)
        ab = powers[bsz]
        qmax = _MAX_SUB_BLOCKS
        ab_pows = [np.eye(4)]
        for _ in range(qmax + 1):
            ab_pows.append(ab @ ab_pows[-1])
        # chain @ [s0, e_0, .., e_{q-1}] = start states of sub-blocks 0..q, where
        # start_j = Ab^j s0 + sum_{i<j} Ab^(j-1-i) e_i (e_i: zero-state end state of i).
        chain = np.zeros((4 * qmax + 4, 4 * qmax + 4))
        for j in range(qmax + 1):
            chain[4 * j : 4 * j + 4, 0:4] = ab_pows[j]
            for i in range(j):
                chain[4 * j : 4 * j + 4, 4 + 4 * i : 8 + 4 * i] = ab_pows[j - 1 - i]
        self.chain = chain
        self.toeplitz_t = np.ascontiguousarray(toeplitz.T)
        self.reach_t = np.ascontiguousarray(self.reach.T)
        self.obs_t = np.ascontiguousarray(self.obs.T)
        # Direct-form polynomials of the whole filter, for zero-input responses.
        self.b = np.convolve(b1, b2)
        self.a = np.convolve(a1, a2)
        self.a_matrix = a
        self.c = cvec

    def run(self, x: F64, state: F64, out: F64, scratch: F64) -> F64:
        """Filter ``x`` from ``state`` into ``out``; return the new state.

        ``scratch`` is a caller-owned buffer of at least ``4 * _MAX_SUB_BLOCKS + 4``
        floats (the filter itself is shared between meters, so it keeps no buffers).
        """
        bsz = _SUB_BLOCK
        pos = 0
        total = x.shape[0]
        s = state
        while total - pos >= bsz:
            q = min((total - pos) // bsz, _MAX_SUB_BLOCKS)
            span = q * bsz
            blocks = x[pos : pos + span].reshape(q, bsz)
            inputs = scratch[: 4 * q + 4]
            inputs[:4] = s
            # Zero-state end state of every sub-block, then every start state
            # (index q is the state after the last sub-block).
            np.matmul(blocks, self.reach_t, out=inputs[4:].reshape(q, 4))
            starts = (self.chain[: 4 * q + 4, : 4 * q + 4] @ inputs).reshape(q + 1, 4)
            ys = out[pos : pos + span].reshape(q, bsz)
            np.matmul(blocks, self.toeplitz_t, out=ys)
            ys += starts[:q] @ self.obs_t
            s = starts[q]
            pos += span
        rest = total - pos
        if rest:
            xr = x[pos:]
            out[pos:] = self.toeplitz[:rest, :rest] @ xr + self.obs[:rest] @ s
            s = self.powers[rest] @ s + self.reach[:, bsz - rest :] @ xr
        return s

    def run_many(self, x: F64, states: F64, out: F64) -> F64:
        """Filter each row of ``x`` (rows of equal length, a multiple of the
        sub-block) from its row of ``states`` into ``out``; return new states."""
        bsz = _SUB_BLOCK
        count, total = x.shape
        s = states
        pos = 0
        while pos < total:
            q = min((total - pos) // bsz, _MAX_SUB_BLOCKS)
            span = q * bsz
            blocks = np.ascontiguousarray(x[:, pos : pos + span]).reshape(count * q, bsz)
            inputs = np.empty((count, 4 * q + 4))
            inputs[:, :4] = s
            inputs[:, 4:] = (blocks @ self.reach_t).reshape(count, 4 * q)
            starts = (inputs @ self.chain[: 4 * q + 4, : 4 * q + 4].T).reshape(count, q + 1, 4)
            ys = (blocks @ self.toeplitz_t).reshape(count, q, bsz)
            ys += starts[:, :q] @ self.obs_t
            out[:, pos : pos + span] = ys.reshape(count, span)
            s = starts[:, q]
            pos += span
        return np.ascontiguousarray(s)


def _biquad_state_space(b: F64, a: F64) -> tuple[F64, F64, F64, float]:
    matrix = np.array([[-a[1], 1.0], [-a[2], 0.0]])
    vec = np.array([b[1] - a[1] * b[0], b[2] - a[2] * b[0]])
    return matrix, vec, np.array([1.0, 0.0]), float(b[0])


@functools.lru_cache(maxsize=16)
def _filter_for(sample_rate: int) -> _KFilter:
    return _KFilter(sample_rate)


@functools.lru_cache(maxsize=16)
def _zir_model(sample_rate: int, window: int) -> tuple[F64, F64]:
    """How the filter's past decays into a block: ``(history_to_state, basis)``.

    ``history_to_state`` (4, 8) maps the 8 values before a block start,
    ``(x[-1..-4], y[-1..-4])``, to the filter state there; ``basis`` (4, L)
    holds ``C A^n`` for n < L, the zero-input response to each state
    component, cut where every component has decayed below 1e-14 (L ≤ window).
    """
    kf = _filter_for(sample_rate)
    b, a = kf.b, kf.a
    # Zero-input responses to the 8 direct-form history values, by recursion.
    xs = np.zeros((8, 4))
    ys = np.zeros((8, 4))
    for i in range(4):
        xs[i, i] = 1.0
        ys[4 + i, i] = 1.0
    rows: list[F64] = []
    quiet = 0
    for _ in range(window):
        y = xs @ b[1:] - ys @ a[1:]
        rows.append(y)
        xs = np.concatenate([np.zeros((8, 1)), xs[:, :3]], axis=1)
        ys = np.concatenate([y[:, None], ys[:, :3]], axis=1)
        quiet = quiet + 1 if float(np.abs(y).max()) < _ZIR_TOLERANCE else 0
        if quiet >= 8:
            break
    length = len(rows) - quiet
    history_basis = np.stack(rows[:length], axis=1)  # (8, L)
    obs = np.empty((length, 4))
    row = kf.c.copy()
    for n in range(length):
        obs[n] = row
        row = row @ kf.a_matrix
    # history_basis = history_to_state.T @ obs.T, solved once in least squares.
    solution, *_ = np.linalg.lstsq(obs, history_basis.T, rcond=None)
    return np.ascontiguousarray(solution), np.ascontiguousarray(obs.T)


@functools.lru_cache(maxsize=16)
def _correction(sample_rate: int, window: int) -> tuple[F64, F64]:
    """``(2 P, H)`` of :meth:`VolumeMeter._mean_square`, shared by all meters of a rate.

    With ``h`` the 8 values before a block in stream order (x[-4..-1],
    y[-4..-1]), the state there is ``s0 = M h``; ``P = M' B`` (8, L) and
    ``H = M' B B' M`` (8, 8).
    """
    to_state, basis = _zir_model(sample_rate, window)
    to_state = to_state[:, [3, 2, 1, 0, 7, 6, 5, 4]]
    twice_p = np.ascontiguousarray(2.0 * (to_state.T @ basis))
    gram = np.ascontiguousarray(to_state.T @ (basis @ basis.T) @ to_state)
    return twice_p, gram


def block_loudness(samples: NDArray[np.floating], sample_rate: int) -> float:
    """Quantized BS.1770 loudness (LUFS) of one block, the filter starting at rest.

    This is the from-scratch computation :class:`VolumeMeter` reproduces
    incrementally; ``-inf`` when the block is gated out.
    """
    x = np.ascontiguousarray(samples, dtype=np.float64)
    if x.shape[0] == 0:
        return -math.inf
    y = np.empty_like(x)
    _filter_for(sample_rate).run(x, np.zeros(4), y, np.empty(4 * _MAX_SUB_BLOCKS + 4))
    return _quantized_lufs(float(np.dot(y, y)) / x.shape[0])


class VolumeMeter:
    """Rolling loudness of the last 0.4 s, as a volume in [0, 1].

    Feed samples with :meth:`add`; :meth:`volume` reads the (cached) value,
    0 until a full window has arrived. One meter per audio stream;
    :meth:`add_many` serves many streams at once (the batched VAD).
    """

    __slots__ = (
        "_bank",
        "_basis",
        "_basis_len",
        "_cached",
        "_end",
        "_filter",
        "_gram",
        "_received",
        "_scratch",
        "_state",
        "_window",
        "_xy",
        "sample_rate",
    )

    def __init__(self, sample_rate: int) -> None:
        """Create a meter for audio at ``sample_rate`` Hz."""
        self.sample_rate = sample_rate
        self._window = volume_window_samples(sample_rate)
        self._filter = _filter_for(sample_rate)
        self._basis, self._gram = _correction(sample_rate, self._window)
        self._basis_len = self._basis.shape[1]
        # Row 0: the input x, row 1: the continuous filter output y; 4 zeros of
        # history before the first sample.
        self._xy = np.zeros((2, self._window + 4 + 4096))
        self._scratch = np.empty(4 * _MAX_SUB_BLOCKS + 4)
        self._state = np.zeros(4)
        self._end = 4
        self._received = 0
        self._cached: float | None = 0.0
        self._bank: _Bank | None = None

    @property
    def window_samples(self) -> int:
        """Samples in the loudness window (``ceil(0.4 · rate)``)."""
        return self._window

    @property
    def is_full(self) -> bool:
        """Whether a whole window has arrived since the last reset."""
        return self._received >= self._window

    def reset(self) -> None:
        """Forget all audio: the volume reads 0 until the window fills again."""
        self._xy[:, :4] = 0.0
        self._state = np.zeros(4)
        self._end = 4
        self._received = 0
        self._cached = 0.0

    def add(self, samples: NDArray[np.floating]) -> None:
        """Append float samples in [-1, 1] (any length)."""
        n = samples.shape[0]
        if n == 0:
            return
        begin = self._reserve(n)
        end = begin + n
        xy = self._xy
        xs = xy[0, begin:end]
        xs[:] = samples
        self._state = self._filter.run(xs, self._state, xy[1, begin:end], self._scratch)
        self._end = end
        self._received += n
        self._cached = None

    @staticmethod
    def add_many(
        meters: Sequence[VolumeMeter], windows: Sequence[NDArray[np.floating]]
    ) -> list[float]:
        """``add`` one window to each meter and return each :meth:`volume`.

        Equal to the one-by-one calls (to rounding). Meters fed together in
        lockstep (the batched VAD) are moved into one shared array, so the
        filtering and the block energies run as a few array operations for
        all of them instead of a Python loop of small ones.
        """
        count = len(meters)
        if count == 0:
            return []
        n = windows[0].shape[0]
        first = meters[0]
        if (
            count < 4
            or n == 0
            or n % _SUB_BLOCK
            or any(m._filter is not first._filter for m in meters)
            or any(w.shape[0] != n for w in windows)
        ):
            return VolumeMeter._add_each(meters, windows)
        groups = _Bank.groups(meters)
        if len(groups) == 1 and groups[0] == list(range(count)):
            return VolumeMeter._add_banked(meters, windows, n)
        # Streams of different phase (sessions that started at different times) come in
        # changing combinations: each stable group keeps its own bank instead of one bank
        # being rebuilt (allocated and copied) at every call.
        volumes = [0.0] * count
        for rows in groups:
            part = [meters[i] for i in rows]
            chunks = [windows[i] for i in rows]
            got = (VolumeMeter._add_each(part, chunks) if len(rows) < 4
                   else VolumeMeter._add_banked(part, chunks, n))
            for i, v in zip(rows, got, strict=True):
                volumes[i] = v
        return volumes

    @staticmethod
    def _add_each(meters: Sequence[VolumeMeter], windows: Sequence[NDArray[np.floating]]) -> list[float]:
        volumes = []
        for meter, samples in zip(meters, windows, strict=True):
            meter.add(samples)
            volumes.append(meter.volume())
        return volumes

    @staticmethod
    def _add_banked(
        meters: Sequence[VolumeMeter], windows: Sequence[NDArray[np.floating]], n: int
    ) -> list[float]:
        count = len(meters)
        first = meters[0]
        bank = _Bank.for_meters(meters, n)
        data = bank.data
        size = first._window
        end = bank.end
        if end + n > data.shape[2]:
            bank.compact()
            end = bank.end
        block = data[:, :, end : end + n]
        block[:, 0] = windows
        states = first._filter.run_many(
            block[:, 0], np.array([m._state for m in meters]), block[:, 1]
        )
        # Slide the per-row window energy: add the new block, drop the oldest.
        added = block[:, 1]
        dropped = data[:, 1, end - size : end - size + n]
        bank.energy += np.einsum("ij,ij->i", added, added)
        bank.energy -= np.einsum("ij,ij->i", dropped, dropped)
        end += n
        bank.end = end
        full = []
        for i, meter in enumerate(meters):
            meter._state = states[i]
            meter._end = end
            meter._received += n
            meter._cached = 0.0
            if meter._received >= size:
                full.append(i)
        volumes = [0.0] * count
        if not full:
            return volumes
        start = end - size
        history = data[:, :, start - 4 : start].reshape(count, 8)
        corr = history @ first._gram
        corr -= data[:, 1, start : start + first._basis_len] @ first._basis.T
        energies = np.maximum(bank.energy + np.einsum("ij,ij->i", history, corr), 0.0) / size
        values = _volumes(energies).tolist()
        for i in full:
            meters[i]._cached = values[i]
            volumes[i] = values[i]
        return volumes

    def volume(self) -> float:
        """The normalized loudness of the last 0.4 s (0 until the window is full)."""
        cached = self._cached
        if cached is not None:
            return cached
        value = 0.0
        if self._received >= self._window:
            value = loudness_to_volume(_quantized_lufs(self._mean_square()))
        self._cached = value
        return value

    def lufs(self) -> float:
        """The quantized loudness of the last 0.4 s (−inf until the window is full)."""
        if self._received < self._window:
            return -math.inf
        return _quantized_lufs(self._mean_square())

    def _reserve(self, n: int) -> int:
        """Make room for ``n`` more samples (keeping the last window and 4 samples
        of history); return where they go."""
        end = self._end
        capacity = self._xy.shape[1]
        if end + n <= capacity:
            return end
        keep = self._window + 4
        target = np.zeros((2, 2 * (keep + n))) if keep + n > capacity else self._xy
        target[:, :keep] = self._xy[:, end - keep : end]
        self._xy = target
        self._end = keep
        return keep

    def _mean_square(self) -> float:
        # Energy of the block filtered from rest = continuous output y minus the
        # zero-input response to the filter state s0 at the block start, with
        # s0 = M h (h: the 4 inputs and 4 outputs before the block), so
        # sum((y - z)^2) = y.y + h . (H h - 2 P y_head), H = M'GM, P = M'B.
        xy = self._xy
        end = self._end
        start = end - self._window
        y = xy[1, start:end]
        history = xy[:, start - 4 : start].ravel()
        corr = self._gram @ history
        corr -= self._basis @ y[: self._basis_len]
        energy = float(np.dot(y, y)) + float(history @ corr)
        return max(energy, 0.0) / self._window


class _Bank:
    """The buffers of meters fed in lockstep, as one array ``(meters, 2, capacity)``.

    Each meter's ``_xy`` is a view of its row, so it keeps working on its own;
    the bank is rebuilt whenever the meters it holds are no longer in step.
    It also slides each row's window energy (sum of y²) instead of re-reading
    the window, recomputing it exactly at every compaction so no rounding
    drift can build up.
    """

    __slots__ = ("data", "end", "energy", "meters", "order", "views", "window")

    def __init__(self, meters: Sequence[VolumeMeter], n: int) -> None:
        self.window = meters[0]._window
        keep = self.window + 4
        self.data = np.zeros((len(meters), 2, keep + max(8192, 4 * n)))
        self.end = keep
        self.meters = list(meters)
        self.order = {id(m): i for i, m in enumerate(self.meters)}
        self.views = []
        for i, meter in enumerate(meters):
            have = min(meter._end, keep)
            self.data[i, :, keep - have : keep] = meter._xy[:, meter._end - have : meter._end]
            meter._xy = self.data[i]
            meter._end = keep
            meter._bank = self
            self.views.append(meter._xy)
        self.energy = self._window_energy()

    def _window_energy(self) -> F64:
        outputs = self.data[:, 1, self.end - self.window : self.end]
        energy: F64 = np.einsum("ij,ij->i", outputs, outputs)
        return energy

    def compact(self) -> None:
        """Move the last window (and 4 samples of history) to the front of every row."""
        keep = self.window + 4
        self.data[:, :, :keep] = self.data[:, :, self.end - keep : self.end]
        self.end = keep
        for meter in self.meters:
            meter._end = keep
        self.energy = self._window_energy()

    @staticmethod
    def groups(meters: Sequence[VolumeMeter]) -> list[list[int]]:
        """Indices of ``meters`` by the bank they are in, each group in its bank's row order.

        Meters in no bank form one group (they get a bank together).
        """
        by_bank: dict[int, list[int]] = {}
        for i, meter in enumerate(meters):
            by_bank.setdefault(id(meter._bank), []).append(i)
        out = []
        for rows in by_bank.values():
            bank = meters[rows[0]]._bank
            if bank is not None and len(rows) == len(bank.meters):
                order = bank.order
                rows.sort(key=lambda i: order.get(id(meters[i]), -1))
            out.append(rows)
        return out

    @classmethod
    def for_meters(cls, meters: Sequence[VolumeMeter], n: int) -> _Bank:
        """The bank holding exactly these meters in step, made anew if needed."""
        bank = meters[0]._bank
        if (
            bank is not None
            and len(bank.meters) == len(meters)
            and all(
                a is b and a._xy is v and a._end == bank.end
                for a, b, v in zip(meters, bank.meters, bank.views, strict=True)
            )
        ):
            return bank
        return cls(meters, n)
