"""Text aggregation throughput: rxvoice vs Pipecat 1.14, side by side in one run.

Streams one long, realistic model response (>= 10k tokens, with ``<spell>`` tags and
``<code>`` blocks) through each configuration, alternating rxvoice and Pipecat runs,
and reports medians of several runs.

Aggregator against aggregator (no frames, no pipeline on either side):

* ``sentence``: SimpleTextAggregator (sentences)
* ``skip_tags``: SkipTagsAggregator([<spell>])
* ``pattern_pair``: PatternPairAggregator(<spell> KEEP, <code> AGGREGATE)

Operator against processor (frames in, frames out):

* ``llmtext``: rxvoice's Rx ``LLMText(pattern_pair)`` operator, fed through a
  ``Subject``, against Pipecat's ``LLMTextProcessor(pattern_pair)`` in a lean pipeline
  (worker + runner, no observers, no RTVI). Both are timed from the first frame
  (response start, the tokens, response end, EndFrame; all built beforehand) to the
  EndFrame reaching the sink.                                               <- headline
* ``llmtext_strict``: the same rxvoice operator against Pipecat's bare aggregator
  (Pipecat without any frame machinery): the harshest comparison.
* ``sentence_op``: rxvoice's ``Sentence`` operator on plain ``TextFrame`` chunks (the same
  tokens), against Pipecat's ``SentenceAggregator`` in the same lean pipeline. The two
  cut differently (Pipecat pushes its whole buffer once it holds an end; rxvoice pushes
  each confirmed sentence and keeps the rest), so the units differ; the text is the same.

The last line is ``llmtext_vs_pipecat=<ratio>``: rxvoice throughput over Pipecat's for
the headline row (LLMText against LLMTextProcessor, like for like).

Run with the Pipecat venv (rxvoice installed there with ``pip install -e . --no-deps``):
    .venv/bin/python benchmarks/text.py [--runs 7] [--tokens 12000]    # with the bench extra
"""

from __future__ import annotations

import argparse
import asyncio
import difflib
import gc
import statistics
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _text_corpus import response_text, stream_tokens

from rxvoice.text import (
    Aggregation,
    MatchAction,
    PatternPairAggregator,
    SimpleTextAggregator,
    SkipTagsAggregator,
    TextAggregator,
)

Unit = tuple[str, str]  # (text, type)
HEADLINE = "llmtext"


# ----------------------------------------------------------------------------- rxvoice


def rx_sentence() -> TextAggregator:
    """rxvoice: sentences."""
    return SimpleTextAggregator()


def rx_skip_tags() -> TextAggregator:
    """rxvoice: sentences, <spell> spans opaque."""
    return SkipTagsAggregator(tags=[("<spell>", "</spell>")])


def rx_pattern_pair() -> TextAggregator:
    """rxvoice: sentences, <spell> kept, <code> blocks as units of their own."""
    agg = PatternPairAggregator()
    agg.add_pattern("spell", "<spell>", "</spell>", MatchAction.KEEP)
    agg.add_pattern("code", "<code>", "</code>", MatchAction.AGGREGATE)
    return agg


def run_rxvoice(
    factory: Callable[[], TextAggregator], tokens: Sequence[str]
) -> tuple[float, list[Unit]]:
    """Stream the tokens through a fresh aggregator; return seconds and units."""
    aggregator = factory()
    units: list[Aggregation] = []
    gc.collect()
    started = time.perf_counter()
    for token in tokens:
        units.extend(aggregator.aggregate(token))
    last = aggregator.flush()
    elapsed = time.perf_counter() - started
    if last is not None:
        units.append(last)
    return elapsed, [(u.text, str(u.type)) for u in units]


