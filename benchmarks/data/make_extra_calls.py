"""Make the extra labelled calls in ``benchmarks/data/extra_calls/`` (espeak-ng and sox; run once, committed).

Six caller-side calls that the recommended setup's defaults were NOT chosen on:
other voices (espeak-ng's named variants), other sentences, mid-sentence pauses
after words the development calls do not pause after ("because", "whether",
"a", "of", between list items, inside a phone number, an e-mail address spelled
with "dot"), one-word turns, ends on a number, noise in half, one telephone-band
call and one quiet call (speech at about -38 dBFS RMS).

    python benchmarks/data/make_extra_calls.py      # needs espeak-ng and sox on PATH
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import wave
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent / "extra_calls"
RATE = 16000

# (voice, words a minute, pitch, noise dBFS or None, telephone band, speech level dBFS RMS, segments)
# segment: (text, turn_end, seconds of silence after it)
CALLS: dict[str, tuple[str, int, int, float | None, bool, float, list[tuple[str, bool, float]]]] = {
    "x01_dentist": ("en-us+Annie", 160, 55, None, False, -24.0, [
        ("Hello, I'd like to move my appointment because", False, 0.7),
        ("something came up at work.", True, 1.8),
        ("It was on Thursday at ten.", True, 1.6),
        ("Do you know whether", False, 0.6),
        ("there's anything on Friday morning?", True, 2.0),
        ("Yes.", True, 1.5),
        ("Perfect, thank you so much.", True, 1.0),
    ]),
    "x02_grocery": ("en-gb+Andy", 170, 45, -50.0, False, -24.0, [
        ("Hi, I'd like to add a few things to my order:", False, 0.6),
        ("bread,", False, 0.5),
        ("milk,", False, 0.6),
        ("and a dozen eggs.", True, 1.7),
        ("Can you also take off the", False, 0.8),
        ("orange juice?", True, 2.2),
        ("No, that's everything.", True, 1.0),
    ]),
    "x03_bank_phone": ("en-us+Michael", 150, 48, None, True, -26.0, [
        ("My phone number is five five five,", False, 0.7),
        ("two one nine,", False, 0.6),
        ("four four zero eight.", True, 1.9),
        ("I think I was charged twice for a", False, 0.9),
        ("subscription last month.", True, 1.6),
        ("Could you check that for me?", True, 2.3),
        ("Okay, great.", True, 1.0),
    ]),
    "x04_email": ("en-gb-x-rp+Linda", 158, 58, -48.0, False, -24.0, [
        ("Sure, my email is m, a, r, k,", False, 0.8),
        ("dot, l, e, e,", False, 0.7),
        ("at yahoo dot com.", True, 1.8),
        ("And I'd like the receipt sent there instead of", False, 0.6),
        ("by post.", True, 2.1),
        ("Thanks, bye.", True, 1.0),
    ]),
    "x05_taxi": ("en-us-nyc+John", 175, 50, -52.0, False, -24.0, [
        ("I need a taxi from the station to the, uh", False, 0.7),
        ("Grand Hotel.", True, 1.5),
        ("For four people.", True, 1.7),
        ("If it's possible, um", False, 0.8),
        ("a big car with room for bags.", True, 2.0),
        ("Around six thirty.", True, 1.4),
        ("Lovely.", True, 1.0),
    ]),
    "x06_quiet_library": ("en-gb-scotland+Steph", 155, 52, None, False, -38.0, [
        ("Hello?", True, 1.6),
        ("I wanted to renew a couple of", False, 0.6),
        ("books that are due tomorrow.", True, 1.9),
        ("The card number is one two", False, 0.7),
        ("three four.", True, 1.8),
        ("Will that take long?", True, 1.0),
    ]),
}


def _segment_audio(text: str, voice: str, wpm: int, pitch: int, tmp: Path) -> np.ndarray:
    raw, trimmed = tmp / "raw.wav", tmp / "trim.wav"
    subprocess.run(["espeak-ng", "-v", voice, "-s", str(wpm), "-p", str(pitch), "-w", str(raw), text], check=True)
    # trim to the first and last sound, 16 kHz mono 16-bit
    subprocess.run(["sox", str(raw), "-r", str(RATE), "-c", "1", "-b", "16", str(trimmed),
                    "silence", "1", "0.01", "0.5%", "reverse", "silence", "1", "0.01", "0.5%", "reverse"], check=True)
    with wave.open(str(trimmed)) as w:
        return np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.float64) / 32768.0


def _pink(n: int, rng: np.random.Generator) -> np.ndarray:
    spectrum = np.fft.rfft(rng.standard_normal(n))
    f = np.fft.rfftfreq(n)
    f[0] = f[1]
    pink = np.fft.irfft(spectrum / np.sqrt(f), n)
    return pink / np.sqrt(np.mean(pink**2))


def _telephone(samples: np.ndarray, tmp: Path) -> np.ndarray:
    src, dst = tmp / "wide.wav", tmp / "band.wav"
    _write(src, samples)
    subprocess.run(["sox", str(src), str(dst), "sinc", "300-3400", "rate", "8000", "rate", str(RATE)], check=True)
    with wave.open(str(dst)) as w:
        return np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.float64)[: len(samples)] / 32768.0


def _write(path: Path, samples: np.ndarray) -> None:
    pcm = np.clip(np.round(samples * 32767.0), -32768, 32767).astype("<i2")
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(pcm.tobytes())


def make(name: str, seed: int) -> None:
    voice, wpm, pitch, noise, band, level, segments = CALLS[name]
    rng = np.random.default_rng(seed)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        parts = [np.zeros(round(0.5 * RATE))]
        t = 0.5
        labels = []
        for text, turn_end, gap in segments:
            audio = _segment_audio(text, voice, wpm, pitch, tmp)
            start, end = t, t + len(audio) / RATE
            labels.append({"text": text, "start": round(start, 3), "end": round(end, 3), "turn_end": turn_end})
            parts += [audio, np.zeros(round(gap * RATE))]
            t = end + gap
        speech = np.concatenate(parts)
        voiced = np.concatenate([p for p in parts if np.any(p)])
        speech *= 10 ** (level / 20) / np.sqrt(np.mean(voiced**2))
        if band:
            speech = _telephone(speech, tmp)
        if noise is not None:
            speech = speech + _pink(len(speech), rng) * 10 ** (noise / 20)
    OUT.mkdir(exist_ok=True)
    _write(OUT / f"{name}.wav", speech)
    meta = {"voice": voice, "wpm": wpm, "pitch": pitch, "noise_dbfs": noise, "telephone_band": band,
            "speech_dbfs_rms": level}
    doc = {"sample_rate": RATE, "duration": round(len(speech) / RATE, 3), "segments": labels, "meta": meta}
    (OUT / f"{name}.transcript.json").write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    for i, call in enumerate(CALLS):
        make(call, 4000 + i)
        print("wrote", OUT / f"{call}.wav")
