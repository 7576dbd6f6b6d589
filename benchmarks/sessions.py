"""Many sessions per process: N conversations on one asyncio loop, then every one disposed.

Run from the repository root (the ``rxvoice`` venv is enough)::

    python benchmarks/sessions.py                        # 200 sessions, the whole demo call (14.6 s) each
    python benchmarks/sessions.py --sessions 50 --clip 6.8 10.3
    python benchmarks/sessions.py --sessions 200 --clip 6.8 10.3 --rounds 3   # memory from round to round
    python benchmarks/sessions.py --per-frame               # CPU per frame at 10, 100 and 1,000 sessions
    python benchmarks/sessions.py --per-frame --gc off      # the same with the cyclic garbage collector off

Each session is its own ``pipeline(VADProcessor, pair.user(), ScriptedLLM,
Speaker, pair.assistant())`` with its own pair, timers and Silero stream; the
VAD calls of all sessions are batched through one shared ``VADBatcher`` on the
one shared Silero model. One feeder task plays ``rxvoice/data/demo.wav`` to
every session in real time (20 ms chunks, the sessions' starts staggered over
one second, so their audio interleaves) and sends each session its own
transcript of every spoken segment 0.3 s after the segment ends: the words of
session ``i`` are tagged ``caller<i>``. The scripted model echoes the user's
last message (``Noted: <message>.``).

Checked per session: its user messages hold exactly its own transcripts, in
order, each once (no cross-talk, nothing lost), and every answer echoes one of
its own messages. Then every session ends (``EndFrame``, input completed) and
its subscriptions are disposed, and the process is inspected: timers still
scheduled on the loop, threads beyond those alive at the start, rxvoice
per-session objects still alive (VAD sessions, Silero streams, aggregators),
the live Python heap and the resident set against the start (taken after a
warm-up session). The Silero model itself (one onnxruntime session per model
file, ``SileroModel.shared``) is loaded once and kept for the process by
design; what each session held on it (its stream and IO bindings) is freed.

The last line is machine-readable::

    sessions=<n> ok=<bool> wall_s=<s> lag_ms=<ms> live_timers=<n> extra_threads=<n> leftover=<n>
    rss_delta_kib=<kib> rss_trimmed_delta_kib=<kib> heap_delta_blocks=<n>

``--per-frame`` measures instead what one frame costs as the number of live sessions grows, with the same
work per session: 10, 100 and 1,000 sessions (``--counts``) on one asyncio loop in virtual time
(``rxvoice.testing.VirtualTimeLoop``, so 1,000 sessions take their 10 s of conversation without falling
behind), each its own ``pipeline(pair.user(), ScriptedLLM, Speaker, pair.assistant())`` on the loop's
scheduler, fed five turns (VAD start, an interim, five 20 ms audio chunks, the final transcript, VAD stop;
the scripted answer streams at 20 ms a token), the sessions' turns staggered over one second. The cost is the
process CPU time of the feeding and answering over the frames fed; the time the cyclic garbage collector spent
inside that window (``gc.callbacks``, CPU time) is reported beside it. ``--stagger 1`` starts every session's
turns on the same tick (the loop then runs fewer, fuller iterations). ``--gc off`` disables the collector and
``--gc freeze`` moves what exists once the sessions are built to the permanent generation (``gc.freeze``).
Its last line::

    per_frame_us_10=<us> per_frame_us_100=<us> per_frame_us_1000=<us> growth=<x> growth_outside_gc=<x>
    gc_share_1000=<fraction>
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # numpy's BLAS threads spin on a busy core; the benchmark measures one

import argparse  # noqa: E402
import asyncio  # noqa: E402
import gc  # noqa: E402
import importlib.resources  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import wave  # noqa: E402
from collections import Counter  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from typing import Any  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _reliability import Speaker, heap_blocks, rss_kib  # noqa: E402
from reactivex import abc  # noqa: E402
from reactivex.subject import Subject  # noqa: E402

from rxvoice import LLMContext, pipeline  # noqa: E402
from rxvoice import frames as F  # noqa: E402
from rxvoice.aggregators import Pair  # noqa: E402
from rxvoice.audio.vad import SileroModel  # noqa: E402
from rxvoice.audio.vad_processor import VADBatcher, VADProcessor  # noqa: E402
from rxvoice.context import ContextSnapshot  # noqa: E402
from rxvoice.pipeline import loop_scheduler  # noqa: E402
from rxvoice.testing import Reply, ScriptedLLM  # noqa: E402

__all__ = ["PerFrameResult", "SessionsResult", "live_timers", "per_frame_costs", "run_sessions"]

CHUNK_SECONDS = 0.02
CHUNK_SAMPLES = 320
STT_DELAY = 0.3
SETTLE_SECONDS = 4.0
PER_SESSION_TYPES = frozenset({
    "_VADSession", "SileroStream", "SileroVADAnalyzer", "VADProcessor", "UserAggregator",
    "AssistantAggregator", "_UserSession", "_AssistantSession", "SummarizerSession", "_LLMSession",
    "ScriptedLLM", "Pair", "LLMContext", "Session", "_Link", "_Connection", "_PortTimer", "_GatedAction",
})
"""rxvoice objects that belong to one session: none may outlive the run."""


def demo_call() -> tuple[bytes, list[tuple[str, float, float]]]:
    """The demo recording (16 kHz mono PCM) and its segments ``(text, start, end)``."""
    data = importlib.resources.files("rxvoice") / "data"
    with wave.open(str(data / "demo.wav")) as w:
        assert (w.getframerate(), w.getnchannels(), w.getsampwidth()) == (16000, 1, 2)
        pcm = w.readframes(w.getnframes())
    transcript = json.loads((data / "demo.transcript.json").read_text(encoding="utf-8"))
    return pcm, [(s["text"], float(s["start"]), float(s["end"])) for s in transcript["segments"]]


def live_timers(loop: asyncio.AbstractEventLoop) -> int:
    """Timers still scheduled (not cancelled) on ``loop``."""
    scheduled = getattr(loop, "_scheduled", [])
    return sum(1 for handle in scheduled if not handle.cancelled())


def _echo(snapshot: ContextSnapshot) -> Reply:
    last = snapshot.messages[-1]
    return Reply(f"Noted: {last.get('content')}.")


def _alive(names: frozenset[str]) -> Counter[str]:
    gc.collect()
    return Counter(name for o in gc.get_objects() if (name := type(o).__name__) in names)


@dataclass
class SessionsResult:
    """What a run of many sessions measured and found."""

    sessions: int
    audio_seconds: float
    wall_seconds: float = 0.0
    cpu_seconds: float = 0.0
    max_lag_ms: float = 0.0
    chunks: int = 0
    turns: int = 0
    vad_calls: int = 0
    threads_before: int = 0
    threads_after: int = 0
    timers_after: int = 0
    leftover: dict[str, int] = field(default_factory=dict)
    shared_models: int = 0
    rss_start_kib: int = 0
    rss_peak_kib: int = 0
    rss_end_kib: int = 0
    rss_trimmed_kib: int = 0
    blocks_start: int = 0
    blocks_end: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Right answers everywhere and nothing left behind."""
        return (not self.problems and self.timers_after == 0 and self.threads_after <= self.threads_before
                and not self.leftover)

    @property
    def mean_batch(self) -> float:
        """Chunks per batched VAD model call."""
        return self.chunks / self.vad_calls if self.vad_calls else 0.0


