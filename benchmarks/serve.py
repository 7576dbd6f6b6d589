"""`rxvoice serve` under load: N loopback WebSocket clients each stream the booking call in real time.

The server runs in its own process (``rxvoice serve --port 0``, Silero VAD +
Smart Turn, the scripted model, ``--tts paced`` so the bot side costs next to
nothing), with Whisper tiny.en (``--stt whisper``), PocketSphinx (``--stt pocketsphinx``) or without words
(``--stt none``). Each client sends ``booking.wav`` in 20 ms chunks on a
real-time schedule, then 3 s of silence, and measures, for each of the call's
three labeled turn ends, the wall-clock time from the end of that speech (as
sent) to the ``turn_end`` event coming back: the end of speech to turn
decision, every lag included. The clients' starts are spread over
``--stagger`` seconds (all at once, every call pauses at the same moment).

A session is held in real time when its three turns all end, each within
1.5 s of the end of speech; N is held when every session is. The table gives,
per N: sessions held, the median and worst decision latency, and the server's
CPU use.

    python benchmarks/serve.py                 # N = 1 2 4 8 12, both STT settings
    python benchmarks/serve.py --n 1 4 --stt none --runs 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
import wave
from pathlib import Path

import aiohttp

HELD_WITHIN = 1.5  # seconds from the end of speech to the decision


def shared() -> Path:
    for c in (os.environ.get("RXVOICE_SHARED", ""), "../shared", "/work/shared"):
        if c and (Path(c) / "audio").is_dir():
            return Path(c)
    raise SystemExit("the shared fixtures were not found: set RXVOICE_SHARED")


def start_server(stt: str, model: str | None) -> tuple[subprocess.Popen[str], int]:
    command = [sys.executable, "-m", "rxvoice.cli", "serve", "--port", "0", "--stt", stt, "--tts", "paced",
               "--stop", "smart-turn"]
    if model:
        command += ["--model", model]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert proc.stdout is not None
    for line in proc.stdout:
        if "open http://" in line:
            return proc, int(line.split("open http://", 1)[1].split("/", 1)[0].rsplit(":", 1)[1])
    raise SystemExit("rxvoice serve did not start")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def client(port: int, pcm: bytes, ends: list[float], starts: list[float], delay: float = 0.0
                 ) -> list[float | None]:
    """Stream the call; the decision latency of each labeled end (None: no turn end in its window)."""
    await asyncio.sleep(delay)
    got: list[float] = []
    async with aiohttp.ClientSession() as session, session.ws_connect(f"http://127.0.0.1:{port}/ws") as ws:
        async def read() -> None:
            async for msg in ws:
                if msg.type == aiohttp.WSMsgType.TEXT and json.loads(msg.data).get("type") == "turn_end":
                    got.append(time.monotonic())

        reader = asyncio.create_task(read())
        silence = b"\0" * (3 * 32000)
        audio = pcm + silence
        t0 = time.monotonic()
        for i in range(0, len(audio), 640):
            await ws.send_bytes(audio[i:i + 640])
            delay = t0 + (i + 640) / 32000 - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
        await asyncio.sleep(0.5)
        await ws.close()
        reader.cancel()
    out: list[float | None] = []
    for end in ends:
        until = min([s for s in starts if s > end], default=end + 3.5)
        hits = [g - t0 - end for g in got if end - 0.3 <= g - t0 <= until + HELD_WITHIN]
        out.append(round(hits[0], 3) if hits else None)
    return out


async def load(
    port: int, n: int, pcm: bytes, ends: list[float], starts: list[float], stagger: float = 0.0
) -> list[list[float | None]]:
    """N clients, the i-th starting ``i * stagger / n`` seconds after the first."""
    return list(await asyncio.gather(*(client(port, pcm, ends, starts, i * stagger / n) for i in range(n))))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--n", type=int, nargs="+", default=[1, 2, 4, 8, 12])
    parser.add_argument("--stt", nargs="+", default=["pocketsphinx", "none"],
                        choices=["whisper", "pocketsphinx", "none"])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--stagger", type=float, default=5.0,
                        help="spread the clients' starts over S seconds (default 5; 0: all at once, every pause "
                             "of every call at the same moment, the worst case)")
    parser.add_argument("--model", default=os.environ.get("RXVOICE_SMART_TURN_MODEL"))
    args = parser.parse_args()
    wav = shared() / "audio" / "conversation" / "booking.wav"
    with wave.open(str(wav)) as w:
        pcm = w.readframes(w.getnframes())
    segments = json.loads(wav.with_name("booking.transcript.json").read_text())["segments"]
    ends = [s["end"] for s in segments if s["turn_end"]]
    starts = [s["start"] for s in segments]
    print(f"{'stt':<13} {'N':>3} {'held':>6} {'median s':>9} {'p90 s':>6} {'worst s':>8} {'server CPU':>11}")
    for stt in args.stt:
        for n in args.n:
            for _ in range(args.runs):
                proc, port = start_server(stt, args.model)
                try:
                    asyncio.run(load(port, 1, pcm[: 32000 * 3], [], []))  # warm up: first connection loads
                    cpu0, wall0 = cpu_seconds(proc.pid), time.monotonic()
                    results = asyncio.run(load(port, n, pcm, ends, starts, args.stagger))
                    cpu = (cpu_seconds(proc.pid) - cpu0) / (time.monotonic() - wall0)
                finally:
                    proc.terminate()
                    proc.wait(10)
                held = sum(1 for r in results if all(x is not None and x <= HELD_WITHIN for x in r))
                values = [x for r in results for x in r if x is not None]
                missing = sum(1 for r in results for x in r if x is None)
                median = statistics.median(values) if values else float("nan")
                p90 = statistics.quantiles(values, n=10, method="inclusive")[-1] if len(values) > 1 else median
                worst = "missed" if missing else f"{max(values):.2f}"
                print(f"{stt:<13} {n:>3} {held:>3}/{n:<2} {median:>9.2f} {p90:>6.2f} {worst:>8} {cpu:>10.0%}",
                      flush=True)


if __name__ == "__main__":
    main()