def run_rxvoice_llmtext(
    factory: Callable[[], TextAggregator], tokens: Sequence[str]
) -> tuple[float, list[Unit]]:
    """The Rx LLMText operator: frames through a Subject; seconds from the first frame to EndFrame."""
    from reactivex.subject import Subject

    from rxvoice import frames as F
    from rxvoice.aggregators import LLMText

    frames: list[F.Frame] = [F.LLMFullResponseStartFrame()]
    frames.extend(F.LLMTextFrame(t) for t in tokens)
    frames.extend([F.LLMFullResponseEndFrame(), F.EndFrame()])
    units: list[Unit] = []
    marks: dict[str, float] = {}

    def sink(frame: F.Frame) -> None:
        if type(frame) is F.AggregatedTextFrame:
            units.append((frame.text, frame.aggregated_by))
        elif type(frame) is F.EndFrame:
            marks["end"] = time.perf_counter()

    source: Subject[F.Frame] = Subject()
    subscription = source.pipe(LLMText(factory())).subscribe(sink)
    push = source.on_next
    gc.collect()
    started = time.perf_counter()
    for frame in frames:
        push(frame)
    elapsed = marks["end"] - started
    subscription.dispose()
    return elapsed, units


#: The rxvoice side of the operator rows.
RXVOICE_LLMTEXT = run_rxvoice_llmtext


def run_rxvoice_sentence(tokens: Sequence[str]) -> tuple[float, list[Unit]]:
    """The Rx Sentence operator on TextFrames through a Subject; seconds from the first frame to EndFrame."""
    from reactivex.subject import Subject

    from rxvoice import frames as F
    from rxvoice.aggregators import Sentence

    frames: list[F.Frame] = [F.TextFrame(t) for t in tokens]
    frames.append(F.EndFrame())
    units: list[Unit] = []
    marks: dict[str, float] = {}

    def sink(frame: F.Frame) -> None:
        if type(frame) is F.TextFrame:
            units.append((frame.text, "sentence"))
        elif type(frame) is F.EndFrame:
            marks["end"] = time.perf_counter()

    source: Subject[F.Frame] = Subject()
    subscription = source.pipe(Sentence()).subscribe(sink)
    push = source.on_next
    gc.collect()
    started = time.perf_counter()
    for frame in frames:
        push(frame)
    elapsed = marks["end"] - started
    subscription.dispose()
    return elapsed, units


# ----------------------------------------------------------------------------- Pipecat


def _quiet_pipecat() -> None:
    from loguru import logger

    logger.remove()
    logger.add(sys.stderr, level="ERROR")


def pc_sentence() -> Any:
    """Pipecat: sentences."""
    from pipecat.utils.text.simple_text_aggregator import SimpleTextAggregator as PcSimple

    return PcSimple()


def pc_skip_tags() -> Any:
    """Pipecat: sentences, <spell> spans opaque."""
    from pipecat.utils.text.skip_tags_aggregator import SkipTagsAggregator as PcSkip

    return PcSkip(tags=[("<spell>", "</spell>")])


def pc_pattern_pair() -> Any:
    """Pipecat: sentences, <spell> kept, <code> blocks as units of their own."""
    from pipecat.utils.text.pattern_pair_aggregator import MatchAction as PcAction
    from pipecat.utils.text.pattern_pair_aggregator import PatternPairAggregator as PcPair

    agg = PcPair()
    agg.add_pattern("spell", "<spell>", "</spell>", PcAction.KEEP)
    agg.add_pattern("code", "<code>", "</code>", PcAction.AGGREGATE)
    return agg


def _pc_unit(unit: Any) -> Unit:
    text = getattr(unit, "text", None)
    if text is None:
        text = unit.content
    kind = getattr(unit, "type", "sentence")
    return text, str(getattr(kind, "value", kind))


async def _run_pipecat_async(
    factory: Callable[[], Any], tokens: Sequence[str]
) -> tuple[float, list[Unit]]:
    aggregator = factory()
    units: list[Any] = []
    gc.collect()
    started = time.perf_counter()
    for token in tokens:
        async for unit in aggregator.aggregate(token):
            units.append(unit)
    last = await aggregator.flush()
    elapsed = time.perf_counter() - started
    if last is not None:
        units.append(last)
    return elapsed, [_pc_unit(u) for u in units]


