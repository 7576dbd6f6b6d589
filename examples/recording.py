"""A recording through the whole turn-taking stack, offline and in virtual time.

A WAV (default: rxvoice's own demo call, ``rxvoice/data/demo.wav``) is played
as 20 ms microphone frames, each stamped when its last sample has arrived,
through::

    VADProcessor (Silero) → pair.user() [the recommended Smart Turn stop] → ScriptedLLM → pair.assistant()

with its transcript replayed as the speech-to-text service, 0.3 s after each
segment ends. Everything runs on a reactivex ``TestScheduler``: the 15 s call
takes about a second, the same every time. Smart Turn runs the real model,
its verdicts arriving 50 ms (virtual) after each pause; without the model
(see ``rxvoice model where``) a 0.6 s speech timeout ends turns instead, and
the mid-sentence pause cuts the caller off.

A finite recording ends as a live call would: after the audio, the clock runs
on in silence long enough for the stop watchdog (``stop_timeout``, 5 s) to
close a turn the model judged unfinished, and only then does the session end
(``EndFrame``), closing whatever is still open. Each turn is printed with the
rule that ended it: the stop strategy's name, the stop timeout, or the end of
the recording.

Run: ``python examples/recording.py [WAV TRANSCRIPT.json]`` (16 kHz mono 16-bit;
``rxvoice turns`` converts other formats).
"""

from __future__ import annotations

import argparse
import wave
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import reactivex

from rxvoice import LLMContext, pipeline
from rxvoice import frames as F
from rxvoice.aggregators import Pair, UserTurnStopped
from rxvoice.audio.recommended import recommended_turn_setup
from rxvoice.audio.vad import SileroVADAnalyzer, VADParams
from rxvoice.audio.vad_processor import VADProcessor
from rxvoice.context import ContextSnapshot
from rxvoice.errors import ModelNotFoundError
from rxvoice.pipeline import SchedulerOffload
from rxvoice.testing import FrameMarbles, Reply, ScriptedLLM, load_transcript, replay_transcript
from rxvoice.turns import SpeechTimeoutStop, TurnsConfig
from rxvoice.turns.strategy import StopStrategy

CHUNK = 320  # 20 ms at 16 kHz
STT_DELAY = 0.3  # the transcript of a segment arrives this long after it ends
MODEL_LATENCY = 0.05  # virtual seconds a Smart Turn verdict takes


def read_pcm16(path: Path) -> np.ndarray[Any, np.dtype[np.int16]]:
    """The samples of a 16 kHz mono 16-bit WAV."""
    with wave.open(str(path)) as w:
        shape = (w.getframerate(), w.getnchannels(), w.getsampwidth())
        if shape != (16000, 1, 2):
            raise SystemExit(f"{path}: {shape[0]} Hz, {shape[1]} ch, {8 * shape[2]}-bit; this example wants 16 kHz "
                             "mono 16-bit (`rxvoice turns` converts)")
        return np.frombuffer(w.readframes(w.getnframes()), "<i2").copy()


def audio_timeline(samples: np.ndarray[Any, np.dtype[np.int16]], tail: float = 2.0) -> list[tuple[float, F.Frame]]:
    """A StartFrame, then 20 ms frames (and ``tail`` seconds of silence) stamped when they have fully arrived."""
    padded = np.concatenate((samples, np.zeros(int(tail * 16000), dtype=np.int16)))
    out: list[tuple[float, F.Frame]] = [(0.0, F.StartFrame())]
    for i in range(0, len(padded) - CHUNK + 1, CHUNK):
        out.append(((i + CHUNK) / 16000, F.InputAudioRawFrame(padded[i:i + CHUNK].tobytes())))
    return out


def stop_strategy() -> tuple[StopStrategy[Any], VADParams, str]:
    """The recommended Smart Turn setup when its model is found, else a 0.6 s speech timeout."""
    try:
        setup = recommended_turn_setup()
    except ModelNotFoundError:
        return SpeechTimeoutStop(), VADParams(), "a 0.6 s speech timeout (Smart Turn model not found)"
    return setup.stop, setup.vad_params, "Smart Turn"


def reply(snapshot: ContextSnapshot) -> Reply:
    """A scripted model that repeats what it understood."""
    return Reply(f"Got it: {snapshot.messages[-1]['content']}")


def main(argv: Sequence[str] | None = None) -> LLMContext:
    """Play the recording; print each turn (when, and by which rule, it ended) and the conversation; return it."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("wav", nargs="?", type=Path, help="a 16 kHz mono 16-bit WAV (default: the demo call)")
    parser.add_argument("transcript", nargs="?", type=Path, help="its transcript JSON")
    args = parser.parse_args(argv)
    if (args.wav is None) != (args.transcript is None):
        parser.error("give both a WAV and its transcript, or neither")
    data = resources.files("rxvoice") / "data"
    with resources.as_file(data / "demo.wav") as demo_wav, resources.as_file(data / "demo.transcript.json") as demo:
        samples = read_pcm16(args.wav or Path(demo_wav))
        transcript = load_transcript(args.transcript or Path(demo))

    stop, vad_params, how = stop_strategy()
    context = LLMContext(messages=[{"role": "system", "content": "Be brief."}])
    turns = TurnsConfig(stop=[stop])
    pair = Pair(context, turns=turns)
    bench = FrameMarbles()  # a TestScheduler: virtual time
    pair.user().offload = SchedulerOffload(bench.scheduler, MODEL_LATENCY)  # the verdicts' latency
    vad = VADProcessor(lambda: SileroVADAnalyzer(params=vad_params))
    print(f"{len(samples) / 16000:.1f} s of audio; turns end by {how}")

    ended: list[tuple[float, UserTurnStopped]] = []
    timeouts: set[float] = set()
    pair.user().events.on("on_user_turn_stopped", lambda _agg, turn: ended.append((bench.scheduler.clock, turn)))
    pair.user().events.on("on_user_turn_stop_timeout", lambda *_: timeouts.add(bench.scheduler.clock))

    # The audio and 2 s of silence; then silence long enough for the watchdog to close an unfinished turn;
    # then the end of the session.
    timeline = audio_timeline(samples)
    end_at = timeline[-1][0] + turns.stop_timeout + 1.0
    frames = reactivex.merge(
        bench.from_timeline([*timeline, (end_at, F.EndFrame())]), replay_transcript(transcript, delay=STT_DELAY)
    )
    stage = pipeline(vad, pair.user(), ScriptedLLM(reply), pair.assistant())
    bench.run(stage, down=frames, until=end_at + 1.0)

    for when, turn in ended:
        spoken = [s.end for s in transcript.segments if s.end <= when]
        after = f", {when - spoken[-1]:.2f} s after speech" if spoken else ""
        if turn.strategy is not None:
            rule = turn.strategy.name
        elif when in timeouts:
            rule = f"the {turns.stop_timeout:g} s stop timeout"
        elif when >= end_at:
            rule = "the end of the recording"
        else:
            rule = "no strategy"
        print(f"  {when:6.2f} s  user turn over ({rule}{after}): {turn.content!r}")

    print("conversation:")
    for m in context.messages:
        print(f"  {m['role']:>9}: {m['content']}")
    return context


if __name__ == "__main__":
    main()
