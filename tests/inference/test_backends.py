"""The inference backends: verdicts equal to in-process ones, the bounded wait and its fallback, pooled decoders.

Windows and utterances come from the shipped sample call (``rxvoice/data/demo.wav``). The process-pool tests
start one worker process; the Ray tests (``test_ray.py``) a local Ray instance.
"""

from __future__ import annotations

import concurrent.futures
import threading
import wave
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pytest

from rxvoice.audio.pcm import Float32Array
from rxvoice.audio.turn import SmartTurnAnalyzer
from rxvoice.errors import ConfigurationError, ModelError
from rxvoice.inference import (
    BackendSTT,
    BackendTurnAnalyzer,
    DecoderPool,
    InferenceError,
    InferenceFallback,
    InProcessBackend,
    PooledPocketSphinxSTT,
    ProcessPoolBackend,
)
from rxvoice.services.stt import PocketSphinxSTT


def demo() -> tuple[bytes, list[dict[str, object]]]:
    import json

    folder = resources.files("rxvoice.data")
    with resources.as_file(folder / "demo.wav") as path, wave.open(str(path)) as w:
        pcm = w.readframes(w.getnframes())
    return pcm, json.loads((folder / "demo.transcript.json").read_text())["segments"]


def windows() -> list[Float32Array]:
    """The audio a stream would judge at each of the call's four pauses (0.3 s before its turn to 0.2 s after)."""
    pcm, segments = demo()
    samples = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0
    out, start = [], 0.0
    for seg in segments:
        begin = start if start else float(seg["start"]) - 0.3  # type: ignore[arg-type]
        out.append(samples[int(begin * 16000):int((float(seg["end"]) + 0.2) * 16000)])  # type: ignore[arg-type]
        start = 0.0 if seg["turn_end"] else begin
    return out


def utterance(i: int) -> bytes:
    pcm, segments = demo()
    seg = segments[i]
    return pcm[int((float(seg["start"]) - 0.2) * 16000) * 2:int((float(seg["end"]) + 0.2) * 16000) * 2]  # type: ignore[arg-type]


T = TypeVar("T")


class NeverAnswers(concurrent.futures.Future[T]):
    """A future that never completes: a wait on it runs out at once, as a real one would after
    ``timeout`` seconds, so the fallback path is tested without waiting in real time."""

    def __init__(self) -> None:
        super().__init__()
        self.waited: list[float | None] = []

    def result(self, timeout: float | None = None) -> T:
        self.waited.append(timeout)
        raise concurrent.futures.TimeoutError()


class Hanging:
    """A backend that never answers (and one that fails, with ``fail=True``)."""

    name = "hanging"

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.asked = 0
        self.futures: list[NeverAnswers[Any]] = []

    def turn_probabilities(self, windows: Sequence[Float32Array]) -> concurrent.futures.Future[list[float]]:
        self.asked += 1
        return self._future()

    def transcribe(self, pcm: bytes, sample_rate: int) -> concurrent.futures.Future[str]:
        return self._future()

    def _future(self) -> concurrent.futures.Future[Any]:
        if self.fail:
            failed: concurrent.futures.Future[Any] = concurrent.futures.Future()
            failed.set_exception(RuntimeError("the model server is down"))
            return failed
        future: NeverAnswers[Any] = NeverAnswers()
        self.futures.append(future)
        return future

    def close(self) -> None:
        return None


def test_in_process_verdicts_are_the_analyzers(smart_turn_model: Path) -> None:
    analyzer = SmartTurnAnalyzer(smart_turn_model)
    backend = InProcessBackend(smart_turn_model)
    try:
        ws = windows()
        expected = [analyzer.probability(w) for w in ws]
        assert backend.turn_probabilities(ws).result(timeout=60) == pytest.approx(expected, abs=1e-6)
        assert [p > 0.5 for p in expected] == [False, True, True, True]  # the sample's labels, as the model sees them
        with pytest.raises(InferenceError):
            backend.transcribe(b"\0\0" * 160, 16000).result(timeout=5)
    finally:
        backend.close()


def test_the_process_pool_gives_the_same_verdicts_and_words(smart_turn_model: Path) -> None:
    analyzer = SmartTurnAnalyzer(smart_turn_model)
    backend = ProcessPoolBackend(smart_turn_model, processes=1, stt="pocketsphinx")
    local = DecoderPool()
    try:
        ws = windows()
        got = backend.turn_probabilities(ws).result(timeout=60)
        assert got == pytest.approx([analyzer.probability(w) for w in ws], abs=1e-6)
        words = backend.transcribe(utterance(2), 16000).result(timeout=60)
        assert words and words == local.transcribe(utterance(2), 16000).result(timeout=60)
        assert backend.calls >= 1 and backend.judged == len(ws)
        # streamed: a session's recognizer in the PocketSphinx process, fed as the caller speaks
        remote = BackendSTT(backend).new_recognizer()
        speech = utterance(2)
        for k in range(0, len(speech), 8000):
            remote.accept(speech[k:k + 8000])
        assert remote.finish() == words
        remote.close()
    finally:
        backend.close()


