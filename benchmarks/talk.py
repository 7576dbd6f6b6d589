"""The seconds around a turn end: what speculative replies save, and what backchannels keep.

Speculation: the development calls through ``rxvoice eval`` with a scripted
model (0.5 s to its first token, a tool call every third turn) and a paced
voice, the transcript replayed as a streaming STT (interim words 0.1 s after
each is spoken, finals ``--stt-delay`` after each segment), once without and
once with ``--speculate``, for the recommended setup and the speech timeout:
the end of speech to the bot's first audio (p50, p90), the change at the
median, the wasted speculative requests per turn and the tool calls started
speculatively. Target: at least 35 % shorter at the median, at most 0.5
wasted requests a turn, no tool call.

Speculation cannot take off more than the time between the earliest moment
the words are known (the last interim word, ``interim_lag`` after the speech
ends) and the moment the turn ends: the *bound* column is the first audio a
speculation asked at that earliest moment would give (``interim_lag`` plus
the first-token delay) for the turns it can release, the other turns as
without speculation, and its change at the median.

Backchannels: the backchannel set (``benchmarks/data/make_backchannel_set.py``
makes it) without ``BackchannelStart``, with it (the bot's speech paused at
the speech's start, the default) and with it and ``pause=False``, for
interim words 0.1 s and 0.2 s after each and for none: continuers kept,
interruptions that interrupted, the barge-in latency (speech start to the
bot's audio stopping, paused or cut), the interruption latency (to the
``InterruptionFrame``: the reply cancelled) and the gap a kept continuer
leaves in the bot's speech (pause to resume). Target: at least 90 % kept,
95 % caught, the barge-in latency unchanged.

The runs are in virtual time: their figures are the same on every run, so
one run stands for three. The reference is rxvoice without the feature, in
the same run (Pipecat's speculation needs an STT that sends its own eager
end-of-turn frames, and its backchannels a detector of its own: there is no
offline Pipecat run on the same input to compare with).

Usage::

    .venv/bin/python benchmarks/talk.py CALLS_DIR BACKCHANNEL_DIR [--jobs 2] [--only speculation|backchannels|probe]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from rxvoice.cli._common import choose_model
from rxvoice.cli.backchannels import evaluate_backchannels, find_backchannel_items, score
from rxvoice.cli.eval import evaluate, find_items
from rxvoice.cli.setups import Setup

FIRST_TOKEN = 0.5
INTERIM_LAG = 0.1


def _bound(off: list[float], on: list[float]) -> float:
    """The median first audio if every turn speculation released had been asked at the earliest moment."""
    earliest = INTERIM_LAG + FIRST_TOKEN
    # a turn speculation sped up was released; released at the earliest moment it starts at `earliest`, and
    # never later than without speculation
    best = [min(a, earliest) if b < a - 1e-6 else a for a, b in zip(off, on, strict=True)]
    return statistics.median(best)


def speculation(calls: Path, jobs: int) -> None:
    model = choose_model(None).path
    items = find_items([calls])
    print(f"speculation: end of speech to the bot's first audio (first token {FIRST_TOKEN:g} s, "
          f"interim words {INTERIM_LAG:g} s after each)")
    print(f"{'setup':<16}{'finals':>8}{'p50 off':>9}{'p50 on':>8}{'change':>8}{'bound':>8}{'change':>8}"
          f"{'p90 off':>9}{'p90 on':>8}{'asked':>7}{'released':>9}{'wasted/turn':>12}{'spec. tools':>12}")
    for stop in ("smart-turn", "speech-timeout"):
        for stt_delay in (0.3, 0.6):
            runs = []
            per_turn = []
            for speculate in (False, True):
                setup = Setup(stop=stop, model=model, stt_delay=stt_delay, first_token_delay=FIRST_TOKEN,
                              speculate=speculate, interim_lag=INTERIM_LAG)
                [run] = evaluate(items, [(setup, {})], jobs=jobs)
                figures = run.reply_figures()
                assert figures is not None
                runs.append(figures)
                per_turn.append({(i, r.segment): r.latency for i, (rs, _) in enumerate(run.replies) for r in rs})
            off, on = runs
            both = sorted(k for k in per_turn[0] if per_turn[0][k] is not None and per_turn[1].get(k) is not None)
            bound = _bound([per_turn[0][k] for k in both], [per_turn[1][k] for k in both])  # type: ignore[misc]
            change = (on["first_audio_p50"] - off["first_audio_p50"]) / off["first_audio_p50"]
            best = (bound - off["first_audio_p50"]) / off["first_audio_p50"]
            print(f"{stop:<16}{stt_delay:>7.1f}s{off['first_audio_p50']:>8.2f}s{on['first_audio_p50']:>7.2f}s"
                  f"{change:>+8.0%}{bound:>7.2f}s{best:>+8.0%}"
                  f"{off['first_audio_p90']:>8.2f}s{on['first_audio_p90']:>7.2f}s"
                  f"{on['speculative_asked']:>7}{on['released']:>9}{on['wasted_per_turn']:>12.2f}"
                  f"{on['speculative_tool_calls']:>12}", flush=True)


def probe(calls: Path, jobs: int) -> None:
    """Why the recommended setup cannot speculate earlier: where it asks, what asking earlier would waste.

    1. When the ask goes out, against the end of speech and the VAD's stop (p50).
    2. Asking while the VAD still hears speech, on interim words alone: at how many earlier moments a
       turn the words' signal calls the words so far a likely end (each a request wasted), by threshold.
    3. ``FusedTurnStop``'s threshold for ``Likely`` swept (an experiment: its private constant is
       patched for the run, as no user would).
    """
    import rxvoice.turns.fused as fused
    from rxvoice.audio.recommended import recommended_turn_setup
    from rxvoice.cli.eval_items import stt_words
    from rxvoice.cli.observations import Speculated, SpeechStopped
    from rxvoice.cli.runner import analyze
    from rxvoice.cli.wav import read_wav

    model = choose_model(None).path
    items = find_items([calls])
    setup = Setup(stop="smart-turn", model=model, stt_delay=0.3, first_token_delay=FIRST_TOKEN, speculate=True,
                  interim_lag=INTERIM_LAG)
    asks: list[float] = []
    stops: list[float] = []
    for item in items:
        transcript = stt_words(item.transcript, "plain")
        run = analyze(read_wav(item.wav), setup, transcript=transcript, windows=False)
        segs = transcript.segments
        for i, seg in enumerate(segs):
            until = segs[i + 1].start if i + 1 < len(segs) else float("inf")
            if not seg.turn_end:
                continue
            asked = [o.time - seg.end for o in run.observations
                     if isinstance(o, Speculated) and o.outcome == "asked" and seg.end - 0.5 <= o.time < until]
            stopped = [o.time - seg.end for o in run.observations
                       if isinstance(o, SpeechStopped) and seg.end - 0.1 <= o.time < until]
            asks += asked[:1]
            stops += stopped[:1]
    print(f"\nprobe: asked p50 {statistics.median(asks):.3f} s after the speech ({len(asks)} ends); "
          f"the VAD's stop p50 {statistics.median(stops):.3f} s")
    stop = recommended_turn_setup(smart_turn=False).turns_config().chains()[1][0]
    for threshold in (0.1, 0.3, 0.5, 1.0):
        turns = early = last = 0
        for item in items:
            before, pending = "", 0
            for seg in stt_words(item.transcript, "plain").segments:
                words = seg.text.split()
                for n in range(1, len(words) + 1):
                    said = f"{before} {' '.join(words[:n])}".strip()
                    likely = stop.needed_silence(stop.evidence(said, None)) <= threshold  # type: ignore[attr-defined]
                    if n == len(words) and seg.turn_end:
                        turns += 1
                        last += likely
                    elif likely:
                        pending += 1
                before = f"{before} {seg.text}".strip()
                if seg.turn_end:
                    early, pending, before = early + pending, 0, ""
        print(f"probe: asking on interim words when the words need <= {threshold:g} s: the last words of "
              f"{last}/{turns} turns, {early / turns:.2f} requests a turn wasted on earlier words")
    saved = fused._LIKELY_WITHIN
    try:
        for within in (0.3, 1.0, 3.0):
            fused._LIKELY_WITHIN = within
            for stt_delay in (0.3, 0.6):
                swept = Setup(stop="smart-turn", model=model, stt_delay=stt_delay, first_token_delay=FIRST_TOKEN,
                              speculate=True, interim_lag=INTERIM_LAG)
                [run_] = evaluate(items, [(swept, {})], jobs=jobs)
                f = run_.reply_figures()
                assert f is not None
                print(f"probe: likely within {within:g} s, finals {stt_delay:g} s: p50 {f['first_audio_p50']:.2f} s, "
                      f"asked {f['speculative_asked']}, released {f['released']}, "
                      f"wasted a turn {f['wasted_per_turn']:.2f}", flush=True)
    finally:
        fused._LIKELY_WITHIN = saved


def _pair(s: dict[str, Any], key: str) -> str:
    a, b = s[f"{key}_p50"], s[f"{key}_p90"]
    return "-" if a is None else f"{a:.2f}/{b:.2f}s"


def backchannels(folder: Path) -> None:
    items = find_backchannel_items([folder])
    print(f"\nbackchannels: {len(items)} recordings (speech timeout stop); p50/p90 from the start of speech")
    print(f"{'interim words':<16}{'run':<22}{'kept':>6}{'caught':>8}{'audio stops':>13}{'interrupted':>13}"
          f"{'gap':>12}{'paused':>8}")
    for lag in (0.1, 0.2, None):
        setup = Setup(stop="speech-timeout", interim_lag=lag)
        runs = evaluate_backchannels(items, setup, without_pause=True)
        name = "none" if lag is None else f"{lag:g} s after"
        for run, label in (("off", "without"), ("on", "with (pause)"), ("on_without_pause", "with, pause=False")):
            s = score(runs[run])
            kept = s["continuers_kept"] / s["continuers"]
            caught = s["interruptions_caught"] / s["interruptions"]
            print(f"{name:<16}{label:<22}{kept:>6.0%}{caught:>8.0%}{_pair(s, 'barge_in'):>13}"
                  f"{_pair(s, 'interruption'):>13}{_pair(s, 'gap'):>12}{s['continuers_paused']:>8}", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("calls", type=Path)
    p.add_argument("backchannels", type=Path)
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--only", choices=("speculation", "backchannels", "probe"),
                   help="run one half (probe: why speculation cannot start earlier, see probe())")
    args = p.parse_args()
    started = time.perf_counter()  # the wall clock only says how long the benchmark took
    if args.only is None or args.only == "speculation":
        speculation(args.calls, args.jobs)
    if args.only != "speculation" and args.only != "probe":
        backchannels(args.backchannels)
    if args.only == "probe":
        probe(args.calls, args.jobs)
    print(f"\n({time.perf_counter() - started:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
