"""``rxvoice demo``: a short voice conversation through the whole turn-taking stack, offline.

The caller is rxvoice's own recording (``rxvoice/data/demo.wav``, speech made
with espeak-ng by ``scripts/make_demo_audio.py``): four segments, the first
ending mid-sentence. It plays through the Silero VAD operator, the turn
strategies (Smart Turn when its model is found, else a speech timeout), the
transcript replayed as the STT, the user/assistant pair and a scripted
model, in virtual time unless ``--realtime``. Each turn is printed as it
ends: who spoke, when and why the turn ended, how long after the speech
stopped; then the conversation the pair wrote.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import Any, TextIO

from ..context import ContextSnapshot, LLMContext
from ..errors import InvalidTranscriptError
from ..testing import Reply, Transcript, load_transcript
from ._common import CLIError, choose_model
from .observations import BotAudio, BotReply, Observation, Speculated, Turn, Verdict
from .report import describe_setup
from .runner import Analysis, analyze
from .setups import DEFAULT_SETUP, FALLBACK_SETUP, Setup, stop_strategy
from .turns import add_common_options, seconds_between
from .wav import Recording, read_wav

__all__ = ["SYSTEM_PROMPT", "add_parser", "answer", "run"]

SYSTEM_PROMPT = "You are the front desk of a small company: invoices and table bookings. Be brief."


def answer(snapshot: ContextSnapshot) -> Reply:
    """The scripted model: a reply to the caller's last words (offline, deterministic)."""
    said = str(snapshot.messages[-1].get("content", "")).lower()
    if "invoice" in said:
        return Reply("Sure, I'll email you the invoice right away.")
    if "table" in said:
        return Reply("Done: a table for two, tonight at eight.")
    if "thank" in said:
        return Reply("You're welcome. Goodbye!")
    return Reply("Sorry, could you finish that thought?")


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    """Register ``demo``."""
    p = sub.add_parser(
        "demo", help="a short voice conversation through the turn-taking stack (offline)",
        description=(__doc__ or "").split("\n\n", 1)[1].replace("\n", " ").replace("``", ""),
    )
    p.add_argument("--realtime", action="store_true",
                   help="play it at the speed of speech on asyncio (Smart Turn at its real latency)")
    p.add_argument("--no-smart-turn", action="store_true",
                   help="end turns by a speech timeout even when the Smart Turn model is found")
    p.add_argument("--first-token-delay", type=seconds_between(0.0, 10.0), metavar="S",
                   help="the model takes S seconds to its first token and a paced voice speaks the answers: "
                        "show when the bot's voice starts after each turn")
    p.add_argument("--speculate", action="store_true",
                   help="speculative replies: ask the model when the end is likely, hold the answer")
    p.add_argument("--interim-lag", type=seconds_between(0.0, 10.0), metavar="S",
                   help="the STT also sends interim words, each S seconds after it is spoken")
    add_common_options(p)
    p.set_defaults(run=run)


@contextmanager
def _demo_files() -> Iterator[tuple[Path, Path]]:
    data = resources.files("rxvoice") / "data"
    with resources.as_file(data / "demo.wav") as wav, resources.as_file(data / "demo.transcript.json") as words:
        yield Path(wav), Path(words)


class _Printer:
    """Prints what happens, as it happens."""

    def __init__(self, out: TextIO, transcript: Transcript) -> None:
        self.out = out
        self.transcript = transcript
        self.broken = False

    def line(self, t: float, who: str, text: str) -> None:
        if self.broken:
            return
        try:
            print(f"  {t:6.2f} s  {who:<5} {text}", file=self.out, flush=True)
        except BrokenPipeError:  # the reader went away (`| head`): stop printing, end quietly afterwards
            self.broken = True

    def __call__(self, o: Observation) -> None:
        if isinstance(o, Verdict) and not o.complete:
            said = [seg.text for seg in self.transcript.segments if seg.end <= o.time]
            after = f' after "…{" ".join(said[-1].split()[-3:])}"' if said else ""
            self.line(o.time, "", f"(pause{after}: Smart Turn says incomplete, p={o.probability:.2f}; "
                                  "still listening)")
        elif isinstance(o, Turn):
            self.line(o.ended, "user", f'"{o.text}"')
            after = "" if o.latency is None else f"{o.latency:.2f} s after speech stopped: "
            flag = "  << cut off mid-sentence" if o.premature else ""
            if o.recovered_from is not None:
                flag += f"  (reopens turn {o.recovered_from}: the caller went on before the bot spoke)"
            self.line(o.ended, "", f"turn {o.index} ended {after}{o.reason}{flag}")
        elif isinstance(o, BotReply):
            self.line(o.time, "bot", f'"{o.text}"')
        elif isinstance(o, BotAudio):
            self.line(o.time, "bot", "(the bot's voice starts)")
        elif isinstance(o, Speculated):
            what = {"asked": "asked the model early (speculation), holding the answer",
                    "released": "the turn ended with the same words: the held answer goes out now",
                    "refused": "the held answer asks for a tool: dropped, no tool started; asked again at the end",
                    }.get(o.outcome, f"the held answer was {o.outcome}: nothing of it is said")
            self.line(o.time, "", f"({what})")


