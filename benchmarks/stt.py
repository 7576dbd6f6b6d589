"""PocketSphinxSTT: word error rate and real-time factor on the booking call, the shared calls and espeak-ng voices.

Each recording goes through the Silero VAD and PocketSphinxSTT in virtual time
(:func:`rxvoice.cli.transcribe.transcribe`, recognition inline), so the CPU time
measured is the recognizer's and the VAD's. The espeak-ng recordings are made
here, in a temporary folder (espeak-ng on the PATH, resampled to 16 kHz with
libsoxr), from sentences a voice agent hears.

    python benchmarks/stt.py            # prints a table; --json for JSON
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import wave
from pathlib import Path

import numpy as np
import soxr

from rxvoice.cli.transcribe import transcribe
from rxvoice.cli.wav import read_wav
from rxvoice.pipeline import inline_offload
from rxvoice.services.stt import PocketSphinxSTT, word_error_rate
from rxvoice.services.tts import read_wav_pcm
from rxvoice.testing import load_transcript

SENTENCES = [
    "I would like to book a table for two tonight.",
    "Can you send me the invoice for last month?",
    "My flight leaves on Friday morning at nine.",
    "Thank you, that is all for today.",
]
VOICES = [("en-us", 150), ("en-gb", 150), ("en-us+f3", 140), ("en-us", 120)]


def shared() -> Path:
    for c in (os.environ.get("RXVOICE_SHARED", ""), "../shared", "/work/shared"):
        if c and (Path(c) / "audio").is_dir():
            return Path(c)
    raise SystemExit("the shared fixtures were not found: set RXVOICE_SHARED")


def espeak_recording(folder: Path, name: str, voice: str, wpm: int) -> tuple[Path, str]:
    """The sentences spoken by ``voice``, 0.8 s apart, 16 kHz mono; and the reference text."""
    pieces = [np.zeros(8000, dtype=np.int16)]
    for text in SENTENCES:
        out = subprocess.run(["espeak-ng", "--stdout", "-v", voice, "-s", str(wpm), text], capture_output=True,
                             check=True).stdout
        pcm, rate = read_wav_pcm(out)
        samples = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768
        pieces += [(soxr.resample(samples, rate, 16000) * 32767).astype(np.int16), np.zeros(12800, dtype=np.int16)]
    path = folder / f"{name}.wav"
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(np.concatenate(pieces).tobytes())
    return path, " ".join(SENTENCES)


def measure(path: Path, reference: str) -> dict[str, object]:
    recording = read_wav(path)
    stt = PocketSphinxSTT(offload=inline_offload)
    started = time.process_time()
    heard = transcribe(recording, stt)
    cpu = time.process_time() - started
    text = " ".join(s.text for s in heard.segments)
    return {"recording": path.name, "seconds": round(recording.duration, 2), "words": len(reference.split()),
            "wer": round(word_error_rate(reference, text), 3), "rtf": round(cpu / recording.duration, 3),
            "heard": text}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--calls", type=int, default=3, help="how many of the shared calls to include (default 3)")
    args = parser.parse_args()
    rows = []
    booking = shared() / "audio" / "conversation" / "booking.wav"
    calls = sorted((shared() / "audio" / "calls").glob("*.wav"))[: args.calls]
    for wav in [booking, *calls]:
        ref = load_transcript(wav.with_name(wav.stem + ".transcript.json"))
        rows.append(measure(wav, " ".join(s.text for s in ref.segments)))
    if shutil.which("espeak-ng"):
        with tempfile.TemporaryDirectory() as tmp:
            for voice, wpm in VOICES:
                path, ref = espeak_recording(Path(tmp), f"espeak-{voice}-{wpm}", voice, wpm)
                rows.append(measure(path, ref))
    else:
        print("espeak-ng is not installed: its recordings are left out", file=sys.stderr)
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"{'recording':<34} {'s':>6} {'words':>5} {'WER':>6} {'RTF':>6}")
    for r in rows:
        print(f"{r['recording']:<34} {r['seconds']:>6} {r['words']:>5} {r['wer']:>6} {r['rtf']:>6}")
    words = sum(int(r["words"]) for r in rows)  # type: ignore[call-overload]
    pooled = sum(float(r["wer"]) * int(r["words"]) for r in rows) / words  # type: ignore[call-overload]
    print(f"pooled WER {pooled:.3f} over {words} words")


if __name__ == "__main__":
    main()
