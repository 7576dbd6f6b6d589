"""The VAD operator in virtual time: frames out, heartbeats, audio idle, rates, errors, batching."""

from __future__ import annotations

import itertools
from typing import Any, ClassVar

import numpy as np
import pytest
from reactivex.testing import TestScheduler

from rxvoice import frames as F
from rxvoice import pipeline
from rxvoice.audio import resample
from rxvoice.audio.pcm import Float32Array
from rxvoice.audio.vad import SileroVADAnalyzer, VADAnalyzer, VADParams
from rxvoice.audio.vad_processor import VADBatcher, VADProcessor
from rxvoice.errors import ConfigurationError, InvalidAudioError, InvalidFrameFieldError
from rxvoice.testing import FrameMarbles, Recording

CHUNK = 0.02


class LoudVAD(VADAnalyzer):
    """A model-free analyzer: a 20 ms window is speech when it is loud (|x| mean > 0.1)."""

    supported_sample_rates: ClassVar[tuple[int, ...]] = (8000, 16000)

    def __init__(self, sample_rate: int = 16000, params: VADParams | None = None) -> None:
        super().__init__(sample_rate, params or VADParams(start_secs=0.1, stop_secs=0.2, min_volume=0.0))

    def _window_samples_for(self, sample_rate: int) -> int:
        return sample_rate // 50

    def _window_confidence(self, window: Float32Array) -> float:
        return 1.0 if float(np.abs(window).mean()) > 0.1 else 0.0


def chunk(loud: bool, rate: int = 16000, channels: int = 1) -> F.InputAudioRawFrame:
    """20 ms of a loud square wave or silence."""
    n = rate // 50
    mono = (np.where(np.arange(n) % 20 < 10, 8000, -8000) if loud else np.zeros(n)).astype("<i2")
    data = np.repeat(mono, channels) if channels > 1 else mono
    return F.InputAudioRawFrame(data.tobytes(), sample_rate=rate, num_channels=channels)


def audio_timeline(pattern: list[tuple[bool, float]], *, start: float = 0.0, **kw: Any) -> list[tuple[float, Any]]:
    """Chunks arriving every 20 ms (stamped at their end): ``(loud, seconds)`` spans in order."""
    out: list[tuple[float, Any]] = []
    t = start
    for loud, secs in pattern:
        for _ in range(round(secs / CHUNK)):
            t += CHUNK
            out.append((round(t, 6), chunk(loud, **kw)))
    return out


def vad_frames(rec: Recording, direction: str = "down") -> list[tuple[int, str]]:
    kinds = (F.VADUserStartedSpeakingFrame, F.VADUserStoppedSpeakingFrame)
    return [(t, type(f).__name__) for t, f in rec.of_type(kinds, direction)]


SPEECH = [(False, 0.5), (True, 1.0), (False, 1.0)]


def test_started_and_stopped_go_both_ways_after_the_audio() -> None:
    """Speech gives one started and one stopped frame, downstream and upstream, each after its audio frame."""
    rec = FrameMarbles().run(VADProcessor(LoudVAD()), down=audio_timeline(SPEECH))
    down = vad_frames(rec)
    assert [k for _, k in down] == ["VADUserStartedSpeakingFrame", "VADUserStoppedSpeakingFrame"]
    assert vad_frames(rec, "up") == down
    # 5 loud windows (0.1 s) confirm the start; 10 silent ones (0.2 s) the stop.
    assert [t for t, _ in down] == [600, 1700]
    started = rec.of_type(F.VADUserStartedSpeakingFrame)[0][1]
    assert (started.start_secs, started.timestamp) == (0.1, pytest.approx(0.6))
    frames = rec.down_frames()
    i = next(i for i, f in enumerate(frames) if isinstance(f, F.VADUserStartedSpeakingFrame))
    assert isinstance(frames[i - 1], F.InputAudioRawFrame)
    assert sum(isinstance(f, F.InputAudioRawFrame) for f in frames) == 125  # every chunk passed on


def test_user_speaking_heartbeat_is_rate_limited() -> None:
    """While speaking, a UserSpeakingFrame goes out right after the start and then at most every period."""
    rec = FrameMarbles().run(VADProcessor(LoudVAD(), speech_activity_period=0.2), down=audio_timeline(SPEECH))
    beats = [t for t, _ in rec.of_type(F.UserSpeakingFrame)]
    assert beats[0] == 600
    # One per period, on the first chunk at or past it (20 ms chunks: a period is 200–220 ms),
    # none once the speech has stopped (the last loud chunk ends at 1.5 s).
    gaps = [b - a for a, b in itertools.pairwise(beats)]
    assert all(200 <= g <= 220 for g in gaps), gaps
    assert len(beats) == 5 and beats[-1] <= 1500
    assert [t for t, _ in rec.of_type(F.UserSpeakingFrame, "up")] == beats


