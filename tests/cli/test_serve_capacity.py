"""`rxvoice serve` as a server: workers sharing the port, admission across them, the token off loopback, a backend
that hangs, the client's own words. Loopback, a few connections each, bounded waits.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import wave
from importlib import resources
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from rxvoice.cli import serve, server
from tests.inference.test_backends import Hanging
from tests.transports.test_websocket import next_event, run, serving


def start(*args: str) -> tuple[subprocess.Popen[str], str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("OPENAI_BASE_URL", None)
    proc = subprocess.Popen([sys.executable, "-m", "rxvoice.cli", "serve", "--port", "0", "--tts", "paced",
                             "--stt", "none", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)
    assert proc.stdout is not None
    line = proc.stdout.readline()  # blocks until the server prints its address (or exits)
    if "open http" not in line:
        proc.kill()
        raise AssertionError(f"rxvoice serve did not start: {line}{proc.stderr.read() if proc.stderr else ''}")
    return proc, line.split("open ", 1)[1].split()[0]


def stop(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()


def test_workers_share_the_port_and_admit_against_the_machines_total(with_model: Path) -> None:
    proc, url = start("--workers", "2", "--max-sessions", "3", "--stop", "speech-timeout")
    base = url.rstrip("/")
    try:
        async def go() -> None:
            async with aiohttp.ClientSession() as client:
                sessions = []
                for _ in range(3):
                    ws = await client.ws_connect(f"{base}/ws")
                    hello = await next_event(ws, "hello", 30)
                    assert hello["setup"]["max_sessions"] == 3
                    sessions.append(ws)
                loads = []
                for _ in range(6):  # whichever worker answers, the machine's figure
                    async with client.get(f"{base}/load") as r:
                        loads.append(await r.json())
                assert {(x["sessions"], x["capacity"], x["load"]) for x in loads} == {(3, 3, 1.0)}, loads
                full = await client.ws_connect(f"{base}/ws")
                error = await next_event(full, "error", 10)
                assert error["message"].startswith("server full")
                await full.close()
                for ws in sessions:
                    await ws.close()

        run(go, 90)
        assert proc.poll() is None
    finally:
        stop(proc)


def test_off_loopback_a_token_is_made_up_printed_and_required(with_model: Path) -> None:
    proc, url = start("--host", "0.0.0.0", "--stop", "speech-timeout")
    try:
        assert "?token=" in url
        token = url.split("?token=", 1)[1]
        port = url.split(":")[2].split("/")[0]

        async def go() -> None:
            async with aiohttp.ClientSession() as client:
                with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                    await client.ws_connect(f"http://127.0.0.1:{port}/ws")
                assert refused.value.status == 401
                async with client.ws_connect(f"http://127.0.0.1:{port}/ws?token={token}") as ws:
                    await next_event(ws, "hello", 30)

        run(go, 60)
    finally:
        stop(proc)
    err = proc.stderr.read() if proc.stderr else ""
    assert "only over https or on localhost" in err and "--self-signed" in err  # the microphone note, honestly


def _call() -> tuple[bytes, list[dict[str, Any]]]:
    folder = resources.files("rxvoice.data")
    with resources.as_file(folder / "demo.wav") as path, wave.open(str(path)) as w:
        pcm = w.readframes(w.getnframes())
    return pcm, json.loads((folder / "demo.transcript.json").read_text())["segments"]


def test_a_hanging_backend_falls_back_the_page_is_told_and_the_turn_still_ends(
    with_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(server, "make_backend", lambda *a, **k: Hanging())
    options = serve.ServeOptions(stt="client", tts="paced", stop="smart-turn", model=with_model,
                                 inference_timeout=0.3, max_sessions=4)
    app = serve.make_app(options)
    pcm, segments = _call()
    first = segments[1]  # "you send me the invoice by email." (a turn end)
    audio = pcm[int(first["start"] * 32000) - 9600:int(first["end"] * 32000) + 3 * 32000]

    async def go() -> None:
        srv = await serving(app)
        loop = asyncio.get_running_loop()
        try:
            async with aiohttp.ClientSession() as client, client.ws_connect(srv.make_url("/ws")) as ws:
                events: list[dict[str, Any]] = []

                async def read() -> None:
                    async for msg in ws:
                        if msg.type == aiohttp.WSMsgType.TEXT:
                            events.append(json.loads(msg.data))

                reader = asyncio.create_task(read())
                t0 = loop.time()
                words_at = 0.3 + (first["end"] - first["start"]) + 0.3
                sent_words = False
                for i in range(0, len(audio), 640):
                    await ws.send_bytes(audio[i:i + 640])
                    if not sent_words and (i + 640) / 32000 >= words_at:  # the words, as a cloud STT gives them
                        sent_words = True
                        # Words the server's stop cannot answer on alone (finished ones would be answered without
                        # asking Smart Turn at all): the verdict is needed, and the backend hangs.
                        words = {"type": "transcript", "text": "you send me the invoice"}
                        await ws.send_str(json.dumps(words))
                    delay = t0 + (i + 640) / 32000 - loop.time()
                    if delay > 0:
                        await asyncio.sleep(delay)
                reader.cancel()
                kinds = [e["type"] for e in events]
                assert "fallback" in kinds, kinds
                fallback = next(e for e in events if e["type"] == "fallback")
                assert fallback["question"] == "turn" and fallback["backend"] == "hanging"
                ends = [e for e in events if e["type"] == "turn_end"]
                assert len(ends) == 1 and ends[0]["text"] == "you send me the invoice", events
        finally:
            await srv.close()

    run(go, 60)
