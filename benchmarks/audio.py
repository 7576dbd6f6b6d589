"""rxvoice audio vs Pipecat 1.14 on the same audio, in one run.

Run it with the benchmark venv, where Pipecat is installed next to rxvoice:

    .venv/bin/python benchmarks/audio.py [--quick]    # after .venv/bin/pip install -e '.[bench]'

It measures (medians of interleaved rounds, the order rotating each round:
27 rounds of 200 chunks for the VAD, 9 for Smart Turn; ``time.perf_counter``):

a) Silero VAD per 512-sample chunk (16 kHz): rxvoice's analyzer ``confidence``
   vs a bare onnxruntime call of the same model with the same thread settings
   (the floor) vs Pipecat's ``voice_confidence(bytes)``; and the whole
   ``analyze_audio`` path (volume gate + state machine + model) of both.
b) Smart Turn v3.2 per 8 s window: Whisper features (rxvoice vs the function
   Pipecat's ``LocalSmartTurnAnalyzerV3`` calls, which no public API exposes
   on its own), and the whole prediction (features + ONNX), both with one
   onnxruntime thread. rxvoice's headline figure is its default analyzer,
   running the int8 kernels its self-check chose for this CPU (printed);
   the default kernels forced (``exact_quantization=False``, what Pipecat
   runs) are shown beside it.
c) Sessions per core: real-time 16 kHz streams one core keeps up with, fed
   20 ms transport frames (audio seconds processed per wall second). rxvoice:
   the VAD *operator* (``VADProcessor`` in a ``pipeline``, 64 concurrent
   sessions on one ``TestScheduler``), batched through a ``VADBatcher`` and
   unbatched; Pipecat: its ``analyze_audio`` fed the same 20 ms frames (with
   the thread-pool hop it makes on every call). Also the bare analyzers
   (``analyze_batch`` / ``analyze_audio`` on 512-sample chunks) for reference.

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
from reactivex.subject import Subject  # noqa: E402
from reactivex.testing import TestScheduler  # noqa: E402

from rxvoice import frames as F  # noqa: E402
from rxvoice import pipeline  # noqa: E402
from rxvoice.audio.turn import SmartTurnAnalyzer, WhisperFeatures, fit_window  # noqa: E402
from rxvoice.audio.vad import (  # noqa: E402
    SileroModel,
    SileroVADAnalyzer,
    analyze_batch,
    default_silero_model_path,
)
from rxvoice.audio.vad_processor import VADBatcher, VADProcessor  # noqa: E402

SHARED = Path(
    os.environ.get("RXVOICE_SHARED", "").strip()
    or Path(__file__).resolve().parents[1].parent / "shared"
)
MODEL = Path(os.environ.get("RXVOICE_SMART_TURN_MODEL", SHARED / "models/smart-turn-v3.2-cpu.onnx"))
CHUNK = 512
CHUNK_SECS = CHUNK / 16000
BATCH = 64
FRAME = 320  # a 20 ms transport frame


def read_wav(path: Path) -> np.ndarray:
    with wave.open(str(path)) as w:
        return np.frombuffer(w.readframes(w.getnframes()), "<i2").copy()


def interleaved(methods: dict[str, Callable[[], int]], rounds: int) -> dict[str, float]:
    """Run the methods round-robin, rotating the order each round (so drift and
    cache effects hit all alike); median seconds per item."""
    times: dict[str, list[float]] = {name: [] for name in methods}
    order = list(methods.items())
    for round_index in range(rounds):
        shift = round_index % len(order)
        for name, run in order[shift:] + order[:shift]:
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
        sys.exit(f"pipecat-ai is needed for the comparison (install the bench extra: pip install -e '.[bench]'): {exc}")
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

    rx_batch = batched_runner(audio, steps=max(4, n // 10))
    for warm in (floor_run, rx_conf, rx_stream_f32, pc_conf, rx_analyze, pc_analyze, rx_batch):
        warm()
    result = interleaved(
        {"floor": floor_run, "rx_confidence": rx_conf, "rx_stream_f32": rx_stream_f32,
         "pc_voice_confidence": pc_conf, "rx_analyze": rx_analyze, "pc_analyze": pc_analyze,
         "rx_batch": rx_batch},
        rounds,
    )
    loop.close()
    return result


def batched_runner(audio: np.ndarray, steps: int) -> Callable[[], int]:
    """analyze_batch over BATCH sessions in lockstep, one 512-sample frame each per step."""
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

    return run


def operator_runner(audio: np.ndarray, sessions: int, secs: float, batched: bool) -> Callable[[], int]:
    """``sessions`` VAD operators (one pipeline each) on one TestScheduler, fed ``secs`` of 20 ms frames a run.

    The pipelines stay connected from run to run (steady state: analyzers,
    volume meters and batch buffers already set up), each run playing the
    next ``secs`` of every session's audio. Returns the number of 32 ms units
    of audio processed, so ``interleaved`` gives the cost per 32 ms of one
    session's audio.
    """
    frames_per_run = int(secs * 16000) // FRAME
    usable = audio.shape[0] // FRAME
    streams = []
    for i in range(sessions):
        offset = (i * 241) % usable
        streams.append([F.InputAudioRawFrame(audio[((offset + k) % usable) * FRAME:
                                                   ((offset + k) % usable + 1) * FRAME].tobytes())
                        for k in range(usable)])
    scheduler = TestScheduler()
    batcher = VADBatcher(max_batch=sessions) if batched else None
    sources: list[Subject[F.Frame]] = []
    for _ in range(sessions):
        source: Subject[F.Frame] = Subject()
        down, _up = pipeline(VADProcessor(batcher=batcher)).connect(source)
        down.subscribe(lambda _f: None, scheduler=scheduler)
        sources.append(source)
    position = [0]
    units = sessions * frames_per_run * FRAME // CHUNK

    def run() -> int:
        start = scheduler.clock
        for j in range(frames_per_run):
            k = (position[0] + j) % usable

            def tick(_s: Any, _st: Any = None, k: int = k) -> None:
                for source, frames in zip(sources, streams, strict=True):
                    source.on_next(frames[k])

            scheduler.schedule_absolute(start + (j + 1) * FRAME / 16000, tick)
        position[0] += frames_per_run
        scheduler.advance_to(start + secs + 0.001)
        return units

    return run


def pipecat_frames_runner(audio: np.ndarray, pc: dict[str, Any], secs: float) -> Callable[[], int]:
    """Pipecat's ``analyze_audio`` fed 20 ms frames (its thread-pool hop included)."""
    analyzer = pc["silero"](sample_rate=16000)
    analyzer.set_sample_rate(16000)
    frames = [audio[k * FRAME:(k + 1) * FRAME].tobytes() for k in range(int(secs * 16000) // FRAME)]
    loop = asyncio.new_event_loop()

    async def feed() -> None:
        for b in frames:
            await analyzer.analyze_audio(b)

    def run() -> int:
        loop.run_until_complete(feed())
        return len(frames) * FRAME // CHUNK

    return run


def section_operator(audio: np.ndarray, pc: dict[str, Any], rounds: int, secs: float) -> dict[str, float]:
    methods = {
        "op_batched": operator_runner(audio, BATCH, secs, batched=True),
        "op_unbatched": operator_runner(audio, BATCH, secs, batched=False),
        "pc_frames": pipecat_frames_runner(audio, pc, secs * 4),
    }
    for run in methods.values():
        run()
    return interleaved(methods, rounds)


def section_smart_turn(
    window: np.ndarray, pc: dict[str, Any], rounds: int
) -> dict[str, float]:
    x = fit_window(window.astype(np.float32) / 32768)
    extractor = WhisperFeatures()
    out = np.empty((80, 800), dtype=np.float32)
    pc_features = pc["features"]
    rx_exact = SmartTurnAnalyzer(MODEL, threads=1)  # the kernels the self-check chose
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


def kernel_choice() -> tuple[str, str]:
    """The int8 kernels rxvoice's default analyzer runs here, and the self-check's line."""
    check = SmartTurnAnalyzer(MODEL, threads=1).kernel_check
    assert check is not None
    return check.kernels, check.describe()


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
        with open(labels, newline="") as handle:
            rows = list(csv.DictReader(handle))
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

    vad = section_silero(booking, pc, 3 * rounds, n=100 if args.quick else 200)
    us = {k: v * 1e6 for k, v in vad.items()}
    print("\n(a) Silero VAD, per 512-sample chunk (µs, median)")
    print(f"  bare onnxruntime session.run (floor)      {us['floor']:8.1f}")
    print(f"  rxvoice SileroVADAnalyzer.confidence(bytes) {us['rx_confidence']:6.1f}")
    print(f"  rxvoice SileroStream.confidence(float32)  {us['rx_stream_f32']:8.1f}")
    print(f"  Pipecat voice_confidence(bytes)           {us['pc_voice_confidence']:8.1f}")
    print(f"  rxvoice analyze_audio (gate+states+model) {us['rx_analyze']:8.1f}")
    print(f"  Pipecat analyze_audio (+ executor hop)    {us['pc_analyze']:8.1f}")

    window = booking[: 8 * 16000]
    kernels, check_line = kernel_choice()
    st = section_smart_turn(window, pc, rounds)
    ms = {k: v * 1e3 for k, v in st.items()}
    print("\n(b) Smart Turn v3.2, per 8 s window (ms, median, 1 onnxruntime thread)")
    print(f"  {check_line}")
    print(f"  features: rxvoice {ms['rx_features']:.2f}   Pipecat {ms['pc_features']:.2f}")
    print(f"  total:    rxvoice {ms['rx_total']:.1f} (default analyzer: {kernels} kernels)   "
          f"{ms['rx_total_fast']:.1f} (default kernels forced)   Pipecat {ms['pc_total']:.1f}")

    op = section_operator(booking, pc, rounds, secs=1.0 if args.quick else 2.0)
    sessions = {name: CHUNK_SECS / cost for name, cost in op.items()}
    sessions_batched = sessions["op_batched"]
    sessions_pipecat = sessions["pc_frames"]
    print("\n(c) Real-time 16 kHz sessions one core keeps up with, fed 20 ms frames "
          "(cost per 32 ms of audio)")
    print(f"  rxvoice VAD operator, {BATCH} sessions, VADBatcher {sessions_batched:7.0f}  "
          f"({op['op_batched'] * 1e6:.1f} µs)")
    print(f"  rxvoice VAD operator, {BATCH} sessions, unbatched  {sessions['op_unbatched']:7.0f}  "
          f"({op['op_unbatched'] * 1e6:.1f} µs)")
    print(f"  Pipecat analyze_audio, 20 ms frames            {sessions_pipecat:7.0f}  "
          f"({op['pc_frames'] * 1e6:.1f} µs)")
    print(f"  (bare analyzers, 512-sample chunks: rxvoice analyze_batch x{BATCH} "
          f"{CHUNK_SECS / vad['rx_batch']:.0f}, analyze_audio {CHUNK_SECS / vad['rx_analyze']:.0f}, "
          f"Pipecat analyze_audio {CHUNK_SECS / vad['pc_analyze']:.0f})")

    print("\nParity")
    for line in parity(booking, pc):
        print("  " + line)

    print(
        f"\nsilero_vs_floor={vad['rx_confidence'] / vad['floor']:.2f} "
        f"silero_vs_pipecat={vad['rx_confidence'] / vad['pc_voice_confidence']:.2f} "
        f"features_vs_pipecat={st['rx_features'] / st['pc_features']:.2f} "
        f"smartturn_vs_pipecat={st['rx_total'] / st['pc_total']:.2f} "
        f"sessions_per_core={sessions_batched:.0f} "
        f"sessions_vs_pipecat={sessions_batched / sessions_pipecat:.2f} "
        f"smartturn_kernels={kernels} "
        f"smartturn_default_kernels_vs_pipecat={st['rx_total_fast'] / st['pc_total']:.2f}"
    )


if __name__ == "__main__":
    main()
