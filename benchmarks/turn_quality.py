"""Turn-taking quality on labelled calls: rxvoice's setups and Pipecat 1.14's Smart Turn default, same files.

Both sides hear the same recordings as 20 ms ``InputAudioRawFrame``\\ s and get
the transcript's finals 0.3 s after each segment ends, as an STT delivers them
(``--words``, default ``plain``: lower case, no punctuation), and both are scored by
the same rule (:func:`rxvoice.cli.eval.judge`): a labelled end is *found* when
a turn ends after it and before the caller goes on; a turn that ends after a
mid-sentence segment (or inside any segment) *cuts the caller off*.

* rxvoice runs in virtual time (``rxvoice eval``; Smart Turn verdicts take
  50 ms): ``smart-turn`` (the recommended setup), ``smart-turn-only``
  (``TurnAnalyzerStop`` alone) and ``speech-timeout``.
* Pipecat can only run in real time (its timers read several clocks): its
  ``LLMUserAggregator`` with its defaults (Silero VAD inside, VAD start, Smart
  Turn v3.2 stop through ``LocalSmartTurnAnalyzerV3``), the same model file,
  and an STT latency hint of 1 s (``STTMetadataFrame``; without it Pipecat
  answers before the words arrive). Two recordings run at a time.

    python benchmarks/turn_quality.py                       # rxvoice only (its own venv)
    .venv/bin/python benchmarks/turn_quality.py --pipecat   # both (the bench extra installed)
    python benchmarks/turn_quality.py --json out.json

Paths default to the development calls (``tests/data/calls``) and ``benchmarks/data/extra_calls``; the
generated corpus's report half is what ``docs/turn-taking.md`` reports:

    .venv/bin/python benchmarks/turn_quality.py --pipecat "$(python benchmarks/turn_corpus.py --print report)"
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from rxvoice.cli.analysis import Analysis, Setup, Turn
from rxvoice.cli.eval import WORD_MODES, Item, PauseResult, evaluate, find_items, judge, stt_words, totals
from rxvoice.cli.wav import read_wav

HERE = Path(__file__).resolve().parent
MODEL = Path(os.environ.get("RXVOICE_SMART_TURN_MODEL",
                            Path.home() / ".cache" / "rxvoice" / "smart-turn-v3.2-cpu.onnx"))
DEFAULT_PATHS = [HERE.parent / "tests" / "data" / "calls", HERE / "data" / "extra_calls"]
STT_DELAY = 0.3
TAIL = 4.0
CHUNK = 320


def rxvoice_runs(items: list[Item], jobs: int, words: str) -> dict[str, list[tuple[Item, list[PauseResult]]]]:
    out: dict[str, list[tuple[Item, list[PauseResult]]]] = {}
    for stop in ("smart-turn", "smart-turn-only", "speech-timeout"):
        setup = Setup(stop=stop, model=MODEL if stop != "speech-timeout" else None, stt_delay=STT_DELAY, tail=TAIL)
        (run,) = evaluate(items, [(setup, {})], jobs=jobs, words=words)
        out[f"rxvoice {stop}"] = run.recordings
    return out


# -- Pipecat, in real time -----------------------------------------------------------------------------


async def pipecat_one(item: Item, words_mode: str = "plain") -> list[float]:
    """When (s from the first audio chunk) Pipecat's user aggregator ended each turn."""
    from loguru import logger

    logger.remove()
    logger.add(sys.stderr, level="ERROR")
    from pipecat.audio.turn.smart_turn.local_smart_turn_v3 import LocalSmartTurnAnalyzerV3
    from pipecat.audio.vad.silero import SileroVADAnalyzer
    from pipecat.frames import frames as F
    from pipecat.pipeline.pipeline import Pipeline
    from pipecat.pipeline.worker import PipelineParams, PipelineWorker
    from pipecat.processors.aggregators.llm_context import LLMContext
    from pipecat.processors.aggregators.llm_response_universal import (
        LLMContextAggregatorPair,
        LLMUserAggregatorParams,
    )
    from pipecat.turns.user_stop import TurnAnalyzerUserTurnStopStrategy
    from pipecat.turns.user_turn_strategies import UserTurnStrategies
    from pipecat.workers.runner import WorkerRunner

    recording = read_wav(item.wav)
    samples = np.concatenate((recording.samples, np.zeros(round(TAIL * 16000), dtype=np.int16)))
    chunks = [samples[i:i + CHUNK].tobytes() for i in range(0, len(samples) - CHUNK + 1, CHUNK)]
    words = sorted((s.end + STT_DELAY, s.text) for s in stt_words(item.transcript, words_mode).segments)

    strategies = UserTurnStrategies(stop=[TurnAnalyzerUserTurnStopStrategy(
        turn_analyzer=LocalSmartTurnAnalyzerV3(smart_turn_model_path=str(MODEL), cpu_count=1))])
    params = LLMUserAggregatorParams(vad_analyzer=SileroVADAnalyzer(), user_turn_strategies=strategies)
    pair = LLMContextAggregatorPair(LLMContext(), user_params=params)
    worker = PipelineWorker(
        Pipeline([pair.user()]), cancel_on_idle_timeout=False, enable_rtvi=False, enable_turn_tracking=False,
        idle_timeout_secs=None, observers=[], params=PipelineParams(audio_in_sample_rate=16000),
        check_dangling_tasks=False,
    )
    loop = asyncio.get_running_loop()
    t0 = [0.0]
    ends: list[float] = []

    @pair.user().event_handler("on_user_turn_stopped")
    async def _stopped(_agg: Any, _strategy: Any, _message: Any) -> None:
        ends.append(loop.time() - t0[0])

    started = asyncio.Event()

    @worker.event_handler("on_pipeline_started")
    async def _started(_w: Any, _f: Any) -> None:
        started.set()

    runner = WorkerRunner(handle_sigint=False, check_dangling_tasks=False)
    await runner.add_workers(worker)
    task = asyncio.ensure_future(runner.run())
    await asyncio.wait_for(started.wait(), 20)
    await worker.queue_frame(F.STTMetadataFrame(service_name="replayed", ttfs_p99_latency=1.0))
    t0[0] = loop.time()
    w = 0
    for i, chunk in enumerate(chunks):
        due = t0[0] + (i + 1) * CHUNK / 16000
        delay = due - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)  # real time: Pipecat reads the wall clock
        now = loop.time() - t0[0]
        while w < len(words) and words[w][0] <= now:
            await worker.queue_frame(F.TranscriptionFrame(words[w][1], "user", "", finalized=True))
            w += 1
        await worker.queue_frame(F.InputAudioRawFrame(audio=chunk, sample_rate=16000, num_channels=1))
    await worker.queue_frame(F.EndFrame())
    await asyncio.wait_for(task, 30)
    return ends


