"""Smart Turn as an end-of-turn analyzer for the turn strategies, and its shared batcher."""

from __future__ import annotations

import contextlib
import json
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rxvoice.audio import resample
from rxvoice.audio.turn import (
    EndOfTurnBuffer,
    SmartTurnAnalyzer,
    SmartTurnBatcher,
    SmartTurnParams,
    SmartTurnStream,
)
from rxvoice.errors import ConfigurationError, InvalidAudioError, ModelError
from rxvoice.turns import EndOfTurnAnalyzer, EndOfTurnStream, TurnAnalyzerStop

CHUNK = 320


def feed(stream: SmartTurnStream | EndOfTurnBuffer, samples: np.ndarray, speech: tuple[float, float],
         rate: int = 16000) -> list[bool]:
    """Append ``samples`` in 20 ms chunks, flagged as speech between ``speech`` seconds; the fallback results."""
    n = rate // 50
    out = []
    for i in range(0, len(samples) - n + 1, n):
        t = i / rate
        out.append(bool(stream.append_audio(samples[i:i + n].astype("<i2").tobytes(), speech[0] <= t < speech[1])))
    return out


@pytest.fixture(scope="module")
def segments(conversation_dir: Path) -> list[dict[str, float]]:
    return json.loads((conversation_dir / "booking.transcript.json").read_text())["segments"]  # type: ignore[no-any-return]


def test_smart_turn_is_an_end_of_turn_analyzer(smart_turn_model: Path) -> None:
    """SmartTurnAnalyzer and SmartTurnBatcher satisfy the strategies' protocol; TurnAnalyzerStop accepts them."""
    analyzer = SmartTurnAnalyzer(smart_turn_model)
    assert isinstance(analyzer, EndOfTurnAnalyzer)
    assert isinstance(analyzer.open_stream(16000), EndOfTurnStream)
    assert analyzer.params == SmartTurnParams()
    batcher = SmartTurnBatcher(analyzer)
    try:
        assert isinstance(batcher, EndOfTurnAnalyzer)
        TurnAnalyzerStop(analyzer)
        TurnAnalyzerStop(batcher)
    finally:
        batcher.close()


def test_stream_judges_its_buffer_with_the_model(smart_turn_model: Path, booking: np.ndarray,
                                                 segments: list[dict[str, float]]) -> None:
    """The stream's verdict is the model's on its buffer's segment; complete clears, incomplete keeps."""
    analyzer = SmartTurnAnalyzer(smart_turn_model)
    first, second = segments[0], segments[1]
    stream = analyzer.open_stream(16000)
    buffer = EndOfTurnBuffer(vad_start_secs=0.2)
    stream.update_vad_start_secs(0.2)
    pause = booking[: int((first["end"] + 0.2) * 16000)]
    feed(stream, pause, (first["start"], first["end"]))
    feed(buffer, pause, (first["start"], first["end"]))
    complete, p = stream.analyze()
    q = analyzer.probability(buffer.segment())
    assert (complete, p) == (q > 0.5, q)
    assert not complete and p is not None and p < 0.5
    assert stream.buffer.speech_triggered  # incomplete keeps the turn's audio
    rest = booking[len(pause): int((second["end"] + 0.2) * 16000)]
    feed(stream, rest, (second["start"] - len(pause) / 16000, second["end"] - len(pause) / 16000))
    complete, p = stream.analyze()
    assert complete and p is not None and p > 0.5
    assert not stream.buffer.speech_triggered and stream.analyses == 2


def test_stream_resamples_other_rates(smart_turn_model: Path, booking: np.ndarray,
                                      segments: list[dict[str, float]]) -> None:
    """A 48 kHz stream judges the same turn like a 16 kHz one (same verdict, probability within 0.05)."""
    analyzer = SmartTurnAnalyzer(smart_turn_model)
    seg = segments[4]
    clip = booking[int((seg["start"] - 0.5) * 16000): int((seg["end"] + 0.2) * 16000)]
    speech = (0.5, 0.5 + seg["end"] - seg["start"])
    results = []
    for rate in (16000, 48000):
        samples = clip if rate == 16000 else np.round(
            resample(clip.astype(np.float32) / 32768, 16000, rate) * 32767).astype("<i2")
        stream = analyzer.open_stream(rate)
        assert stream.sample_rate == rate
        feed(stream, samples, speech, rate)
        results.append(stream.analyze())
    (c16, p16), (c48, p48) = results
    assert c16 and c48 and p16 is not None and p48 is not None
    assert abs(p16 - p48) < 0.05


