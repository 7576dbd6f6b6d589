"""Reading recordings: every common WAV encoding decodes to the same 16 kHz mono int16, or a one-line refusal."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from rxvoice.cli._common import CLIError
from rxvoice.cli.wav import _g711, read_wav

from .conftest import write_wav

RATE = 16000


def tone(seconds: float = 0.5, rate: int = RATE, amplitude: float = 0.5) -> np.ndarray:
    """A 440 Hz sine in [-1, 1]."""
    t = np.arange(int(seconds * rate)) / rate
    return (amplitude * np.sin(2 * np.pi * 440 * t)).astype(np.float64)


def riff(path: Path, tag: int, channels: int, rate: int, bits: int, data: bytes, *, extensible: bool = False,
         extra: bytes = b"") -> Path:
    """A hand-made WAV (any format tag, optionally WAVE_FORMAT_EXTENSIBLE, extra chunks before the data)."""
    align = channels * bits // 8
    if extensible:
        guid = struct.pack("<H", tag) + b"\x00\x00\x00\x00\x10\x00\x80\x00\x00\xaa\x00\x38\x9b\x71"
        fmt = struct.pack("<HHIIHHHHI", 0xFFFE, channels, rate, rate * align, align, bits, 22, bits, 0) + guid
    else:
        fmt = struct.pack("<HHIIHH", tag, channels, rate, rate * align, align, bits)
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt + extra
    body += b"data" + struct.pack("<I", len(data)) + data + (b"\x00" if len(data) % 2 else b"")
    path.write_bytes(b"RIFF" + struct.pack("<I", len(body)) + body)
    return path


def test_16_bit_mono_16k_is_read_as_is(tmp_path: Path) -> None:
    """The analysis format passes through untouched, with no conversion noted."""
    samples = np.round(tone() * 32767).astype(np.int16)
    rec = read_wav(write_wav(tmp_path / "a.wav", samples, RATE))
    assert np.array_equal(rec.samples, samples)
    assert rec.conversions == () and rec.encoding == "16-bit PCM" and rec.duration == 0.5


@pytest.mark.parametrize(
    ("tag", "bits", "encode", "name"),
    [
        (1, 8, lambda x: np.round(x * 127 + 128).astype(np.uint8).tobytes(), "8-bit PCM"),
        (1, 24, lambda x: b"".join(int(v).to_bytes(3, "little", signed=True) for v in np.round(x * 8388607)),
         "24-bit PCM"),
        (1, 32, lambda x: np.round(x * 2147483647).astype("<i4").tobytes(), "32-bit PCM"),
        (3, 32, lambda x: x.astype("<f4").tobytes(), "32-bit float"),
        (3, 64, lambda x: x.astype("<f8").tobytes(), "64-bit float"),
    ],
)
@pytest.mark.parametrize("extensible", [False, True])
def test_other_encodings_decode_to_the_same_samples(tmp_path: Path, tag: int, bits: int, encode: object,
                                                    name: str, extensible: bool) -> None:
    """8/24/32-bit PCM and float, plain or WAVE_FORMAT_EXTENSIBLE, decode within one 8-bit step."""
    x = tone()
    rec = read_wav(riff(tmp_path / "x.wav", tag, 1, RATE, bits, encode(x), extensible=extensible))  # type: ignore[operator]
    assert rec.encoding == name and rec.conversions == (f"decoded from {name}",)
    assert np.max(np.abs(rec.samples / 32768 - x)) < 1 / 120


@pytest.mark.parametrize(("tag", "name"), [(7, "µ-law"), (6, "A-law")])
def test_g711_telephony_audio(tmp_path: Path, tag: int, name: str) -> None:
    """8 kHz µ-law and A-law (call recordings): decoded (ITU-T G.711 tables) and resampled to 16 kHz."""
    x = tone(rate=8000)
    codes = np.arange(256, dtype=np.uint8)
    table = _g711(codes, mu_law=tag == 7)
    # Spot values of G.711: µ-law 0x00 = -32124, 0x80 = +32124, 0xFF = 0; A-law 0xD5 = +8, 0x55 = -8, 0xAA = +32256.
    if tag == 7:
        assert (table[0x00] * 32768, table[0x80] * 32768, table[0xFF] * 32768) == (-32124, 32124, 0)
    else:
        assert (table[0xD5] * 32768, table[0x55] * 32768, table[0xAA] * 32768) == (8, -8, 32256)
    coded = codes[np.argmin(np.abs(x[:, None] - table[None, :]), axis=1)].tobytes()  # nearest code per sample
    rec = read_wav(riff(tmp_path / "g711.wav", tag, 1, 8000, 8, coded))
    assert rec.encoding == name
    assert rec.conversions == (f"decoded from {name}", "resampled from 8000 Hz to 16000 Hz")
    assert len(rec.samples) == 2 * len(x)
    assert 0.45 < np.max(np.abs(rec.samples)) / 32768 < 0.55


def test_channels_are_averaged_and_rates_resampled(tmp_path: Path) -> None:
    """Stereo 48 kHz → mono 16 kHz: same length in seconds, the channels' mean."""
    x = tone(rate=48000)
    stereo = np.stack([x, np.zeros_like(x)], axis=1)
    rec = read_wav(write_wav(tmp_path / "s.wav", np.round(stereo * 32767).astype(np.int16), 48000, channels=2))
    assert rec.conversions == ("2 channels averaged to mono", "resampled from 48000 Hz to 16000 Hz")
    assert rec.source_rate == 48000 and rec.source_channels == 2
    assert len(rec.samples) == 8000
    assert 0.23 < np.max(np.abs(rec.samples)) / 32768 < 0.27  # the mean of 0.5 and 0