def test_a_backend_that_hangs_or_fails_falls_back_within_the_bound() -> None:
    for backend in (Hanging(), Hanging(fail=True)):
        seen: list[InferenceFallback] = []
        analyzer = BackendTurnAnalyzer(backend, timeout=0.2, on_fallback=seen.append)
        stream = analyzer.open_stream(16000)
        speech = (np.sin(np.arange(16000) / 5) * 8000).astype("<i2").tobytes()
        stream.append_audio(speech, True)
        stream.append_audio(b"\0\0" * 3200, False)
        done = threading.Event()
        result: list[object] = []

        def judge(stream: object = stream, result: list[object] = result, done: threading.Event = done) -> None:
            try:
                result.append(stream.analyze())  # type: ignore[attr-defined]
            except ModelError as exc:
                result.append(exc)
            done.set()

        threading.Thread(target=judge).start()
        assert done.wait(5), "the verdict waited past its bound"
        assert isinstance(result[0], InferenceError)
        assert len(seen) == 1 and seen[0].kind == "turn" and seen[0].backend == "hanging"
        assert ("no answer within 0.2 s" in seen[0].reason) is not backend.fail
        assert analyzer.fallbacks == 1
        assert [f.waited for f in backend.futures] == ([] if backend.fail else [[0.2]])  # the bound was asked for


def test_a_verdict_the_session_no_longer_needs_is_dropped_at_once_without_a_fallback() -> None:
    """The caller spoke again while the backend had not answered: the session cancels the verdict (through its
    AnalyzerSession), the wait ends at once (not after the 30 s bound), the backend's future is cancelled, and no
    fallback is reported; the next pause is judged as usual."""
    from rxvoice.turns import AnalyzerSession

    class Later(Hanging):
        """Its futures really wait (until cancelled): the point is that cancelling ends the wait."""

        def __init__(self) -> None:
            super().__init__()
            self.pending: list[concurrent.futures.Future[list[float]]] = []

        def turn_probabilities(self, windows: Sequence[Float32Array]) -> concurrent.futures.Future[list[float]]:
            self.asked += 1
            future: concurrent.futures.Future[list[float]] = concurrent.futures.Future()
            self.pending.append(future)
            return future

    backend = Later()
    seen: list[InferenceFallback] = []
    drops: list[int] = []
    analyzer = BackendTurnAnalyzer(backend, timeout=30.0, on_fallback=seen.append, on_dropped=lambda: drops.append(1))
    session = AnalyzerSession(analyzer, 16000)
    speech = (np.sin(np.arange(16000) / 5) * 8000).astype("<i2").tobytes()
    session.append(speech, 16000, True)
    session.append(b"\0\0" * 3200, 16000, False)
    for when in ("queued", "before"):
        session.begin()
        if when == "before":  # cancelled before the worker even started: the backend is not asked
            session.append(speech[:640], 16000, True)
        result: list[object] = []
        worker = threading.Thread(target=lambda result=result: result.append(session.analyze()))  # type: ignore[misc]
        worker.start()
        if when == "queued":
            for _ in range(500):
                if backend.pending:
                    break
                threading.Event().wait(0.01)
            assert backend.pending, "the backend was not asked"
            session.append(speech[:640], 16000, True)  # speech again, while the verdict is on its way
        worker.join(5)
        assert not worker.is_alive(), "the wait for a verdict nobody needs went on"
        assert result == [(False, None)]
        assert session.end() is False
    assert backend.asked == 1 and backend.pending[0].cancelled()
    assert seen == [] and analyzer.fallbacks == 0 and analyzer.dropped == 1 and drops == [1]
    assert analyzer.with_fallback(seen.append).on_dropped is analyzer.on_dropped
    # the next pause: asked and answered as usual
    session.begin()
    result = []
    worker = threading.Thread(target=lambda: result.append(session.analyze()))
    worker.start()
    for _ in range(500):
        if len(backend.pending) == 2:
            break
        threading.Event().wait(0.01)
    backend.pending[1].set_result([0.9])
    worker.join(5)
    assert result == [(True, 0.9)] and analyzer.dropped == 1


