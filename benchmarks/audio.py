"""rxvoice audio vs Pipecat 1.14 on the same audio, in one run.

Run it with the benchmark venv, where Pipecat is installed next to rxvoice:

    /work/benchvenv/bin/python benchmarks/audio.py [--quick]

It measures (medians of several interleaved rounds, ``time.perf_counter``):

a) Silero VAD per 512-sample chunk (16 kHz): rxvoice's analyzer ``confidence``
   vs a bare onnxruntime call of the same model with the same thread settings
   (the floor) vs Pipecat's ``voice_confidence(bytes)``; and the whole
   ``analyze_audio`` path (volume gate + state machine + model) of both.
b) Smart Turn v3.2 per 8 s window: Whisper features (rxvoice vs the function
   Pipecat's ``LocalSmartTurnAnalyzerV3`` calls, which no public API exposes
   on its own), and the whole prediction (features + ONNX), both with one
   onnxruntime thread.
c) Sessions per core: real-time 16 kHz streams one core keeps up with
   (32 ms of audio / cost per chunk), rxvoice unbatched and batched (64
   sessions per model call) vs Pipecat's ``analyze_audio``.

Threads: ``OPENBLAS_NUM_THREADS``, ``OMP_NUM_THREADS`` and ``MKL_NUM_THREADS``
are set to 1 before numpy loads (unless already set), and every onnxruntime
session runs 1 intra-op and 1 inter-op thread, so both libraries get one core.

The last line is machine-readable; ratios are rxvoice time over the other's
(below 1 is faster), ``sessions_vs_pipecat`` is rxvoice's batched session
count over Pipecat's.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import asyncio  # noqa: E402
import csv  # noqa: E402
import logging  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import wave  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
import onnxruntime as ort  # noqa: E402

from rxvoice.audio.turn import SmartTurnAnalyzer, WhisperFeatures, fit_window  # noqa: E402
from rxvoice.audio.vad import (  # noqa: E402
    SileroModel,
    SileroVADAnalyzer,
    analyze_batch,
    default_silero_model_path,
)

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
MODEL = Path(os.environ.get("RXVOICE_SMART_TURN_MODEL", SHARED / "models/smart-turn-v3.2-cpu.onnx"))
CHUNK = 512
CHUNK_SECS = CHUNK / 16000
BATCH = 64


def read_wav(path: Path) -> np.ndarray:
    with wave.open(str(path)) as w:
        return np.frombuffer(w.readframes(w.getnframes()), "<i2").copy()


def median_per_item(run: Callable[[], int], rounds: int) -> float:
    """Median over rounds of (seconds per item) for a callable returning its item count."""
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        items = run()
        samples.append((time.perf_counter() - start) / items)
    return statistics.median(samples)


def interleaved(methods: dict[str, Callable[[], int]], rounds: int) -> dict[str, float]:
    """Run the methods round-robin (so drift hits all alike); median seconds per item."""
    times: dict[str, list[float]] = {name: [] for name in methods}
    for _ in range(rounds):
        for name, run in methods.items():
            start = time.perf_counter()
            items = run()
            times[name].append((time.perf_counter() - start) / items)
    return {name: statistics.median(values) for name, values in times.items()}


def load_pipecat() -> dict[str, Any]:
    logging.getLogger().setLevel(logging.WARNING)
    try:
        from loguru import logger

        logger.remove()
    except ImportError:
        pass
    try:
        from pipecat.audio.turn.smart_turn._whisper_features import (
            compute_whisper_log_mel_features,
        )
        from pipecat.audio.turn.smart_turn.local_smart_turn_v3 import LocalSmartTurnAnalyzerV3
        from pipecat.audio.vad.silero import SileroVADAnalyzer as PipecatSilero
    except ImportError as exc:
        sys.exit(f"pipecat-ai is needed for the comparison (run with /work/benchvenv): {exc}")
    return {
        "features": compute_whisper_log_mel_features,
        "smart_turn": LocalSmartTurnAnalyzerV3,
        "silero": PipecatSilero,
    }


def bare_silero() -> tuple[Any, Callable[[np.ndarray], float]]:
    """The floor: one session.run per chunk, state and context carried, nothing else."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.add_session_config_entry("session.inter_op.allow_spinning", "0")
    session = ort.InferenceSession(str(default_silero_model_path()), sess_options=options,
                                   providers=["CPUExecutionProvider"])
    buffer = np.zeros((1, 64 + CHUNK), dtype=np.float32)
    state = [np.zeros((2, 1, 128), dtype=np.float32)]
    rate = np.array(16000, dtype=np.int64)

    def run(chunk: np.ndarray) -> float:
        buffer[0, 64:] = chunk
        out, state[0] = session.run(None, {"input": buffer, "state": state[0], "sr": rate})
        buffer[0, :64] = buffer[0, -64:]
        return float(out[0, 0])

    return session, run