class _Conversation:
    """One session: its pipeline's input, what it must hear, and how it ended."""

    def __init__(self, index: int, batcher: VADBatcher, loop: asyncio.AbstractEventLoop) -> None:
        self.index = index
        self.tag = f"caller{index}"
        self.pair = Pair(LLMContext([{"role": "system", "content": "Be brief."}]))
        self.llm = ScriptedLLM(_echo, token_delay=0.02)
        self.input: Subject[F.Frame] = Subject()
        self.said: list[str] = []
        self.completed = asyncio.Event()
        self.errors: list[str] = []
        stage = pipeline(VADProcessor(batcher=batcher), self.pair.user(), self.llm, Speaker(), self.pair.assistant())
        for source in (self.pair.user(), self.pair.assistant()):
            source.events.on("on_error", lambda _s, e: self.errors.append(repr(e)))
        down, _up = stage.duplex(self.input, Subject())
        self.subscription: abc.DisposableBase | None = down.subscribe(
            lambda _f: None, lambda e: self._done(repr(e)), lambda: self._done(None),
            scheduler=loop_scheduler(loop),
        )

    def _done(self, error: str | None) -> None:
        if error is not None:
            self.errors.append(f"the output failed: {error}")
        self.completed.set()

    def words(self, text: str) -> str:
        """This session's transcript of a segment."""
        return f"{self.tag} says {text}"

    def settled(self) -> bool:
        """Every word heard is written and answered."""
        if not self.said:
            return True
        messages = self.pair.context().messages
        users = " ".join(m["content"] for m in messages if m["role"] == "user")
        return users == " ".join(self.said) and messages[-1]["role"] == "assistant"

    def check(self, all_tags: int) -> tuple[list[str], int]:
        """Problems with this session's conversation, and how many turns it had."""
        problems = [f"{self.tag}: {e}" for e in self.errors]
        messages = list(self.pair.context().messages)
        users = [m["content"] for m in messages if m["role"] == "user"]
        if " ".join(users) != " ".join(self.said):
            problems.append(f"{self.tag}: heard {users!r}, was told {self.said!r}")
        for m in messages[1:]:
            text = str(m.get("content"))
            foreign = [w for w in text.replace(".", " ").split() if w.startswith("caller") and w != self.tag]
            if foreign:
                problems.append(f"{self.tag}: another session's words in its context: {text!r}")
            if m["role"] == "assistant" and not (text.startswith("Noted: ") and text[7:-1] in users):
                problems.append(f"{self.tag}: answer {text!r} echoes none of its messages")
        return problems, len(users)

    def end(self) -> None:
        self.input.on_next(F.EndFrame())
        self.input.on_completed()

    def dispose(self) -> None:
        if self.subscription is not None:
            self.subscription.dispose()
            self.subscription = None