def test_loud_float_is_clipped_nan_is_refused(tmp_path: Path) -> None:
    """Float above full scale is clipped (noted); NaN or infinity is refused."""
    loud = read_wav(riff(tmp_path / "loud.wav", 3, 1, RATE, 32, (tone() * 3).astype("<f4").tobytes()))
    assert "clipped to full scale (peak 1.50)" in loud.conversions
    assert loud.samples.max() == 32767
    bad = tone().astype("<f4")
    bad[10] = np.nan
    with pytest.raises(CLIError, match="NaN or infinity"):
        read_wav(riff(tmp_path / "nan.wav", 3, 1, RATE, 32, bad.tobytes()))


def test_extra_chunks_and_a_truncated_data_chunk(tmp_path: Path) -> None:
    """LIST chunks are skipped; a data chunk cut short keeps its whole samples."""
    samples = np.round(tone() * 32767).astype("<i2")
    path = riff(tmp_path / "t.wav", 1, 1, RATE, 16, samples.tobytes(), extra=b"LIST\x04\x00\x00\x00INFO")
    whole = path.read_bytes()
    path.write_bytes(whole[:-1001])  # 500 samples and a half gone
    rec = read_wav(path)
    assert np.array_equal(rec.samples, samples[: len(samples) - 501])


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"RIFX\x00\x00\x00\x00WAVE", "big-endian WAV (RIFX)"),
        (b"RIFF\x04\x00\x00\x00WAVE", "no 'fmt ' chunk"),
        (b"RIFF\x00\x00\x00\x00AVI LIST", "not a WAV file"),
    ],
)
def test_broken_headers(tmp_path: Path, data: bytes, message: str) -> None:
    """Headers that are not usable WAV say so."""
    path = tmp_path / "h.wav"
    path.write_bytes(data)
    with pytest.raises(CLIError, match=message.replace("(", r"\(").replace(")", r"\)")):
        read_wav(path)


def test_a_folder_is_not_a_file(tmp_path: Path) -> None:
    """A directory given where a WAV is expected."""
    with pytest.raises(CLIError, match="is a folder"):
        read_wav(tmp_path)
