"""``transcribe``: the words of a recording without a transcript, utterance by utterance.

A fake STT (no model) over the booking call's real VAD spans gives two finals for the first span and the
second span's final late (after the third span's): each final must become its own utterance, timed by the
span it came from, in the order said, no words lost.
"""

from __future__ import annotations

from typing import Any

from rxvoice.cli.transcribe import transcribe
from rxvoice.cli.wav import read_wav
from rxvoice.frames import (
    DOWN,
    Direction,
    Frame,
    InputAudioRawFrame,
    TranscriptionFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from rxvoice.pipeline.processor import Port
from rxvoice.services.stt import Recognizer, STTService, Utterance
from tests.support import booking_paths


class _FakeSession:
    def __init__(self, stt: _FakeSTT, port: Port) -> None:
        self.stt, self.port = stt, port
        self.heard = 0.0
        self.start = 0.0
        self.held: list[TranscriptionFrame] = []

    def on_frame(self, frame: Frame, direction: Direction) -> None:
        self.port.push(frame, direction)
        if direction is not DOWN:
            return
        if isinstance(frame, InputAudioRawFrame):
            self.heard += frame.num_frames / frame.sample_rate
        elif isinstance(frame, VADUserStartedSpeakingFrame):
            self.start = max(0.0, self.heard - frame.start_secs)
        elif isinstance(frame, VADUserStoppedSpeakingFrame):
            span = Utterance(round(self.start, 3), round(self.heard - frame.stop_secs, 3))
            index = len(self.stt.spans)
            self.stt.spans.append(span)
            texts = [f"span {index} part one", f"span {index} part two"] if index == 0 else [f"span {index}"]
            made = [TranscriptionFrame(t, "user", "", result=span if self.stt.with_span else None, finalized=True)
                    for t in texts]
            if index == 1:
                self.held = made  # late: after the next span's final
                return
            for f in made + self.held:
                self.port.push_down(f)
            self.held = []

    def on_input_end(self, direction: Direction) -> float | None:
        return None

    def close(self) -> None:
        pass


class _FakeSTT(STTService):
    name = "FakeSTT"

    def __init__(self, *, with_span: bool) -> None:
        super().__init__()
        self.with_span = with_span
        self.spans: list[Utterance] = []

    def new_recognizer(self) -> Recognizer:  # pragma: no cover - the fake session never asks
        raise AssertionError("not used")

    def open(self, port: Port) -> Any:
        return _FakeSession(self, port)


def test_each_final_is_its_own_utterance_timed_by_its_span() -> None:
    stt = _FakeSTT(with_span=True)
    heard = transcribe(read_wav(booking_paths()[0]), stt)
    spans = stt.spans
    assert len(spans) >= 3, spans
    expected = [("span 0 part one", spans[0]), ("span 0 part two", spans[0])]
    expected += [(f"span {i}", s) for i, s in enumerate(spans) if i > 0]
    got = [(s.text, s.start, s.end) for s in heard.segments]
    assert got == [(text, s.start, s.end) for text, s in expected]
    assert all(s.turn_end for s in heard.segments)


def test_finals_without_a_span_keep_every_word_in_the_order_they_came() -> None:
    """A stage whose finals carry no Utterance: each final still its own utterance, timed by the last span
    ended before it arrived (the late one shares the span it arrived after); nothing lost."""
    stt = _FakeSTT(with_span=False)
    heard = transcribe(read_wav(booking_paths()[0]), stt)
    spans = stt.spans
    texts = [s.text for s in heard.segments]
    assert texts == ["span 0 part one", "span 0 part two", "span 2", "span 1"] + [f"span {i}" for i in
                                                                                   range(3, len(spans))]
    times = [(s.start, s.end) for s in heard.segments]
    assert times[:4] == [(spans[0].start, spans[0].end)] * 2 + [(spans[2].start, spans[2].end)] * 2
