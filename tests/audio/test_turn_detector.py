"""The turn-taking detector in virtual time: turn starts and ends from VAD plus an end-of-turn model."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from rxvoice import frames as F
from rxvoice.audio.turn import TurnTakingDetector
from rxvoice.audio.vad_processor import VADProcessor
from rxvoice.errors import ConfigurationError
from rxvoice.pipeline import SchedulerOffload
from rxvoice.testing import FrameMarbles, Recording

from .test_vad_processor import SPEECH, LoudVAD, audio_timeline


@dataclass
class Stream:
    owner: ScriptedModel
    sample_rate: int
    speech: bool = False
    silent: int = 0
    appended: list[tuple[int, bool]] = field(default_factory=list)

    def append_audio(self, pcm: bytes, is_speech: bool) -> bool:
        self.appended.append((len(pcm), is_speech))
        if is_speech:
            self.speech, self.silent = True, 0
        elif self.speech:
            self.silent += 1
            if self.owner.fallback_chunks and self.silent >= self.owner.fallback_chunks:
                self.speech, self.silent = False, 0
                return True
        return False

    def analyze(self) -> tuple[bool, float | None]:
        self.owner.analyses += 1
        verdict = self.owner.script.pop(0) if self.owner.script else (True, 0.9)
        if isinstance(verdict, BaseException):
            raise verdict
        return verdict  # type: ignore[no-any-return]

    def clear(self) -> None:
        self.speech, self.silent = False, 0

    def update_vad_start_secs(self, secs: float) -> None:
        self.owner.start_secs.append(secs)


@dataclass
class ScriptedModel:
    """An end-of-turn analyzer answering from a script."""

    script: list[Any] = field(default_factory=list)
    fallback_chunks: int = 0
    analyses: int = 0
    params: Any = "turn-params"
    streams: list[Stream] = field(default_factory=list)
    start_secs: list[float] = field(default_factory=list)

    def open_stream(self, sample_rate: int) -> Stream:
        self.streams.append(Stream(self, sample_rate))
        return self.streams[-1]


def run(model: ScriptedModel, timeline: list[tuple[float, Any]], *, latency: float = 0.05,
        until: float | None = None, **kw: Any) -> tuple[Recording, TurnTakingDetector]:
    bench = FrameMarbles()
    offload = SchedulerOffload(bench.scheduler, latency)
    detector = TurnTakingDetector(model, vad=VADProcessor(LoudVAD()), offload=offload, **kw)
    return bench.run(detector, down=timeline, watch=[detector], until=until), detector


def turn_frames(rec: Recording, direction: str = "down") -> list[tuple[int, str]]:
    kinds = (F.UserStartedSpeakingFrame, F.UserStoppedSpeakingFrame, F.InterruptionFrame)
    return [(t, type(f).__name__) for t, f in rec.of_type(kinds, direction)]


TWO_PHRASES = [(False, 0.5), (True, 1.0), (False, 0.5), (True, 0.5), (False, 1.0)]


def test_a_complete_verdict_ends_the_turn_after_the_model_latency() -> None:
    """Speech, pause, complete verdict 50 ms after the VAD stop: started + interruption, then stopped, both ways."""
    rec, _ = run(ScriptedModel([(True, 0.9)]), audio_timeline(SPEECH))
    expected = [(600, "UserStartedSpeakingFrame"), (600, "InterruptionFrame"), (1750, "UserStoppedSpeakingFrame")]
    assert turn_frames(rec) == expected
    assert turn_frames(rec, "up") == expected
    [(t, metrics)] = rec.of_type(F.MetricsFrame)
    data = metrics.data[0]  # type: ignore[attr-defined]
    assert (t, data.is_complete, data.probability, data.e2e_processing_time_ms) == (1750, True, 0.9, pytest.approx(50))


def test_an_incomplete_verdict_keeps_the_turn_open_through_the_pause() -> None:
    """Incomplete at the first pause, complete at the second: one turn, one start, one stop."""
    model = ScriptedModel([(False, 0.1), (True, 0.8)])
    rec, _detector = run(model, audio_timeline(TWO_PHRASES))
    assert [k for _, k in turn_frames(rec)] == ["UserStartedSpeakingFrame", "InterruptionFrame",
                                               "UserStoppedSpeakingFrame"]
    assert turn_frames(rec)[-1][0] == 2750  # second VAD stop (2.7 s) + 50 ms
    assert model.analyses == 2
    assert [n for _, n, _ in rec.events] == ["on_user_turn_started", "on_end_of_turn_verdict",
                                            "on_end_of_turn_verdict", "on_user_turn_stopped"]


def test_speech_resuming_before_the_verdict_discards_it() -> None:
    """A complete verdict arriving after speech resumed does not end the turn; the next pause decides."""
    model = ScriptedModel([(True, 0.9), (False, 0.2)])
    # The pause is 0.25 s: the VAD stops at 1.7 s, speech resumes at 1.75 s; the verdict comes at 1.9 s.
    timeline = audio_timeline([(False, 0.5), (True, 1.0), (False, 0.25), (True, 0.5), (False, 1.0)])
    rec, _ = run(model, timeline, latency=0.2)
    assert [k for _, k in turn_frames(rec)][:2] == ["UserStartedSpeakingFrame", "InterruptionFrame"]
    # Nothing ends the turn at the pauses; with the audio gone, the stop watchdog closes it 5 s later.
    assert rec.events_named("on_user_turn_stopped") == [(2440 + 5000, "timeout")]


def test_the_silence_fallback_ends_an_incomplete_turn() -> None:
    """Incomplete verdict, then the stream's silence fallback: the turn ends without another model run."""
    model = ScriptedModel([(False, 0.1)], fallback_chunks=50)
    rec, _detector = run(model, audio_timeline([(False, 0.5), (True, 1.0), (False, 2.0)]))
    assert [k for _, k in turn_frames(rec)][-1] == "UserStoppedSpeakingFrame"
    assert turn_frames(rec)[-1][0] == 2680  # the 50th chunk after the VAD stop (1.7 s, counted from its own chunk)
    assert model.analyses == 1
    assert rec.events_named("on_user_turn_stopped") == [(2680, "silence")]


