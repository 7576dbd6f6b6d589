"""Threads: many producers feeding one session on an asyncio loop, the core never entered twice at once.

A voice session really is fed from several threads: the microphone's
callback, the STT client's thread, the TTS/output thread. Here eight threads
feed one pipeline (VAD frames, audio, transcripts, the bot's speaking
notices upstream) while the loop runs the session's timers and the scripted
model. A counter around every entry into the pure cores (user, assistant,
model) detects any overlap.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from reactivex.subject import Subject

from rxvoice import LLMContext, pipeline
from rxvoice import frames as F
from rxvoice.aggregators import Pair
from rxvoice.pipeline import loop_scheduler
from rxvoice.testing import ScriptedLLM
from rxvoice.turns import SpeechTimeoutStop, TurnsConfig

from .conftest import Crashes

PRODUCERS = 8
WORDS_PER_STT_THREAD = 60


class Overlap:
    """Counts entries into the session's code; ``overlaps`` counts entries while another thread was inside.

    A handler may call its neighbour on the same thread (the model stage hands
    its answer to the assistant aggregator): that nests, it does not overlap.
    """

    def __init__(self) -> None:
        self.depth = 0
        self.owner: int | None = None
        self.overlaps = 0
        self.calls = 0
        self.threads: Counter[str] = Counter()
        self._lock = threading.Lock()

    def wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def guarded(*args: Any, **kwargs: Any) -> Any:
            me = threading.get_ident()
            with self._lock:
                if self.depth and self.owner != me:
                    self.overlaps += 1
                self.depth += 1
                self.owner = me
                self.calls += 1
                self.threads[threading.current_thread().name] += 1
            try:
                time.sleep(0)  # yield the GIL: invites another thread in (it must be kept out)
                return fn(*args, **kwargs)
            finally:
                with self._lock:
                    self.depth -= 1

        return guarded


class CountedLLM(ScriptedLLM):
    """A scripted model whose handler entries are counted too."""

    def __init__(self, overlap: Overlap, **kwargs: Any) -> None:
        super().__init__(lambda snapshot: f"Noted {len(snapshot.messages)}.", **kwargs)
        self.overlap = overlap

    def open(self, port: Any) -> Any:
        session = super().open(port)
        session.on_frame = self.overlap.wrap(session.on_frame)  # type: ignore[method-assign]
        return session


def test_eight_producer_threads_feed_one_session_serialized_and_lossless(crashes: Crashes) -> None:
    """Mic, STT, VAD and TTS threads at once: every frame and word arrives once, the cores never overlap."""
    overlap = Overlap()
    pair = Pair(LLMContext(), turns=TurnsConfig(stop=[SpeechTimeoutStop(user_speech_timeout=0.05)]))
    for core in (pair.user().machine, pair.assistant().core):
        for name in ("on_frame", "on_timer", "on_result", "start", "end", "sees", "end_of_input", "on_thought"):
            if hasattr(core, name):
                setattr(core, name, overlap.wrap(getattr(core, name)))
    llm = CountedLLM(overlap, token_delay=0.002)
    down: Subject[F.Frame] = Subject()
    up: Subject[F.Frame] = Subject()
    out: list[F.Frame] = []
    done = threading.Event()
    sent_words: list[str] = []
    sent_audio = [0]
    lock = threading.Lock()

    def mic(n: int) -> Callable[[], None]:
        def run() -> None:
            for _ in range(200):
                down.on_next(F.InputAudioRawFrame(bytes([n, 0]) * 160))
                with lock:
                    sent_audio[0] += 1
                time.sleep(0.001)
        return run

    def stt(n: int) -> Callable[[], None]:
        def run() -> None:
            for i in range(WORDS_PER_STT_THREAD):
                word = f"t{n}w{i}"
                with lock:
                    sent_words.append(word)
                down.on_next(F.InterimTranscriptionFrame(word[:3]))
                down.on_next(F.TranscriptionFrame(word, finalized=True))
                time.sleep(0.002)
        return run

    def vad() -> None:
        for _ in range(40):
            down.on_next(F.VADUserStartedSpeakingFrame(0.2))
            time.sleep(0.003)
            down.on_next(F.VADUserStoppedSpeakingFrame(0.2))
            time.sleep(0.004)

    def tts() -> None:
        for _ in range(40):
            up.on_next(F.BotStartedSpeakingFrame())
            time.sleep(0.003)
            up.on_next(F.BotStoppedSpeakingFrame())
            time.sleep(0.004)

    producers = [mic(1), mic(2), stt(1), stt(2), stt(3), stt(4), vad, tts]
    assert len(producers) == PRODUCERS

    async def main() -> None:
        loop = asyncio.get_running_loop()
        out_down, _ = pipeline(pair.user(), llm, pair.assistant()).duplex(down, up)
        subscription = out_down.subscribe(out.append, lambda e: done.set(), done.set,
                                          scheduler=loop_scheduler(loop))
        threads = [threading.Thread(target=p, name=f"producer-{i}") for i, p in enumerate(producers)]
        for t in threads:
            t.start()
        while any(t.is_alive() for t in threads):  # noqa: ASYNC110 (a poll of the producer threads)
            await asyncio.sleep(0.01)  # the loop keeps running the session's timers meanwhile
        down.on_next(F.EndFrame())
        down.on_completed()
        async with asyncio.timeout(5.0):
            while not done.is_set():  # noqa: ASYNC110 (set from any thread)
                await asyncio.sleep(0.01)
        subscription.dispose()

    asyncio.run(main())
    assert overlap.overlaps == 0, "two threads were inside the session at once"
    assert overlap.calls > 1000
    assert len(overlap.threads) >= 2  # inputs really were handled on several threads (and the loop's)
    said = " ".join(m["content"] for m in pair.context().messages if m["role"] == "user").split()
    assert sorted(said) == sorted(sent_words)  # every word once: nothing lost, nothing doubled
    audio = [f for f in out if type(f) is F.InputAudioRawFrame]
    assert len(audio) == sent_audio[0] == 400
    for n in (1, 2):  # each producer's frames keep their order (one thread, one order)
        assert [f for f in audio if f.audio[0] == n] == [F.InputAudioRawFrame(bytes([n, 0]) * 160)] * 200
    assert type(out[-1]) is F.EndFrame
    assert crashes.messages() == []


def test_disposing_while_producer_threads_drain_the_gate_never_raises(crashes: Crashes) -> None:
    """Producers push into one session while another thread disposes it, 60 rounds: no IndexError, no thread
    dies, nothing logged, and the producers' calls after the dispose are dropped at once."""
    from rxvoice.pipeline.session import Session

    died: list[BaseException] = []
    previous = threading.excepthook

    def hook(args: threading.ExceptHookArgs) -> None:
        died.append(args.exc_value if args.exc_value is not None else RuntimeError("thread died"))

    threading.excepthook = hook
    try:
        for round_ in range(60):
            session = Session()

            def work(i: int) -> None:
                sum(range(20))  # a little work, so the gate is held while others queue

            def produce(session: Session = session, work: Callable[[int], None] = work) -> None:
                for i in range(400):
                    session.run(work, i)

            producers = [threading.Thread(target=produce) for _ in range(4)]
            for t in producers:
                t.start()
            time.sleep(0.0005 * (round_ % 5))
            session.dispose()
            for t in producers:
                t.join(5)
            assert not any(t.is_alive() for t in producers)
            ran: list[int] = []
            session.run(ran.append, 1)
            assert ran == [] and not session._queue, f"round {round_}: a call ran or queued after dispose()"
    finally:
        threading.excepthook = previous
    assert died == []
    assert crashes.records == []