def test_stream_silence_fallback_and_empty_verdict(smart_turn_model: Path) -> None:
    """3 s of silence after speech ends the turn by itself; nothing buffered is judged (False, None) model-free."""
    stream = SmartTurnAnalyzer(smart_turn_model).open_stream(16000)
    assert stream.analyze() == (False, None)
    loud = (np.sin(np.arange(CHUNK) / 3) * 8000).astype("<i2").tobytes()
    quiet = bytes(2 * CHUNK)
    assert stream.append_audio(loud, True) is False
    fired = [stream.append_audio(quiet, False) for _ in range(150)]
    assert fired.index(True) == 149 and fired.count(True) == 1
    assert stream.analyses == 0


def test_stream_refuses_bad_audio(smart_turn_model: Path) -> None:
    """Odd-length PCM is an InvalidAudioError (the strategy reports and skips the chunk)."""
    stream = SmartTurnAnalyzer(smart_turn_model).open_stream(16000)
    with pytest.raises(InvalidAudioError):
        stream.append_audio(b"\x00\x01\x02", True)


def test_analyzer_params_are_validated(smart_turn_model: Path) -> None:
    """params must be SmartTurnParams."""
    with pytest.raises(ConfigurationError):
        SmartTurnAnalyzer(smart_turn_model, params={"stop_secs": 1})  # type: ignore[arg-type]


# -- the batcher ---------------------------------------------------------------------------------


def test_batcher_gives_the_unbatched_probabilities(smart_turn_model: Path,
                                                   turn_audio: dict[str, np.ndarray]) -> None:
    """Windows of many sessions judged together equal the per-window results, in fewer model calls."""
    analyzer = SmartTurnAnalyzer(smart_turn_model)
    windows = list(turn_audio.values())[:6]
    single = [analyzer.probability(w) for w in windows]
    batcher = SmartTurnBatcher(analyzer, window=0.2)
    try:
        assert batcher.probabilities(windows) == single
        assert batcher.calls == 1 and batcher.judged == 6
    finally:
        batcher.close()


def test_batched_streams_through_the_offload(smart_turn_model: Path, turn_audio: dict[str, np.ndarray]) -> None:
    """Streams opened on the batcher, analyzed concurrently on its waiter threads: the same verdicts as alone."""
    analyzer = SmartTurnAnalyzer(smart_turn_model)
    batcher = SmartTurnBatcher(analyzer, window=0.2)
    try:
        clips = list(turn_audio.values())[:4]
        alone, together = [], []
        for clip in clips:
            s = analyzer.open_stream(16000)
            feed(s, clip, (0.3, len(clip) / 16000 - 0.2))
            alone.append(s.analyze())
        streams = []
        for clip in clips:
            s = batcher.open_stream(16000)
            feed(s, clip, (0.3, len(clip) / 16000 - 0.2))
            streams.append(s)
        futures = [batcher(s.analyze) for s in streams]
        together = [f.result(timeout=30) for f in futures]
        assert together == alone
        assert batcher.calls < len(clips)
    finally:
        batcher.close()


def test_batcher_isolates_a_bad_window(smart_turn_model: Path, turn_audio: dict[str, np.ndarray]) -> None:
    """One unusable window fails only its own future; the batch's others are judged."""
    analyzer = SmartTurnAnalyzer(smart_turn_model)
    good = next(iter(turn_audio.values()))
    batcher = SmartTurnBatcher(analyzer, window=0.2)
    try:
        futures = [batcher.submit(good), batcher.submit(np.zeros(0, dtype=np.float32)), batcher.submit(good)]
        assert futures[0].result(timeout=30) == futures[2].result(timeout=30) == analyzer.probability(good)
        with pytest.raises(InvalidAudioError):
            futures[1].result(timeout=30)
    finally:
        batcher.close()


def recording(analyzer: SmartTurnAnalyzer, threads: list[str]) -> None:
    """Make the analyzer note the thread each batched model call runs on."""
    real = analyzer.probabilities

    def probabilities(windows: Any) -> list[float]:
        threads.append(threading.current_thread().name)
        return real(windows)

    analyzer.probabilities = probabilities  # type: ignore[method-assign]


def test_blocking_callers_lead_their_own_batch(smart_turn_model: Path, turn_audio: dict[str, np.ndarray]) -> None:
    """Four threads asking at once: one of them runs one model call for all four; no model thread of its own."""
    analyzer = SmartTurnAnalyzer(smart_turn_model)
    clips = list(turn_audio.values())[:4]
    alone = [analyzer.probability(c) for c in clips]
    ran_on: list[str] = []
    recording(analyzer, ran_on)
    batcher = SmartTurnBatcher(analyzer, max_batch=4, window=1.0)
    results: dict[int, float] = {}
    before = {t.name for t in threading.enumerate()}

    def ask(i: int) -> None:
        results[i] = batcher.probability(clips[i])

    callers = [threading.Thread(target=ask, args=(i,), name=f"caller-{i}") for i in range(4)]
    for t in callers:
        t.start()
    for t in callers:
        t.join(timeout=60)
    try:
        assert [results[i] for i in range(4)] == alone
        assert batcher.calls == 1 and batcher.judged == 4
        assert len(ran_on) == 1 and ran_on[0].startswith("caller-")
        assert {t.name for t in threading.enumerate()} - before == set()
    finally:
        batcher.close()