def _context_lines(context: LLMContext) -> list[str]:
    lines = [f"Final context ({len(context.messages)} messages):"]
    for m in context.messages:
        lines.append(f"  {m.get('role', '?'):<10} {m.get('content', '')}")
    return lines


def _summary(analysis: Analysis, setup: Setup, fallback_reason: str | None, wall: float) -> list[str]:
    turns = analysis.turns
    latencies = [t.latency for t in turns if t.latency is not None]
    cut = [t for t in turns if t.premature]
    low, high = (min(latencies), max(latencies)) if latencies else (0.0, 0.0)
    span = f"{low:.2f} s" if f"{low:.2f}" == f"{high:.2f}" else f"{low:.2f}–{high:.2f} s"
    cuts = {0: "no mid-sentence cut-off", 1: "1 mid-sentence cut-off"}.get(
        len(cut), f"{len(cut)} mid-sentence cut-offs"
    )
    lines = [f"{len(turns)} user turns, each answered {span} after the speech stopped; {cuts}."]
    if fallback_reason is not None:
        quiet = setup.vad_params.stop_secs + setup.speech_timeout
        lines.append(
            f"Without Smart Turn a turn ends after {quiet:.1f} s of silence: every answer waits that long, "
            f"and a pause that long mid-sentence cuts the caller off ({len(cut)} here"
            + (f': "{cut[0].text}" was answered alone' if cut else "")
            + "). With the model the first sentence stays whole and answers come about 0.3 s after speech "
            "(the STT's delay). Get it with `rxvoice model install`."
        )
    mode = "real time" if setup.realtime else "virtual time"
    if setup.first_token_delay is not None:
        audio = [o.time for o in analysis.observations if isinstance(o, BotAudio)]
        waits = []
        for t in turns:
            after = [a for a in audio if a >= t.ended - 1e-6]
            if after and t.speech_end is not None and not t.premature:
                waits.append(after[0] - t.speech_end)
        if waits:
            spec = "with speculation" if setup.speculate else "without speculation"
            lines.append(f"The bot's voice started {min(waits):.2f}–{max(waits):.2f} s after the speech stopped "
                         f"({spec}; the model takes {setup.first_token_delay:g} s to its first token).")
    lines.append(f"{analysis.recording.duration:.1f} s of conversation in {wall:.2f} s ({mode}).")
    lines.append("Next: `rxvoice turns YOUR.wav --plot timeline.png` analyzes your own recording.")
    return lines


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Hold the demo conversation."""
    fallback_reason: str | None = None
    model = None
    if args.no_smart_turn:
        fallback_reason = "--no-smart-turn"
        because = "falling back because --no-smart-turn was given"
    else:
        choice = choose_model(args.model)
        model, fallback_reason = choice.path, choice.problem
        if model is not None:
            because = f"because its model was found via {choice.source} ({model})"
        else:
            because = f"falling back because: {fallback_reason}; `rxvoice model install` gets it"
    setup = Setup(
        stop=DEFAULT_SETUP if model is not None else FALLBACK_SETUP, model=model, stt_delay=args.stt_delay,
        model_latency=args.model_latency, tail=1.5, realtime=args.realtime,
        first_token_delay=args.first_token_delay, speculate=args.speculate, interim_lag=args.interim_lag,
    )
    why = f"{setup.named.title} ({stop_strategy(setup).name}), {because}"
    with _demo_files() as (wav, words):
        recording: Recording = read_wav(wav)
        try:
            transcript = load_transcript(words)
        except InvalidTranscriptError as exc:
            raise CLIError(f"the demo's transcript is damaged: {exc}") from None
    pace = "at the speed of speech" if args.realtime else "in virtual time"
    print(f"rxvoice demo: a caller with three requests ({recording.duration:.1f} s, espeak-ng), {pace}", file=out)
    print(f"  stop strategy: {why}", file=out)
    print(f"  {describe_setup(setup)}", file=out)
    if fallback_reason is not None:
        print("  (see below what the fallback costs)", file=out)
    print(file=out, flush=True)
    context = LLMContext(messages=[{"role": "system", "content": SYSTEM_PROMPT}])
    started = time.perf_counter()  # a real clock is the point: the demo says how long the virtual-time run took
    printer = _Printer(out, transcript)
    analysis = analyze(recording, setup, transcript=transcript, answer=answer, context=context, on_observation=printer)
    wall = time.perf_counter() - started
    if printer.broken:
        raise BrokenPipeError
    print(file=out)
    for line in _context_lines(context):
        print(line, file=out)
    print(file=out)
    for line in _summary(analysis, setup, fallback_reason, wall):
        print(line, file=out)
    return 0