def _timeline(n: int, pcm: bytes, segments: list[tuple[str, float, float]], clip: tuple[float, float],
              stagger_ticks: int) -> tuple[dict[int, list[tuple[int, Any]]], int, list[list[str]]]:
    """What to send when: ``tick -> [(session, frame or segment text)]``, the last tick, segment texts per session."""
    start, end = clip
    first = int(start / CHUNK_SECONDS)
    last = int(end / CHUNK_SECONDS)
    chunks = [F.InputAudioRawFrame(pcm[2 * CHUNK_SAMPLES * k: 2 * CHUNK_SAMPLES * (k + 1)])
              for k in range(first, last)]
    heard = [(text, round((e + STT_DELAY - start) / CHUNK_SECONDS)) for text, s, e in segments
             if start <= s and e + STT_DELAY <= end]
    plan: dict[int, list[tuple[int, Any]]] = {}
    for i in range(n):
        offset = (i * 7) % max(1, stagger_ticks)
        plan.setdefault(offset, []).append((i, F.StartFrame()))
        for k, chunk in enumerate(chunks):
            plan.setdefault(offset + k + 1, []).append((i, chunk))
        for text, tick in heard:
            plan.setdefault(offset + tick + 1, []).append((i, text))
    return plan, max(plan), [[t for t, _ in heard] for _ in range(n)]


