"""`rxvoice serve` under load: N loopback WebSocket clients each stream a call in real time.

The server runs in its own process (``rxvoice serve --port 0``: Silero VAD,
the recommended Smart Turn stop, the scripted model, ``--tts paced`` so the
bot side costs next to nothing), with the words from:

* ``--stt replay``: the call's transcript, sent by the client as finals
  (``{"type": "transcript"}``, lower case, no punctuation) 0.3 s after each
  segment ends: no STT cost, what a deployment with a cloud STT sees;
* ``--stt pocketsphinx`` / ``--stt whisper``: the offline recognizer in the server;
* ``--stt none``: placeholders at once.

Each client sends the call (default: the shared ``booking.wav``) in 20 ms
chunks on a real-time schedule, then 3 s of silence, and measures for each
labeled turn end the wall-clock time from the end of that speech (as sent) to
the ``turn_end`` event: the end-of-speech → decision latency, every lag
included. That latency includes the setup's own wait: the recommended stop
waits longer after words that read as unfinished (on ``booking.wav`` its
last turn, "thanks that is all", waits 1.3 s of silence on an idle server),
so the **lag** is also given: the latency minus the moment the rule itself
answers (the silence it asked for, reported in the ``turn_end`` event, and
never earlier than the replayed words, 0.3 s): what the server's load adds.
Starts are spread over ``--stagger`` seconds. A session is **held** when
every one of its turn ends is decided with a lag of at most ``--held-lag``
seconds (0.7: an end answered as soon as the words are in is then decided
within 1.0 s). Per N the table gives sessions held, latency p50/p90/p99, the
lag p50/p90/p99, the Smart
Turn verdict time p50/p99 as the server measured it (ask → answer: what an
inference backend adds shows here), the Smart Turn questions asked per call
(answered, fallen back or dropped), fallbacks, the verdicts dropped (the session gave them up: the
caller spoke again, or the turn ended on the words and the silence, before the verdict was back), the
server's CPU (its process tree: the
workers, a process pool, a local Ray instance), its memory
per active session, and, measured before the load, the memory and CPU of an
idle connection (``--idle`` connections opened and left silent for a second, less the server's own CPU over
as long with no connection).

Also per N: the VAD's stop event and each final's arrival after the end of its speech (``VAD stop``,
``words``: where a server-side STT's time goes).

``--inference``, ``--workers`` and ``--stop`` are passed to the server (``--stop speech-timeout``, a fixed
silence, shows the server's capacity apart from the recommended stop's own wait); ``--reconnect``
runs each N twice, the second time with one more client reconnecting in a
loop, and prints how far that moved the other sessions' p99. ``--backend-latency`` runs no server: the
Smart Turn questions of N sessions on the call's schedule go to the in-process backend and to a local
Ray Serve deployment in turn (runs alternating; Ray started on loopback and stopped at the end), and it
prints what Ray Serve adds to a verdict at p50 and p99.

The last line is ``n=N held=H p50_s=… p90_s=… p99_s=… rss_idle_mb=… lag_p50_s=…
lag_p90_s=… lag_p99_s=… cpu=… asks_per_call=…`` for the last configuration. Exact commands
for the figures are in benchmarks/README.md.

    python benchmarks/serve.py --n 8 16 24 --stt replay --runs 3
    python benchmarks/serve.py --n 4 --stt pocketsphinx
    python benchmarks/serve.py --n 24 --stt replay --inference ray
    python benchmarks/serve.py --backend-latency --n 24 --runs 3
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import subprocess
import sys
import time
import wave
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

REPLAY_DELAY = 0.3  # seconds after a segment's end its words arrive (--stt replay)
SERVER_STT = {"replay": "client", "pocketsphinx": "pocketsphinx", "whisper": "whisper", "none": "none"}


def shared() -> Path:
    for c in (os.environ.get("RXVOICE_SHARED", ""), "../shared", "/work/shared"):
        if c and (Path(c) / "audio").is_dir():
            return Path(c)
    raise SystemExit("the shared fixtures were not found: set RXVOICE_SHARED or give --wav")


@dataclass
class Call:
    pcm: bytes
    segments: list[dict[str, Any]]

    @property
    def ends(self) -> list[float]:
        return [s["end"] for s in self.segments if s["turn_end"]]

    @property
    def starts(self) -> list[float]:
        return [s["start"] for s in self.segments]


def load_call(wav: Path) -> Call:
    with wave.open(str(wav)) as w:
        pcm = w.readframes(w.getnframes())
    segments = json.loads(wav.with_name(wav.stem + ".transcript.json").read_text())["segments"]
    return Call(pcm, segments)


def words_of(text: str) -> str:
    """What an STT gives: lower case, no punctuation (the transcript's commas would leak the answer)."""
    return " ".join(re.findall(r"[a-z0-9']+", text.lower()))


# -- the server ---------------------------------------------------------------------------------------------------


def start_server(args: argparse.Namespace, stt: str) -> tuple[subprocess.Popen[str], int]:
    command = [sys.executable, "-m", "rxvoice.cli", "serve", "--port", "0", "--stt", SERVER_STT[stt],
               "--tts", "paced", "--stop", args.stop, "--max-sessions", "1000", "--inference", args.inference,
               "--workers", str(args.workers)]
    if args.model:
        command += ["--model", args.model]
    if args.ray_address:
        command += ["--ray-address", args.ray_address]
    if args.inference == "process-pool":
        command += ["--inference-processes", str(args.inference_processes)]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("OPENAI_BASE_URL", None)
    if args.whisper_jobs:
        Path(args.whisper_jobs).write_text("")
        command = [sys.executable, "-c", TIMED_SERVER, args.whisper_jobs, *command[3:]]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    assert proc.stdout is not None
    for line in proc.stdout:
        if "open http://" in line:
            return proc, int(line.split("open http://", 1)[1].split("/", 1)[0].rsplit(":", 1)[1])
    raise SystemExit("rxvoice serve did not start")


# The server with each Whisper job timed (--whisper-jobs): how long it waited for a worker, how long it ran
# (wall), the CPU of the thread that ran it (time.thread_time: the Python side; CTranslate2 computes on threads
# of its own) and that thread's wait for a core (its run-queue time, /proc schedstat). After each final, every
# thread's CPU and run-queue time so far. A wrapper around the stage's default offload, so the library itself
# stays as it is; one line a job.
TIMED_SERVER = """
import os, sys, threading, time
import rxvoice.services.whisper as whisper
from rxvoice.services.stt_session import _FEED, _FINISH, _OPEN  # the job kinds, read rather than copied
out, lock, offload = open(sys.argv.pop(1), "a", buffering=1), threading.Lock(), whisper.whisper_offload
KINDS = {_FEED: "feed", _FINISH: "final", _OPEN: "open"}
def queued_s():
    with open("/proc/thread-self/schedstat") as f:
        return int(f.read().split()[1]) / 1e9
def threads():
    rows = []
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/schedstat") as f:
                cpu, wait = f.read().split()[:2]
            with open(f"/proc/self/task/{tid}/comm") as f:
                name = f.read().strip().replace(" ", "_").replace(":", "_")
        except OSError:
            continue
        rows.append(f"{tid}:{name}:{int(cpu) / 1e9:.3f}:{int(wait) / 1e9:.3f}")
    return " ".join(rows)
def timed(job):
    args = getattr(job, "args", ())
    kind = KINDS.get(args[0], "?") if args else "close"
    queued = time.monotonic()
    def run():
        started, cpu, wait = time.monotonic(), time.thread_time(), queued_s()
        try:
            return job()
        finally:
            line = (f"{kind} {started - queued:.4f} {time.monotonic() - started:.4f} {time.thread_time() - cpu:.4f} "
                    f"{queued_s() - wait:.4f} {threading.get_native_id()}\\n")
            if kind == "final":
                line += f"threads {threads()}\\n"
            with lock:
                out.write(line)
    return offload(run)
whisper.whisper_offload = timed
from rxvoice.cli import main
sys.argv[0] = "rxvoice"
raise SystemExit(main())
"""


def whisper_jobs(path: str) -> str:
    """The timed jobs' figures: finals' and guesses' wait for a worker, wall, thread CPU and run-queue time
    p50/p90 and sums; then the process's threads by CPU (``tid:cpu/run-queue`` seconds, ``j`` for a thread
    that ran jobs, with the thread's name): CTranslate2's compute threads are the others with most CPU."""
    lines = [line.split() for line in Path(path).read_text().splitlines() if line.strip()]
    rows = [r for r in lines if r[0] != "threads"]
    out = []
    for kind in ("final", "feed"):
        mine = [r for r in rows if r[0] == kind]
        if not mine:
            continue
        waits, runs = sorted(float(r[1]) for r in mine), sorted(float(r[2]) for r in mine)
        cpus = sorted(float(r[3]) for r in mine if len(r) > 3)
        queued = sorted(float(r[4]) for r in mine if len(r) > 4)
        out.append(f"{kind}s={len(waits)} {kind}_wait_p50_s={pct(waits, 0.5):.3f} "
                   f"{kind}_wait_p90_s={pct(waits, 0.9):.3f} "
                   f"{kind}_wait_max_s={waits[-1]:.3f} {kind}_run_p50_s={pct(runs, 0.5):.3f} "
                   f"{kind}_run_p90_s={pct(runs, 0.9):.3f} {kind}_run_sum_s={sum(runs):.1f}")
        if cpus:
            out.append(f"{kind}_thread_cpu_p50_s={pct(cpus, 0.5):.3f} {kind}_thread_cpu_p90_s={pct(cpus, 0.9):.3f} "
                       f"{kind}_thread_cpu_sum_s={sum(cpus):.1f} {kind}_runqueue_p90_s={pct(queued, 0.9):.3f} "
                       f"{kind}_runqueue_sum_s={sum(queued):.1f}")
    snapshots = [r for r in lines if r[0] == "threads"]
    if snapshots:
        job_tids = {r[5] for r in rows if len(r) > 5}
        threads = sorted((tuple(t.split(":")) for t in snapshots[-1][1:]), key=lambda t: -float(t[2]))
        out.append("threads " + " ".join(
            f"{tid}{'j' if tid in job_tids else ''}:{name}:{float(cpu):.1f}/{float(wait):.1f}"
            for tid, name, cpu, wait in threads if float(cpu) >= 0.5))
    return " ".join(out)


def tree(pid: int) -> list[int]:
    """``pid`` and its descendants (worker processes, the process pool; not a Ray cluster's processes)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        with contextlib.suppress(OSError):
            for task in os.listdir(f"/proc/{p}/task"):
                todo += [int(c) for c in Path(f"/proc/{p}/task/{task}/children").read_text().split()]
    return out


def cpu_seconds(pid: int) -> float:
    total = 0.0
    for p in tree(pid):
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def rss_mb(pid: int) -> float:
    total = 0.0
    for p in tree(pid):
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) / 1024
    return total


# -- the clients --------------------------------------------------------------------------------------------------


@dataclass
class Session:
    latencies: list[float | None] = field(default_factory=list)
    lags: list[float | None] = field(default_factory=list)
    verdicts_ms: list[float] = field(default_factory=list)
    fallbacks: int = 0
    dropped: int = 0  # Smart Turn verdicts the session gave up (the caller spoke again, or the turn ended first)
    stops: list[float] = field(default_factory=list)  # end of speech → the VAD's stop event, per labeled end
    words: list[float] = field(default_factory=list)  # each final's arrival after the end of its speech (server STT)


async def client(port: int, call: Call, stt: str, delay: float, held_within: float) -> Session:
    """Stream the call; the decision latency of each labeled end (None: no turn end in its window)."""
    await asyncio.sleep(delay)
    got: list[tuple[float, float]] = []  # (when, the silence the deciding rule asked for)
    vad_stops: list[float] = []
    t0 = time.monotonic()  # reset when the audio starts
    result = Session()
    async with aiohttp.ClientSession() as http, http.ws_connect(f"http://127.0.0.1:{port}/ws") as ws:
        async def read() -> None:
            async for msg in ws:
                if msg.type != aiohttp.WSMsgType.TEXT:
                    continue
                event = json.loads(msg.data)
                kind = event.get("type")
                if kind == "turn_end":
                    got.append((time.monotonic(), float(event.get("silence") or 0.0)))
                elif kind == "verdict":
                    result.verdicts_ms.append(float(event["ms"]))
                elif kind == "fallback":
                    result.fallbacks += 1
                elif kind == "verdict_dropped":
                    result.dropped += 1
                elif kind == "vad" and not event.get("speaking"):
                    vad_stops.append(time.monotonic())
                elif kind == "final" and event.get("end") is not None:
                    result.words.append(time.monotonic() - t0 - float(event["end"]))  # after its own speech

        reader = asyncio.create_task(read())
        audio = call.pcm + b"\0" * (3 * 32000)
        words = sorted((s["end"] + REPLAY_DELAY, words_of(s["text"])) for s in call.segments) if stt == "replay" else []
        t0 = time.monotonic()
        for i in range(0, len(audio), 640):
            await ws.send_bytes(audio[i:i + 640])
            sent = (i + 640) / 32000
            while words and words[0][0] <= sent:
                await ws.send_str(json.dumps({"type": "transcript", "text": words.pop(0)[1], "final": True}))
            wait = t0 + sent - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)  # a real-time client: the real clock is the point
        await asyncio.sleep(0.5)
        await ws.close()
        reader.cancel()
    floor = REPLAY_DELAY if stt == "replay" else 0.0  # the words cannot be in earlier
    for end in call.ends:
        until = min([s for s in call.starts if s > end], default=end + 3.5)
        hits = [(g - t0 - end, need) for g, need in got if end - 0.3 <= g - t0 <= until + held_within]
        result.latencies.append(round(hits[0][0], 3) if hits else None)
        result.lags.append(round(hits[0][0] - max(floor, hits[0][1]), 3) if hits else None)
        after = [g - t0 - end for g in vad_stops if end - 0.3 <= g - t0 <= until + held_within]
        if after:
            result.stops.append(after[0])
    return result


async def reconnect_loop(port: int, stop: asyncio.Event) -> tuple[int, int]:
    """One client that connects, says nothing and leaves, again and again (at once after a refusal too):
    ``(sessions opened, starts refused)``. It comes from another loopback address (127.0.0.2), as another
    caller would: the server limits session starts per address."""
    n = refused = 0
    connector = aiohttp.TCPConnector(local_addr=("127.0.0.2", 0))
    async with aiohttp.ClientSession(connector=connector) as http:
        while not stop.is_set():
            try:
                async with http.ws_connect(f"http://127.0.0.1:{port}/ws") as ws:
                    await ws.receive()  # the hello
                n += 1
            except aiohttp.WSServerHandshakeError:  # 429: this address opens sessions too fast
                refused += 1
    return n, refused


async def load(port: int, n: int, call: Call, stt: str, stagger: float, held_within: float,
               reconnect: bool) -> tuple[list[Session], tuple[int, int]]:
    stop = asyncio.Event()
    looper = asyncio.create_task(reconnect_loop(port, stop)) if reconnect else None
    sessions = list(await asyncio.gather(*(client(port, call, stt, i * stagger / n, held_within) for i in range(n))))
    stop.set()
    return sessions, (await looper) if looper else (0, 0)


async def idle(port: int, m: int, pid: int) -> tuple[float, float]:
    """Memory (MB) and CPU (ms) per idle connection: ``m`` opened and left silent for a second, less what the
    server spends with no connection over as long (its own timers and threads, measured just before). They come
    from another loopback address (127.0.0.3): the server limits session starts per address (32 at once, then 4 a
    second), and the calls that follow come from 127.0.0.1."""
    connector = aiohttp.TCPConnector(local_addr=("127.0.0.3", 0))
    async with aiohttp.ClientSession(connector=connector) as http:
        await asyncio.sleep(0.5)
        base_cpu, base_wall = cpu_seconds(pid), time.monotonic()
        await asyncio.sleep(1.5)
        rate = (cpu_seconds(pid) - base_cpu) / (time.monotonic() - base_wall)  # CPU-s a second, no connections
        rss0, cpu0, wall0 = rss_mb(pid), cpu_seconds(pid), time.monotonic()
        sockets = [await http.ws_connect(f"http://127.0.0.1:{port}/ws") for _ in range(m)]
        await asyncio.sleep(1.0)
        rss1, cpu1 = rss_mb(pid), cpu_seconds(pid)
        own = rate * (time.monotonic() - wall0)
        for ws in sockets:
            await ws.close()
    return (rss1 - rss0) / m, 1000 * max(0.0, cpu1 - cpu0 - own) / m


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


@dataclass
class Run:
    n: int
    held: int
    latencies: list[float]
    lags: list[float]
    missed: int
    verdicts_ms: list[float]
    fallbacks: int
    cpu: float
    rss_active_mb: float
    rss_idle_mb: float
    cpu_idle_ms: float
    reconnects: int = 0
    refused: int = 0
    stops: list[float] = field(default_factory=list)
    words: list[float] = field(default_factory=list)
    dropped: int = 0

    @property
    def asks(self) -> int:
        """Smart Turn questions: answered, fallen back, or given up by the session (no longer needed)."""
        return len(self.verdicts_ms) + self.fallbacks + self.dropped

    @property
    def p(self) -> tuple[float, float, float]:
        values = self.latencies + [float("inf")] * self.missed  # a missed decision counts as the worst
        return pct(values, 0.5), pct(values, 0.9), pct(values, 0.99)

    @property
    def lag(self) -> tuple[float, float, float]:
        values = self.lags + [float("inf")] * self.missed
        return pct(values, 0.5), pct(values, 0.9), pct(values, 0.99)


def one_run(args: argparse.Namespace, stt: str, n: int, call: Call, reconnect: bool = False) -> Run:
    proc, port = start_server(args, stt)
    try:
        warm = Call(call.pcm[: 32000 * 4], [])
        asyncio.run(load(port, 1, warm, stt, 0.0, args.held_within, False))  # the first connection loads
        rss_idle_mb, cpu_idle_ms = asyncio.run(idle(port, args.idle, proc.pid))
        rss0 = rss_mb(proc.pid)
        peak = [rss0]
        cpu0, wall0 = cpu_seconds(proc.pid), time.monotonic()

        async def measured() -> tuple[list[Session], tuple[int, int]]:
            async def sample() -> None:
                while True:
                    peak.append(rss_mb(proc.pid))
                    await asyncio.sleep(0.5)

            sampler = asyncio.create_task(sample())
            try:
                return await load(port, n, call, stt, args.stagger, args.held_within, reconnect)
            finally:
                sampler.cancel()

        sessions, (reconnects, refused) = asyncio.run(measured())
        cpu = (cpu_seconds(proc.pid) - cpu0) / (time.monotonic() - wall0)
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
    held = sum(1 for s in sessions if all(x is not None and x <= args.held_lag for x in s.lags))
    values = [x for s in sessions for x in s.latencies if x is not None]
    lags = [x for s in sessions for x in s.lags if x is not None]
    missed = sum(1 for s in sessions for x in s.latencies if x is None)
    verdicts = [v for s in sessions for v in s.verdicts_ms]
    return Run(n, held, values, lags, missed, verdicts, sum(s.fallbacks for s in sessions), cpu, (max(peak) - rss0) / n,
               rss_idle_mb, cpu_idle_ms, reconnects, refused, [x for s in sessions for x in s.stops],
               [x for s in sessions for x in s.words], sum(s.dropped for s in sessions))


# -- what an inference backend adds to a verdict (--backend-latency) ----------------------------------------------


def verdict_windows(call: Call) -> list[tuple[float, Any]]:
    """``(when the server asks, the window)`` for each pause of the call: the last 8 s of audio up to the end of
    each segment, asked once its words are in (``REPLAY_DELAY`` after it), as the server asks Smart Turn."""
    import numpy as np

    samples = np.frombuffer(call.pcm, dtype="<i2").astype(np.float32) / 32768.0
    out = []
    for s in call.segments:
        end = int(s["end"] * 16000)
        out.append((s["end"] + REPLAY_DELAY, samples[max(0, end - 8 * 16000):end].copy()))
    return out


def backend_pass(backend: Any, n: int, asks: list[tuple[float, Any]], stagger: float) -> list[float]:
    """Every session's Smart Turn questions on the call's schedule (session ``i`` starting ``i × stagger / n``
    seconds in), each window sent to ``backend`` when its session asks: the ask → answer time of each, in ms."""
    import threading

    schedule = sorted((i * stagger / n + at, k) for i in range(n) for k, (at, _w) in enumerate(asks))
    done: list[float] = []
    lock = threading.Lock()
    finished = threading.Event()
    t0 = time.monotonic()
    for at, k in schedule:
        wait = t0 + at - time.monotonic()
        if wait > 0:
            time.sleep(wait)  # a real-time schedule: the real clock is the point
        sent = time.monotonic()

        def answered(_f: Any, sent: float = sent) -> None:
            with lock:
                done.append(1000 * (time.monotonic() - sent))
                if len(done) == len(schedule):
                    finished.set()

        backend.turn_probabilities([asks[k][1]]).add_done_callback(answered)
    if not finished.wait(60):
        raise SystemExit(f"{backend!r}: {len(schedule) - len(done)} verdicts not answered within 60 s")
    return done


def backend_latency(args: argparse.Namespace, call: Call) -> None:
    """Smart Turn verdicts of N sessions on one schedule, in process and on a local Ray Serve deployment, runs
    alternating: what Ray Serve adds to a verdict, apart from the rest of the server (its sessions, VAD, words).
    Ray is started on loopback (``--ray-cpus`` CPUs) and stopped at the end.

    Each backend has the machine to itself during its run (sending every window to both at once made them
    compete for the cores, and the in-process pool's four threads won over the one replica: that measured the
    split of the CPU, not Ray). On a machine shared with other work the difference is the other work's noise:
    measure it on a quiet one."""
    import ray
    from ray import serve

    from rxvoice.inference import InProcessBackend, RayServeBackend

    asks = verdict_windows(call)
    model = args.model or None
    print(f"# backend latency: Smart Turn verdicts of N sessions ({len(asks)} asks a call, starts over "
          f"{args.stagger} s), in process vs Ray Serve on loopback; cores {len(os.sched_getaffinity(0))}, "
          f"load average {os.getloadavg()[0]:.1f}")
    ray.init(num_cpus=args.ray_cpus, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False,
             configure_logging=False)
    try:
        backends = {"in-process": InProcessBackend(model), "ray": RayServeBackend(model=model)}
        for b in backends.values():  # warm: the first calls load and compile
            for _ in range(3):
                b.turn_probabilities([asks[0][1]]).result(timeout=60)
        print(f"{'backend':<11} {'N':>3} {'verdicts':>8} {'p50 ms':>7} {'p90 ms':>7} {'p99 ms':>7}")
        added: dict[int, list[tuple[float, float]]] = {}
        for n in args.n:
            for _ in range(args.runs):
                got = {}
                for name, b in backends.items():
                    ms = backend_pass(b, n, asks, args.stagger)
                    got[name] = (pct(ms, 0.5), pct(ms, 0.99))
                    print(f"{name:<11} {n:>3} {len(ms):>8} {pct(ms, 0.5):>7.1f} {pct(ms, 0.9):>7.1f} "
                          f"{pct(ms, 0.99):>7.1f}", flush=True)
                d50, d99 = got["ray"][0] - got["in-process"][0], got["ray"][1] - got["in-process"][1]
                added.setdefault(n, []).append((d50, d99))
                print(f"{'':<11} {n:>3} Ray Serve added p50 {d50:+.1f} ms, p99 {d99:+.1f} ms", flush=True)
        for b in backends.values():
            b.close()
    finally:
        serve.shutdown()
        ray.shutdown()
    for n, pairs in added.items():
        p50s, p99s = sorted(p for p, _ in pairs), sorted(p for _, p in pairs)
        print(f"n={n} runs={len(pairs)} added_p50_ms={p50s[len(p50s) // 2]:.1f} added_p99_ms={p99s[len(p99s) // 2]:.1f}"
              f" added_p99_ms_min={p99s[0]:.1f} added_p99_ms_max={p99s[-1]:.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--n", type=int, nargs="+", default=[8, 16, 24])
    parser.add_argument("--stt", nargs="+", default=["replay"], choices=sorted(SERVER_STT))
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--stagger", type=float, default=5.0,
                        help="spread the clients' starts over S seconds (default 5; 0: every pause of every call at "
                             "the same moment, the worst case)")
    parser.add_argument("--held-within", type=float, default=1.0, metavar="S",
                        help="a turn end is matched to a labeled end when it comes before the next speech starts, or "
                             "at most S seconds after that (default 1.0)")
    parser.add_argument("--held-lag", type=float, default=0.7, metavar="S",
                        help="a session is held when each of its turn ends is decided at most S seconds after the "
                             "moment the setup's own rule answers it (default 0.7: an end answered as soon as the "
                             "replayed words are in, 0.3 s after the speech, is then decided within 1.0 s)")
    parser.add_argument("--idle", type=int, default=32, metavar="M",
                        help="idle connections for the idle figures (default 32: the CPU is read in 10 ms ticks)")
    parser.add_argument("--inference", default="in-process", choices=["in-process", "process-pool", "ray"])
    parser.add_argument("--inference-processes", type=int, default=1)
    parser.add_argument("--ray-address")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--stop", default="smart-turn",
                        help="the server's --stop (default smart-turn, the recommended stop; speech-timeout: a fixed "
                             "silence, which shows the server's capacity apart from the recommended stop's own wait)")
    parser.add_argument("--reconnect", action="store_true",
                        help="run each N again with one client reconnecting in a loop; print the p99 it moved")
    parser.add_argument("--wav", type=Path, help="the call (a WAV with its .transcript.json; default: booking.wav)")
    parser.add_argument("--model", default=os.environ.get("RXVOICE_SMART_TURN_MODEL"))
    parser.add_argument("--backend-latency", action="store_true",
                        help="no server: the Smart Turn verdicts of N sessions on the call's schedule, in process and "
                             "on Ray Serve (a local instance, stopped at the end), runs alternating; prints what Ray "
                             "Serve adds to a verdict p50/p99")
    parser.add_argument("--whisper-jobs", metavar="FILE",
                        help="time each Whisper job in the server (its wait for a worker, its run, its thread's CPU "
                             "and run-queue time) into FILE, and every thread's CPU and run-queue time after each "
                             "final; print the finals' and guesses' figures and the threads'")
    parser.add_argument("--ray-cpus", type=int, default=2, help="CPUs of the local Ray instance (--backend-latency)")
    args = parser.parse_args()
    call = load_call(args.wav or shared() / "audio" / "conversation" / "booking.wav")
    if args.backend_latency:
        backend_latency(args, call)
        return
    print(f"# stop {args.stop}, inference {args.inference}, workers {args.workers}, stagger {args.stagger} s, "
          f"held: lag within "
          f"{args.held_lag} s, cores {len(os.sched_getaffinity(0))}, load average {os.getloadavg()[0]:.1f}")
    print(f"{'stt':<13} {'N':>3} {'held':>7} {'p50 s':>6} {'p90 s':>6} {'p99 s':>6} {'lag p50/p90/p99 s':>18} "
          f"{'verdict p50/p99 ms':>19} "
          f"{'asks/call':>9} {'fallbacks':>9} {'dropped':>7} {'CPU':>5} {'MB/active':>9} {'MB/idle':>8} "
          f"{'CPU ms/idle':>11} "
          f"{'VAD stop p50/p90 s':>18} {'words p50/p90 s':>15}")
    last: Run | None = None
    for stt in args.stt:
        for n in args.n:
            for _ in range(args.runs):
                runs = [one_run(args, stt, n, call)]
                if args.reconnect:
                    runs.append(one_run(args, stt, n, call, reconnect=True))
                for r in runs:
                    p50, p90, p99 = r.p
                    l50, l90, l99 = r.lag
                    tag = f" (+{r.reconnects} reconnects, {r.refused} refused)" if r.reconnects or r.refused else ""
                    print(f"{stt:<13} {n:>3} {r.held:>3}/{n:<3} {p50:>6.2f} {p90:>6.2f} {p99:>6.2f} "
                          f"{l50:>6.2f}/{l90:.2f}/{l99:<5.2f} "
                          f"{pct(r.verdicts_ms, 0.5):>9.0f}/{pct(r.verdicts_ms, 0.99):<9.0f} "
                          f"{r.asks / n:>9.1f} {r.fallbacks:>9} {r.dropped:>7} "
                          f"{r.cpu:>5.0%} {r.rss_active_mb:>9.1f} {r.rss_idle_mb:>8.2f} {r.cpu_idle_ms:>11.2f} "
                          f"{pct(r.stops, 0.5):>9.2f}/{pct(r.stops, 0.9):<8.2f} "
                          f"{pct(r.words, 0.5):>7.2f}/{pct(r.words, 0.9):<7.2f}{tag}",
                          flush=True)
                if args.whisper_jobs:
                    print(f"# whisper jobs (the last run): {whisper_jobs(args.whisper_jobs)}", flush=True)
                if args.reconnect:
                    moved = 1000 * (runs[1].p[2] - runs[0].p[2])
                    moved_lag = 1000 * (runs[1].lag[2] - runs[0].lag[2])
                    print(f"{'':<13} {n:>3} a reconnect loop moved p99 by {moved:+.0f} ms (lag p99 by "
                          f"{moved_lag:+.0f} ms)", flush=True)
                last = runs[0]
    if last is not None:
        p50, p90, p99 = last.p
        l50, l90, l99 = last.lag
        print(f"n={last.n} held={last.held} p50_s={p50:.3f} p90_s={p90:.3f} p99_s={p99:.3f} "
              f"rss_idle_mb={last.rss_idle_mb:.2f} lag_p50_s={l50:.3f} lag_p90_s={l90:.3f} lag_p99_s={l99:.3f} "
              f"cpu={last.cpu:.2f} asks_per_call={last.asks / last.n:.1f} "
              f"words_p90_s={pct(last.words, 0.9):.3f} fallbacks={last.fallbacks} dropped={last.dropped}")


if __name__ == "__main__":
    main()