def pipecat_runs(items: list[Item], parallel: int, words: str = "plain") -> list[tuple[Item, list[PauseResult]]]:
    async def all_items() -> list[list[float]]:
        out: list[list[float]] = []
        for k in range(0, len(items), parallel):
            out += await asyncio.gather(*(pipecat_one(it, words) for it in items[k:k + parallel]))
            print(f"  pipecat: {min(k + parallel, len(items))}/{len(items)}", file=sys.stderr)
        return out

    results = []
    for item, ends in zip(items, asyncio.run(all_items()), strict=True):
        turns = [Turn(i, 0.0, round(t, 3), "pipecat", "pipecat", "", None, None, "") for i, t in enumerate(ends, 1)]
        analysis = Analysis(read_wav(item.wav), Setup(stop="smart-turn-only"), item.transcript, list(turns))
        results.append((item, judge(item, analysis)))
    return results


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paths", nargs="*", type=Path, default=DEFAULT_PATHS)
    p.add_argument("--pipecat", action="store_true", help="also run Pipecat 1.14 (real time; needs the bench extra)")
    p.add_argument("--no-rxvoice", action="store_true", help="only Pipecat")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--json", type=Path, help="also write the results here")
    p.add_argument("--words", choices=WORD_MODES, default="plain", help="how the transcripts are replayed")
    args = p.parse_args(argv)
    items = find_items(args.paths)
    started = time.perf_counter()
    runs: dict[str, list[tuple[Item, list[PauseResult]]]] = {}
    if not args.no_rxvoice:
        runs.update(rxvoice_runs(items, args.jobs, args.words))
    if args.pipecat:
        runs["pipecat 1.14 smart-turn (default)"] = pipecat_runs(items, args.jobs, args.words)
    groups = {str(path): [it for it in items if it.wav.parent == Path(path)] for path in args.paths}
    out: dict[str, Any] = {}
    print(f"{len(items)} recordings, finals {STT_DELAY} s after speech, words {args.words} "
          f"({time.perf_counter() - started:.0f} s)")
    print(f"{'setup':<36} {'set':<14} {'ends found':>11} {'cut-offs':>9} {'audible':>7} {'missed':>6} "
          f"{'p50':>6} {'p90':>6}")
    for name, recordings in runs.items():
        for group, members in groups.items():
            pauses = [p for it, ps in recordings if it in members for p in ps]
            if not pauses:
                continue
            t = totals(pauses)
            label = Path(group).name
            out.setdefault(name, {})[label] = t.as_json()
            p50 = "-" if t.latency_p50 is None else f"{t.latency_p50:.2f}"
            p90 = "-" if t.latency_p90 is None else f"{t.latency_p90:.2f}"
            print(f"{name:<36} {label:<14} {t.found:>4}/{t.turn_ends:<3} ({t.found_rate:4.0%}) "
                  f"{t.cut_offs:>3}/{t.pauses:<3} {t.audible:>7} {t.missed:>6} {p50:>6} {p90:>6}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