async def run_sessions(n: int = 200, clip: tuple[float, float] | None = None, *, speed: float = 1.0,
                       report: Any = None) -> SessionsResult:
    """Run ``n`` sessions on the running loop, check them, dispose them, inspect what is left.

    Args:
        n: How many concurrent sessions.
        clip: The part of the demo recording each session plays (seconds); default: all of it.
        speed: Play the audio this many times faster than real time.
        report: Called with progress lines (e.g. ``print``).
    """
    loop = asyncio.get_running_loop()
    pcm, segments = demo_call()
    clip = clip or (0.0, len(pcm) / 2 / 16000)
    say = report or (lambda _line: None)
    SileroModel.shared()
    await _warm_up(loop, pcm, segments)
    result = SessionsResult(n, clip[1] - clip[0])
    result.threads_before = threading.active_count()
    alive_before = _alive(PER_SESSION_TYPES)  # what the process held already (other runs, other tests)
    result.blocks_start = heap_blocks()
    result.rss_start_kib = result.rss_peak_kib = rss_kib()

    batcher = VADBatcher()
    conversations = [_Conversation(i, batcher, loop) for i in range(n)]
    plan, last_tick, _ = _timeline(n, pcm, segments, clip, stagger_ticks=50)
    say(f"{n} sessions built; playing {result.audio_seconds:.1f} s of audio to each")
    cpu0, wall0 = time.process_time(), time.perf_counter()
    t0 = loop.time()
    tick_seconds = CHUNK_SECONDS / speed
    for tick in range(last_tick + 1):
        due = t0 + tick * tick_seconds
        delay = due - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)
        else:
            result.max_lag_ms = max(result.max_lag_ms, -delay * 1000)
            await asyncio.sleep(0)
        for i, item in plan.get(tick, ()):
            conv = conversations[i]
            if isinstance(item, str):
                words = conv.words(item)
                conv.said.append(words)
                conv.input.on_next(F.TranscriptionFrame(words, finalized=True))
            else:
                if type(item) is F.InputAudioRawFrame:
                    result.chunks += 1
                conv.input.on_next(item)
        if tick % 50 == 0:
            result.rss_peak_kib = max(result.rss_peak_kib, rss_kib())
    deadline = loop.time() + SETTLE_SECONDS
    while not all(c.settled() for c in conversations) and loop.time() < deadline:  # noqa: ASYNC110 (a poll)
        await asyncio.sleep(0.05)
    result.rss_peak_kib = max(result.rss_peak_kib, rss_kib())
    result.wall_seconds = time.perf_counter() - wall0
    result.cpu_seconds = time.process_time() - cpu0
    for conv in conversations:
        problems, turns = conv.check(n)
        result.problems += problems
        result.turns += turns
    say(f"played and answered in {result.wall_seconds:.1f} s (CPU {result.cpu_seconds:.1f} s); ending every session")

    for conv in conversations:
        conv.end()
    try:
        async with asyncio.timeout(5.0):
            for conv in conversations:
                await conv.completed.wait()
    except TimeoutError:
        result.problems.append(f"{sum(not c.completed.is_set() for c in conversations)} sessions never completed")
    for conv in conversations:
        conv.dispose()
    result.vad_calls = batcher.calls
    del conversations, batcher, plan, conv  # the run's own references: nothing else may hold a session
    for _ in range(3):
        await asyncio.sleep(0)
    result.timers_after = live_timers(loop)
    result.threads_after = threading.active_count()
    result.leftover = dict(_alive(PER_SESSION_TYPES) - alive_before)
    result.shared_models = len(SileroModel._shared)
    result.blocks_end = heap_blocks()
    result.rss_end_kib = rss_kib()
    result.rss_trimmed_kib = _trimmed_rss()
    return result


def _trimmed_rss() -> int:
    """The resident set once the C allocator has handed freed memory back (glibc ``malloc_trim``; else as is)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass
    return rss_kib()


async def _warm_up(loop: asyncio.AbstractEventLoop, pcm: bytes, segments: list[tuple[str, float, float]]) -> None:
    """One short session first, so one-time costs (imports, caches, the model) are not counted as growth."""
    batcher = VADBatcher()
    conv = _Conversation(0, batcher, loop)
    plan, last_tick, _ = _timeline(1, pcm, segments, (7.0, 8.0), stagger_ticks=1)
    for tick in range(last_tick + 1):
        for _i, item in plan.get(tick, ()):
            conv.input.on_next(item if not isinstance(item, str) else F.TranscriptionFrame(conv.words(item)))
    conv.end()
    async with asyncio.timeout(5.0):
        await conv.completed.wait()
    conv.dispose()
    await asyncio.sleep(0)


# -- per-frame cost against the number of sessions ------------------------------------------------------------------

PER_FRAME_TURNS = 5
TURN_TICKS = 100  # 2 s a turn, 20 ms a tick


@dataclass
class PerFrameResult:
    """CPU per frame fed, at ``sessions`` live sessions."""

    sessions: int
    frames: int = 0
    cpu_seconds: float = 0.0
    gc_seconds: float = 0.0
    full_collections: int = 0
    answered: int = 0

    @property
    def us_per_frame(self) -> float:
        return 1e6 * self.cpu_seconds / self.frames if self.frames else math.nan

    @property
    def gc_us_per_frame(self) -> float:
        """The garbage collector's part of :attr:`us_per_frame`."""
        return 1e6 * self.gc_seconds / self.frames if self.frames else math.nan

    @property
    def gc_share(self) -> float:
        return self.gc_seconds / self.cpu_seconds if self.cpu_seconds else 0.0

    @property
    def ok(self) -> bool:
        return self.answered == self.sessions