def test_a_failing_model_is_an_incomplete_verdict() -> None:
    """The model raising: logged, no turn end, the next pause is judged normally."""
    model = ScriptedModel([RuntimeError("boom"), (True, 0.7)])
    rec, _ = run(model, audio_timeline(TWO_PHRASES))
    assert [k for _, k in turn_frames(rec)][-1] == "UserStoppedSpeakingFrame"
    assert turn_frames(rec)[-1][0] == 2750


def test_no_interruption_when_turned_off_and_params_announced() -> None:
    """enable_interruptions=False sends no InterruptionFrame; a StartFrame announces the turn params both ways."""
    timeline = [(0.0, F.StartFrame()), *audio_timeline(SPEECH)]
    rec, _ = run(ScriptedModel(), timeline, enable_interruptions=False)
    assert [k for _, k in turn_frames(rec)] == ["UserStartedSpeakingFrame", "UserStoppedSpeakingFrame"]
    params = [f for _, f in rec.of_type(F.SpeechControlParamsFrame, "up") if f.turn_params is not None]  # type: ignore[attr-defined]
    assert params and params[0].turn_params == "turn-params"  # type: ignore[attr-defined]


def test_every_frame_passes_and_vad_frames_come_out_too() -> None:
    """All audio passes on; the embedded VAD's frames go out as the VAD operator sends them."""
    rec, _ = run(ScriptedModel(), audio_timeline(SPEECH))
    assert sum(isinstance(f, F.InputAudioRawFrame) for f in rec.down_frames()) == 125
    assert [t for t, _ in rec.of_type((F.VADUserStartedSpeakingFrame, F.VADUserStoppedSpeakingFrame))] == [600, 1700]


def test_stereo_is_fed_to_the_model_as_mono() -> None:
    """Stereo chunks reach the end-of-turn stream downmixed (640 bytes of mono per 20 ms)."""
    model = ScriptedModel()
    run(model, audio_timeline(SPEECH, channels=2))
    assert {n for n, _ in model.streams[0].appended} == {640}


def test_upstream_vad_frames_drive_the_detector() -> None:
    """use_upstream_vad=True: VAD frames from an earlier VAD operator start and stop the turn."""
    model = ScriptedModel([(True, 0.9)])
    bench = FrameMarbles()
    detector = TurnTakingDetector(model, use_upstream_vad=True, offload=SchedulerOffload(bench.scheduler, 0.0))
    vad = [(0.6, F.VADUserStartedSpeakingFrame(0.1, 0.6)), (1.7, F.VADUserStoppedSpeakingFrame(0.2, 1.7))]
    timeline = sorted(audio_timeline(SPEECH) + vad, key=lambda item: item[0])  # stable: VAD after its audio
    rec = bench.run(detector, down=timeline)
    assert turn_frames(rec) == [(600, "UserStartedSpeakingFrame"), (600, "InterruptionFrame"),
                                (1700, "UserStoppedSpeakingFrame")]
    assert model.analyses == 1 and model.start_secs == [0.1]


@pytest.mark.parametrize("kwargs", [{"analyzer": object()}, {"vad": object()},
                                    {"vad": VADProcessor(LoudVAD()), "use_upstream_vad": True},
                                    {"offload": 3}])
def test_bad_configuration_is_refused(kwargs: dict[str, Any]) -> None:
    """A non-analyzer, a non-VAD, both VAD choices, or a non-callable offload raise ConfigurationError."""
    kwargs.setdefault("analyzer", ScriptedModel())
    with pytest.raises(ConfigurationError):
        TurnTakingDetector(**kwargs)