def test_the_end_of_the_turn_cancels_a_verdict_in_flight_and_a_stream_without_cancel_is_judged() -> None:
    from rxvoice.turns import AnalyzerSession

    class Judged:
        def __init__(self) -> None:
            self.analyses = 0
            self.cleared = 0

        def append_audio(self, pcm: bytes, is_speech: bool) -> bool:
            return False

        def analyze(self) -> tuple[bool, float | None]:
            self.analyses += 1
            return True, 0.8

        def clear(self) -> None:
            self.cleared += 1

        def update_vad_start_secs(self, secs: float) -> None:
            return None

    class Cancellable(Judged):
        def __init__(self) -> None:
            super().__init__()
            self.cancels = 0

        def cancel(self) -> None:
            self.cancels += 1

    class Opens:
        def __init__(self, stream: Judged) -> None:
            self.stream = stream

        def open_stream(self, sample_rate: int) -> Judged:
            return self.stream

    plain, cancellable = Judged(), Cancellable()
    for stream in (plain, cancellable):
        session = AnalyzerSession(Opens(stream), 16000)  # type: ignore[arg-type]
        session.begin()
        session.clear()  # the turn ended on the words: the verdict is not needed
        session.append(b"\0\0" * 160, 16000, True)
        answer = session.analyze()
        session.end()
        assert stream.cleared == 1
        if stream is cancellable:
            assert answer == (False, None) and cancellable.cancels == 1 and cancellable.analyses == 0  # told once
        else:
            assert answer == (True, 0.8) and plain.analyses == 1  # no cancel: judged as before
    session.begin()  # a new verdict: no longer cancelled
    assert session.analyze() == (True, 0.8) and cancellable.analyses == 1


def test_cancelling_the_in_process_backend_s_future_keeps_a_queued_window_from_being_judged(
    smart_turn_model: Path,
) -> None:
    """A verdict given up on (dropped, or past its bound) costs no model time if it was still queued."""
    from rxvoice.audio.turn import SmartTurnBatcher

    analyzer = SmartTurnAnalyzer(smart_turn_model)
    release = threading.Event()
    real = analyzer.probabilities

    def probabilities(ws: object) -> list[float]:
        release.wait(20)  # the first batch holds the model while the second window waits in the queue
        return real(ws)  # type: ignore[arg-type]

    analyzer.probabilities = probabilities  # type: ignore[method-assign]
    backend = InProcessBackend(batcher=SmartTurnBatcher(analyzer))
    try:
        ws = windows()
        first = backend.turn_probabilities(ws[:1])
        for _ in range(500):
            if backend.batcher.calls:
                break
            threading.Event().wait(0.01)
        second = backend.turn_probabilities(ws[1:2])
        assert second.cancel()
        release.set()
        first.result(timeout=60)
        assert backend.batcher.judged == 1  # the second window was never judged
    finally:
        release.set()
        backend.close()


def test_the_stt_stage_reports_a_backend_that_gives_no_words() -> None:
    seen: list[InferenceFallback] = []
    backend = Hanging()
    stt = BackendSTT(backend, timeout=0.2, on_fallback=seen.append)
    with pytest.raises(InferenceError, match=r"no answer within 0\.2 s"):
        stt.words(b"\0\0" * 1600)
    assert [f.kind for f in seen] == ["stt"]
    assert [f.waited for f in backend.futures] == [[0.2]]


def test_bad_backend_settings_are_refused() -> None:
    with pytest.raises(ConfigurationError):
        BackendTurnAnalyzer(object())  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        BackendTurnAnalyzer(Hanging(), timeout=float("inf"))
    with pytest.raises(ConfigurationError):
        InProcessBackend(stt="whisperish")
    with pytest.raises(ConfigurationError):
        ProcessPoolBackend(processes=0)


def test_pooled_decoders_are_lent_per_utterance_and_hear_as_well_as_a_session_decoder() -> None:
    from rxvoice.services.stt import word_error_rate

    _, segments = demo()
    pool = DecoderPool()
    stt = PooledPocketSphinxSTT(pool)
    recognizers = [stt.new_recognizer() for _ in range(20)]  # twenty connections, nobody speaking
    assert pool.created == 0 and pool.lent == 0
    plain = PocketSphinxSTT().new_recognizer()  # a decoder of its own, as PocketSphinxSTT makes per session
    caller, other = recognizers[0], recognizers[1]
    pooled_words, plain_words = [], []
    for i in range(len(segments)):  # one caller's utterances, another caller speaking in between
        speech = utterance(i)
        for k in range(0, len(speech), 8000):
            caller.accept(speech[k:k + 8000])
            plain.accept(speech[k:k + 8000])
        assert pool.lent == 1
        pooled_words.append(caller.finish())
        plain_words.append(plain.finish())
        other.accept(utterance(0))  # the same decoder, lent to someone else meanwhile
        other.finish()
        assert pool.lent == 0
    assert pool.created == 1
    assert pooled_words[0] == plain_words[0]  # a caller's first utterance: exactly a fresh decoder's
    reference = " ".join(str(s["text"]) for s in segments)
    pooled, own = word_error_rate(reference, " ".join(pooled_words)), word_error_rate(reference, " ".join(plain_words))
    assert pooled <= own + 0.1, (pooled, own, pooled_words, plain_words)  # the caller's adaptation is carried over
    for r in recognizers:
        r.close()
    plain.close()