def _turn_frames(turn: int) -> list[tuple[int, F.Frame]]:
    """One user turn as (tick offset, frame)."""
    chunk = F.InputAudioRawFrame(b"\x00\x00" * CHUNK_SAMPLES)
    words = f"turn {turn} please book a table"
    frames: list[tuple[int, F.Frame]] = [(0, F.VADUserStartedSpeakingFrame(0.2, 0.0)),
                                         (1, F.InterimTranscriptionFrame(words[:6]))]
    frames += [(2 + k, chunk) for k in range(5)]
    frames += [(8, F.TranscriptionFrame(words, finalized=True)), (9, F.VADUserStoppedSpeakingFrame(0.2, 0.0))]
    return frames


async def _per_frame(n: int, collector: str, stagger: int) -> PerFrameResult:
    loop = asyncio.get_running_loop()
    scheduler = loop_scheduler(loop)
    result = PerFrameResult(n)
    inputs: list[Subject[F.Frame]] = []
    pairs: list[Pair] = []
    subscriptions: list[abc.DisposableBase] = []
    for _ in range(n):
        pair = Pair(LLMContext([{"role": "system", "content": "Be brief."}]))
        source: Subject[F.Frame] = Subject()
        stage = pipeline(pair.user(), ScriptedLLM(lambda _s: Reply("Sure, a table for two."), token_delay=0.02),
                         Speaker(), pair.assistant())
        down, _up = stage.duplex(source, Subject())
        subscriptions.append(down.subscribe(lambda _f: None, scheduler=scheduler))
        inputs.append(source)
        pairs.append(pair)
    plan: dict[int, list[tuple[int, F.Frame]]] = {}
    for i in range(n):
        offset = (i * 7) % max(1, stagger)
        for turn in range(PER_FRAME_TURNS):
            for tick, frame in _turn_frames(turn):
                plan.setdefault(offset + turn * TURN_TICKS + tick, []).append((i, frame))
    gc.collect()
    if collector == "freeze":
        gc.freeze()
    elif collector == "off":
        gc.disable()
    spent = [0.0, 0.0]
    full = [0]

    def watch(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            spent[1] = time.process_time()
        else:
            spent[0] += time.process_time() - spent[1]
            full[0] += info["generation"] == 2

    gc.callbacks.append(watch)
    cpu0 = time.process_time()
    t0 = loop.time()
    try:
        for tick in range(max(plan) + 1):
            delay = t0 + tick * CHUNK_SECONDS - loop.time()
            await asyncio.sleep(max(0.0, delay))
            for i, frame in plan.get(tick, ()):
                inputs[i].on_next(frame)
                result.frames += 1
        await asyncio.sleep(3.0)  # the last answers
        result.cpu_seconds = time.process_time() - cpu0
    finally:
        gc.callbacks.remove(watch)
        gc.enable()
        if collector == "freeze":
            gc.unfreeze()
    result.gc_seconds, result.full_collections = spent[0], full[0]
    result.answered = sum(
        1 for p in pairs if sum(1 for m in p.context().messages if m["role"] == "assistant") == PER_FRAME_TURNS)
    for subscription in subscriptions:
        subscription.dispose()
    return result


def per_frame_costs(counts: tuple[int, ...] = (10, 100, 1000), collector: str = "on",
                    stagger: int = 50) -> list[PerFrameResult]:
    """The CPU cost of one frame at each number of live sessions (each count in a fresh virtual-time loop).

    ``stagger``: the sessions' turns start over this many 20 ms ticks (1: all in lockstep).
    """
    from rxvoice.testing import run_virtual

    results = []
    for n in counts:
        gc.collect()
        results.append(run_virtual(_per_frame(n, collector, stagger)))
    return results


def _report_per_frame(results: list[PerFrameResult]) -> bool:
    for r in results:
        print(f"{r.sessions:>5} sessions: {r.frames} frames, {r.us_per_frame:7.1f} µs/frame CPU, of which "
              f"{r.gc_us_per_frame:6.1f} in the garbage collector ({r.full_collections} full collections) and "
              f"{r.us_per_frame - r.gc_us_per_frame:6.1f} elsewhere; {r.answered}/{r.sessions} sessions answered "
              "every turn")
    first, last = results[0], results[-1]
    elsewhere = (last.us_per_frame - last.gc_us_per_frame) / (first.us_per_frame - first.gc_us_per_frame)
    print(" ".join(f"per_frame_us_{r.sessions}={r.us_per_frame:.1f}" for r in results)
          + f" growth={last.us_per_frame / first.us_per_frame:.2f} growth_outside_gc={elsewhere:.2f}"
          + f" gc_share_{last.sessions}={last.gc_share:.2f}")
    return all(r.ok for r in results)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--clip", type=float, nargs=2, metavar=("START", "END"), default=None,
                        help="seconds of the demo call each session plays (default: all of it)")
    parser.add_argument("--speed", type=float, default=1.0, help="times faster than real time")
    parser.add_argument("--rounds", type=int, default=1,
                        help="run it this many times in one process (memory must not grow from round to round)")
    parser.add_argument("--per-frame", action="store_true",
                        help="measure the CPU cost of a frame at 10, 100 and 1,000 live sessions instead")
    parser.add_argument("--counts", type=int, nargs="+", default=[10, 100, 1000],
                        help="session counts for --per-frame")
    parser.add_argument("--gc", choices=("on", "off", "freeze"), default="on",
                        help="the cyclic garbage collector during --per-frame")
    parser.add_argument("--stagger", type=int, default=50,
                        help="--per-frame: the sessions' turns start over this many 20 ms ticks (1: lockstep)")
    args = parser.parse_args(argv)
    if args.per_frame:
        return 0 if _report_per_frame(per_frame_costs(tuple(args.counts), args.gc, args.stagger)) else 1
    clip = tuple(args.clip) if args.clip else None
    ok = True
    for round_ in range(1, args.rounds + 1):
        if args.rounds > 1:
            print(f"-- round {round_} of {args.rounds}")
        ok = _report(asyncio.run(run_sessions(args.sessions, clip, speed=args.speed, report=print))) and ok  # type: ignore[arg-type]
    return 0 if ok else 1


