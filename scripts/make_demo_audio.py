"""Make rxvoice's demo recording (rxvoice/data/demo.wav) with espeak-ng and sox.

One caller, four segments: a mid-sentence pause after the first (Smart Turn
says incomplete, about 0.01), then three complete turns (0.8 to 0.98). Run from
the repository root: ``python scripts/make_demo_audio.py`` (needs espeak-ng and sox).
"""
import os
os.chdir(os.path.join(os.path.dirname(__file__), "..", "rxvoice", "data"))
import subprocess, json, wave
segs = [
    ("So what I was thinking is that", 1.0, False),
    ("you send me the invoice by email.", 2.2, True),
    ("Could you book me a table for two tonight?", 2.2, True),
    ("Thanks, that is all I needed.", 1.0, True),
]
lead = 0.5
parts = []
t = lead
out = []
subprocess.run(["sox", "-n", "-r", "16000", "-c", "1", "-b", "16", "lead.wav", "trim", "0", str(lead)], check=True)
parts.append("lead.wav")
for i, (text, pause, end) in enumerate(segs):
    subprocess.run(["espeak-ng", "-v", "en-us", "-s", "155", "-w", f"raw{i}.wav", text], check=True)
    subprocess.run(["sox", f"raw{i}.wav", "-r", "16000", "-c", "1", "-b", "16", f"s{i}.wav", "silence", "1", "0.01", "0.5%", "reverse", "silence", "1", "0.01", "0.5%", "reverse"], check=True)
    with wave.open(f"s{i}.wav") as w: dur = w.getnframes() / w.getframerate()
    out.append({"text": text, "start": round(t, 3), "end": round(t + dur, 3), "turn_end": end})
    t += dur
    subprocess.run(["sox", "-n", "-r", "16000", "-c", "1", "-b", "16", f"p{i}.wav", "trim", "0", str(pause)], check=True)
    parts += [f"s{i}.wav", f"p{i}.wav"]
    t += pause
subprocess.run(["sox", *parts, "demo.wav"], check=True)
for f in parts + [f"raw{i}.wav" for i in range(len(segs))]:
    if os.path.exists(f):
        os.remove(f)
with wave.open("demo.wav") as w: total = w.getnframes()/w.getframerate()
json.dump({"sample_rate": 16000, "duration": round(total, 3), "segments": out}, open("demo.transcript.json", "w"), indent=2)
print(json.dumps(out, indent=1), total)
