"""AudioConverter: one stream's audio, mono at the rate its analyzer runs at (48 kHz, 11,025 Hz, stereo, bad bytes)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from rxvoice import frames as F
from rxvoice.audio import AudioConverter, StreamResampler, downmix_pcm16, pcm16_to_float32, resample
from rxvoice.audio.vad import SileroVADAnalyzer, VADState, WebRTCVADAnalyzer
from rxvoice.errors import ConfigurationError, InvalidAudioError


class Recorder:
    """An analyzer double: records the rates it is set to; supports what it is told to."""

    def __init__(self, rate: int = 16000, supported: tuple[int, ...] = (8000, 16000)) -> None:
        self.sample_rate = rate
        self.supported_sample_rates = supported
        self.set_to: list[int] = []

    def set_sample_rate(self, rate: int) -> None:
        self.set_to.append(rate)
        self.sample_rate = rate


def resampled_total(converter: AudioConverter, rate: int, secs: float = 1.0) -> int:
    """Samples out for ``secs`` of a tone at ``rate`` fed in 20 ms frames (a resampler holds back < 0.1 s)."""
    total = 0
    for _ in range(round(secs * 50)):
        out = converter.convert_pcm(tone(rate, 0.02), rate)
        assert isinstance(out, np.ndarray) and out.dtype == np.float32
        total += out.shape[0]
    return total


def tone(rate: int, secs: float, freq: float = 440.0, channels: int = 1) -> bytes:
    t = np.arange(int(rate * secs)) / rate
    mono = np.round(0.3 * 32767 * np.sin(2 * np.pi * freq * t)).astype("<i2")
    return np.repeat(mono, channels).tobytes()


def test_mono_at_the_analyzers_rate_is_handed_on_as_the_same_bytes() -> None:
    analyzer = Recorder()
    converter = AudioConverter(analyzer)
    frame = F.InputAudioRawFrame(tone(16000, 0.02))
    assert converter.convert(frame) is frame.audio
    assert analyzer.set_to == [] and converter.input_rate == 16000


def test_48k_is_resampled_to_16k_continuously() -> None:
    """The analyzer is switched to 16 kHz once; the chunks come out as one stream would resample the whole."""
    analyzer = Recorder(rate=8000)
    converter = AudioConverter(analyzer)
    pcm = tone(48000, 0.5)
    chunk = 960 * 2  # 20 ms at 48 kHz
    parts = [converter.convert_pcm(pcm[i:i + chunk], 48000) for i in range(0, len(pcm), chunk)]
    assert analyzer.set_to == [16000]
    assert all(isinstance(p, np.ndarray) and p.dtype == np.float32 for p in parts)
    streamed = np.concatenate(parts)
    whole = StreamResampler(48000, 16000).process(pcm16_to_float32(pcm))
    assert abs(streamed.shape[0] - whole.shape[0]) <= 1
    n = min(streamed.shape[0], whole.shape[0])
    np.testing.assert_allclose(streamed[:n], whole[:n], atol=1e-5)


def test_11025_hz_goes_to_16k_and_a_native_rate_stays_native() -> None:
    webrtc = Recorder(rate=16000, supported=(8000, 16000, 32000, 48000))
    converter = AudioConverter(webrtc)
    out = converter.convert(F.InputAudioRawFrame(tone(11025, 0.02), sample_rate=11025))
    assert webrtc.set_to == [] and isinstance(out, np.ndarray) and out.dtype == np.float32
    assert 16000 - 1600 <= resampled_total(converter, 11025) <= 16000  # 1 s at 16 kHz, less the delay
    native = F.InputAudioRawFrame(tone(48000, 0.02), sample_rate=48000)
    assert converter.convert(native) is native.audio and webrtc.set_to == [48000]


def test_stereo_is_averaged_to_mono() -> None:
    converter = AudioConverter(Recorder())
    mono = tone(16000, 0.02)
    both = converter.convert(F.InputAudioRawFrame(tone(16000, 0.02, channels=2), num_channels=2))
    np.testing.assert_array_equal(both, pcm16_to_float32(mono))
    left_only = np.zeros((320, 2), dtype="<i2")
    left_only[:, 0] = np.frombuffer(mono, "<i2")
    half = converter.convert_pcm(left_only.tobytes(), 16000, 2)
    np.testing.assert_allclose(half, pcm16_to_float32(mono) / 2, atol=1e-7)


def test_stereo_48k_is_averaged_then_resampled() -> None:
    converter = AudioConverter(Recorder())
    stereo = converter.convert_pcm(tone(48000, 0.3, channels=2), 48000, 2)
    mono = AudioConverter(Recorder()).convert_pcm(tone(48000, 0.3), 48000)
    np.testing.assert_array_equal(stereo, mono)


@pytest.mark.parametrize(
    ("audio", "rate", "channels", "message"),
    [
        (b"\x01\x02\x03", 16000, 1, "3 bytes"),  # odd: half a sample
        (b"\x01\x02\x03", 48000, 1, "3 bytes"),
        (b"\x00" * 6, 16000, 2, "2-channel"),  # one and a half stereo frames
        (b"\x00" * 4, 0, 1, "sample_rate"),
        (b"\x00" * 4, 16000.0, 1, "sample_rate"),
        (b"\x00" * 4, True, 1, "sample_rate"),
        (b"\x00" * 4, 16000, 0, "num_channels"),
        (b"\x00" * 4, 16000, 33, "num_channels"),
        ("not audio", 16000, 1, "bytes"),
        (np.zeros(4, np.int16), 16000, 1, "bytes"),
    ],
)
def test_bad_audio_is_a_typed_error(audio: Any, rate: Any, channels: Any, message: str) -> None:
    analyzer = Recorder()
    converter = AudioConverter(analyzer)
    with pytest.raises(InvalidAudioError, match=message):
        converter.convert_pcm(audio, rate, channels)
    assert converter.convert_pcm(b"\x00\x00" * 10, 16000) == b"\x00\x00" * 10  # the stream goes on


def test_a_corrupted_frame_is_a_typed_error() -> None:
    frame = F.InputAudioRawFrame(tone(48000, 0.02, channels=2), sample_rate=48000, num_channels=2)
    object.__setattr__(frame, "audio", frame.audio[:-1])  # a transport bug
    with pytest.raises(InvalidAudioError, match="not whole"):
        AudioConverter(Recorder()).convert(frame)


def test_rate_changes_mid_stream() -> None:
    """16 → 48 → 44.1 → 16 kHz: the analyzer switches only when it must; the resampler follows the input."""
    analyzer = Recorder(supported=(16000, 48000))
    converter = AudioConverter(analyzer)
    assert converter.convert_pcm(tone(16000, 0.02), 16000) == tone(16000, 0.02)
    native = tone(48000, 0.02)
    assert converter.convert_pcm(native, 48000) == native and analyzer.set_to == [48000]
    assert 16000 - 1600 <= resampled_total(converter, 44100) <= 16000
    assert analyzer.set_to == [48000, 16000]
    assert converter.convert_pcm(tone(16000, 0.02), 16000) == tone(16000, 0.02)
    assert analyzer.set_to == [48000, 16000] and converter.input_rate == 16000


def test_use_rate_sets_the_analyzer_up_front() -> None:
    analyzer = Recorder(rate=8000)
    converter = AudioConverter(analyzer)
    assert converter.use_rate(22050) == 16000 and analyzer.set_to == [16000]
    assert converter.use_rate(8000) == 8000 and converter.rate_for(44100) == 16000
    with pytest.raises(InvalidAudioError):
        converter.use_rate(-1)


def test_an_analyzer_with_one_fixed_rate() -> None:
    """No set_sample_rate, no supported_sample_rates: everything is converted to the rate it has."""

    class Fixed:
        sample_rate = 16000

    converter = AudioConverter(Fixed())
    assert converter.rate_for(8000) == 16000
    assert 16000 - 1600 <= resampled_total(converter, 8000) <= 16000
    with pytest.raises(ConfigurationError):
        AudioConverter(object())


def test_reset_forgets_the_stream() -> None:
    converter = AudioConverter(Recorder())
    converter.convert_pcm(tone(48000, 0.02), 48000)
    converter.reset()
    assert converter.input_rate == 0


def speaking(
    analyzer: SileroVADAnalyzer, converter: AudioConverter, pcm: bytes, rate: int, channels: int
) -> list[float]:
    """When (s) speech starts (SPEAKING) and stops (QUIET again), fed 20 ms frames through the converter."""
    n = rate // 50 * 2 * channels
    changes, speaking = [], False
    for k, i in enumerate(range(0, len(pcm) - n + 1, n)):
        frame = F.InputAudioRawFrame(pcm[i:i + n], sample_rate=rate, num_channels=channels)
        state = analyzer.analyze_audio(converter.convert(frame))
        if (state is VADState.SPEAKING and not speaking) or (state is VADState.QUIET and speaking):
            changes.append(round((k + 1) * 0.02, 2))
            speaking = not speaking
    return changes


def test_real_speech_at_48k_11025_and_stereo_gets_the_16k_decisions(booking: np.ndarray) -> None:
    """The same 3.5 s of speech at 16 kHz, 48 kHz, 11,025 Hz and in stereo: Silero's segments agree within 0.1 s."""
    clip = booking[: 16000 * 7 // 2]
    as_float = clip.astype(np.float32) / 32768

    def pcm(rate: int) -> bytes:
        return np.round(resample(as_float, 16000, rate) * 32767).astype("<i2").tobytes()

    def run(data: bytes, rate: int, channels: int = 1) -> list[float]:
        analyzer = SileroVADAnalyzer(16000)
        return speaking(analyzer, AudioConverter(analyzer), data, rate, channels)

    reference = run(clip.tobytes(), 16000)
    assert len(reference) == 2 and reference[0] < reference[1]
    assert run(np.repeat(clip, 2).astype("<i2").tobytes(), 16000, 2) == reference
    for rate in (48000, 11025):
        got = run(pcm(rate), rate)
        assert len(got) == 2 and all(abs(a - b) <= 0.1 for a, b in zip(got, reference, strict=True)), (rate, got)


def test_webrtc_runs_48k_natively(booking: np.ndarray) -> None:
    analyzer = WebRTCVADAnalyzer(16000)
    converter = AudioConverter(analyzer)
    data = np.round(resample(booking[:16000].astype(np.float32) / 32768, 16000, 48000) * 32767).astype("<i2")
    frame = F.InputAudioRawFrame(data[:960].tobytes(), sample_rate=48000)
    assert converter.convert(frame) is frame.audio and analyzer.sample_rate == 48000


def test_downmix_pcm16_rounds_the_average() -> None:
    stereo = np.array([[1, 2], [-3, -4], [32767, 32767], [-32768, -32767], [5, 6]], dtype="<i2")
    mono = np.frombuffer(downmix_pcm16(stereo.tobytes(), 2), "<i2")
    assert mono.tolist() == [2, -4, 32767, -32768, 6]  # halves to even
    assert downmix_pcm16(b"\x01\x00", 1) == b"\x01\x00"
    with pytest.raises(InvalidAudioError, match="whole number"):
        downmix_pcm16(b"\x00" * 6, 2)
    with pytest.raises(InvalidAudioError, match="num_channels"):
        downmix_pcm16(b"\x00" * 4, 0)
