"""One session of a text-to-speech stage: text being grouped, units queued and playing, frames behind them.

The stage (:class:`~rxvoice.services.tts.TTSService`) is configuration; each
session runs here on the one shell (:class:`~rxvoice.pipeline.shell.StageShell`):
synthesis off the session through its ``submit``, playback and the end
watchdog on its timers, failures reported by its one rule.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import re
from collections import deque
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol, cast

from reactivex import abc

from ..errors import ServiceError
from ..frames import (
    DOWN,
    AggregatedTextFrame,
    AggregationType,
    BotBackchannelFrame,
    BotSpeechPauseFrame,
    BotSpeechResumeFrame,
    BotStartedSpeakingFrame,
    BotStoppedSpeakingFrame,
    CancelFrame,
    Direction,
    EndFrame,
    Frame,
    FrameKind,
    InterruptionFrame,
    LLMFullResponseEndFrame,
    LLMTextFrame,
    OutputAudioRawFrame,
    TextFrame,
    TTSSpeakFrame,
    TTSStartedFrame,
    TTSStoppedFrame,
    TTSTextFrame,
)
from ..pipeline.processor import Port, Processor
from ..pipeline.shell import ServiceStage, StageShell
from ..text import SimpleTextAggregator

__all__ = ["Speech"]

log = logging.getLogger("rxvoice.services.tts")


@dataclass(frozen=True)
class Speech:
    """One synthesized unit: 16-bit mono PCM, its rate, and when each word starts (seconds into it)."""

    audio: bytes
    sample_rate: int
    words: tuple[tuple[str, float], ...]
    duration: float


class _Stage(ServiceStage, Protocol):
    """What a session reads of its stage (a ``TTSService``)."""

    @property
    def chunk_secs(self) -> float: ...
    @property
    def lead(self) -> float: ...

    def synthesize(self, text: str) -> Speech: ...


_WORDLESS = re.compile(r"\w")
_SLACK = 0.001  # a millisecond: what a timer can resolve
_BACKSTOP = 86_400.0  # the link's own bound on a held end of input (the stage's watchdog comes far sooner)


class _Unit:
    """One piece of text to speak, its synthesis, and how far its playback got."""

    __slots__ = ("append", "backchannel", "chunk", "future", "next_word", "speech", "started", "text", "timer")

    def __init__(self, text: str, append: bool, backchannel: BotBackchannelFrame | None = None) -> None:
        self.text = text
        self.append = append
        self.backchannel = backchannel
        """The bot's continuer this unit speaks: no bot turn, no bot-speaking notices, not interrupted."""
        self.future: concurrent.futures.Future[Any] | None = None
        self.speech: Speech | None = None
        self.started: float | None = None
        self.chunk = 0
        self.next_word = 0
        self.timer: abc.DisposableBase | None = None


