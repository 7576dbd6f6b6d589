"""Reading a WAV recording for the command line: any common encoding in, 16 kHz mono int16 out.

The analysis runs at 16 kHz mono (Smart Turn's rate, one of Silero's), so a
recording in another shape is converted rather than refused, and the
conversion is reported: channels are averaged, other rates are resampled
(libsoxr HQ), 8/24/32-bit PCM, 32/64-bit float, A-law and µ-law are decoded.
The RIFF chunks are parsed here (not with :mod:`wave`) so that float,
G.711 and ``WAVE_FORMAT_EXTENSIBLE`` files from recorders and ``sox`` read
too. Anything unusable raises :class:`CLIError` with a one-line reason.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..audio.resample import resample
from ._common import CLIError

__all__ = ["RATE", "Recording", "read_wav"]

RATE = 16000
"""The rate everything is analyzed at."""

_PCM, _FLOAT, _ALAW, _MULAW, _EXTENSIBLE = 0x0001, 0x0003, 0x0006, 0x0007, 0xFFFE
_NAMES = {0x0002: "MS ADPCM", 0x0011: "IMA ADPCM", 0x0031: "GSM 6.10", 0x0055: "MP3", 0x0050: "MPEG"}


@dataclass(frozen=True)
class Recording:
    """A recording ready for analysis.

    Attributes:
        path: where it was read from.
        samples: int16 mono samples at :data:`RATE`.
        source_rate: the file's own sample rate.
        source_channels: the file's channel count.
        encoding: what the file held (``"16-bit PCM"``, ``"32-bit float"``, ...).
        conversions: what was done to it, in words (empty when nothing was).
        warnings: what is wrong with the file but did not stop it being read
            (a truncated file), in words.
    """

    path: Path
    samples: NDArray[np.int16]
    source_rate: int
    source_channels: int
    encoding: str
    conversions: tuple[str, ...] = field(default=())
    warnings: tuple[str, ...] = field(default=())

    @property
    def duration(self) -> float:
        """Seconds of audio."""
        return len(self.samples) / RATE


_STREAMING_SIZES = (0xFFFFFFFF, 0x7FFFFFFF, 0x7FFFF000)  # sizes streaming writers leave in headers


def _chunks(data: bytes, path: Path, short: dict[bytes, int] | None = None) -> dict[bytes, bytes]:
    """The RIFF chunks by id (the first of each); a truncated last chunk keeps what is there.

    ``short`` receives, per truncated chunk, the size its header states.
    """
    chunks: dict[bytes, bytes] = {}
    pos = 12
    while pos + 8 <= len(data):
        cid = data[pos:pos + 4]
        (size,) = struct.unpack_from("<I", data, pos + 4)
        body = data[pos + 8:pos + 8 + size]
        if len(body) < size and short is not None and cid not in chunks:
            short[cid] = size
        chunks.setdefault(cid, body)
        pos += 8 + size + (size & 1)
    if b"fmt " not in chunks:
        raise CLIError(f"{path}: not a usable WAV file (no 'fmt ' chunk)")
    if b"data" not in chunks:
        raise CLIError(f"{path}: not a usable WAV file (no 'data' chunk)")
    return chunks


def _format(fmt: bytes, path: Path) -> tuple[int, int, int, int]:
    """``(format tag, channels, rate, bits per sample)``, the extensible sub-format resolved."""
    if len(fmt) < 16:
        raise CLIError(f"{path}: not a usable WAV file (a 'fmt ' chunk of {len(fmt)} bytes)")
    tag, channels, rate, _byte_rate, _align, bits = struct.unpack_from("<HHIIHH", fmt)
    if tag == _EXTENSIBLE:
        if len(fmt) < 40:
            raise CLIError(f"{path}: not a usable WAV file (a truncated WAVE_FORMAT_EXTENSIBLE header)")
        (tag,) = struct.unpack_from("<H", fmt, 24)  # the sub-format GUID starts with the format tag
    if channels < 1:
        raise CLIError(f"{path}: the WAV header says {channels} channels")
    if rate < 1:
        raise CLIError(f"{path}: the WAV header says a sample rate of {rate} Hz")
    return tag, channels, rate, bits


def _g711(codes: NDArray[np.uint8], mu_law: bool) -> NDArray[np.float32]:
    """Decode A-law or µ-law bytes (ITU-T G.711) to float32 in [-1, 1]."""
    if mu_law:
        u = ~codes.astype(np.int32) & 0xFF
        magnitude = (((u & 0x0F) << 3) + 0x84) << ((u >> 4) & 0x07)
        linear = np.where(u & 0x80, 0x84 - magnitude, magnitude - 0x84)
    else:
        a = codes.astype(np.int32) ^ 0x55
        exponent = (a >> 4) & 0x07
        mantissa = a & 0x0F
        magnitude = np.where(
            exponent == 0, (mantissa << 4) + 8, ((mantissa << 4) + 0x108) << np.maximum(exponent - 1, 0)
        )
        linear = np.where(a & 0x80, magnitude, -magnitude)
    return (linear / 32768.0).astype(np.float32)


def _decode(raw: bytes, tag: int, bits: int, path: Path) -> tuple[NDArray[np.float32], str]:
    """The samples (interleaved) as float32, and a name for the encoding."""
    if tag == _PCM and bits in (8, 16, 24, 32):
        width = bits // 8
        raw = raw[: len(raw) - len(raw) % width]
        if bits == 8:
            values: NDArray[Any] = (np.frombuffer(raw, np.uint8).astype(np.float32) - 128.0) / 128.0
        elif bits == 16:
            values = np.frombuffer(raw, "<i2").astype(np.float32) / 32768.0
        elif bits == 24:
            b = np.frombuffer(raw, np.uint8).reshape(-1, 3).astype(np.int32)
            ints = b[:, 0] | (b[:, 1] << 8) | (b[:, 2] << 16)
            values = (np.where(ints & 0x800000, ints - 0x1000000, ints) / 8388608.0).astype(np.float32)
        else:
            values = (np.frombuffer(raw, "<i4").astype(np.float64) / 2147483648.0).astype(np.float32)
        return values, f"{bits}-bit PCM"
    if tag == _FLOAT and bits in (32, 64):
        width = bits // 8
        raw = raw[: len(raw) - len(raw) % width]
        floats = np.frombuffer(raw, "<f4" if bits == 32 else "<f8")
        if floats.size and not np.isfinite(floats).all():
            raise CLIError(f"{path}: the {bits}-bit float samples hold NaN or infinity")
        return floats.astype(np.float32), f"{bits}-bit float"
    if tag in (_ALAW, _MULAW) and bits == 8:
        return _g711(np.frombuffer(raw, np.uint8), tag == _MULAW), "µ-law" if tag == _MULAW else "A-law"
    name = _NAMES.get(tag, f"format 0x{tag:04x}")
    raise CLIError(
        f"{path}: unsupported WAV encoding ({name}, {bits} bits); convert it to 16-bit PCM, "
        f"e.g. `sox {path.name} -b 16 out.wav`"
    )


def read_wav(path: str | Path) -> Recording:
    """Read a WAV file and convert it to 16 kHz mono int16.

    Raises:
        CLIError: the file is missing, empty, not a WAV, in an encoding that
            cannot be decoded, or holds no audio.
    """
    p = Path(path)
    if not p.exists():
        raise CLIError(f"{p}: no such file")
    if p.is_dir():
        raise CLIError(f"{p}: is a folder, not a WAV file")
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise CLIError(f"{p}: cannot read it ({exc.strerror or exc})") from None
    if not data:
        raise CLIError(f"{p}: empty file (0 bytes), not a WAV recording")
    if data[:4] == b"RIFX":
        raise CLIError(f"{p}: big-endian WAV (RIFX) is not supported; convert it to 16-bit PCM")
    if data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        raise CLIError(f"{p}: not a WAV file (no RIFF/WAVE header)")
    short: dict[bytes, int] = {}
    chunks = _chunks(data, p, short)
    tag, channels, rate, bits = _format(chunks[b"fmt "], p)
    values, encoding = _decode(chunks[b"data"], tag, bits, p)
    frames = len(values) // channels
    if frames == 0:
        raise CLIError(f"{p}: the WAV file holds no audio (0 samples)")
    warnings: list[str] = []
    stated = short.get(b"data")
    if stated is not None and stated not in _STREAMING_SIZES:
        frame_bytes = max(1, channels * max(1, bits // 8))
        warnings.append(
            f"truncated: the header promises {stated / frame_bytes / rate:.2f} s of audio ({stated} bytes), "
            f"the file holds {frames / rate:.2f} s ({len(chunks[b'data'])} bytes); the rest is missing"
        )
    conversions: list[str] = []
    if encoding != "16-bit PCM":
        conversions.append(f"decoded from {encoding}")
    interleaved = values[: frames * channels].reshape(frames, channels)
    mono = interleaved[:, 0] if channels == 1 else interleaved.mean(axis=1, dtype=np.float32)
    if channels > 1:
        conversions.append(f"{channels} channels averaged to mono")
    loud = float(np.max(np.abs(mono)))
    if loud > 1.0:
        mono = np.clip(mono, -1.0, 1.0)
        conversions.append(f"clipped to full scale (peak {loud:.2f})")
    if rate != RATE:
        if not 1000 <= rate <= 384000:
            raise CLIError(f"{p}: a sample rate of {rate} Hz cannot be resampled (1000..384000 Hz)")
        mono = np.clip(resample(np.ascontiguousarray(mono), rate, RATE), -1.0, 1.0)
        conversions.append(f"resampled from {rate} Hz to {RATE} Hz")
    samples = np.clip(np.rint(mono.astype(np.float64) * 32768.0), -32768, 32767).astype(np.int16)
    if len(samples) == 0:
        raise CLIError(f"{p}: the WAV file holds no audio after resampling")
    return Recording(p, samples, rate, channels, encoding, tuple(conversions), tuple(warnings))