def run_pipecat(factory: Callable[[], Any], tokens: Sequence[str]) -> tuple[float, list[Unit]]:
    """Stream the tokens through a fresh Pipecat aggregator (async API) in one event loop."""
    return asyncio.run(_run_pipecat_async(factory, tokens))


async def _run_pipecat_pipeline_async(tokens: Sequence[str], sentences: bool = False) -> tuple[float, list[Unit]]:
    from pipecat.frames.frames import (
        AggregatedTextFrame,
        EndFrame,
        Frame,
        LLMFullResponseEndFrame,
        LLMFullResponseStartFrame,
        LLMTextFrame,
        StartFrame,
        TextFrame,
    )
    from pipecat.pipeline.pipeline import Pipeline
    from pipecat.pipeline.runner import PipelineRunner
    from pipecat.pipeline.worker import PipelineParams, PipelineWorker
    from pipecat.processors.aggregators.llm_text_processor import LLMTextProcessor
    from pipecat.processors.aggregators.sentence import SentenceAggregator
    from pipecat.processors.frame_processor import FrameDirection, FrameProcessor

    started = asyncio.Event()
    finished = asyncio.Event()
    units: list[Unit] = []
    marks: dict[str, float] = {}

    class Sink(FrameProcessor):  # type: ignore[misc]
        async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
            await super().process_frame(frame, direction)
            if isinstance(frame, StartFrame):
                started.set()
            elif isinstance(frame, AggregatedTextFrame):
                units.append(
                    (frame.text, str(getattr(frame.aggregated_by, "value", frame.aggregated_by)))
                )
            elif sentences and type(frame) is TextFrame:
                units.append((frame.text, "sentence"))
            elif isinstance(frame, EndFrame):
                marks["end"] = time.perf_counter()
                finished.set()
            await self.push_frame(frame, direction)

    processor = SentenceAggregator() if sentences else LLMTextProcessor(text_aggregator=pc_pattern_pair())
    worker = PipelineWorker(
        Pipeline([processor, Sink()]),
        params=PipelineParams(),
        enable_rtvi=False,
        enable_turn_tracking=False,
        check_dangling_tasks=False,
        idle_timeout_secs=None,
        cancel_on_idle_timeout=False,
    )
    runner = PipelineRunner(handle_sigint=False, check_dangling_tasks=False)
    run = asyncio.create_task(runner.run(worker))
    await started.wait()
    frames: list[Frame]
    if sentences:
        frames = [TextFrame(text=t) for t in tokens]
        frames.append(EndFrame())
    else:
        frames = [LLMFullResponseStartFrame()]
        frames.extend(LLMTextFrame(text=t) for t in tokens)
        frames.extend([LLMFullResponseEndFrame(), EndFrame()])
    gc.collect()
    t0 = time.perf_counter()
    await worker.queue_frames(frames)
    await finished.wait()
    await run
    return marks["end"] - t0, units


def run_pipecat_pipeline(tokens: Sequence[str], sentences: bool = False) -> tuple[float, list[Unit]]:
    """Pipecat's LLMTextProcessor (or SentenceAggregator) in a lean pipeline; seconds from first frame to EndFrame."""
    return asyncio.run(_run_pipecat_pipeline_async(tokens, sentences))


# ----------------------------------------------------------------------------- driver


def agreement(ours: list[Unit], theirs: list[Unit]) -> str:
    """How far the two outputs agree (they need not: the sentence rules differ a little)."""
    matcher = difflib.SequenceMatcher(a=ours, b=theirs, autojunk=False)
    same = sum(block.size for block in matcher.get_matching_blocks())

    def squash(units: list[Unit]) -> str:
        return "".join("".join(text.split()) for text, _ in units)

    joined = "same text overall" if squash(ours) == squash(theirs) else "TEXT DIFFERS"
    return f"units: rxvoice {len(ours)}, pipecat {len(theirs)}, {same} identical; {joined}"