class _TTSSession:
    """One session: text being grouped, units queued and playing, frames waiting behind them."""

    def __init__(self, tts: _Stage, port: Port) -> None:
        self.tts = tts
        self.port = port
        # events, work off the session, timers, failures: the one shell
        self.shell = StageShell(cast(Processor, tts), port, tts.events, offload=tts.offload)
        self.aggregator = SimpleTextAggregator()
        self.append = True
        self.queue: deque[_Unit | tuple[Frame, Direction]] = deque()
        self.playing: _Unit | None = None
        self.synthesizing: _Unit | None = None
        self.bot_speaking = False
        self.tts_started = False
        self.closed = False
        self.end_queued = False  # an EndFrame waits behind the speech
        self.input_ended = False  # the input completed: the output completes after the last word
        self.watchdog: abc.DisposableBase | None = None  # bounds the synthesis an end waits for
        self.watched: _Unit | None = None
        self.paused_at: float | None = None  # the bot's speech is paused (since then): nothing plays

    # -- frames (inside the session) ---------------------------------------------------

    def on_frame(self, frame: Frame, direction: Direction) -> None:
        if direction is not DOWN:
            self.port.push(frame, direction)
            return
        t = type(frame)
        if t is LLMTextFrame or t is TextFrame:
            self._text(frame)  # type: ignore[arg-type]
        elif t is AggregatedTextFrame:
            f: AggregatedTextFrame = frame  # type: ignore[assignment]
            if f.skip_tts:
                self._after_speech(frame, direction)
            else:
                self._flush()
                self._say(f.text, f.append_to_context)
        elif t is TTSSpeakFrame:
            self._flush()
            self._say(frame.text, frame.append_to_context)  # type: ignore[attr-defined]
        elif t is BotBackchannelFrame:
            self._say(frame.text, False, frame)  # type: ignore[attr-defined, arg-type]
        elif t is InterruptionFrame:
            self._interrupt(frame)
        elif t is BotSpeechPauseFrame:
            self._pause()
            self.port.push_down(frame)
        elif t is BotSpeechResumeFrame:
            self._resume()
            self.port.push_down(frame)
        elif t is CancelFrame:
            self._stop_all()
            self.port.push_down(frame)
            self._end_input()
        elif t is LLMFullResponseEndFrame or t is EndFrame:
            self._flush()
            self._after_speech(frame, direction)
            if t is EndFrame and self.queue:
                self.end_queued = True
                self._watch()
        elif frame.kind is FrameKind.SYSTEM:
            self.port.push_down(frame)
        else:
            self._after_speech(frame, direction)

    def on_input_end(self, direction: Direction) -> float | None:
        """No more input: what is grouped is spoken, and the output completes after the last word."""
        if direction is not DOWN:
            return None
        self._flush()
        if self.playing is None and not self.queue:
            return None
        self.input_ended = True
        self._watch()
        return _BACKSTOP  # the watchdog bounds each synthesis; this only backs it up

    def close(self) -> None:
        self.closed = True
        self._disarm()
        self._stop_all()
        self.shell.close()

    # -- text ---------------------------------------------------------------------------

    def _text(self, frame: TextFrame) -> None:
        if frame.skip_tts:
            self._flush()
            self._after_speech(frame, DOWN)
            return
        self.append = frame.append_to_context
        for unit in self.aggregator.aggregate(frame.text):
            self._say(unit.text, frame.append_to_context)

    def _flush(self) -> None:
        rest = self.aggregator.flush()
        if rest is not None:
            self._say(rest.text, self.append)

    def _say(self, text: str, append: bool, backchannel: BotBackchannelFrame | None = None) -> None:
        text = " ".join(text.split())
        if not _WORDLESS.search(text):
            return  # nothing to pronounce
        self.queue.append(_Unit(text, append, backchannel))
        self._synthesize_next()
        self._play()

    def _after_speech(self, frame: Frame, direction: Direction) -> None:
        if self.playing is None and not self.queue:
            self.port.push(frame, direction)
        else:
            self.queue.append((frame, direction))

    # -- synthesis -------------------------------------------------------------------------

    def _synthesize_next(self) -> None:
        if self.synthesizing is not None or self.closed:
            return
        for item in self.queue:
            if isinstance(item, _Unit) and item.speech is None and item.future is None:
                unit = item
                break
        else:
            return
        self.synthesizing = unit
        unit.future = self.shell.submit(partial(self.tts.synthesize, unit.text), partial(self._ready, unit))
        self._watch()

    def _ready(self, unit: _Unit, outcome: Any) -> None:
        """A synthesis came back (inside the session): its speech, or its failure (reported, not spoken)."""
        if unit is not self.synthesizing:
            return  # interrupted meanwhile
        self.synthesizing = None
        if self.watched is unit:
            self._disarm()
        if not isinstance(outcome, BaseException | Speech):
            outcome = ServiceError(f"{self.tts.name}.synthesize returned {outcome!r}, not a Speech")
        if isinstance(outcome, BaseException):
            error = self.shell.failed(outcome, "synthesis")
            log.info("%s: %r is not spoken (%s)", self.tts.name, unit.text[:60], error)
            with contextlib.suppress(ValueError):
                self.queue.remove(unit)
        else:
            unit.speech = outcome
        self._synthesize_next()
        self._play()

    # -- the end, held until the last word is spoken ------------------------------------------

    def _watch(self) -> None:
        """Bound the synthesis running now, if an end waits for it (once per unit)."""
        unit = self.synthesizing
        if unit is self.watched:
            return
        self._disarm()
        if unit is not None and (self.end_queued or self.input_ended):
            self.watched = unit
            self.watchdog = self.shell.later(self.tts.end_grace, partial(self._give_up, unit))

    def _disarm(self) -> None:
        self.watched = None
        if self.watchdog is not None:
            self.watchdog.dispose()
            self.watchdog = None

    def _give_up(self, unit: _Unit) -> None:
        """A synthesis the end waits for took longer than ``end_grace``: reported, not spoken; the rest goes on."""
        self.watchdog = self.watched = None
        if unit is not self.synthesizing:
            return
        self.synthesizing = None
        if unit.future is not None:
            unit.future.cancel()
        self.shell.failed(ServiceError(
            f"{self.tts.name}: synthesizing {unit.text[:60]!r} took more than {self.tts.end_grace:g} s after "
            "the end; it is not spoken", retryable=True,
        ), "synthesis")
        with contextlib.suppress(ValueError):
            self.queue.remove(unit)
        self._synthesize_next()
        self._play()

    def _end_input(self) -> None:
        """Nothing is left to speak: a held end of input goes on (the output completes)."""
        if self.playing is None and not self.queue:
            self.end_queued = False
            self._disarm()
            if self.input_ended:
                self.input_ended = False
                self.port.finish_input()

    # -- playback ---------------------------------------------------------------------------

    # -- a pause: the bot falls silent, keeping its place -----------------------------------

    def _pause(self) -> None:
        """Stop playing now, keeping the rest (words, audio, queue); nothing to pause when the bot is quiet."""
        if self.paused_at is not None or (self.playing is None and not self.bot_speaking):
            return
        self.paused_at = self.port.time()
        unit = self.playing
        if unit is not None and unit.timer is not None:
            unit.timer.dispose()
            unit.timer = None

    def _unpause(self) -> None:
        """The clock of the unit playing moves on by the pause, as if the pause had not been."""
        if self.paused_at is None:
            return
        gap = self.port.time() - self.paused_at
        self.paused_at = None
        unit = self.playing
        if unit is not None and unit.started is not None:
            unit.started += gap

    def _resume(self) -> None:
        """Play on from where the pause stopped (harmless when nothing is paused)."""
        if self.paused_at is None:
            return
        self._unpause()
        if self.playing is not None:
            self._tick()
        else:
            self._play()

    # -- playback ---------------------------------------------------------------------------

    def _play(self) -> None:
        """Start the next unit when nothing plays: frames at the head go on first."""
        if self.paused_at is not None:
            return  # paused between units: the next one waits for the resume
        while self.playing is None and self.queue:
            head = self.queue[0]
            if isinstance(head, _Unit):
                if head.speech is None:
                    return  # still synthesizing: the bot keeps the floor
                self.queue.popleft()
                self._start(head)
                return
            self.queue.popleft()
            if not any(isinstance(i, _Unit) for i in self.queue):
                self._speech_over(False)
            frame, direction = head
            self.port.push(frame, direction)
        if self.playing is None and not self.queue:
            self._speech_over(False)
            self._end_input()

    def _start(self, unit: _Unit) -> None:
        port = self.port
        if unit.backchannel is not None:
            # A continuer during the user's turn: spoken, announced as itself, never as a bot turn.
            port.push_down(unit.backchannel)
            self.playing = unit
            unit.started = port.time()
            self._tick()
            return
        if not self.tts_started:
            self.tts_started = True
            port.push_down(TTSStartedFrame())
        if not self.bot_speaking:
            self.bot_speaking = True
            started = BotStartedSpeakingFrame()
            port.push_down(started)
            port.push_up(started)
        self.playing = unit
        unit.started = port.time()
        self.shell.event("on_speech_started", unit.text)
        self._tick()

    def _tick(self) -> None:
        unit = self.playing
        if unit is None or unit.speech is None or unit.started is None or self.paused_at is not None:
            return
        unit.timer = None
        speech = unit.speech
        tts = self.tts
        elapsed = self.port.time() - unit.started
        step = max(2, round(tts.chunk_secs * speech.sample_rate) * 2)
        audio = speech.audio
        # words spoken by now
        while unit.next_word < len(speech.words) and speech.words[unit.next_word][1] <= elapsed + _SLACK:
            word = speech.words[unit.next_word][0]
            unit.next_word += 1
            self.port.push_down(TTSTextFrame(word, aggregated_by=AggregationType.WORD.value,
                                             append_to_context=unit.append))
        # audio due by now (plus the lead)
        due = (elapsed + tts.lead + _SLACK) * speech.sample_rate * 2
        while unit.chunk * step < len(audio) and unit.chunk * step <= due:
            piece = audio[unit.chunk * step:(unit.chunk + 1) * step]
            unit.chunk += 1
            self.port.push_down(OutputAudioRawFrame(piece, speech.sample_rate))
        done = unit.next_word >= len(speech.words) and unit.chunk * step >= len(audio)
        if done and elapsed >= speech.duration - _SLACK:
            self.playing = None
            self._play()
            return
        # the next moment something is due: a word, a chunk, or the end
        times = [speech.duration]
        if unit.next_word < len(speech.words):
            times.append(speech.words[unit.next_word][1])
        if unit.chunk * step < len(audio):
            times.append(unit.chunk * step / (2 * speech.sample_rate) - tts.lead)
        wait = max(_SLACK, min(times) - elapsed)
        unit.timer = self.shell.later(wait, self._tick)

    def _speech_over(self, interrupted: bool) -> None:
        port = self.port
        if self.tts_started:
            self.tts_started = False
            port.push_down(TTSStoppedFrame())
        if self.bot_speaking:
            self.bot_speaking = False
            stopped = BotStoppedSpeakingFrame()
            port.push_down(stopped)
            port.push_up(stopped)
            self.shell.event("on_speech_stopped", interrupted)

    def _drop_units(self) -> None:
        if self.playing is not None and self.playing.timer is not None:
            self.playing.timer.dispose()
        self.playing = None
        if self.synthesizing is not None and self.synthesizing.future is not None:
            self.synthesizing.future.cancel()
        self.synthesizing = None
        self._disarm()
        self.aggregator.reset()

    def _interrupt(self, frame: Frame) -> None:
        self._unpause()  # the interruption ends any pause: what was paused is dropped (a continuer plays on)
        playing = self.playing
        spared = playing if playing is not None and playing.backchannel is not None else None
        if spared is not None:
            self.playing = None  # a continuer being said is not cut off: it plays on
        self._drop_units()
        kept = [i for i in self.queue if (isinstance(i, _Unit) and i.backchannel is not None)
                or (not isinstance(i, _Unit) and not i[0].interruptible)]
        self.queue.clear()
        self.port.push_down(frame)
        self._speech_over(True)
        units = [i for i in kept if isinstance(i, _Unit)]
        for unit in units:
            if unit.speech is None:
                unit.future = None  # its synthesis was cancelled with the rest: it is asked again
        for item in kept:
            if not isinstance(item, _Unit):
                self.port.push(item[0], item[1])
        self.queue.extend(units)
        if spared is not None:
            self.playing = spared
            if spared.timer is None:
                self._tick()  # it was paused
        else:
            self._synthesize_next()
            self._play()
        self._end_input()

    def _stop_all(self) -> None:
        self.paused_at = None
        self._drop_units()
        self.queue.clear()
        self.tts_started = self.bot_speaking = False

