"""Silero VAD: reference probabilities, streams, batching, periodic reset, errors."""

from __future__ import annotations

import hashlib
import itertools
import logging
from pathlib import Path

import numpy as np
import pytest

from rxvoice.audio.vad import (
    SileroModel,
    SileroStream,
    SileroVADAnalyzer,
    VADParams,
    VADState,
    analyze_batch,
    default_silero_model_path,
)
from rxvoice.errors import ConfigurationError, InvalidAudioError, ModelError, ModelNotFoundError


def stream_probabilities(samples: np.ndarray, stream: SileroStream) -> list[float]:
    n = stream.window_samples
    return [stream.confidence(samples[i * n : (i + 1) * n]) for i in range(samples.shape[0] // n)]


def test_every_fixture_matches_the_reference_probabilities(
    turn_labels: list[dict[str, str]], turn_audio: dict[str, np.ndarray], turns_dir: Path
) -> None:
    model = SileroModel.shared()
    probs_dir = turns_dir / "vad_probs"
    for row in turn_labels:
        probs = stream_probabilities(turn_audio[row["file"]], model.stream(16000))
        # The sha is the first 12 hex digits of sha256 over the 6-decimal lines.
        text = "".join(f"{p:.6f}\n" for p in probs)
        assert hashlib.sha256(text.encode()).hexdigest()[:12] == row["vad_probs_sha"], row["file"]
        assert sum(p > 0.5 for p in probs) == int(row["vad_speech_chunks"]), row["file"]
        expected = np.loadtxt(probs_dir / f"{row['file']}.txt")
        np.testing.assert_allclose(probs, expected, atol=1e-4, err_msg=row["file"])


def test_analyzer_confidence_equals_stream_until_a_periodic_reset(
    turn_audio: dict[str, np.ndarray],
) -> None:
    # The reference numbers carry the state through the whole file; the
    # analyzer's own confidence() also applies Pipecat's periodic reset, which
    # only fires after 2 s of windows, while QUIET, after 5 low windows.
    samples = next(iter(turn_audio.values()))
    analyzer = SileroVADAnalyzer(16000)
    stream = analyzer.model.stream(16000)
    for i in range(62):  # 62 windows < 2 s: no reset possible
        chunk = samples[i * 512 : (i + 1) * 512]
        assert analyzer.confidence(chunk) == stream.confidence(chunk)


def test_periodic_reset_rule() -> None:
    analyzer = SileroVADAnalyzer(16000)
    silence = np.zeros(512, dtype=np.float32)
    for _ in range(62):
        analyzer.confidence(silence)
    assert analyzer._model_windows == 62
    analyzer.confidence(silence)  # the 63rd window: 63 * 512 >= 32000, quiet, low
    assert analyzer._model_windows == 0
    assert not analyzer.stream._input.any()
    # Not while SPEAKING.
    analyzer._machine.state = VADState.SPEAKING
    for _ in range(70):
        analyzer.confidence(silence)
    assert analyzer._model_windows == 70


def test_silence_is_not_speech_and_int16_float_bytes_agree() -> None:
    model = SileroModel.shared()
    rng = np.random.default_rng(0)
    ints = (rng.standard_normal(512) * 3000).astype(np.int16)
    a, b, c = model.stream(), model.stream(), model.stream()
    assert a.confidence(ints) == b.confidence(ints.astype(np.float32) / 32768) \
        == c.confidence(ints.tobytes())
    assert model.stream().confidence(np.zeros(512, np.float32)) < 0.5
    assert model.stream().confidence(np.zeros((1, 512), np.float32)) < 0.5


def test_scenario_118_input_errors() -> None:
    stream = SileroModel.shared().stream()
    with pytest.raises(InvalidAudioError, match="3"):
        stream.confidence(np.zeros((1, 1, 512), np.float32))
    with pytest.raises(InvalidAudioError, match="512"):
        stream.confidence(np.zeros(480, np.float32))
    with pytest.raises(InvalidAudioError, match="NaN"):
        stream.confidence(np.full(512, np.nan, np.float32))
    with pytest.raises(ConfigurationError):
        SileroModel.shared().stream(44100)
    with pytest.raises(ConfigurationError):
        SileroVADAnalyzer(48000)


def test_8khz_uses_256_sample_windows(turn_audio: dict[str, np.ndarray]) -> None:
    from rxvoice.audio import resample

    samples = resample(next(iter(turn_audio.values())), 16000, 8000)
    analyzer = SileroVADAnalyzer(8000, params=VADParams(min_volume=0.0))
    assert analyzer.window_samples == 256 and analyzer.stream.context_samples == 32
    records = analyzer.analyze_windows(samples)
    assert len(records) == samples.shape[0] // 256
    assert max(r.confidence for r in records) > 0.9
    assert min(r.confidence for r in records) < 0.1


def test_batch_equals_unbatched(turn_audio: dict[str, np.ndarray]) -> None:
    model = SileroModel.shared()
    files = list(turn_audio.values())[:6]
    length = min(x.shape[0] for x in files) // 512
    single = [stream_probabilities(x[: length * 512], model.stream()) for x in files]
    streams = [model.stream() for _ in files]
    batched = [
        model.run_batch(streams, [x[i * 512 : (i + 1) * 512] for x in files]) for i in range(length)
    ]
    np.testing.assert_allclose(np.array(batched).T, np.array(single), atol=1e-5)


def test_analyze_batch_equals_analyze_audio(booking: np.ndarray) -> None:
    sessions = 5
    offsets = [i * 7919 for i in range(sessions)]
    audio = [booking[o : o + 16000 * 8] for o in offsets]
    solo = [SileroVADAnalyzer(16000) for _ in range(sessions)]
    batch = [SileroVADAnalyzer(16000) for _ in range(sessions)]
    sizes = [320, 512, 1600, 512, 333]  # a different chunking per session
    positions = [0] * sessions
    seen: set[VADState] = set()
    for step in range(400):
        chunks = []
        for s in range(sessions):
            n = sizes[(s + step) % len(sizes)]
            chunks.append(audio[s][positions[s] : positions[s] + n].tobytes())
            positions[s] += n
        expected = [a.analyze_audio(c) for a, c in zip(solo, chunks, strict=True)]
        assert analyze_batch(batch, chunks) == expected
        seen.update(expected)
        for a, b in zip(solo, batch, strict=True):
            assert a.last_confidence == pytest.approx(b.last_confidence, abs=1e-5)
            assert a.last_volume == pytest.approx(b.last_volume, abs=1e-9)
    assert VADState.SPEAKING in seen and VADState.QUIET in seen


def test_analyze_batch_in_lockstep(booking: np.ndarray) -> None:
    # The server loop: every session sends one 32 ms frame per tick.
    sessions = 8
    audio = [booking[i * 4001 : i * 4001 + 16000 * 6] for i in range(sessions)]
    solo = [SileroVADAnalyzer(16000) for _ in range(sessions)]
    batch = [SileroVADAnalyzer(16000) for _ in range(sessions)]
    for k in range(0, 16000 * 6, 512):
        chunks = [a[k : k + 512].tobytes() for a in audio]
        expected = [v.analyze_audio(c) for v, c in zip(solo, chunks, strict=True)]
        assert analyze_batch(batch, chunks) == expected
        got = [(v.last_confidence, v.last_volume) for v in batch]
        want = [(v.last_confidence, v.last_volume) for v in solo]
        np.testing.assert_allclose(got, want, atol=1e-5)
    assert analyze_batch(batch, [b""] * sessions) == [v.state for v in solo]
    batch[0].reset()  # leaves the shared buffers; the others go on in step
    solo[0].reset()
    chunks = [a[:512].tobytes() for a in audio]
    assert analyze_batch(batch, chunks) == [v.analyze_audio(c) for v, c in zip(solo, chunks,
                                                                                strict=True)]


def test_analyze_batch_validation() -> None:
    a, b = SileroVADAnalyzer(16000), SileroVADAnalyzer(8000)
    assert analyze_batch([], []) == []
    with pytest.raises(ConfigurationError):
        analyze_batch([a], [])
    with pytest.raises(ConfigurationError):
        analyze_batch([a, b], [b"", b""])
    with pytest.raises(InvalidAudioError):
        analyze_batch([a, SileroVADAnalyzer(16000)], [bytes(512), b"\x00"])
    assert a._pending_len == 0  # nothing consumed when a chunk is refused
    with pytest.raises(ConfigurationError):
        SileroModel.shared().run_batch([a.stream], [])


def test_booking_speech_segments(booking: np.ndarray) -> None:
    analyzer = SileroVADAnalyzer(16000)
    states = [analyzer.analyze_audio(booking[i : i + 320].tobytes())
              for i in range(0, booking.shape[0] - 320, 320)]
    starts = sum(1 for p, s in itertools.pairwise(states)
                 if s is VADState.SPEAKING and p is not VADState.SPEAKING
                 and p is not VADState.STOPPING)
    assert starts >= 5  # five spoken segments, some split at short gaps


def test_shared_model_and_session_settings() -> None:
    assert SileroModel.shared() is SileroModel.shared(default_silero_model_path())
    assert SileroVADAnalyzer().model is SileroModel.shared()
    assert default_silero_model_path().name == "silero_vad.onnx"


def test_missing_or_bad_model(tmp_path: Path) -> None:
    with pytest.raises(ModelNotFoundError):
        SileroModel(tmp_path / "nope.onnx")
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    with pytest.raises(ModelError):
        SileroModel(bad)


def test_model_error_gives_zero_and_keeps_memory(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    model = SileroModel(default_silero_model_path())  # private: we break its session
    stream = model.stream()
    rng = np.random.default_rng(5)
    chunk = (rng.standard_normal(512) * 0.1).astype(np.float32)
    stream.confidence(chunk)
    state = stream._states[stream._current].copy()

    class Broken:
        def run_with_iobinding(self, binding: object) -> None:
            raise RuntimeError("boom")

        def run(self, *args: object) -> None:
            raise RuntimeError("boom")

    monkeypatch.setattr(model, "_session", Broken())
    with caplog.at_level(logging.WARNING, logger="rxvoice.audio.vad"):
        assert stream.confidence(chunk) == 0.0
        assert list(model.run_batch([stream], [chunk])) == [0.0]
    assert "boom" in caplog.text
    np.testing.assert_array_equal(stream._states[stream._current], state)
