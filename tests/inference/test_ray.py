"""The Ray Serve backend on a local Ray instance (loopback, two CPUs, started once for this file and stopped after).

Verdicts and words through Serve must equal the in-process ones; a deadline too short falls back; an address
that does not answer is a clear error at start (the library's and the command line's).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rxvoice.audio.turn import SmartTurnAnalyzer
from rxvoice.errors import ConfigurationError
from rxvoice.inference import (
    BackendTurnAnalyzer,
    DecoderPool,
    InferenceError,
    InferenceFallback,
    RayServeBackend,
    check_ray_address,
)
from tests.cli.conftest import run_cli
from tests.inference.test_backends import utterance, windows


@pytest.fixture(scope="module")
def ray_backend(smart_turn_model: Path) -> Iterator[RayServeBackend]:
    import ray
    from ray import serve

    ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False,
             configure_logging=False)
    try:
        backend = RayServeBackend(model=str(smart_turn_model), stt="pocketsphinx", max_batch=8)
        yield backend
        backend.close()
    finally:
        serve.shutdown()
        ray.shutdown()


def test_verdicts_and_words_through_ray_serve_equal_the_in_process_ones(ray_backend: RayServeBackend,
                                                                      smart_turn_model: Path) -> None:
    analyzer = SmartTurnAnalyzer(smart_turn_model)
    ws = windows()
    got = ray_backend.turn_probabilities(ws).result(timeout=60)  # four windows at once: one Serve batch
    assert got == pytest.approx([analyzer.probability(w) for w in ws], abs=1e-6)
    words = ray_backend.transcribe(utterance(2), 16000).result(timeout=60)
    assert words == DecoderPool().transcribe(utterance(2), 16000).result(timeout=60)


def test_a_verdict_from_ray_serve_is_bounded_and_falls_back(ray_backend: RayServeBackend) -> None:
    seen: list[InferenceFallback] = []
    analyzer = BackendTurnAnalyzer(ray_backend, timeout=0.001, on_fallback=seen.append)
    stream = analyzer.open_stream(16000)
    stream.append_audio((windows()[1] * 32767).astype("<i2").tobytes(), True)
    t0 = time.monotonic()  # a real clock is the point: the bound on a real wait
    with pytest.raises(InferenceError):
        stream.analyze()
    assert time.monotonic() - t0 < 1.0
    assert [(f.kind, f.backend) for f in seen] == [("turn", "ray")]
    timely = BackendTurnAnalyzer(ray_backend, timeout=30).open_stream(16000)
    timely.append_audio((windows()[1] * 32767).astype("<i2").tobytes(), True)
    complete, probability = timely.analyze()
    assert complete and probability is not None and probability > 0.5


def test_a_ray_address_that_does_not_answer_is_a_clear_error_at_start() -> None:
    t0 = time.monotonic()
    with pytest.raises(ConfigurationError, match=r"nothing answers at the Ray address 127\.0\.0\.1:1"):
        check_ray_address("127.0.0.1:1", timeout=2)
    with pytest.raises(ConfigurationError, match="host:port"):
        check_ray_address("not an address")
    r = run_cli("serve", "--stop", "speech-timeout", "--stt", "none", "--tts", "paced", "--port", "0",
                "--inference", "ray", "--ray-address", "127.0.0.1:1")
    assert r.code == 1 and "nothing answers at the Ray address 127.0.0.1:1" in r.err and "ray start" in r.err
    assert time.monotonic() - t0 < 10
