"""Smart Turn v3.2: faithfulness on every fixture, batching, sharing, errors."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import pytest

from rxvoice.audio.turn import SmartTurnAnalyzer
from rxvoice.errors import ConfigurationError, InvalidAudioError, ModelError, ModelNotFoundError


def test_every_fixture_matches_the_reference_probability(
    smart_turn_model: Path, turn_labels: list[dict[str, str]], turn_audio: dict[str, np.ndarray]
) -> None:
    analyzer = SmartTurnAnalyzer(smart_turn_model)
    misses = []
    for row in turn_labels:
        p = analyzer.probability(turn_audio[row["file"]])
        if abs(p - float(row["smart_turn_prob"])) > 1e-3:
            misses.append((row["file"], p, row["smart_turn_prob"]))
    assert not misses


def test_batch_equals_single(
    smart_turn_model: Path, turn_audio: dict[str, np.ndarray]
) -> None:
    analyzer = SmartTurnAnalyzer(smart_turn_model)
    windows = list(turn_audio.values())[:4]
    single = [analyzer.probability(w) for w in windows]
    np.testing.assert_allclose(analyzer.probabilities(windows), single, atol=1e-6)
    assert analyzer.probabilities([]) == []


def test_booking_turns(
    smart_turn_model: Path, booking: np.ndarray, conversation_dir: Path
) -> None:
    # From 0.3 s before a turn's first word to 0.2 s after each segment (audio README).
    transcript = json.loads((conversation_dir / "booking.transcript.json").read_text())
    analyzer = SmartTurnAnalyzer(smart_turn_model)
    reference = [0.014, 0.823, 0.008, 0.687, 0.967]
    turn_start = None
    for segment, expected in zip(transcript["segments"], reference, strict=True):
        turn_start = segment["start"] if turn_start is None else turn_start
        a, b = round((turn_start - 0.3) * 16000), round((segment["end"] + 0.2) * 16000)
        p = analyzer.probability(booking[a:b])
        assert (p > 0.5) == segment["turn_end"]
        assert p == pytest.approx(expected, abs=1e-3)
        turn_start = None if segment["turn_end"] else turn_start


def test_only_the_last_8_seconds_count(smart_turn_model: Path, booking: np.ndarray) -> None:
    analyzer = SmartTurnAnalyzer(smart_turn_model)
    long = booking[: 16000 * 12]
    assert analyzer.probability(long) == analyzer.probability(long[-128000:])
    assert analyzer.probability(long.tobytes()) == analyzer.probability(long)


def test_one_session_per_model_and_threads(smart_turn_model: Path) -> None:
    a, b = SmartTurnAnalyzer(smart_turn_model), SmartTurnAnalyzer(str(smart_turn_model))
    assert a._shared is b._shared
    assert SmartTurnAnalyzer(smart_turn_model, threads=2)._shared is not a._shared


def test_thread_safe_use(smart_turn_model: Path, turn_audio: dict[str, np.ndarray]) -> None:
    analyzer = SmartTurnAnalyzer(smart_turn_model)
    windows = list(turn_audio.values())[:4]
    expected = [analyzer.probability(w) for w in windows]
    results: dict[int, float] = {}

    def work(i: int) -> None:
        results[i] = SmartTurnAnalyzer(smart_turn_model).probability(windows[i])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [results[i] for i in range(4)] == expected


def test_errors(smart_turn_model: Path, tmp_path: Path) -> None:
    analyzer = SmartTurnAnalyzer(smart_turn_model)
    with pytest.raises(InvalidAudioError, match="0 samples"):
        analyzer.probability(np.zeros(0, np.float32))
    with pytest.raises(InvalidAudioError, match="NaN"):
        analyzer.probability(np.full(100, np.nan, np.float32))
    with pytest.raises(ModelNotFoundError):
        SmartTurnAnalyzer(tmp_path / "missing.onnx")
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"junk")
    with pytest.raises(ModelError):
        SmartTurnAnalyzer(bad)
    with pytest.raises(ConfigurationError):
        SmartTurnAnalyzer(smart_turn_model, threads=0)
    assert analyzer.features(np.zeros(10, np.float32)).shape == (80, 800)
    assert analyzer.is_complete(np.zeros(16000, np.float32)) in (True, False)
