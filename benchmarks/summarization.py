"""What the automatic-summary trigger costs per turn at 100 and at 100,000 messages: rxvoice vs Pipecat 1.14.

Run from the repository root. The rxvoice rows need only the rxvoice environment; the Pipecat row runs when
``pipecat-ai`` is importable (the ``bench`` extra)::

    python benchmarks/summarization.py               # 100 and 100,000 messages, 3 runs
    python benchmarks/summarization.py --runs 5

With a token threshold configured and not reached, the conversation is checked at every response start.
Three measurements, each at 100 and at 100,000 messages in the conversation, the threshold far away:

* ``check``: the trigger check itself, as the summarizer makes it (``should_summarize`` on the live
  messages): microseconds per check;
* ``turn``: a whole user and assistant turn through ``pipeline(pair.user(), ScriptedLLM, pair.assistant())``
  with ``summarization=AutoSummarizationConfig(max_context_tokens=10**9, max_unsummarized_messages=None)``,
  in virtual time: milliseconds per turn;
* ``pipecat check``: Pipecat's ``LLMContextSummarizer._should_summarize()`` on an ``LLMContext`` holding the
  same messages: microseconds per check.

Each figure is the median of ``--runs`` runs (min and max printed too). The last line is::

    check_us_100=<us> check_us_100k=<us> check_growth=<x> turn_ms_100=<ms> turn_ms_100k=<ms> turn_growth=<x>
    pipecat_check_us_100k=<us> check_vs_pipecat_100k=<x>

``*_growth`` is the cost at 100,000 messages over the cost at 100 (1.0 is flat); ``check_vs_pipecat_100k`` is
rxvoice's check time over Pipecat's (below 1 is faster; ``nan`` when Pipecat is not installed).
"""

from __future__ import annotations

import argparse
import gc
import math
import statistics
import time
from collections.abc import Callable
from typing import Any

from rxvoice import LLMContext, pipeline
from rxvoice import frames as F
from rxvoice.aggregators import Pair
from rxvoice.summarization import AutoSummarizationConfig, should_summarize
from rxvoice.testing import FrameMarbles, ScriptedLLM

__all__ = ["history", "main", "rxvoice_check_us", "rxvoice_turn_ms"]

SIZES = (100, 100_000)
FAR = AutoSummarizationConfig(max_context_tokens=10**9, max_unsummarized_messages=None)


def history(n: int) -> list[dict[str, str]]:
    """A system prompt and ``n - 1`` alternating user and assistant messages of a few words."""
    out = [{"role": "system", "content": "Be brief."}]
    for i in range(n - 1):
        role = "user" if i % 2 == 0 else "assistant"
        out.append({"role": role, "content": f"message {i}: could you book a table for two at eight?"})
    return out


def _per_call(fn: Callable[[], Any], seconds: float = 0.2) -> float:
    """Seconds per call of ``fn``, timed over at least ``seconds`` (at least one call)."""
    calls, start = 0, time.perf_counter()
    while True:
        fn()
        calls += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return elapsed / calls


def rxvoice_check_us(context: LLMContext) -> float:
    """One automatic-trigger check on the live messages, as the summarizer makes it at a response start."""
    gc.collect()
    return 1e6 * _per_call(lambda: should_summarize(context.messages, FAR, None))


def rxvoice_turn_ms(context: LLMContext, turns: int = 40) -> float:
    """Milliseconds per turn through the pair, auto-summarization on and its threshold far away."""
    pair = Pair(context, summarization=FAR)
    down = [(1.0 + 2.0 * t, F.TranscriptionFrame(f"turn {t} please", finalized=True)) for t in range(turns)]
    llm = ScriptedLLM(["Sure."] * turns)
    gc.collect()  # the conversation just built is not the turns' garbage: collect it before the clock starts
    start = time.perf_counter()
    FrameMarbles().run(pipeline(pair.user(), llm, pair.assistant()), down=down, until=2.0 * turns + 5.0)
    elapsed = time.perf_counter() - start
    assert sum(1 for m in context.messages[-2 * turns:] if m["role"] == "assistant") == turns, "a turn went wrong"
    return 1e3 * elapsed / turns


def pipecat_check_us(n: int) -> float | None:
    """Pipecat's trigger check on an ``LLMContext`` of ``n`` messages (``None`` when Pipecat is not installed)."""
    try:
        from loguru import logger
        from pipecat.processors.aggregators.llm_context import LLMContext as PipecatContext
        from pipecat.processors.aggregators.llm_context_summarizer import LLMContextSummarizer
        from pipecat.utils.context.llm_context_summarization import LLMAutoContextSummarizationConfig
    except ImportError:
        return None
    logger.remove()
    summarizer = LLMContextSummarizer(
        context=PipecatContext(messages=history(n)),  # type: ignore[arg-type]
        config=LLMAutoContextSummarizationConfig(max_context_tokens=10**9, max_unsummarized_messages=None),
    )
    return 1e6 * _per_call(summarizer._should_summarize)


def _stats(samples: list[float]) -> tuple[float, float, float]:
    return min(samples), statistics.median(samples), max(samples)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    results: dict[str, float] = {}
    for n in SIZES:
        checks: list[float] = []
        turns: list[float] = []
        pipecat: list[float] = []
        for _ in range(args.runs):
            gc.collect()
            context = LLMContext(history(n))
            checks.append(rxvoice_check_us(context))
            turns.append(rxvoice_turn_ms(LLMContext(history(n))))
            p = pipecat_check_us(n)
            if p is not None:
                pipecat.append(p)
        for name, samples, unit in (("check_us", checks, "µs"), ("turn_ms", turns, "ms"),
                                    ("pipecat_check_us", pipecat, "µs")):
            if not samples:
                print(f"{n:>7} messages  {name:<17} (Pipecat not installed)")
                continue
            lo, med, hi = _stats(samples)
            results[f"{name}_{n}"] = med
            print(f"{n:>7} messages  {name:<17} median {med:10.2f} {unit}  (min {lo:.2f}, max {hi:.2f})")
    big, small = SIZES[1], SIZES[0]
    nan = math.nan
    check_growth = results[f"check_us_{big}"] / results[f"check_us_{small}"]
    turn_growth = results[f"turn_ms_{big}"] / results[f"turn_ms_{small}"]
    pipecat_big = results.get(f"pipecat_check_us_{big}", nan)
    vs_pipecat = results[f"check_us_{big}"] / pipecat_big
    print(f"check_us_100={results[f'check_us_{small}']:.2f} check_us_100k={results[f'check_us_{big}']:.2f} "
          f"check_growth={check_growth:.2f} turn_ms_100={results[f'turn_ms_{small}']:.3f} "
          f"turn_ms_100k={results[f'turn_ms_{big}']:.3f} turn_growth={turn_growth:.2f} "
          f"pipecat_check_us_100k={pipecat_big:.1f} check_vs_pipecat_100k={vs_pipecat:.5f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