def measure(
    name: str,
    ours: Callable[[], tuple[float, list[Unit]]],
    theirs: Callable[[], tuple[float, list[Unit]]],
    runs: int,
    n_tokens: int,
) -> float:
    """Alternate runs, print medians and the ratio; return the ratio."""
    ours()  # warm-up (imports, caches)
    theirs()
    rx_times: list[float] = []
    pc_times: list[float] = []
    rx_units: list[Unit] = []
    pc_units: list[Unit] = []
    for _ in range(runs):
        elapsed, rx_units = ours()
        rx_times.append(elapsed)
        elapsed, pc_units = theirs()
        pc_times.append(elapsed)
    rx = n_tokens / statistics.median(rx_times)
    pc = n_tokens / statistics.median(pc_times)
    ratio = rx / pc
    print(
        f"{name:<14} rxvoice {rx:>12,.0f} tok/s ({1e6 / rx:7.2f} us/tok)   "
        f"pipecat {pc:>10,.0f} tok/s ({1e6 / pc:7.2f} us/tok)   ratio {ratio:7.1f}x"
    )
    print(f"{'':<14} {agreement(rx_units, pc_units)}")
    return ratio


def main() -> None:
    """Run every configuration and print the headline ratio last."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="timed runs per side (median)")
    parser.add_argument("--tokens", type=int, default=12_000, help="minimum response tokens")
    parser.add_argument("--no-pipeline", action="store_true", help="skip the operator rows")
    args = parser.parse_args()
    warnings.filterwarnings("ignore", category=DeprecationWarning)  # Pipecat's runner API
    _quiet_pipecat()

    text = response_text(args.tokens)
    tokens = stream_tokens(text)
    n = len(tokens)
    print(
        f"response: {n} tokens, {len(text)} chars, {text.count('<spell>')} <spell> tags, "
        f"{text.count('<code>')} <code> blocks; medians of {args.runs} runs"
    )
    ratios: dict[str, float] = {}
    for name, rx_factory, pc_factory in (
        ("sentence", rx_sentence, pc_sentence),
        ("skip_tags", rx_skip_tags, pc_skip_tags),
        ("pattern_pair", rx_pattern_pair, pc_pattern_pair),
    ):
        ratios[name] = measure(
            name,
            lambda f=rx_factory: run_rxvoice(f, tokens),  # type: ignore[misc]
            lambda f=pc_factory: run_pipecat(f, tokens),  # type: ignore[misc]
            args.runs,
            n,
        )
    if args.no_pipeline:
        print(f"llmtext_vs_pipecat=nan  (operator rows skipped; pattern_pair {ratios['pattern_pair']:.1f}x)")
        return
    ratios["llmtext"] = measure(
        "llmtext",
        lambda: RXVOICE_LLMTEXT(rx_pattern_pair, tokens),
        lambda: run_pipecat_pipeline(tokens),
        max(3, args.runs // 2),
        n,
    )
    ratios["llmtext_strict"] = measure(
        "llmtext_strict",
        lambda: RXVOICE_LLMTEXT(rx_pattern_pair, tokens),
        lambda: run_pipecat(pc_pattern_pair, tokens),
        args.runs,
        n,
    )
    ratios["sentence_op"] = measure(
        "sentence_op",
        lambda: run_rxvoice_sentence(tokens),
        lambda: run_pipecat_pipeline(tokens, sentences=True),
        max(3, args.runs // 2),
        n,
    )
    print(f"sentence_vs_pipecat={ratios['sentence_op']:.1f}")
    print(f"llmtext_vs_pipecat={ratios[HEADLINE]:.1f}")


if __name__ == "__main__":
    main()
