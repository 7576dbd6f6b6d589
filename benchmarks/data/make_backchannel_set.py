"""Make the backchannel set: the bot speaks, the caller says continuers and real interruptions over it.

Each recording is the caller's channel (16 kHz mono, what a voice agent's
input hears with the bot's echo cancelled) with a transcript beside it:
``segments`` are the caller's utterances (``kind``: ``continuer`` or
``interruption``; ``turn_end`` true for an interruption), ``bot`` the
intervals in which the bot speaks (its own speech, synthesized too, is
written as ``<name>.bot.wav`` to listen to). An interruption is the last
thing the caller says in a bot turn, said while the bot still speaks (the
bot's interval runs to the end of its sentence: when the bot is
interrupted is what is measured). Recordings 01-06 are the tune half,
07-12 the report half.

Everything is spoken by espeak-ng (a voice per recording, the bot in
another) and assembled with numpy; sox resamples and trims. Deterministic
(fixed random numbers per recording). Usage::

    python benchmarks/data/make_backchannel_set.py [OUT]   # default ~/.cache/rxvoice/backchannels
    python benchmarks/data/make_backchannel_set.py tests/data/backchannels --fixture   # the tests' recording
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import tempfile
import wave
from pathlib import Path

import numpy as np

RATE = 16000
TRIM = ["silence", "1", "0.01", "0.5%", "reverse", "silence", "1", "0.01", "0.5%", "reverse"]

BOT = [
    "Your card ending in four two one was charged forty two dollars on Tuesday at a grocery store downtown, "
    "and the charge is still pending.",
    "I can open a dispute for you today, and while we look into it the amount will be credited back to your "
    "account within three business days.",
    "To send a replacement card I will need to confirm the address we have on file, which is the one on "
    "Maple Street in the north part of town.",
    "Our branch is open from nine in the morning until five in the afternoon on weekdays, and from ten until "
    "two on Saturdays, but it is closed on Sundays.",
    "The new card should arrive in five to seven days, and you will get a text message as soon as it has "
    "been shipped so you can track it.",
    "If you would like, I can also set up alerts so that you hear from us every time a purchase over fifty "
    "dollars is made with your card.",
]
CONTINUERS = [
    "mm-hmm", "uh-huh", "yeah", "right", "okay", "I see", "sure", "got it", "oh okay", "yeah yeah", "mhm",
    "exactly", "alright", "yes", "oh really", "okay okay", "right right", "I see, okay",
]
INTERRUPTIONS = [
    "wait", "no", "stop", "hold on a second", "wait, I meant Tuesday", "no, that's not right",
    "actually can I change the date", "sorry, can you repeat that", "what about Friday instead",
    "yeah but I already paid that", "okay so what's the total", "right, and can I add a second card",
    "hang on, which account is that", "can you send it by email", "that's the wrong address",
]
VOICES = ["en-gb+f3", "en-us+m2", "en-029+m3", "en-us+f4", "en-gb-scotland+f1", "en-us+m5", "en-gb-x-rp+m1",
          "en-us-nyc+f2", "en-gb+m4", "en-us+f1", "en-gb-x-gbclan+m3", "en-us+m1"]


def speak(text: str, voice: str, speed: int, pitch: int, work: Path) -> np.ndarray:
    raw, out = work / "raw.wav", work / "out.wav"
    subprocess.run(["espeak-ng", "-v", voice, "-s", str(speed), "-p", str(pitch), "-w", str(raw), text], check=True)
    subprocess.run(["sox", str(raw), "-r", str(RATE), "-c", "1", "-b", "16", "-D", str(out), *TRIM], check=True)
    with wave.open(str(out)) as w:
        return np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16).astype(np.float32)


def write(path: Path, samples: np.ndarray) -> None:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(np.clip(samples, -32768, 32767).astype(np.int16).tobytes())


def make(n: int, out: Path, work: Path, bot_turns: int = len(BOT)) -> None:
    rng = random.Random(1000 + n)
    voice = VOICES[(n - 1) % len(VOICES)]
    speed, pitch = rng.randint(150, 185), rng.randint(40, 60)
    bot_voice = "en-us+f3" if "f" not in voice.split("+")[-1] else "en-us+m3"
    t = 0.5
    bot_intervals: list[list[float]] = []
    segments: list[dict[str, object]] = []
    pieces: list[tuple[float, np.ndarray]] = []
    bot_pieces: list[tuple[float, np.ndarray]] = []
    for k in rng.sample(range(len(BOT)), bot_turns):
        speech = speak(BOT[k], bot_voice, 170, 50, work)
        length = len(speech) / RATE
        start, cursor = t, t + rng.uniform(0.8, 1.6)
        interrupt = rng.random() < 0.6 if bot_turns > 2 else len(bot_intervals) == 1
        end = start + length
        while True:
            text = rng.choice(CONTINUERS)
            said = speak(text, voice, speed, pitch, work)
            d = len(said) / RATE
            if cursor + d > end - (3.0 if interrupt else 0.6):
                break
            pieces.append((cursor, said))
            segments.append({"text": text, "start": round(cursor, 3), "end": round(cursor + d, 3),
                             "turn_end": False, "kind": "continuer"})
            cursor += d + rng.uniform(1.2, 2.8)
        if interrupt:
            text = rng.choice(INTERRUPTIONS)
            said = speak(text, voice, speed, pitch, work)
            d = len(said) / RATE
            # Said while the bot still speaks, at least 0.5 s before its sentence would end: whether (and when)
            # the bot is interrupted is what is measured, so the bot's interval runs to its sentence's end.
            at = min(max(cursor, start + 1.0), end - d - 0.5)
            pieces.append((at, said))
            segments.append({"text": text, "start": round(at, 3), "end": round(at + d, 3), "turn_end": True,
                             "kind": "interruption"})
        t = end + rng.uniform(1.0, 2.0)
        bot_intervals.append([round(start, 3), round(end, 3)])
        bot_pieces.append((start, speech))
    total = int((t + 1.0) * RATE)
    caller, bot = np.zeros(total, dtype=np.float32), np.zeros(total, dtype=np.float32)
    for at, samples in pieces:
        i = int(at * RATE)
        caller[i:i + len(samples)] += samples
    for at, samples in bot_pieces:
        i = int(at * RATE)
        bot[i:i + len(samples)] += samples
    caller += np.random.default_rng(n).normal(0.0, 3.0, total).astype(np.float32)  # a quiet noise floor
    name = f"bc{n:02d}"
    write(out / f"{name}.wav", caller)
    write(out / f"{name}.bot.wav", bot)
    meta = {"voice": voice, "speed": speed, "pitch": pitch, "bot_voice": bot_voice,
            "half": "tune" if n <= 6 else "report"}
    transcript = {"sample_rate": RATE, "duration": round(total / RATE, 3), "segments": segments,
                  "bot": bot_intervals, "meta": meta}
    (out / f"{name}.transcript.json").write_text(json.dumps(transcript, indent=2) + "\n")


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    out = Path(args[0]) if args else Path.home() / ".cache" / "rxvoice" / "backchannels"
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        if "--fixture" in sys.argv:  # the tests' one short recording: two bot turns, the second interrupted
            make(1, out, Path(tmp), bot_turns=2)
            print(f"1 recording written to {out}")
            return
        for n in range(1, 13):
            make(n, out, Path(tmp))
    print(f"12 recordings written to {out}")


if __name__ == "__main__":
    main()