def test_audio_idle_timeout_stops_speech_when_audio_stops_arriving() -> None:
    """Audio stops mid-speech (muted mic): the stop comes audio_idle_timeout after the last chunk."""
    timeline = audio_timeline([(False, 0.2), (True, 0.6)])
    rec = FrameMarbles().run(VADProcessor(LoudVAD(), audio_idle_timeout=0.5), down=timeline, until=5)
    assert vad_frames(rec) == [(300, "VADUserStartedSpeakingFrame"), (1300, "VADUserStoppedSpeakingFrame")]


def test_audio_idle_timeout_zero_disables_the_watch() -> None:
    """audio_idle_timeout=0: speech cut off by missing audio never stops on its own."""
    timeline = audio_timeline([(False, 0.2), (True, 0.6)])
    rec = FrameMarbles().run(VADProcessor(LoudVAD(), audio_idle_timeout=0), down=timeline, until=10)
    assert vad_frames(rec) == [(300, "VADUserStartedSpeakingFrame")]


def test_audio_idle_does_not_fire_while_audio_keeps_coming() -> None:
    """Chunks keep arriving: the idle watch never fires, however long the speech."""
    rec = FrameMarbles().run(VADProcessor(LoudVAD(), audio_idle_timeout=0.1), down=audio_timeline(SPEECH))
    assert [k for _, k in vad_frames(rec)] == ["VADUserStartedSpeakingFrame", "VADUserStoppedSpeakingFrame"]


def test_start_frame_announces_the_vad_params_both_ways() -> None:
    """A StartFrame is followed by a SpeechControlParamsFrame carrying the VAD params, both ways."""
    params = VADParams(start_secs=0.1, stop_secs=0.3, min_volume=0.0)
    rec = FrameMarbles().run(VADProcessor(LoudVAD(params=params)), down=[(0.0, F.StartFrame())])
    assert rec.down_types() == ["StartFrame", "SpeechControlParamsFrame"]
    assert rec.up_frames()[0].vad_params == params  # type: ignore[attr-defined]


def test_a_start_frame_whose_rate_is_no_rate_is_refused_and_the_audio_decides() -> None:
    """StartFrame(audio_in_sample_rate="16k") cannot be made (a typed error); with no start frame the audio's
    own rate sets the analyzer up and the decisions are the usual ones."""
    with pytest.raises(InvalidFrameFieldError):
        F.StartFrame(audio_in_sample_rate="16k")  # type: ignore[arg-type]
    rec = FrameMarbles().run(VADProcessor(LoudVAD()), down=audio_timeline(SPEECH))
    assert [t for t, _ in vad_frames(rec)] == [600, 1700]


def test_params_update_changes_the_stop_delay() -> None:
    """A VADParamsUpdateFrame re-times the stop and is announced again."""
    update = F.VADParamsUpdateFrame(VADParams(start_secs=0.1, stop_secs=0.4, min_volume=0.0))
    timeline = [(0.0, update), *audio_timeline(SPEECH)]
    rec = FrameMarbles().run(VADProcessor(LoudVAD()), down=timeline)
    assert [t for t, _ in vad_frames(rec)] == [600, 1900]
    stopped = rec.of_type(F.VADUserStoppedSpeakingFrame)[0][1]
    assert stopped.stop_secs == 0.4
    assert len(rec.of_type(F.SpeechControlParamsFrame)) == 1


def test_bad_params_update_is_reported_and_ignored() -> None:
    """A VADParamsUpdateFrame without VADParams: a ConfigurationError on_error and upstream; timing unchanged."""
    vad = VADProcessor(LoudVAD())
    errors: list[BaseException] = []
    vad.events.on("on_error", lambda _src, e: errors.append(e))
    timeline = [(0.0, F.VADParamsUpdateFrame({"stop_secs": 9})), *audio_timeline(SPEECH)]
    rec = FrameMarbles().run(vad, down=timeline)
    assert [type(e) for e in errors] == [ConfigurationError]
    assert [t for t, _ in vad_frames(rec)] == [600, 1700]


@pytest.mark.parametrize(("rate", "channels"), [(48000, 1), (8000, 1), (16000, 2), (44100, 2)])
def test_other_rates_and_stereo_give_the_same_decisions(rate: int, channels: int) -> None:
    """48/44.1 kHz is resampled (one chunk of filter delay at most), 8 kHz analyzed natively, stereo averaged."""
    rec = FrameMarbles().run(VADProcessor(LoudVAD()), down=audio_timeline(SPEECH, rate=rate, channels=channels))
    times = [t for t, _ in vad_frames(rec)]
    if rate in LoudVAD.supported_sample_rates:
        assert times == [600, 1700]
    else:
        assert [k for _, k in vad_frames(rec)] == ["VADUserStartedSpeakingFrame", "VADUserStoppedSpeakingFrame"]
        assert 600 <= times[0] <= 620 and 1700 <= times[1] <= 1740


