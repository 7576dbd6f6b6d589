"""VAD parameters, the pure state machine and the analyzer's bookkeeping (scenario 116)."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pytest

from rxvoice.audio.pcm import Float32Array
from rxvoice.audio.vad import (
    VADAnalyzer,
    VADParams,
    VADState,
    VADStateMachine,
    WindowAnalysis,
    window_count,
)
from rxvoice.errors import ConfigurationError, InvalidAudioError, ModelError

Q, ST, SP, SO = VADState.QUIET, VADState.STARTING, VADState.SPEAKING, VADState.STOPPING


class Scripted(VADAnalyzer):
    """A test double: confidence is the window's first sample (so audio carries it)."""

    supported_sample_rates = (16000, 8000)

    def __init__(
        self, params: VADParams | None = None, sample_rate: int = 16000, fixed: float | None = None
    ) -> None:
        self.model_resets = 0
        self.fixed = fixed
        super().__init__(sample_rate, params)

    def _window_samples_for(self, sample_rate: int) -> int:
        return 512 if sample_rate == 16000 else 256

    def _window_confidence(self, window: Float32Array) -> float:
        return float(window[0]) if self.fixed is None else self.fixed

    def _reset_model(self) -> None:
        self.model_resets += 1


def windows(confidences: Iterable[float], size: int = 512) -> np.ndarray:
    """Windows whose first sample is the wanted confidence (the rest: loud noise)."""
    rows = []
    rng = np.random.default_rng(7)
    for c in confidences:
        w = (rng.standard_normal(size) * 0.1).clip(-0.5, 0.5).astype(np.float32)
        w[0] = c
        rows.append(w)
    return np.concatenate(rows) if rows else np.zeros(0, np.float32)


NO_GATE = VADParams(min_volume=0.0)


def test_defaults_and_window_counts() -> None:
    p = VADParams()
    assert (p.confidence, p.start_secs, p.stop_secs, p.min_volume) == (0.7, 0.2, 0.2, 0.6)
    assert window_count(0.2, 512, 16000) == 6  # 6.25 → 6
    assert window_count(0.2, 256, 8000) == 6
    assert window_count(0.8, 512, 16000) == 25
    assert window_count(0.016, 512, 16000) == 0  # 0.5 → 0 (half to even)
    assert window_count(0.048, 512, 16000) == 2  # 1.5 → 2


@pytest.mark.parametrize(
    "kwargs",
    [{"confidence": 1.5}, {"confidence": -0.1}, {"min_volume": 2}, {"start_secs": -1},
     {"stop_secs": 100}, {"confidence": float("nan")}, {"start_secs": True},
     {"stop_secs": "0.2"}],
)
def test_params_validation(kwargs: dict[str, object]) -> None:
    with pytest.raises(ConfigurationError):
        VADParams(**kwargs)  # type: ignore[arg-type]


def test_state_machine_transitions() -> None:
    m = VADStateMachine(start_windows=2, stop_windows=2)
    m.update(True)
    assert m.state is ST and m.settle() is ST
    m.update(True)
    assert m.settle() is SP
    m.update(False)
    assert m.settle() is SO
    m.update(True)
    assert m.settle() is SP
    m.update(False)
    m.update(False)
    assert m.state is SO and m.settle() is Q
    m.update(True)
    m.update(False)
    assert m.settle() is Q
    m.update(True)
    m.reset()
    assert m.state is Q and m.starting_count == 0


def test_scenario_116_per_window_calls() -> None:
    vad = Scripted(NO_GATE)
    states = [vad.analyze_audio(windows([0.9])) for _ in range(6)]
    assert states == [ST] * 5 + [SP]
    states = [vad.analyze_audio(windows([0.1])) for _ in range(6)]
    assert states == [SO] * 5 + [Q]


def test_scenario_116_promotion_once_per_chunk() -> None:
    vad = Scripted(NO_GATE)
    assert vad.analyze_audio(windows([0.9] * 5 + [0.1])) is Q
    assert vad.analyze_audio(windows([0.9] * 6)) is SP
    assert vad.analyze_audio(windows([0.1] * 5 + [0.9])) is SP


def test_scenario_116_digital_silence_never_starts_speech() -> None:
    vad = Scripted(VADParams(), fixed=0.99)  # default min_volume 0.6, a sure model
    silence = np.zeros(512 * 100, dtype=np.float32)
    assert vad.analyze_audio(silence) is Q
    assert all(not r.speaking for r in vad.analyze_windows(silence))
    assert vad.volume == 0.0


