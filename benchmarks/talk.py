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

Backchannels: the backchannel set (``benchmarks/data/make_backchannel_set.py``
makes it) without and with ``BackchannelStart``, for interim words 0.1 s and
0.2 s after each and for none: continuers kept, interruptions that
interrupted, the barge-in latency. Target: at least 90 % kept, 95 % caught.

The runs are in virtual time: their figures are the same on every run, so
one run stands for three. The reference is rxvoice without the feature, in
the same run (Pipecat's speculation needs an STT that sends its own eager
end-of-turn frames, and its backchannels a detector of its own: there is no
offline Pipecat run on the same input to compare with).

Usage::

    .venv/bin/python benchmarks/talk.py CALLS_DIR BACKCHANNEL_DIR [--jobs 2]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from rxvoice.cli._common import choose_model
from rxvoice.cli.backchannels import evaluate_backchannels, find_backchannel_items, score
from rxvoice.cli.eval import evaluate, find_items
from rxvoice.cli.setups import Setup


def speculation(calls: Path, jobs: int) -> None:
    model = choose_model(None).path
    items = find_items([calls])
    print("speculation: end of speech to the bot's first audio (first token 0.5 s, interim words 0.1 s after each)")
    print(f"{'setup':<16}{'finals':>8}{'p50 off':>9}{'p50 on':>8}{'change':>8}{'p90 off':>9}{'p90 on':>8}"
          f"{'asked':>7}{'released':>9}{'wasted/turn':>12}{'spec. tools':>12}")
    for stop in ("smart-turn", "speech-timeout"):
        for stt_delay in (0.3, 0.6):
            runs = []
            for speculate in (False, True):
                setup = Setup(stop=stop, model=model, stt_delay=stt_delay, first_token_delay=0.5,
                              speculate=speculate, interim_lag=0.1)
                [run] = evaluate(items, [(setup, {})], jobs=jobs)
                figures = run.reply_figures()
                assert figures is not None
                runs.append(figures)
            off, on = runs
            change = (on["first_audio_p50"] - off["first_audio_p50"]) / off["first_audio_p50"]
            print(f"{stop:<16}{stt_delay:>7.1f}s{off['first_audio_p50']:>8.2f}s{on['first_audio_p50']:>7.2f}s"
                  f"{change:>+8.0%}{off['first_audio_p90']:>8.2f}s{on['first_audio_p90']:>7.2f}s"
                  f"{on['speculative_asked']:>7}{on['released']:>9}{on['wasted_per_turn']:>12.2f}"
                  f"{on['speculative_tool_calls']:>12}", flush=True)


def backchannels(folder: Path) -> None:
    items = find_backchannel_items([folder])
    print(f"\nbackchannels: {len(items)} recordings (speech timeout stop)")
    print(f"{'interim words':<16}{'kept off':>10}{'kept on':>10}{'caught off':>12}{'caught on':>11}"
          f"{'barge-in p50 off':>18}{'on':>7}{'p90 off':>9}{'on':>7}")
    for lag in (0.1, 0.2, None):
        setup = Setup(stop="speech-timeout", interim_lag=lag)
        runs = evaluate_backchannels(items, setup)
        off, on = score(runs["off"]), score(runs["on"])
        name = "none" if lag is None else f"{lag:g} s after"

        def share(s: dict[str, object], n: str, d: str) -> str:
            return f"{int(s[n]) / int(s[d]):.0%}"  # type: ignore[call-overload]

        print(f"{name:<16}{share(off, 'continuers_kept', 'continuers'):>10}"
              f"{share(on, 'continuers_kept', 'continuers'):>10}"
              f"{share(off, 'interruptions_caught', 'interruptions'):>12}"
              f"{share(on, 'interruptions_caught', 'interruptions'):>11}"
              f"{off['barge_in_p50']:>17.2f}s{on['barge_in_p50']:>6.2f}s{off['barge_in_p90']:>8.2f}s"
              f"{on['barge_in_p90']:>6.2f}s", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("calls", type=Path)
    p.add_argument("backchannels", type=Path)
    p.add_argument("--jobs", type=int, default=1)
    args = p.parse_args()
    started = time.perf_counter()  # the wall clock only says how long the benchmark took
    speculation(args.calls, args.jobs)
    backchannels(args.backchannels)
    print(f"\n({time.perf_counter() - started:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