def test_submitted_windows_are_judged_on_the_shared_pool(
    smart_turn_model: Path, turn_audio: dict[str, np.ndarray]
) -> None:
    """Nobody waits to lead: a drain job on rxvoice's shared worker pool judges what was submitted."""
    analyzer = SmartTurnAnalyzer(smart_turn_model)
    clip = next(iter(turn_audio.values()))
    expected = analyzer.probability(clip)
    ran_on: list[str] = []
    recording(analyzer, ran_on)
    batcher = SmartTurnBatcher(analyzer)
    try:
        futures = [batcher.submit(clip) for _ in range(3)]
        assert [f.result(timeout=60) for f in futures] == [expected] * 3
        assert ran_on and all(name.startswith("rxvoice-worker") for name in ran_on)
        assert batcher.judged == 3 and batcher.calls <= 3
    finally:
        batcher.close()


def meeting(analyzer: SmartTurnAnalyzer, parties: int, calls: list[int]) -> None:
    """Make each batched model call wait (bounded) until ``parties`` calls run at once: only concurrent
    batches get through."""
    real = analyzer.probabilities
    barrier = threading.Barrier(parties, timeout=20)

    def probabilities(windows: Any) -> list[float]:
        calls.append(len(windows))
        barrier.wait()
        return real(windows)

    analyzer.probabilities = probabilities  # type: ignore[method-assign]


@pytest.mark.parametrize("mode", ["submit", "blocking"])
def test_two_batches_run_at_once_with_concurrency_two(smart_turn_model: Path, turn_audio: dict[str, np.ndarray],
                                                      mode: str) -> None:
    """``concurrency=2``: two windows asked together are judged by two model calls running at the same time (one
    alone would wait at the barrier until it broke), with the unbatched probabilities."""
    analyzer = SmartTurnAnalyzer(smart_turn_model)
    clips = list(turn_audio.values())[:2]
    alone = [analyzer.probability(c) for c in clips]
    calls: list[int] = []
    meeting(analyzer, 2, calls)
    batcher = SmartTurnBatcher(analyzer, concurrency=2)
    try:
        if mode == "submit":
            futures = [batcher.submit(c) for c in clips]
            assert [f.result(timeout=60) for f in futures] == alone
        else:
            results: dict[int, float] = {}

            def ask(i: int) -> None:
                results[i] = batcher.probability(clips[i])

            callers = [threading.Thread(target=ask, args=(i,)) for i in range(2)]
            for t in callers:
                t.start()
            for t in callers:
                t.join(timeout=60)
            assert [results.get(i) for i in range(2)] == alone
        assert calls == [1, 1] and batcher.calls == 2
    finally:
        batcher.close()


def test_one_batch_at_a_time_by_default(smart_turn_model: Path, turn_audio: dict[str, np.ndarray]) -> None:
    """The default (``concurrency=1``) never runs two model calls at once: the barrier of two breaks."""
    analyzer = SmartTurnAnalyzer(smart_turn_model)
    clip = next(iter(turn_audio.values()))
    calls: list[int] = []
    real = analyzer.probabilities
    barrier = threading.Barrier(2, timeout=1)

    def probabilities(windows: Any) -> list[float]:
        calls.append(len(windows))
        with contextlib.suppress(threading.BrokenBarrierError):  # alone: as it should be
            barrier.wait()
        return real(windows)

    analyzer.probabilities = probabilities  # type: ignore[method-assign]
    batcher = SmartTurnBatcher(analyzer)
    try:
        first = batcher.submit(clip)
        second = batcher.submit(clip)
        assert first.result(timeout=60) == second.result(timeout=60)
        assert barrier.broken
    finally:
        batcher.close()


def test_closed_batcher_refuses_work(smart_turn_model: Path) -> None:
    """After close(), submissions and offloaded jobs raise ModelError."""
    batcher = SmartTurnBatcher(SmartTurnAnalyzer(smart_turn_model))
    batcher.close()
    with pytest.raises(ModelError):
        batcher.submit(np.zeros(160, dtype=np.float32))
    with pytest.raises(ModelError):
        batcher(lambda: None)


@pytest.mark.parametrize("kwargs", [{"max_batch": 0}, {"waiters": 0}, {"window": -1}, {"window": True},
                                    {"concurrency": 0}, {"concurrency": 1.5}])
def test_batcher_configuration_is_validated(smart_turn_model: Path, kwargs: dict[str, object]) -> None:
    """Bad batch sizes, waiter counts or windows raise ConfigurationError."""
    with pytest.raises(ConfigurationError):
        SmartTurnBatcher(SmartTurnAnalyzer(smart_turn_model), **kwargs)  # type: ignore[arg-type]