def test_silero_on_the_recording_at_48k_8k_and_stereo(booking: np.ndarray) -> None:
    """Real speech (the first phrase) at 48 kHz, 8 kHz and in stereo: the 16 kHz mono start and stop, within 40 ms."""

    def timeline(samples: np.ndarray, rate: int, channels: int = 1) -> list[tuple[float, Any]]:
        n = rate // 50
        out = []
        for i in range(0, len(samples) // channels - n + 1, n):
            pcm = samples[i * channels:(i + n) * channels].astype("<i2").tobytes()
            out.append((round((i + n) / rate, 6), F.InputAudioRawFrame(pcm, sample_rate=rate, num_channels=channels)))
        return out

    clip = booking[: 16000 * 7 // 2]
    as_float = clip.astype(np.float32) / 32768
    variants = {
        "16k": timeline(clip, 16000),
        "48k": timeline(np.round(resample(as_float, 16000, 48000) * 32767).astype("<i2"), 48000),
        "8k": timeline(np.round(resample(as_float, 16000, 8000) * 32767).astype("<i2"), 8000),
        "stereo": timeline(np.repeat(clip, 2), 16000, 2),
    }
    results = {name: vad_frames(FrameMarbles().run(VADProcessor(), down=t)) for name, t in variants.items()}
    reference = results["16k"]
    assert [k for _, k in reference] == ["VADUserStartedSpeakingFrame", "VADUserStoppedSpeakingFrame"]
    assert results["stereo"] == reference
    for name in ("48k", "8k"):
        assert [k for _, k in results[name]] == [k for _, k in reference], name
        assert all(abs(a - b) <= 40 for (a, _), (b, _) in zip(results[name], reference, strict=True)), name


def test_the_vad_inside_the_pair_converts_the_audio_like_the_operator(booking: np.ndarray) -> None:
    """``Pair(vad=VADConfig(...))`` at 48 kHz, 8 kHz and in stereo: the 16 kHz mono start and stop, within 40 ms."""
    from rxvoice.aggregators import Pair, VADConfig

    def timeline(samples: np.ndarray, rate: int, channels: int = 1) -> list[tuple[float, Any]]:
        n = rate // 50
        return [(round((i + n) / rate, 6),
                 F.InputAudioRawFrame(samples[i * channels:(i + n) * channels].astype("<i2").tobytes(),
                                      sample_rate=rate, num_channels=channels))
                for i in range(0, len(samples) // channels - n + 1, n)]

    clip = booking[: 16000 * 7 // 2]
    as_float = clip.astype(np.float32) / 32768
    variants = {
        "16k": timeline(clip, 16000),
        "48k": timeline(np.round(resample(as_float, 16000, 48000) * 32767).astype("<i2"), 48000),
        "8k": timeline(np.round(resample(as_float, 16000, 8000) * 32767).astype("<i2"), 8000),
        "stereo": timeline(np.repeat(clip, 2), 16000, 2),
    }
    results = {}
    for name, frames in variants.items():
        pair = Pair(vad=VADConfig(SileroVADAnalyzer()))
        results[name] = vad_frames(FrameMarbles().run(pair.user(), down=frames), "up")
    reference = results["16k"]
    assert [k for _, k in reference] == ["VADUserStartedSpeakingFrame", "VADUserStoppedSpeakingFrame"]
    assert results["stereo"] == reference
    for name in ("48k", "8k"):
        assert [k for _, k in results[name]] == [k for _, k in reference], name
        assert all(abs(a - b) <= 40 for (a, _), (b, _) in zip(results[name], reference, strict=True)), name


@pytest.mark.parametrize(("rate", "channels"), [(16000, 1), (48000, 2)])
def test_unusable_audio_is_reported_and_skipped(rate: int, channels: int) -> None:
    """A corrupted chunk: InvalidAudioError on_error and as an ErrorFrame upstream; it passes on, the VAD goes on."""
    bad = chunk(True, rate, channels)
    object.__setattr__(bad, "audio", b"\x01\x02\x03")  # a transport bug: odd byte count
    timeline = audio_timeline(SPEECH, rate=rate, channels=channels)
    timeline.insert(30, (timeline[30][0], bad))
    vad = VADProcessor(LoudVAD())
    errors: list[BaseException] = []
    vad.events.on("on_error", lambda _src, e: errors.append(e))
    rec = FrameMarbles().run(vad, down=timeline)
    assert [type(e) for e in errors] == [InvalidAudioError]
    [(_, error_frame)] = rec.of_type(F.ErrorFrame, "up")
    assert isinstance(error_frame.error, InvalidAudioError)  # type: ignore[attr-defined]
    assert bad in rec.down_frames()
    times = [t for t, _ in vad_frames(rec)]
    assert len(times) == 2 and 600 <= times[0] <= 620 and 1700 <= times[1] <= 1740


def test_a_factory_gives_each_session_its_own_analyzer() -> None:
    """With a factory, two runs of the same processor do not share analyzer state."""
    made: list[VADAnalyzer] = []

    def factory() -> VADAnalyzer:
        made.append(LoudVAD())
        return made[-1]

    vad = VADProcessor(factory)
    first = FrameMarbles().run(vad, down=audio_timeline(SPEECH))
    second = FrameMarbles().run(vad, down=audio_timeline(SPEECH))
    assert vad_frames(first) == vad_frames(second)
    assert len(made) == 2 and made[0] is not made[1]


@pytest.mark.parametrize("kwargs", [{"audio_idle_timeout": -1}, {"speech_activity_period": -0.1},
                                    {"analyzer": 3}, {"batcher": object()}])
def test_bad_configuration_is_refused(kwargs: dict[str, Any]) -> None:
    """Negative timings, a non-analyzer or a non-batcher raise ConfigurationError at construction."""
    with pytest.raises(ConfigurationError):
        VADProcessor(**kwargs)


def test_batcher_refuses_a_zero_batch() -> None:
    """VADBatcher(max_batch=0) is a ConfigurationError."""
    with pytest.raises(ConfigurationError):
        VADBatcher(max_batch=0)


# -- batching ---------------------------------------------------------------------------------


def run_sessions(timelines: list[list[tuple[float, Any]]], batcher: VADBatcher | None) -> list[Recording]:
    """Run one VAD pipeline per timeline, all on one TestScheduler (concurrent sessions)."""
    scheduler = TestScheduler()
    bench = FrameMarbles(scheduler=scheduler)
    recs = [Recording() for _ in timelines]
    for rec, timeline in zip(recs, timelines, strict=True):
        stage = pipeline(VADProcessor(batcher=batcher))
        down, _up = stage.duplex(bench.from_timeline(timeline), bench.cold(""))

        def record(f: Any, rec: Recording = rec) -> None:
            rec.down.append((round(scheduler.clock * 1000), f))

        down.subscribe(record, scheduler=scheduler)
    scheduler.advance_to(max(t for tl in timelines for t, _ in tl) + 2.0)
    return recs


def test_batched_sessions_give_the_same_frames_as_unbatched(booking: np.ndarray) -> None:
    """Four concurrent sessions sharing a VADBatcher: identical frames at identical times, fewer model calls."""
    n = 320
    timelines = []
    for k in range(4):
        samples = np.roll(booking[: 16000 * 8], k * 4000)
        timelines.append([(round((i + n) / 16000, 6), F.InputAudioRawFrame(samples[i:i + n].tobytes()))
                          for i in range(0, len(samples) - n + 1, n)])
    batcher = VADBatcher()
    batched = run_sessions(timelines, batcher)
    alone = run_sessions(timelines, None)
    for b, a in zip(batched, alone, strict=True):
        assert b.down == a.down
        assert len(vad_frames(b)) >= 2
    assert 0 < batcher.calls <= len(timelines[0])  # one model call per tick for all four sessions


def test_batched_bad_chunk_is_skipped_and_the_others_still_analyzed(booking: np.ndarray) -> None:
    """A session's unusable chunk in a batch: only that chunk is skipped; every session's frames match unbatched."""
    n = 320
    samples = booking[: 16000 * 4]
    good = [(round((i + n) / 16000, 6), F.InputAudioRawFrame(samples[i:i + n].tobytes()))
            for i in range(0, len(samples) - n + 1, n)]
    bad = F.InputAudioRawFrame(b"\x00\x00")
    object.__setattr__(bad, "audio", b"\x01\x02\x03")
    spoiled = list(good)
    spoiled[60] = (spoiled[60][0], bad)
    batched = run_sessions([good, spoiled], VADBatcher())
    alone = run_sessions([good, spoiled], None)
    assert [vad_frames(r) for r in batched] == [vad_frames(r) for r in alone]
    assert len(vad_frames(batched[1])) == 2


def test_non_silero_analyzers_ignore_the_batcher() -> None:
    """A batcher with a non-Silero analyzer: analyzed inline, same frames."""
    batcher = VADBatcher()
    rec = FrameMarbles().run(VADProcessor(LoudVAD(), batcher=batcher), down=audio_timeline(SPEECH))
    assert [t for t, _ in vad_frames(rec)] == [600, 1700]
    assert batcher.calls == 0


def test_silero_analyzer_default_is_per_session() -> None:
    """The default analyzer source makes a fresh SileroVADAnalyzer per session."""
    vad = VADProcessor()
    a, b = vad.new_analyzer(), vad.new_analyzer()
    assert isinstance(a, SileroVADAnalyzer) and a is not b
