"""Words for a recording that has no transcript: the VAD and the offline STT over it, in virtual time.

The recording is played as 20 ms chunks through ``VADProcessor`` and the
offline STT ``--stt`` names: :class:`~rxvoice.services.whisper.WhisperSTT`
when faster-whisper and its model are installed, else
:class:`~rxvoice.services.stt.PocketSphinxSTT` (recognition inline, so the
run takes as long as the recognizer needs and gives the same words every
time). Each final the recognizer gives becomes a :class:`~rxvoice.testing.Segment`:
its words, timed by the VAD span it came from (the VAD start minus
``start_secs`` to the VAD stop minus ``stop_secs``). A span with two finals
gives two segments with its times, a final that comes late keeps its own
span's times, and segments are in the order they were said: no words are
lost or moved to another utterance. Utterances the recognizer heard nothing
in are left out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TextIO

import numpy as np
import reactivex
from reactivex.disposable import CompositeDisposable
from reactivex.testing import TestScheduler

from .. import frames as F
from ..audio.vad import SileroVADAnalyzer, VADAnalyzer, VADParams, WebRTCVADAnalyzer
from ..audio.vad_processor import VADProcessor
from ..errors import ModelError
from ..pipeline import inline_offload, pipeline
from ..pipeline.session import Session
from ..services.stt import PocketSphinxSTT, STTService, Utterance, pocketsphinx_available
from ..services.whisper import WhisperSTT, whisper_available, whisper_installed, whisper_label
from ..testing import FrameMarbles, Segment, Transcript
from ._common import CLIError
from .wav import RATE, Recording

__all__ = ["STT_CHOICES", "default_stt", "offline_stt", "recognized_words", "stt_label", "transcribe"]

STT_CHOICES = ("whisper", "pocketsphinx", "none")
CHUNK = 320


def default_stt() -> str:
    """What ``--stt`` means when not given: whisper when it is installed, else pocketsphinx, else none."""
    if whisper_installed():
        return "whisper"
    return "pocketsphinx" if pocketsphinx_available() else "none"


def stt_label(choice: str) -> str:
    """The engine's name as the output shows it (Whisper with the model in use: "Whisper base")."""
    if choice == "whisper":
        return whisper_label()
    return {"pocketsphinx": "PocketSphinx"}.get(choice, choice)


def offline_stt(choice: str | None) -> STTService | None:
    """The STT ``--stt`` names (``None``: :func:`default_stt`); ``None`` for ``none`` or nothing installed.

    Raises:
        CLIError: the engine asked for is not installed, or its model is missing or corrupt (one line).
    """
    choice = default_stt() if choice is None else choice
    if choice == "none":
        return None
    if choice == "whisper":
        if not whisper_available():
            raise CLIError("--stt whisper needs the faster-whisper package: pip install 'rxvoice[stt]'")
        try:
            return WhisperSTT(offload=inline_offload)
        except ModelError as exc:
            raise CLIError(str(exc)) from None
    if not pocketsphinx_available():
        raise CLIError("--stt pocketsphinx needs the pocketsphinx package: pip install 'rxvoice[stt]'")
    return PocketSphinxSTT(offload=inline_offload)