def _report(r: SessionsResult) -> bool:
    print(f"{r.sessions} sessions x {r.audio_seconds:.1f} s of audio: {r.turns} user turns, {r.chunks} chunks, "
          f"{r.vad_calls} batched VAD calls (mean batch {r.mean_batch:.1f})")
    print(f"wall {r.wall_seconds:.1f} s, CPU {r.cpu_seconds:.1f} s, worst feeder lag {r.max_lag_ms:.0f} ms")
    print(f"after disposal: {r.timers_after} timers scheduled, threads {r.threads_before} -> {r.threads_after}, "
          f"per-session objects alive {r.leftover or 0}, shared Silero models {r.shared_models}")
    print(f"RSS KiB start {r.rss_start_kib}, peak {r.rss_peak_kib}, end {r.rss_end_kib} "
          f"(+{r.rss_end_kib - r.rss_start_kib}), {r.rss_trimmed_kib} once freed memory is handed back "
          f"(+{r.rss_trimmed_kib - r.rss_start_kib}); heap blocks {r.blocks_start} -> {r.blocks_end}")
    for problem in r.problems[:10]:
        print("PROBLEM:", problem)
    print(f"sessions={r.sessions} ok={r.ok} wall_s={r.wall_seconds:.1f} lag_ms={r.max_lag_ms:.0f} "
          f"live_timers={r.timers_after} extra_threads={r.threads_after - r.threads_before} "
          f"leftover={sum(r.leftover.values())} rss_delta_kib={r.rss_end_kib - r.rss_start_kib} "
          f"rss_trimmed_delta_kib={r.rss_trimmed_kib - r.rss_start_kib} "
          f"heap_delta_blocks={r.blocks_end - r.blocks_start}")
    return r.ok


if __name__ == "__main__":
    sys.exit(main())