def section_silero(audio: np.ndarray, pc: dict[str, Any], rounds: int, n: int) -> dict[str, float]:
    chunks_i16 = [audio[i * CHUNK : (i + 1) * CHUNK] for i in range(audio.shape[0] // CHUNK)][:n]
    chunks_bytes = [c.tobytes() for c in chunks_i16]
    chunks_f32 = [c.astype(np.float32) / 32768 for c in chunks_i16]
    _, floor = bare_silero()
    rx = SileroVADAnalyzer(16000)
    rx_stream = SileroModel.shared().stream()
    pipecat = pc["silero"](sample_rate=16000)
    pipecat.set_sample_rate(16000)

    def floor_run() -> int:
        for c in chunks_f32:
            floor(c)
        return len(chunks_f32)

    def rx_conf() -> int:
        for b in chunks_bytes:
            rx.confidence(b)
        return len(chunks_bytes)

    def rx_stream_f32() -> int:
        for c in chunks_f32:
            rx_stream.confidence(c)
        return len(chunks_f32)

    def pc_conf() -> int:
        for b in chunks_bytes:
            pipecat.voice_confidence(b)
        return len(chunks_bytes)

    rx_full = SileroVADAnalyzer(16000)

    def rx_analyze() -> int:
        for b in chunks_bytes:
            rx_full.analyze_audio(b)
        return len(chunks_bytes)

    pc_full = pc["silero"](sample_rate=16000)
    pc_full.set_sample_rate(16000)
    loop = asyncio.new_event_loop()

    async def pc_feed() -> None:
        for b in chunks_bytes:
            await pc_full.analyze_audio(b)

    def pc_analyze() -> int:
        loop.run_until_complete(pc_feed())
        return len(chunks_bytes)

    for warm in (floor_run, rx_conf, rx_stream_f32, pc_conf, rx_analyze, pc_analyze):
        warm()
    result = interleaved(
        {"floor": floor_run, "rx_confidence": rx_conf, "rx_stream_f32": rx_stream_f32,
         "pc_voice_confidence": pc_conf, "rx_analyze": rx_analyze, "pc_analyze": pc_analyze},
        rounds,
    )
    loop.close()
    return result


def section_batched(audio: np.ndarray, rounds: int, steps: int) -> float:
    """Seconds per chunk per session for analyze_batch over BATCH sessions."""
    analyzers = [SileroVADAnalyzer(16000) for _ in range(BATCH)]
    offsets = [(i * 4813) % (audio.shape[0] - CHUNK * steps) for i in range(BATCH)]
    rounds_of_chunks = [
        [audio[o + k * CHUNK : o + (k + 1) * CHUNK].tobytes() for o in offsets]
        for k in range(steps)
    ]

    def run() -> int:
        for chunks in rounds_of_chunks:
            analyze_batch(analyzers, chunks)
        return steps * BATCH

    run()
    return median_per_item(run, rounds)


def section_smart_turn(
    window: np.ndarray, pc: dict[str, Any], rounds: int
) -> dict[str, float]:
    x = fit_window(window.astype(np.float32) / 32768)
    extractor = WhisperFeatures()
    out = np.empty((80, 800), dtype=np.float32)
    pc_features = pc["features"]
    rx_exact = SmartTurnAnalyzer(MODEL, threads=1)
    rx_fast = SmartTurnAnalyzer(MODEL, threads=1, exact_quantization=False)
    pipecat = pc["smart_turn"](smart_turn_model_path=str(MODEL), cpu_count=1)
    methods: dict[str, Callable[[], int]] = {
        "rx_features": lambda: (extractor(x, out=out), 1)[1],
        "pc_features": lambda: (pc_features(x), 1)[1],
        "rx_total": lambda: (rx_exact.probability(x), 1)[1],
        "rx_total_fast": lambda: (rx_fast.probability(x), 1)[1],
        "pc_total": lambda: (pipecat._predict_endpoint(x), 1)[1],
    }
    for run in methods.values():
        run()
    return interleaved(methods, rounds)


def parity(audio: np.ndarray, pc: dict[str, Any]) -> list[str]:
    """Do both libraries decide the same? (VAD states; Smart Turn vs the reference labels)."""
    lines = []
    rx = SileroVADAnalyzer(16000)
    pipecat = pc["silero"](sample_rate=16000)
    pipecat.set_sample_rate(16000)
    loop = asyncio.new_event_loop()
    mismatches = 0
    total = 0
    for i in range(0, audio.shape[0] - 320, 320):
        b = audio[i : i + 320].tobytes()
        mismatches += rx.analyze_audio(b).name != loop.run_until_complete(
            pipecat.analyze_audio(b)).name
        total += 1
    loop.close()
    lines.append(f"VAD states on booking.wav (20 ms chunks): {mismatches} of {total} differ")
    labels = SHARED / "audio/turns/labels.csv"
    if labels.is_file():
        rows = list(csv.DictReader(open(labels, newline="")))
        st = SmartTurnAnalyzer(MODEL)
        pc_st = pc["smart_turn"](smart_turn_model_path=str(MODEL), cpu_count=1)
        rx_err, pc_err = [], []
        for row in rows:
            x = read_wav(SHARED / "audio/turns" / row["file"]).astype(np.float32) / 32768
            ref = float(row["smart_turn_prob"])
            rx_err.append(abs(st.probability(x) - ref))
            pc_err.append(abs(float(pc_st._predict_endpoint(x)["probability"]) - ref))
        lines.append(
            f"Smart Turn vs reference labels ({len(rows)} files): rxvoice max |Δp| "
            f"{max(rx_err):.4f}, Pipecat on this CPU max |Δp| {max(pc_err):.4f} "
            f"({sum(e > 1e-3 for e in pc_err)} files off by > 1e-3)"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (a smoke run)")
    args = parser.parse_args()
    rounds = 3 if args.quick else 9
    pc = load_pipecat()
    booking = read_wav(SHARED / "audio/conversation/booking.wav")
    print(f"onnxruntime {ort.__version__}, numpy {np.__version__}, "
          f"OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}, "
          "onnxruntime 1 intra-op + 1 inter-op thread everywhere")

    vad = section_silero(booking, pc, rounds, n=200 if args.quick else 571)
    us = {k: v * 1e6 for k, v in vad.items()}
    print("\n(a) Silero VAD, per 512-sample chunk (µs, median)")
    print(f"  bare onnxruntime session.run (floor)      {us['floor']:8.1f}")
    print(f"  rxvoice SileroVADAnalyzer.confidence(bytes) {us['rx_confidence']:6.1f}")
    print(f"  rxvoice SileroStream.confidence(float32)  {us['rx_stream_f32']:8.1f}")
    print(f"  Pipecat voice_confidence(bytes)           {us['pc_voice_confidence']:8.1f}")
    print(f"  rxvoice analyze_audio (gate+states+model) {us['rx_analyze']:8.1f}")
    print(f"  Pipecat analyze_audio (+ executor hop)    {us['pc_analyze']:8.1f}")

    window = booking[: 8 * 16000]
    st = section_smart_turn(window, pc, max(3, rounds - 2))
    ms = {k: v * 1e3 for k, v in st.items()}
    print("\n(b) Smart Turn v3.2, per 8 s window (ms, median, 1 onnxruntime thread)")
    print(f"  features: rxvoice {ms['rx_features']:.2f}   Pipecat {ms['pc_features']:.2f}")
    print(f"  total:    rxvoice {ms['rx_total']:.1f} (exact int8)   "
          f"{ms['rx_total_fast']:.1f} (exact_quantization=False)   Pipecat {ms['pc_total']:.1f}")

    batched = section_batched(booking, rounds, steps=20 if args.quick else 60)
    sessions_unbatched = CHUNK_SECS / vad["rx_analyze"]
    sessions_batched = CHUNK_SECS / batched
    sessions_pipecat = CHUNK_SECS / vad["pc_analyze"]
    print("\n(c) Real-time 16 kHz sessions one core keeps up with (32 ms audio / cost per chunk)")
    print(f"  rxvoice analyze_audio, unbatched   {sessions_unbatched:7.0f}  "
          f"({vad['rx_analyze'] * 1e6:.1f} µs/chunk)")
    print(f"  rxvoice analyze_batch, {BATCH} at once {sessions_batched:7.0f}  "
          f"({batched * 1e6:.1f} µs/chunk)")
    print(f"  Pipecat analyze_audio              {sessions_pipecat:7.0f}  "
          f"({vad['pc_analyze'] * 1e6:.1f} µs/chunk)")

    print("\nParity")
    for line in parity(booking, pc):
        print("  " + line)

    print(
        f"\nsilero_vs_floor={vad['rx_confidence'] / vad['floor']:.2f} "
        f"silero_vs_pipecat={vad['rx_confidence'] / vad['pc_voice_confidence']:.2f} "
        f"features_vs_pipecat={st['rx_features'] / st['pc_features']:.2f} "
        f"smartturn_vs_pipecat={st['rx_total'] / st['pc_total']:.2f} "
        f"sessions_per_core={sessions_batched:.0f} "
        f"sessions_vs_pipecat={sessions_batched / sessions_pipecat:.2f}"
    )


if __name__ == "__main__":
    main()