def transcribe(
    recording: Recording, stt: STTService, *, vad: str = "silero", params: VADParams | None = None, tail: float = 1.0
) -> Transcript:
    """What ``stt`` hears in ``recording``, utterance by utterance (segments' ``turn_end`` is unknown: True)."""
    params = params or VADParams()
    make: Callable[[], VADAnalyzer] = (
        (lambda: WebRTCVADAnalyzer(RATE, params=params)) if vad == "webrtc" else
        (lambda: SileroVADAnalyzer(RATE, params=params))
    )
    samples = np.concatenate((recording.samples, np.zeros(round(tail * RATE), dtype=np.int16)))
    samples = np.concatenate((samples, np.zeros((-len(samples)) % CHUNK, dtype=np.int16)))
    chunk_secs = CHUNK / RATE
    items: list[tuple[float, F.Frame]] = [(0.0, F.StartFrame(audio_in_sample_rate=RATE))]
    items += [((i // CHUNK + 1) * chunk_secs, F.InputAudioRawFrame(samples[i:i + CHUNK].tobytes(), RATE))
              for i in range(0, len(samples), CHUNK)]
    end = items[-1][0] + chunk_secs
    items.append((end, F.EndFrame()))
    scheduler = TestScheduler()
    clock = Session(scheduler).clock
    t0 = clock()
    spans: list[list[float]] = []
    words: list[tuple[float, str, Utterance | None]] = []
    position = [0.0]

    def seen(frame: Any) -> None:
        if isinstance(frame, F.InputAudioRawFrame):
            position[0] += chunk_secs
        elif isinstance(frame, F.VADUserStartedSpeakingFrame):
            spans.append([max(0.0, position[0] - frame.start_secs), position[0]])
        elif isinstance(frame, F.VADUserStoppedSpeakingFrame) and spans:
            spans[-1][1] = max(spans[-1][0], position[0] - frame.stop_secs)
        elif isinstance(frame, F.TranscriptionFrame):
            span = frame.result if isinstance(frame.result, Utterance) else None
            words.append((position[0], frame.text, span))

    source = FrameMarbles(scheduler=scheduler).from_timeline(items)  # never completes: the EndFrame ends it
    down, _up = pipeline(VADProcessor(make), stt).duplex(source, reactivex.never())
    subscriptions = CompositeDisposable()
    try:
        subscriptions.add(down.subscribe(seen, lambda _e: None, scheduler=scheduler))
        scheduler.advance_to(t0 + end + 1.0)
    finally:
        subscriptions.dispose()
    placed = sorted(_place(words, spans), key=lambda p: p[1])  # stable: a span's finals keep their order
    segments = [Segment(text, round(start, 3), round(max(end, start), 3), True) for text, start, end in placed]
    return Transcript(tuple(segments), RATE, round(recording.duration, 3))


def _place(words: list[tuple[float, str, Utterance | None]],
           spans: list[list[float]]) -> list[tuple[str, float, float]]:
    """Each final as its own utterance (text, start, end): none dropped, none merged with another.

    A final whose ``result`` is an :class:`~rxvoice.services.stt.Utterance`
    (every stage built on ``STTService``) is timed by the span it says it came
    from, however late it arrives. One without (another kind of stage) is
    timed by the last VAD span that ended before it arrived (the first span if
    none had; the moment it arrived if there is no span at all).
    """
    placed: list[tuple[str, float, float]] = []
    for at, text, span in words:
        if not text.strip():
            continue
        if span is not None:
            placed.append((text, span.start, span.end))
            continue
        ended = [(start, end) for start, end in spans if end <= at + 1e-9]
        start, end = ended[-1] if ended else spans[0] if spans else (at, at)
        placed.append((text, start, end))
    return placed


def recognized_words(
    recording: Recording, setup: Any, choice: str | None, err: TextIO, quiet: bool
) -> tuple[Transcript | None, str | None]:
    """The words ``--stt`` asks for (None: placeholders) and the engine that gave them, noted on stderr."""
    engine = default_stt() if choice is None else choice
    stt = offline_stt(engine)
    if stt is None:
        if choice is None and not quiet:
            print("note: no transcript and no offline STT (pip install 'rxvoice[stt]', then "
                  "`rxvoice model install`): the words are placeholders from the VAD", file=err)
        return None, None
    words = transcribe(recording, stt, vad=setup.vad, params=setup.vad_params)
    if not quiet:
        caveat = ("it mishears many voices, see the voice guide; Whisper is better: pip install 'rxvoice[stt]' "
                  "and `rxvoice model install stt`") if engine == "pocketsphinx" else "offline"
        print(f"note: no transcript: the words are {stt_label(engine)}'s ({len(words.segments)} utterances; "
              f"{caveat}); --stt none keeps the VAD placeholders", file=err)
    return words, engine
