"""The VAD inside the user aggregator (Pair(vad=VADConfig(analyzer))), with a scripted analyzer."""

from __future__ import annotations

from rxvoice import frames as F
from rxvoice.aggregators import Pair, VADConfig
from rxvoice.pipeline import inline_offload
from rxvoice.turns import AlwaysUserMute, TurnAnalyzerStop, TurnsConfig

from .helpers import FakeAnalyzer, FakeVAD, audio, merge, run, times, users

VS, VE = F.VADUserStartedSpeakingFrame, F.VADUserStoppedSpeakingFrame


def test_speech_becomes_vad_frames_and_a_turn() -> None:
    """Loud audio gives a VAD start (down and up) that opens the turn; quiet audio a VAD stop that ends it."""
    vad = FakeVAD()
    pair = Pair(vad=VADConfig(vad))
    timeline = merge(audio("#" * 10 + "." * 10), [(0.1, F.TranscriptionFrame("hi there"))])
    rec = run(pair, timeline, until=5)
    assert times(rec, VS) == [0] and times(rec, VE) == [200]
    assert times(rec, VS, "up") == [0] and times(rec, VE, "up") == [200]
    assert times(rec, F.LLMContextFrame) == [200 + 600]
    assert users(pair) == ["hi there"]
    assert vad.chunks == 20


def test_the_audio_goes_on_before_the_vad_frame_it_caused() -> None:
    """The chunk that made the VAD decide is forwarded before the VAD frame."""
    rec = run(Pair(vad=VADConfig(FakeVAD())), audio("#"), until=2)
    assert rec.down_types() == [
        "InputAudioRawFrame", "VADUserStartedSpeakingFrame", "UserStartedSpeakingFrame", "InterruptionFrame",
        "UserSpeakingFrame", "VADUserStoppedSpeakingFrame",
    ]


def test_user_speaking_heartbeat_is_rate_limited() -> None:
    """While speaking, at most one UserSpeakingFrame per speech_activity_period (0.2 s)."""
    rec = run(Pair(vad=VADConfig(FakeVAD())), audio("#" * 25), until=1)
    assert times(rec, F.UserSpeakingFrame) == [0, 200, 400]


def test_speech_stops_when_the_audio_stops_arriving() -> None:
    """Audio stops mid-utterance (a muted microphone): the VAD stop comes audio_idle_timeout (1 s) later."""
    pair = Pair(vad=VADConfig(FakeVAD()))
    rec = run(pair, audio("#" * 5), until=10)
    assert times(rec, VE) == [80 + 1000]


def test_a_zero_audio_idle_timeout_turns_the_watch_off() -> None:
    """audio_idle_timeout=0: missing audio never ends the speech."""
    pair = Pair(vad=VADConfig(FakeVAD(), audio_idle_timeout=0))
    rec = run(pair, audio("#" * 5), until=10)
    assert times(rec, VE) == []


def test_muted_audio_never_reaches_the_vad() -> None:
    """While the user is muted the analyzer is not called, and no VAD frame appears."""
    vad = FakeVAD()
    pair = Pair(vad=VADConfig(vad), mute=[AlwaysUserMute()])
    bot = [(0.0, F.BotStartedSpeakingFrame()), (0.5, F.BotStoppedSpeakingFrame())]
    timeline = merge(bot, audio("#" * 10, start=0.1))
    rec = run(pair, timeline, until=3)
    assert vad.chunks == 0
    assert times(rec, VS) == []


def test_vad_params_are_announced_at_start() -> None:
    """At the StartFrame the VAD's params go out in a SpeechControlParamsFrame, both ways."""
    vad = FakeVAD()
    rec = run(Pair(vad=VADConfig(vad)), "S")
    [(_, announced)] = rec.of_type(F.SpeechControlParamsFrame)
    assert isinstance(announced, F.SpeechControlParamsFrame) and announced.vad_params == vad.params
    assert rec.up_types() == ["SpeechControlParamsFrame"]


def test_the_inline_vad_feeds_a_turn_analyzer() -> None:
    """Inline VAD + turn analyzer: the analyzer hears the audio marked speech or not, judges at the VAD stop."""
    analyzer = FakeAnalyzer([(True, 0.9)])
    pair = Pair(vad=VADConfig(FakeVAD()), turns=TurnsConfig(stop=[TurnAnalyzerStop(analyzer)]))
    pair.user().offload = inline_offload
    timeline = merge(audio("#" * 5 + "." * 5), [(0.05, F.TranscriptionFrame("hi", finalized=True))])
    rec = run(pair, timeline, until=3)
    appends = [flag for kind, flag in analyzer.calls() if kind == "append"]
    assert appends == [False] + [True] * 5 + [False] * 4
    assert times(rec, F.LLMContextFrame) == [100]
    assert users(pair) == ["hi"]


def test_a_short_gap_in_the_audio_is_not_a_stop() -> None:
    """Audio missing for less than audio_idle_timeout mid-utterance: the speech goes on; the real pause stops it."""
    rec = run(Pair(vad=VADConfig(FakeVAD())), audio("#" * 5 + " " * 20 + "#" * 5 + "." * 10), until=3)
    assert times(rec, VS) == [0] and times(rec, VE) == [600]
