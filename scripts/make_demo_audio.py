"""Make rxvoice's demo recording (rxvoice/data/demo.wav) with espeak-ng and sox.

One caller, four segments: a mid-sentence pause after the first (Smart Turn
says incomplete, about 0.01), then three complete turns (0.8 to 0.98). Run
from anywhere: ``python scripts/make_demo_audio.py`` (needs espeak-ng and sox).
"""

from __future__ import annotations

import json
import subprocess
import wave
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "rxvoice" / "data"
RATE = ["-r", "16000", "-c", "1", "-b", "16"]
TRIM_SILENCE = ["silence", "1", "0.01", "0.5%", "reverse", "silence", "1", "0.01", "0.5%", "reverse"]
SEGMENTS = [  # (text, pause after it in seconds, whether a listener would take the turn)
    ("So what I was thinking is that", 1.0, False),
    ("you send me the invoice by email.", 2.2, True),
    ("Could you book me a table for two tonight?", 2.2, True),
    ("Thanks, that is all I needed.", 1.0, True),
]
LEAD = 0.5


def duration(path: Path) -> float:
    with wave.open(str(path)) as w:
        return w.getnframes() / w.getframerate()


def silence(path: Path, seconds: float) -> None:
    subprocess.run(["sox", "-n", *RATE, str(path), "trim", "0", str(seconds)], check=True)


def main() -> None:
    work = DATA / "_build"
    work.mkdir(exist_ok=True)
    parts = [work / "lead.wav"]
    silence(parts[0], LEAD)
    t, out = LEAD, []
    for i, (text, pause, turn_end) in enumerate(SEGMENTS):
        raw, speech, gap = work / f"raw{i}.wav", work / f"s{i}.wav", work / f"p{i}.wav"
        subprocess.run(["espeak-ng", "-v", "en-us", "-s", "155", "-w", str(raw), text], check=True)
        subprocess.run(["sox", str(raw), *RATE, str(speech), *TRIM_SILENCE], check=True)
        d = duration(speech)
        out.append({"text": text, "start": round(t, 3), "end": round(t + d, 3), "turn_end": turn_end})
        silence(gap, pause)
        parts += [speech, gap]
        t += d + pause
    subprocess.run(["sox", *map(str, parts), str(DATA / "demo.wav")], check=True)
    transcript = {"sample_rate": 16000, "duration": round(duration(DATA / "demo.wav"), 3), "segments": out}
    (DATA / "demo.transcript.json").write_text(json.dumps(transcript, indent=2) + "\n")
    for p in work.iterdir():
        p.unlink()
    work.rmdir()


if __name__ == "__main__":
    main()
