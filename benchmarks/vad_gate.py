"""What the VAD's volume gate (``VADParams.min_volume``) lets through: quiet callers against noise.

For each ``min_volume``, on the development calls scaled so their speech is at a
given level (dBFS RMS over the voiced part), the share of spoken segments the
Silero VAD detects (a SPEAKING state overlapping the segment) and how late it
starts; and on noise alone (seeded pink noise, and the calls' gaps with the
noise they carry), how many VAD starts there are per minute.

    python benchmarks/vad_gate.py                    # the table in docs/turn-taking.md
    python benchmarks/vad_gate.py --levels -30 -38 -44 --gates 0.6 0.5 0.4
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import numpy as np

from rxvoice.audio.vad import SileroVADAnalyzer, VADParams, VADState

CHUNK = 320
RATE = 16000


def shared_calls() -> Path:
    import os

    root = Path(os.environ.get("RXVOICE_SHARED", Path(__file__).resolve().parents[2] / "shared"))
    return root / "audio" / "calls"


def read(path: Path) -> np.ndarray:
    import wave

    with wave.open(str(path)) as w:
        return np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.float64) / 32768.0


def spans(samples: np.ndarray, gate: float) -> list[tuple[float, float]]:
    """The VAD's stretches of speech (start minus start_secs, stop minus stop_secs)."""
    analyzer = SileroVADAnalyzer(RATE, params=VADParams(min_volume=gate))
    pcm = np.clip(np.round(samples * 32767), -32768, 32767).astype("<i2")
    out: list[tuple[float, float]] = []
    speaking, start = False, 0.0
    for i in range(0, len(pcm) - CHUNK + 1, CHUNK):
        analyzer.analyze_windows(pcm[i:i + CHUNK].tobytes())
        t = (i + CHUNK) / RATE
        if not speaking and analyzer.state is VADState.SPEAKING:
            speaking, start = True, t - analyzer.params.start_secs
        elif speaking and analyzer.state is VADState.QUIET:
            speaking = False
            out.append((start, t - analyzer.params.stop_secs))
    if speaking:
        out.append((start, len(pcm) / RATE))
    analyzer.close()
    return out


def scaled(samples: np.ndarray, segments: list[dict[str, float]], level: float) -> np.ndarray:
    voiced = np.concatenate([samples[round(s["start"] * RATE):round(s["end"] * RATE)] for s in segments])
    return samples * (10 ** (level / 20) / np.sqrt(np.mean(voiced**2)))


def pink(seconds: float, level: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    n = round(seconds * RATE)
    spectrum = np.fft.rfft(rng.standard_normal(n))
    f = np.fft.rfftfreq(n)
    f[0] = f[1]
    noise = np.fft.irfft(spectrum / np.sqrt(f), n)
    return noise / np.sqrt(np.mean(noise**2)) * 10 ** (level / 20)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--levels", type=float, nargs="+", default=[-30.0, -38.0, -44.0])
    p.add_argument("--gates", type=float, nargs="+", default=[0.6, 0.55, 0.5, 0.45, 0.4, 0.0])
    p.add_argument("--noise", type=float, nargs="+", default=[-60.0, -50.0, -40.0])
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    calls = sorted(shared_calls().glob("*.wav"))
    if not calls:
        print(f"no calls in {shared_calls()}", file=sys.stderr)
        return 1
    data = [(read(c), json.loads(c.with_name(c.stem + ".transcript.json").read_text())["segments"]) for c in calls]
    rows = []
    for gate in args.gates:
        row: dict[str, object] = {"min_volume": gate}
        for level in args.levels:
            found, late = 0, []
            total = 0
            for samples, segments in data:
                heard = spans(scaled(samples, segments, level), gate)
                for s in segments:
                    total += 1
                    hits = [a for a, b in heard if a < s["end"] and b > s["start"]]
                    if hits:
                        found += 1
                        late.append(max(0.0, hits[0] - s["start"]))
            row[f"speech {level:g} dBFS"] = f"{found}/{total}"
            row[f"late {level:g}"] = round(statistics.median(late), 3) if late else None
        for level in args.noise:
            starts = len(spans(pink(60.0, level, 7), gate))
            row[f"noise {level:g} dBFS /min"] = starts
        rows.append(row)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    keys = list(rows[0])
    print(" | ".join(keys))
    for row in rows:
        print(" | ".join(str(row[k]) for k in keys))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
