"""WhisperSTT on real audio, in virtual time: the booking call, silence and noise, 48 kHz stereo, the end of
input in mid-utterance, a segment longer than Whisper's 30 s window, interim frames, and a bad model.

The model is the one ``rxvoice model install`` puts in the user cache (README command 1); a missing one
fails in one line naming that command. Recognition runs inline (the answers do not depend on the machine).
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soxr

from rxvoice.audio.vad import SileroVADAnalyzer
from rxvoice.audio.vad_processor import VADProcessor
from rxvoice.cli.wav import read_wav
from rxvoice.errors import ConfigurationError, ModelError, ModelNotFoundError
from rxvoice.frames import (
    EndFrame,
    Frame,
    InputAudioRawFrame,
    InterimTranscriptionFrame,
    StartFrame,
    TranscriptionFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from rxvoice.pipeline import inline_offload, pipeline
from rxvoice.services import stt as stt_module
from rxvoice.services.spoken import spoken_words
from rxvoice.services.stt import Utterance, word_error_rate
from rxvoice.services.whisper import (
    WhisperResult,
    WhisperSTT,
    _looped,
    _shared_model,
    _speech_seconds,
    _split,
    _threads,
    _Token,
    _WhisperRecognizer,
    whisper_offload,
)
from rxvoice.services.whisper_model import (
    WHISPER_ENV_VAR,
    WHISPER_FILES,
    check_whisper_model,
    find_whisper_model,
    install_whisper_model,
    whisper_model_spec,
)
from rxvoice.testing import FrameMarbles, load_transcript
from tests.support import booking_paths, turns_dir, whisper_model_path

RATE = 16000


@pytest.fixture(scope="module")
def model() -> Path:
    return whisper_model_path()


def said(text: str) -> str:
    """A reference text in the form WhisperSTT gives its words."""
    return " ".join(spoken_words(text))


def booking_samples() -> np.ndarray[Any, Any]:
    return read_wav(booking_paths()[0]).samples


def timeline(samples: np.ndarray[Any, Any], segments: list[tuple[float, float]], *, rate: int = RATE,
             channels: int = 1, end: bool = True) -> list[tuple[float, Frame]]:
    """20 ms chunks of ``samples`` (int16, interleaved when stereo), VAD frames around each segment (seconds)."""
    chunk = rate // 50
    frames = len(samples) // channels
    items: list[tuple[float, Frame]] = [(0.0, StartFrame())]
    marks = sorted([(a + 0.2, VADUserStartedSpeakingFrame(start_secs=0.2)) for a, _ in segments]
                   + [(b + 0.16, VADUserStoppedSpeakingFrame(stop_secs=0.16)) for _, b in segments],
                   key=lambda m: m[0])
    t = 0.0
    for i in range(0, frames - chunk + 1, chunk):
        t = (i + chunk) / rate
        while marks and marks[0][0] <= t:
            items.append((t - 0.0005, marks.pop(0)[1]))
        piece = samples[i * channels:(i + chunk) * channels].astype("<i2").tobytes()
        items.append((t, InputAudioRawFrame(piece, rate, channels)))
    items += [(t + 0.001, m) for _, m in marks]
    if end:
        items.append((t + 0.01, EndFrame()))
    return items


def run(stt: WhisperSTT, items: list[tuple[float, Frame]]) -> list[Frame]:
    rec = FrameMarbles().run(stt, items, until=items[-1][0] + 5.0)
    return rec.down_frames()


def finals(frames: list[Frame]) -> list[TranscriptionFrame]:
    return [f for f in frames if isinstance(f, TranscriptionFrame)]


# -- the booking call ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def booking_finals(model: Path) -> list[TranscriptionFrame]:
    """The booking call through the Silero VAD and WhisperSTT (the recommended setup's VAD stop, 0.16 s)."""
    from rxvoice.audio.vad import VADParams

    samples = np.concatenate((booking_samples(), np.zeros(RATE, dtype=np.int16)))
    items = timeline(samples, [])
    stage = pipeline(VADProcessor(lambda: SileroVADAnalyzer(RATE, params=VADParams(stop_secs=0.16))),
                     WhisperSTT(offload=inline_offload))
    rec = FrameMarbles().run(stage, items, until=items[-1][0] + 5.0)
    return finals(rec.down_frames())


def test_booking_is_heard_close_to_its_transcript(booking_finals: list[TranscriptionFrame]) -> None:
    """One final per stretch of speech, in order; the words close to what was said (word error rate 0.39 measured:
    "book a flight to" comes back "look at flight two" and "thanks, that is all" is misheard; see the voice guide)."""
    reference = " ".join(s.text for s in load_transcript(booking_paths()[1]).segments)
    text = " ".join(f.text for f in booking_finals)
    assert word_error_rate(said(reference), text) <= 0.45, text
    for phrase in ("i would like to", "boston next", "friday", "could we", "leave on saturday"):
        assert phrase in text, (phrase, text)
    assert text == text.lower() and not any(c in text for c in ",.?!"), "plain words: no case, no punctuation"


def test_each_final_carries_word_timings_and_confidences(booking_finals: list[TranscriptionFrame]) -> None:
    """result: a WhisperResult (an Utterance) with every word's time and probability, the segment's confidences."""
    assert len(booking_finals) >= 5
    previous_end = 0.0
    for frame in booking_finals:
        result = frame.result
        assert isinstance(result, WhisperResult) and isinstance(result, Utterance)
        assert frame.finalized and frame.language == "en"
        assert " ".join(w.word for w in result.words) == frame.text
        assert result.start >= previous_end - 0.01 and result.end > result.start
        previous_end = result.end
        for w in result.words:
            assert result.start - 0.6 <= w.start <= w.end <= result.end + 0.4, (w, result.start, result.end)
            assert 0.0 <= w.probability <= 1.0
        assert all(a.start <= b.start for a, b in zip(result.words, result.words[1:], strict=False))
        assert -5.0 < result.avg_logprob < 0.0 and 0.0 <= result.no_speech_prob <= 1.0
        assert result.heard and result.heard != frame.text  # Whisper's own text: cased and punctuated


# -- nothing to hear ---------------------------------------------------------------------------------------------


def _noise(kind: str) -> np.ndarray[Any, Any]:
    rng = np.random.default_rng(7)
    if kind == "silence":
        x = np.zeros(3 * RATE)
    elif kind == "white":
        x = rng.normal(0.0, 0.03, 3 * RATE)  # about -30 dBFS
    else:  # a hum with its harmonics, and a little hiss
        t = np.arange(3 * RATE) / RATE
        x = sum(0.05 / k * np.sin(2 * np.pi * 50 * k * t) for k in range(1, 6)) + rng.normal(0, 0.003, len(t))
    return (np.clip(x, -1, 1) * 32767).astype(np.int16)


@pytest.mark.parametrize("kind", ["silence", "white", "hum"])
def test_silence_and_noise_give_no_words(model: Path, kind: str) -> None:
    """The VAD frames forced around 2.5 s of silence or noise: Whisper is asked, and says nothing."""
    frames = run(WhisperSTT(offload=inline_offload), timeline(_noise(kind), [(0.2, 2.7)]))
    assert not finals(frames) and not any(isinstance(f, InterimTranscriptionFrame) for f in frames)


def _stereo_48k(samples: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    up = soxr.resample(samples.astype(np.float32) / 32768, RATE, 48000)
    left = (np.clip(up, -1, 1) * 32767).astype(np.int16)
    right = (np.clip(up * 0.8, -1, 1) * 32767).astype(np.int16)
    return np.column_stack((left, right)).reshape(-1)


def test_noise_at_48_khz_stereo_gives_no_words(model: Path) -> None:
    frames = run(WhisperSTT(offload=inline_offload),
                 timeline(_stereo_48k(_noise("white")), [(0.2, 2.7)], rate=48000, channels=2))
    assert not finals(frames)


def test_speech_at_48_khz_stereo_is_converted_and_heard(model: Path) -> None:
    """The first sentence of the booking call at 48 kHz stereo: the same words as at 16 kHz mono."""
    first = booking_samples()[: round(6.0 * RATE)]
    segments = [(0.3, 5.5)]
    mono = " ".join(f.text for f in finals(run(WhisperSTT(offload=inline_offload), timeline(first, segments))))
    stereo = " ".join(f.text for f in finals(run(WhisperSTT(offload=inline_offload),
                                                 timeline(_stereo_48k(first), segments, rate=48000, channels=2))))
    assert "boston" in mono and "friday" in mono, mono
    assert word_error_rate(mono, stereo) <= 0.2, (mono, stereo)


# -- the end of input, long segments, interim frames -----------------------------------------------------------


def test_an_utterance_cut_by_the_end_of_input_still_gives_its_final(model: Path) -> None:
    """The stream ends 2.1 s into "Hi, I would like to book a flight to": no VAD stop, and still a final."""
    samples = booking_samples()[: round(2.1 * RATE)]
    items = timeline(samples, [(0.3, 10.0)], end=False)  # the VAD stop never comes
    items = [item for item in items if not isinstance(item[1], VADUserStoppedSpeakingFrame)]
    items.append((items[-1][0] + 0.001, EndFrame()))
    frames = run(WhisperSTT(offload=inline_offload), items)
    names = [type(f).__name__ for f in frames if not isinstance(f, InputAudioRawFrame)]
    assert "TranscriptionFrame" in names and names.index("TranscriptionFrame") < names.index("EndFrame")
    assert "would like" in finals(frames)[0].text


def _turn_sentences() -> list[tuple[np.ndarray[Any, Any], str]]:
    with (turns_dir() / "labels.csv").open(encoding="utf-8", newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["label"] == "complete"]
    return [(read_wav(turns_dir() / r["file"]).samples, r["text"]) for r in rows]


def test_a_segment_longer_than_whisper_s_window_is_split_without_losing_words(model: Path) -> None:
    """Sixteen sentences, 0.3 s apart, as one 35 s segment: read window by window, the words on either side of
    the 30 s mark there."""
    pieces: list[np.ndarray[Any, Any]] = []
    texts: list[str] = []
    starts: list[float] = []
    length = 0
    for samples, text in _turn_sentences():
        voiced = samples[round(0.25 * RATE): len(samples) - round(0.15 * RATE)]
        starts.append(length / RATE)
        pieces += [voiced, np.zeros(round(0.3 * RATE), dtype=np.int16)]
        length += len(voiced) + round(0.3 * RATE)
        texts.append(text)
    audio = np.concatenate([np.zeros(RATE // 2, dtype=np.int16), *pieces])
    total = len(audio) / RATE
    assert total > 32.0
    frames = run(WhisperSTT(offload=inline_offload, interim_interval=120.0), timeline(audio, [(0.4, total - 0.3)]))
    assert len(finals(frames)) == 1
    final = finals(frames)[0]
    reference = said(" ".join(texts))
    assert word_error_rate(reference, final.text) <= 0.2, final.text
    assert len(final.text.split()) >= 0.9 * len(reference.split())
    # The sentences spoken around the 30 s mark of the segment are there, word for word or nearly.
    across = [t for s, t in zip(starts, texts, strict=True) if 26.0 <= s + 0.5 <= 32.0]
    assert across
    for text in across:
        words = said(text).split()
        assert sum(w in final.text.split() for w in words) >= 0.75 * len(words), (text, final.text)
    assert isinstance(final.result, WhisperResult) and final.result.words[-1].end > 30.0


def _recognizer(audio: np.ndarray[Any, Any]) -> _WhisperRecognizer:
    recognizer = WhisperSTT(offload=inline_offload).new_recognizer()
    assert isinstance(recognizer, _WhisperRecognizer)
    recognizer.audio = bytearray(audio.astype("<i2").tobytes())
    return recognizer


def test_a_dropped_tail_is_read_again_and_its_words_added(model: Path) -> None:
    """Whisper stopping early, as it sometimes does: a final holding only the first of two sentences said in one
    segment. More than dropped_tail seconds of speech follow its last word, so the tail is transcribed again:
    the second sentence's words come after the first's, timed after them, each probable enough."""
    (first, first_text), (second, second_text) = _turn_sentences()[0], _turn_sentences()[2]
    one = first[: len(first) - round(0.15 * RATE)]
    early = _recognizer(one)._transcribe(context=False)  # the words of the first sentence alone
    assert word_error_rate(said(first_text), early) <= 0.2, early
    both = np.concatenate((one, np.zeros(round(0.3 * RATE), dtype=np.int16), second[round(0.25 * RATE):]))
    recognizer = _recognizer(both)
    assert _speech_seconds(np.asarray(both, np.float32) / 32768.0, round(early.words[-1][2] * RATE)) > 0.5
    heard = recognizer._reread_tail(early)
    assert recognizer.tails == 1
    assert heard.startswith(str(early)) and len(heard.words) == len(heard.split())
    added = heard.split()[len(early.split()):]
    assert word_error_rate(said(second_text), " ".join(added)) <= 0.25, (added, second_text)
    assert all(p >= 0.3 and start >= early.words[-1][2] for _w, start, _e, p in heard.words[len(early.words):])
    assert heard.heard.startswith(early.heard) and len(heard.heard) > len(early.heard)


def test_a_final_that_ends_with_the_speech_is_not_read_again(model: Path) -> None:
    """A sentence and the VAD's stop of silence: no speech after the last word, nothing read again."""
    samples, text = _turn_sentences()[0]
    recognizer = _recognizer(samples)
    heard = recognizer._transcribe(context=False)
    assert word_error_rate(said(text), heard) <= 0.2
    assert _speech_seconds(np.asarray(samples, np.float32) / 32768.0, round(heard.words[-1][2] * RATE)) < 0.5
    assert recognizer._reread_tail(heard) is heard and recognizer.tails == 0
    assert _speech_seconds(np.zeros(RATE, np.float32), 0) == 0.0


def test_whisper_threads_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RXVOICE_WHISPER_THREADS", raising=False)
    assert _threads() == 1
    monkeypatch.setenv("RXVOICE_WHISPER_THREADS", " 2 ")
    assert _threads() == 2
    for bad in ("two", "0", "99"):
        monkeypatch.setenv("RXVOICE_WHISPER_THREADS", bad)
        with pytest.raises(ConfigurationError, match="RXVOICE_WHISPER_THREADS"):
            _threads()


def test_a_long_segment_gets_interim_frames_and_a_short_one_none(model: Path) -> None:
    """interim_interval 2 s: a 5 s stretch gets guesses while it runs, then its final; a 1.5 s one only its final."""
    samples = booking_samples()
    frames = run(WhisperSTT(offload=inline_offload, interim_interval=2.0),
                 timeline(samples[: round(12.0 * RATE)], [(0.4, 5.4), (10.4, 11.5)]))
    interim_at = [i for i, f in enumerate(frames) if isinstance(f, InterimTranscriptionFrame)]
    final_at = [i for i, f in enumerate(frames) if isinstance(f, TranscriptionFrame)]
    assert len(final_at) == 2
    assert len(interim_at) >= 1 and all(i < final_at[0] for i in interim_at), "guesses only for the long stretch"
    guess = frames[interim_at[0]]
    assert isinstance(guess, InterimTranscriptionFrame) and "would like" in guess.text


def test_context_words_are_not_given_twice() -> None:
    """The previous final's words, heard again later than the boundary: the new words start after them."""
    def tok(text: str, at: float) -> _Token:
        return _Token(text, at, at + 0.2, 0.9, text, 0, -0.3, 0.01, True)

    tokens = [tok("four", 0.2), tok("eight", 0.5), tok("two", 0.8), tok("six", 1.3), tok("one", 1.6),
              tok("can", 2.0), tok("you", 2.3)]
    assert [t.text for t in tokens[_split(tokens, 1.2, ["four", "eight", "two", "six", "one"])]] == ["can", "you"]
    assert [t.text for t in tokens[_split(tokens, 1.2, [])]] == ["six", "one", "can", "you"]  # by time alone
    # The previous final's last word heard differently now ("too" then, "to" now): skipped with it.
    tokens = [tok("reading", 0.2), tok("to", 0.6), tok("correct", 1.5), tok("it", 1.8)]
    assert [t.text for t in tokens[_split(tokens, 1.0, ["my", "meter", "reading", "too"])]] == ["correct", "it"]


def test_a_loop_is_told_from_a_repeated_phrase() -> None:
    """Whisper going round ("internet internet ...") is decoded again; a phrase said twice is not a loop."""
    assert _looped(["the", "internet", "internet,", "Internet", "internet", "internet."])
    assert _looped(["i", "want", "to", "i", "want", "to", "i", "want", "to"])
    assert not _looped(["no", "no", "no", "no"])
    assert not _looped(["i", "want", "to", "i", "want", "to", "book", "a", "table"])
    assert not _looped(["four", "eight", "two", "six", "one"])


def test_the_encoder_reads_the_audio_and_a_margin_not_the_whole_window(model: Path) -> None:
    """3 s of speech and Whisper's zero padding to 30 s: the encoder reads 10 s (the least), not 30 s."""
    from faster_whisper.audio import pad_or_trim

    windowed = _shared_model(str(model), "int8", (5.0, 10.0))
    speech = booking_samples()[:3 * RATE].astype(np.float32) / 32768.0
    features = pad_or_trim(windowed.feature_extractor(speech))
    assert features.shape[-1] == 3000 and not np.any(features[:, 400:])  # the padding is exact zeros
    assert windowed.encode(features).shape[1] == 1000 // 2  # the convolution halves the frames
    whole = _shared_model(str(model), "int8")
    assert whole.encode(features).shape[1] == 3000 // 2
    long = windowed.feature_extractor(np.concatenate([speech] * 4))  # 12 s of speech: its frames and 5 s more
    read = long.shape[-1] + 500
    assert 1700 <= read <= 1702 and windowed.encode(pad_or_trim(long)).shape[1] == (read + read % 2) // 2


# -- the model ------------------------------------------------------------------------------------------------


def test_a_missing_model_is_one_line_naming_the_install_command(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(WHISPER_ENV_VAR, str(tmp_path / "nowhere"))
    with pytest.raises(ModelNotFoundError) as caught:
        WhisperSTT()
    assert "\n" not in str(caught.value) and "rxvoice model install" in str(caught.value)
    monkeypatch.delenv(WHISPER_ENV_VAR)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with pytest.raises(ModelNotFoundError, match="rxvoice model install"):
        find_whisper_model()


def _model_files(model: Path) -> list[str]:
    """The file names of the installed model (tiny.en's or base's)."""
    spec = whisper_model_spec(model)
    return list(WHISPER_FILES if spec is None or spec.size == "tiny.en" else spec.files)


def _copy_model(model: Path, into: Path, *, spoil: str | None = None) -> Path:
    into.mkdir(parents=True)
    for name in _model_files(model):
        if name == spoil:
            data = bytearray((model / name).read_bytes()[:4096])
            data[100] ^= 0xFF
            (into / name).write_bytes(bytes(data))
        else:
            (into / name).symlink_to(model / name)
    return into


def test_a_corrupt_model_is_refused_at_construction(model: Path, tmp_path: Path) -> None:
    """A model.bin that is not the pinned one: one line naming the install command, before any audio."""
    folder = _copy_model(model, tmp_path / "bad", spoil="model.bin")
    with pytest.raises(ModelError) as caught:
        WhisperSTT(folder)
    assert "\n" not in str(caught.value) and "rxvoice model install" in str(caught.value)
    assert "sha256" in str(caught.value)
    # Unchecked on purpose (verify=False), it fails to load, with the same advice.
    with pytest.raises(ModelError, match="rxvoice model install"):
        _shared_model(str(WhisperSTT(folder, verify=False).model_folder), "int8")
    (folder / "tokenizer.json").unlink()
    with pytest.raises(ModelNotFoundError, match=r"no tokenizer\.json"):
        check_whisper_model(folder)


def test_install_checks_every_file_and_refuses_a_mismatch(model: Path, tmp_path: Path) -> None:
    """A source with a spoiled file: refused, nothing installed, nothing left behind; the right files: installed."""
    bad = _copy_model(model, tmp_path / "src-bad", spoil="config.json")
    target = tmp_path / "cache" / "whisper-model"
    with pytest.raises(ModelError, match="refused and deleted"):
        install_whisper_model(bad, destination=target)
    assert not target.exists() and list(target.parent.iterdir()) == []
    good = _copy_model(model, tmp_path / "src-good")
    assert install_whisper_model(good, destination=target) == target
    assert sorted(p.name for p in target.iterdir()) == sorted(_model_files(model))
    assert sorted(p.name for p in target.parent.iterdir()) == ["whisper-model"]
    assert check_whisper_model(target) == target


def test_bad_settings_are_refused(model: Path) -> None:
    for kwargs in ({"context": -1}, {"context": 60}, {"beam_size": 0}, {"compute_type": "float16"},
                   {"interim_interval": 0}, {"language": "de"}, {"dropped_tail": 0}, {"dropped_tail": True},
                   {"dropped_tail": "1"}):
        with pytest.raises(ConfigurationError):
            WhisperSTT(**kwargs)  # type: ignore[arg-type]


def test_the_stage_is_importable_from_the_stt_module_and_runs_off_the_loop(model: Path) -> None:
    """``rxvoice.services.stt.WhisperSTT`` is this class; by default it runs on the Whisper threads."""
    assert stt_module.WhisperSTT is WhisperSTT
    assert stt_module.WhisperResult is WhisperResult
    stt = WhisperSTT()
    assert stt.offload is whisper_offload
    assert whisper_offload(lambda: __import__("threading").current_thread().name).result(5).startswith(
        "rxvoice-whisper")