def test_volume_gate_needs_a_full_window_and_ramp_up() -> None:
    # Confident loud audio: volume reads 0 for the first 12 windows (6144 < 6400
    # samples), then smooths up; speech starts only when the smoothed volume ≥ 0.6.
    vad = Scripted(VADParams())
    records = vad.analyze_windows(windows([0.9] * 24))
    volumes = [r.volume for r in records]
    assert volumes[:12] == [0.0] * 12
    assert 0 < volumes[12] < volumes[13] < volumes[16]
    first_speaking = next(i for i, r in enumerate(records) if r.speaking)
    assert first_speaking == 16
    assert vad.state is SP  # windows 16..23: 8 ≥ 6


def test_buffering_arbitrary_chunk_sizes_matches_whole_windows() -> None:
    audio = windows([0.9] * 10 + [0.1] * 10 + [0.9] * 20)
    whole = Scripted(NO_GATE)
    expected = whole.analyze_windows(audio)
    parts = Scripted(NO_GATE)
    got: list[WindowAnalysis] = []
    pos, sizes = 0, [1, 100, 511, 512, 513, 2000, 37]
    while pos < audio.shape[0]:
        n = sizes[len(got) % len(sizes)]
        got += parts.analyze_windows(audio[pos : pos + n])
        pos += n
    # Promotion happens once per chunk, so only the per-window numbers must agree.
    def numbers(rs: list[WindowAnalysis]) -> list[tuple[int, float, float, bool]]:
        return [(r.start_sample, r.confidence, r.volume, r.speaking) for r in rs]

    assert numbers(got) == numbers(expected)
    assert [r.start_sample for r in got] == [512 * i for i in range(40)]


def test_bytes_and_int16_input() -> None:
    audio = windows([0.9] * 8)
    ints = (audio * 32768).astype("<i2")
    a, b = Scripted(NO_GATE), Scripted(NO_GATE)
    assert a.analyze_audio(ints.tobytes()) == b.analyze_audio(ints) == SP
    assert a.analyze_audio(b"") is SP


def test_last_confidence_and_volume_are_kept() -> None:
    vad = Scripted(NO_GATE)
    vad.analyze_audio(windows([0.25, 0.75]))
    assert vad.last_confidence == pytest.approx(0.75)
    assert vad.last_volume == vad.volume


def test_set_params_resets_state_but_keeps_volume() -> None:
    vad = Scripted(VADParams())
    vad.analyze_audio(windows([0.9] * 30))
    assert vad.state is SP
    volume = vad.volume
    vad.set_params(VADParams(start_secs=0.5))
    assert vad.state is Q and vad.volume == volume
    assert vad.params.start_secs == 0.5


def test_set_sample_rate_and_reset() -> None:
    vad = Scripted(NO_GATE)
    vad.analyze_audio(windows([0.9] * 10)[:-100])
    vad.set_sample_rate(8000)
    assert vad.window_samples == 256 and vad.state is Q and vad.volume == 0.0
    assert vad.analyze_audio(windows([0.9] * 6, size=256)) is SP
    vad.reset()
    assert vad.state is Q and vad.model_resets == 1
    with pytest.raises(ConfigurationError, match="8000"):
        vad.set_sample_rate(44100)
    with pytest.raises(ConfigurationError):
        Scripted(sample_rate=22050)
    with pytest.raises(ConfigurationError, match="VADParams"):
        vad.set_params({"confidence": 0.5})  # type: ignore[arg-type]


def test_confidence_checks_one_window() -> None:
    vad = Scripted(NO_GATE)
    assert vad.confidence(windows([0.3])) == pytest.approx(0.3)
    with pytest.raises(InvalidAudioError, match="512"):
        vad.confidence(np.zeros(100, np.float32))


def test_bad_audio_and_closed_analyzer() -> None:
    vad = Scripted(NO_GATE)
    with pytest.raises(InvalidAudioError):
        vad.analyze_audio(b"\x00\x00\x00")
    with pytest.raises(InvalidAudioError, match="NaN"):
        vad.analyze_audio(np.full(512, np.nan, np.float32))
    with vad:
        pass
    with pytest.raises(ModelError, match="closed"):
        vad.analyze_audio(windows([0.9]))
