"""Properties over random timings (hypothesis): no word lost, one model run per turn, one stop per start."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rxvoice import frames as F
from rxvoice.aggregators import Pair
from rxvoice.pipeline import SchedulerOffload
from rxvoice.testing import FrameMarbles
from rxvoice.turns import AlwaysUserMute, TurnAnalyzerStop, TurnsConfig

from .helpers import FakeAnalyzer

EVENTS = st.sampled_from(["speech", "speech", "final", "final", "final", "interim", "bot", "interrupt", "wait"])
GAPS = st.sampled_from([0.0, 0.05, 0.2, 0.5, 0.7, 1.2, 3.0])


def _timeline(actions: list[tuple[str, float]], muted: bool) -> tuple[list[tuple[float, F.Frame]], list[str]]:
    """Frames at their times, and the words that must reach the conversation."""
    timeline: list[tuple[float, F.Frame]] = []
    heard: list[str] = []
    t = 0.0
    speaking = bot = False
    for i, (action, gap) in enumerate(actions):
        t = round(t + gap, 3)
        if action == "speech":
            speaking = not speaking
            vad = F.VADUserStartedSpeakingFrame if speaking else F.VADUserStoppedSpeakingFrame
            timeline.append((t, vad(0.2, t)))
        elif action == "final":
            word = f"w{i}"
            timeline.append((t, F.TranscriptionFrame(word, finalized=i % 2 == 0)))
            if not (muted and bot):
                heard.append(word)
        elif action == "interim":
            timeline.append((t, F.InterimTranscriptionFrame(f"guess{i}")))
        elif action == "bot":
            bot = not bot
            timeline.append((t, F.BotStartedSpeakingFrame() if bot else F.BotStoppedSpeakingFrame()))
        elif action == "interrupt":
            timeline.append((t, F.InterruptionFrame()))
    if speaking:
        t += 0.3
        timeline.append((t, F.VADUserStoppedSpeakingFrame(0.2, t)))
    timeline.append((t + 10.0, F.EndFrame()))
    return timeline, heard


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    actions=st.lists(st.tuples(EVENTS, GAPS), min_size=1, max_size=30),
    muted=st.booleans(),
    analyzer=st.booleans(),
    verdicts=st.lists(st.booleans(), max_size=8),
    latencies=st.lists(st.sampled_from([0.0, 0.05, 0.4, 1.5]), min_size=1, max_size=8),
)
def test_no_word_lost_one_run_per_turn_one_stop_per_start(
    actions: list[tuple[str, float]], muted: bool, analyzer: bool, verdicts: list[bool], latencies: list[float]
) -> None:
    """Any timing of speech, words, bot speech, interruptions (and verdicts): every word heard unmuted is written
    exactly once; each turn runs the model at most once (exactly once when it has words); every started turn
    stops exactly once."""
    m = FrameMarbles()
    stop = [TurnAnalyzerStop(FakeAnalyzer([(v, 0.5) for v in verdicts], default=(False, 0.3)))] if analyzer else None
    pair = Pair(turns=TurnsConfig(stop=stop, stop_timeout=2.0), mute=[AlwaysUserMute()] if muted else [])
    pair.user().offload = SchedulerOffload(m.scheduler, lambda n: latencies[n % len(latencies)])
    timeline, heard = _timeline(actions, muted)
    end = timeline[-1][0]
    rec = m.run(pair.user(), down=timeline, watch=[pair.user()], until=end + 10.0)
    user_messages = [msg["content"] for msg in pair.context().messages if msg["role"] == "user"]

    # 1. No word lost, none written twice.
    written = " ".join(user_messages).split()
    assert sorted(written) == sorted(heard)

    # 2. One model run per answered turn, none for an empty one unless it is the recovery.
    stops: list[Any] = [p for _, p in rec.events_named("on_user_turn_stopped")]
    recoveries = sum(1 for msg in pair.context().messages if msg["role"] == "developer")
    runs = len(rec.of_type(F.LLMContextFrame))
    assert runs == sum(1 for p in stops if p.content) + recoveries
    # A turn reopened after a false end (the user went on before any answer) writes into the same message.
    reopened = len(rec.events_named("on_user_turn_recovered"))
    assert len(user_messages) == runs - recoveries - reopened

    # 3. Started and stopped alternate; a stop without a start only reports words held to the session's end.
    names = [n for n in rec.event_names() if n in ("on_user_turn_started", "on_user_turn_stopped")]
    open_ = False
    for i, name in enumerate(names):
        if name == "on_user_turn_started":
            assert not open_, "a turn started inside a turn"
            open_ = True
        elif open_:
            open_ = False
        else:
            assert i == len(names) - 1 and stops[-1].strategy is None and stops[-1].content
    assert not open_, "a started turn never stopped"


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(actions=st.lists(st.tuples(EVENTS, GAPS), min_size=1, max_size=30), muted=st.booleans())
def test_processor_and_aggregator_lose_no_word(actions: list[tuple[str, float]], muted: bool) -> None:
    """UserTurnProcessor -> aggregator(external): every word heard unmuted is written once, one run per answered
    turn, one user-stopped frame per user-started frame."""
    from rxvoice import pipeline
    from rxvoice.aggregators import UserTurnProcessor
    from rxvoice.turns import ExternalStrategies

    pair = Pair(turns=TurnsConfig(strategies=ExternalStrategies()))
    processor = UserTurnProcessor(TurnsConfig(stop_timeout=2.0), mute=[AlwaysUserMute()] if muted else [])
    timeline, heard = _timeline(actions, muted)
    end = timeline[-1][0]
    rec = FrameMarbles().run(pipeline(processor, pair.user()), down=timeline, watch=[pair.user()], until=end + 10.0)
    user_messages = [msg["content"] for msg in pair.context().messages if msg["role"] == "user"]
    assert sorted(" ".join(user_messages).split()) == sorted(heard)
    stops: list[Any] = [p for _, p in rec.events_named("on_user_turn_stopped")]
    recoveries = sum(1 for msg in pair.context().messages if msg["role"] == "developer")
    assert len(rec.of_type(F.LLMContextFrame)) == sum(1 for p in stops if p.content) + recoveries
    types = rec.down_types()
    ends_open = 1 if types.count("UserStartedSpeakingFrame") > types.count("UserStoppedSpeakingFrame") else 0
    assert types.count("UserStartedSpeakingFrame") - ends_open == types.count("UserStoppedSpeakingFrame")
